"""Hypothesis corpora of OpenAI Messages rows, written the way an exporter writes them.

`corpora()` draws sessions (context messages, tool calls with arguments as objects or compact
text, responses and refusals, reasoning of any value, messages added mid-run, env and metric keys,
unknown keys at every level) and lays their rows
out in the canonical form: each row carries the full history (context, then earlier user / tool
results / response triples), its user message and its tool results; identity keys on every row.
The draw also returns an interleaving of the rows, so tests can feed the same corpus out of order.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

TEXT = st.text(alphabet="abcdefghij klmnop", min_size=1, max_size=12)
NAMES = st.sampled_from(["search", "open_file", "run", "edit"])
UNKNOWN = st.dictionaries(st.sampled_from(["x_vendor", "x/slash", "x~tilde", "0"]), st.integers(0, 9), max_size=1)
ARGS = st.one_of(
    st.dictionaries(st.sampled_from(["q", "path", "n"]), st.one_of(TEXT, st.integers(0, 99)), max_size=2),
    st.lists(st.integers(0, 9), max_size=2),
)


# Multimodal content: text, image and audio parts (Chat Completions content parts).
PARTS = st.lists(
    st.one_of(
        st.builds(lambda t: {"type": "text", "text": t}, TEXT),
        st.builds(lambda u: {"type": "image_url", "image_url": {"url": u}}, st.sampled_from(["https://x.org/a.png"])),
        st.builds(
            lambda d, f: {"type": "input_audio", "input_audio": {"data": d, "format": f}},
            st.sampled_from(["UklGRg==", "SUQz"]),
            st.sampled_from(["wav", "mp3"]),
        ),
    ),
    min_size=1,
    max_size=3,
)
# Keys the format defines that are read only when they agree with what the row says (RFC-0009
# rule 15), drawn with values that do not: they are kept for the way back (origin.kept).
DISAGREEING = st.fixed_dictionaries(
    {},
    optional={
        "env_id": st.just("another-env"),
        "llm_step_index": st.just(999),
        "requested_model": st.just("model-z"),
        "blob_manifest": st.just(["blob-1"]),
        "chosen_response": TEXT,
        "reference_answer": TEXT,
    },
)


@st.composite
def session(draw: Any, sid: str, calls: list[int]) -> list[dict[str, Any]]:
    """The rows of one session, in step order."""
    steps = sorted(draw(st.sets(st.integers(1, 40), min_size=1, max_size=4)))
    context = []
    if draw(st.booleans()):
        context.append({"role": "system", "content": draw(TEXT)})
    if draw(st.booleans()):
        context += [{"role": "user", "content": draw(TEXT)}, {"role": "assistant", "content": draw(TEXT)}]
    run = draw(st.one_of(st.none(), TEXT))
    agent = draw(st.one_of(st.none(), st.just("agent-" + sid)))
    env_name = draw(st.one_of(st.none(), TEXT))
    history = list(context)
    rows = []
    for step in steps:
        user = {"role": "user", "content": draw(st.one_of(TEXT, TEXT, PARTS)), **draw(UNKNOWN)}
        if draw(st.integers(0, 4)) == 0:
            user["name"] = draw(TEXT)  # a key the format defines that Storyline has no field for
        text = draw(TEXT)
        refused = draw(st.booleans()) and step % 3 == 0
        response: dict[str, Any] = (
            {"role": "assistant", "content": None, "refusal": text}
            if refused
            else {
                "role": "assistant",
                "content": text,
            }
        )
        if draw(st.booleans()):
            # a string is the turn's reasoning; any other value is kept for the way back
            response["reasoning_content"] = draw(st.one_of(TEXT, TEXT, TEXT, st.none(), st.integers(0, 9)))
        results, clean_calls = [], []
        for _ in range(draw(st.integers(0, 2))):
            calls[0] += 1
            call_id = f"call-{calls[0]}"
            value = draw(ARGS)
            arguments = json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
            written = value if draw(st.booleans()) else arguments  # an object, or the compact text
            function = {"name": draw(NAMES), "arguments": written, **draw(UNKNOWN)}
            response.setdefault("tool_calls", []).append(
                {"id": call_id, "type": "function", "function": function, **draw(UNKNOWN)}
            )
            clean = {"name": function["name"], "arguments": arguments}  # history: as the export writes it
            clean_calls.append({"id": call_id, "type": "function", "function": clean})
            results.append({"role": "tool", "tool_call_id": call_id, "content": draw(TEXT)})
        clean_response = {k: v for k, v in response.items() if k not in ("tool_calls", "refusal")}
        clean_response["content"] = text
        if clean_calls:
            clean_response["tool_calls"] = clean_calls
        row: dict[str, Any] = {"session_id": sid, "step_id": step}
        if run is not None:
            row["job_id"] = run
        if agent is not None:
            row["agent_id"] = agent
        row["agent_model"] = draw(st.sampled_from(["model-a", "model-b"]))
        row["created_at"] = draw(st.one_of(st.integers(1_700_000_000, 1_800_000_000), st.just("2026-08-20T00:00:00Z")))
        row["messages"] = [*history, user, *results]
        row["response"] = {**response, **draw(UNKNOWN)}
        if env_name is not None:
            row["env_name"] = env_name
        if draw(st.booleans()):
            row["id"] = f"evt-{sid}-{step}"
        if draw(st.booleans()):
            row["reward"] = draw(st.one_of(st.none(), st.floats(0, 1), st.integers(0, 1)))
        state = {}
        if draw(st.booleans()):
            state["total_tokens"] = draw(st.integers(0, 999))
        if draw(st.booleans()):
            state["x_state"] = draw(TEXT)
        meta = {"env_state": state} if state else {}
        meta.update(draw(st.dictionaries(st.just("x_meta"), TEXT, max_size=1)))
        if meta:
            row["meta_json"] = meta
        row.update(draw(DISAGREEING))
        row.update(draw(UNKNOWN))
        rows.append(row)
        if type(clean_response.get("reasoning_content")) is not str:
            clean_response.pop("reasoning_content", None)  # the history says what the turn says
        history = [*history, {"role": "user", "content": user["content"]}, *results, clean_response]
        # (the history says the user message as the export writes it: its content, no other key)
        if draw(st.integers(0, 4)) == 0:
            # a message added mid-run, seen only in the later rows' histories (kept whole by them)
            history.append({"role": draw(st.sampled_from(["system", "developer", "user"])), "content": draw(TEXT)})
    return rows


@st.composite
def corpora(draw: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(corpus in canonical order, the same rows interleaved and out of order)."""
    calls = [0]
    sessions = [draw(session(f"s{n}", calls)) for n in range(draw(st.integers(1, 3)))]
    canonical: dict[str, Any] = {"session_steps": [row for rows in sessions for row in rows]}
    canonical.update(draw(st.dictionaries(st.just("x_root"), TEXT, max_size=1)))
    shuffled = dict(canonical, session_steps=draw(st.permutations(canonical["session_steps"])))
    return canonical, shuffled


# --- wild rows: every shape a row may take, valid or not ----------------------------------------

_CONTENT = st.one_of(
    st.none(),
    st.sampled_from(["", "text", "<tool_call>run x", "see <function=edit><parameter=path> a.py </parameter>"]),
    st.sampled_from([[{"text": "a"}], [{"type": "image"}], [{"text": ""}], [], {}, {"text": "t"}, 1, 0.5, True]),
    TEXT,
)
_ARGUMENTS = st.sampled_from(
    ['{"b":1,"a":2}', '{"a":1}', '{"a": 1}', "not json", '{"a":1,"a":2}', "[1]", '"s"', {"a": 1}, [1], 5, None]
)


@st.composite
def _wild_call(draw: Any) -> Any:
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from([None, 1, "c", {}, []]))
    function: dict[str, Any] = {}
    if draw(st.integers(0, 5)):
        function["name"] = draw(st.sampled_from(["run", "edit", "", None, 3]))
    if draw(st.booleans()):
        function["arguments"] = draw(_ARGUMENTS)
    function.update(draw(UNKNOWN))
    call: dict[str, Any] = {"id": draw(st.sampled_from(["c1", "c2", "c3", "", None]))}
    if draw(st.integers(0, 5)):
        call["function"] = function if draw(st.integers(0, 9)) else draw(st.sampled_from(["f", None]))
    if draw(st.booleans()):
        call["type"] = draw(st.sampled_from(["function", "other", None]))
    return {**call, **draw(UNKNOWN)}


@st.composite
def _wild_message(draw: Any, roles: list[Any]) -> Any:
    if draw(st.integers(0, 14)) == 0:
        return draw(st.sampled_from([None, 1, "m", []]))
    message: dict[str, Any] = {}
    if draw(st.integers(0, 9)):
        message["role"] = draw(st.sampled_from(roles))
    if draw(st.integers(0, 5)):
        message["content"] = draw(_CONTENT)
    if draw(st.integers(0, 2)) == 0:
        message["tool_calls"] = draw(
            st.one_of(st.lists(_wild_call(), max_size=3), st.sampled_from([None, [], {}, "x"]))
        )
    if draw(st.integers(0, 3)) == 0:
        message["tool_call_id"] = draw(st.sampled_from(["c1", "c2", "c9", "", None]))
    if draw(st.integers(0, 4)) == 0:
        message["refusal"] = draw(st.sampled_from(["no", "", None, [], {}, ["x"]]))
    if draw(st.integers(0, 4)) == 0:
        message["reasoning_content"] = draw(st.sampled_from(["why", "", None, 1]))
    if draw(st.integers(0, 6)) == 0:
        message["name"] = draw(st.sampled_from(["n", "", None, []]))
    return {**message, **draw(UNKNOWN)}


_ROW_VALUES = {
    "run_id": st.sampled_from(["r1", "r2", "", None]),
    "run_bucket": st.sampled_from(["b1", "", 3]),
    "job_id": st.sampled_from(["j1", "j2", ""]),
    "agent_id": st.sampled_from(["a1", "", None]),
    "agent_model": st.sampled_from(["m1", "m2", "", None, 7]),
    "llm_model": st.sampled_from(["l1", "", None]),
    "requested_model": st.sampled_from(["m1", "l1", "x"]),
    "llm_step_index": st.sampled_from([1, 2, 3, "1"]),
    "env_id": st.sampled_from(["s0", "s1", "e"]),
    "env_name": st.sampled_from(["env", "env2", "", None, 1]),
    "dataset_type": st.sampled_from(["train", "eval", "", None]),
    "dt": st.sampled_from(["2026-01-01", "", 5]),
    "id": st.sampled_from(["evt", "evt2", "", None]),
    "reward": st.one_of(st.none(), st.floats(0, 1), st.integers(-2, 2), st.just("x")),
    "step_reward": st.sampled_from([0.5, None, "x"]),
    "is_terminal": st.booleans(),
    "is_trainable": st.sampled_from([True, None, 0]),
    "blob_manifest": st.sampled_from([None, [], {}, ["b"]]),
    "chosen_response": st.sampled_from([None, {}, "c"]),
    "created_at": st.sampled_from([None, 1_700_000_000, 1.7e9, "2026-08-20T00:00:00Z", -5, 0]),
    "x_vendor": st.integers(0, 3),
}
_STATE_VALUES = {
    "total_latency_ms": st.sampled_from([5, 5.7, -3, 2**64 - 1, 2**63, "5", None, 1e30]),
    "ttft_ms": st.sampled_from([1, 2.5, None, "x"]),
    "total_tokens": st.integers(0, 99),
    "endpoint": st.sampled_from(["http://e", "http://f", "", None]),
    "redaction_policy": st.sampled_from(["p", "", {"a": 1}, [], None]),
    "upstream_base_url": st.sampled_from(["u", 1]),
    "weight_version": st.sampled_from(["w1", "w2"]),
    "event_type": st.sampled_from(["e", ""]),
    "request_id": st.sampled_from(["q", "q2", 4]),
    "session_id": st.sampled_from(["s0", "s1", "zz"]),
    "x_state": TEXT,
}


def _some(draw: Any, values: dict[str, Any], at_most: int) -> dict[str, Any]:
    keys = draw(st.lists(st.sampled_from(sorted(values)), max_size=at_most, unique=True))
    return {k: draw(values[k]) for k in keys}


@st.composite
def wild_row(draw: Any, sid: str, step: int) -> Any:
    """One row of any shape: odd messages, calls, arguments, values and keys at every level."""
    if draw(st.integers(0, 60)) == 0:
        return draw(st.sampled_from([None, 1, "row", []]))
    row: dict[str, Any] = {"session_id": sid if draw(st.integers(0, 60)) else draw(st.sampled_from(["", None, 1]))}
    if draw(st.integers(0, 40)) == 0:
        step = draw(st.sampled_from([0, "1", 1.0, 2**62, 2**63, 1]))
    row["step_id"] = step
    roles = ["system", "user", "assistant", "tool", "developer", None]
    if draw(st.integers(0, 9)):
        row["messages"] = draw(st.lists(_wild_message(roles), max_size=6))
        if draw(st.integers(0, 3)):
            row["messages"].append({"role": "user", "content": draw(TEXT)})
            row["messages"].extend(draw(st.lists(_wild_message(["tool", "assistant"]), max_size=2)))
    if draw(st.integers(0, 11)):
        row["response"] = draw(_wild_message(["assistant", "user", None]))
        if type(row["response"]) is dict and draw(st.integers(0, 7)):
            row["response"]["role"] = "assistant"
            row["response"]["content"] = draw(TEXT)
    row.update(_some(draw, _ROW_VALUES, 5))
    if draw(st.integers(0, 40)) == 0:
        row["created_at"] = draw(st.sampled_from(["bad", True, "2026-13-01T00:00:00Z"]))
    if draw(st.booleans()):
        meta: dict[str, Any] = {}
        if draw(st.integers(0, 4)):
            meta["env_state"] = _some(draw, _STATE_VALUES, 4)
        if draw(st.booleans()):
            meta["group_id"] = draw(st.sampled_from(["g1", "g2", ""]))
        if draw(st.booleans()):
            meta["source"] = draw(st.sampled_from(["a1", "src"]))
        if draw(st.integers(0, 4)) == 0 and "env_state" in meta:
            meta["env_state"] = json.dumps(meta["env_state"])
        row["meta_json"] = json.dumps(meta) if draw(st.integers(0, 3)) == 0 else meta
        if draw(st.integers(0, 20)) == 0:
            row["meta_json"] = draw(st.sampled_from(["{bad", 3, None]))
    return row


@st.composite
def wild_corpora(draw: Any) -> Any:
    """A corpus of wild rows (one to three sessions, rows in any order), as an object or a bare array."""
    steps = draw(st.lists(st.integers(1, 9), min_size=1, max_size=5, unique=True))
    rows = [draw(wild_row(f"s{draw(st.integers(0, 2))}", step)) for step in steps]
    return (
        {"session_steps": rows, **draw(st.dictionaries(st.just("x_root"), TEXT, max_size=1))}
        if draw(st.booleans())
        else rows
    )
