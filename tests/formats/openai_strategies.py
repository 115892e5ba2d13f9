"""Hypothesis corpora of OpenAI Messages rows, written the way an exporter writes them.

`corpora()` draws sessions (context messages, tool calls with arguments as objects or compact
text, responses and refusals, env and metric keys, unknown keys at every level) and lays their rows
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
            response["reasoning_content"] = draw(TEXT)
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
        history = [*history, {"role": "user", "content": user["content"]}, *results, clean_response]
        # (the history says the user message as the export writes it: its content, no other key)
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
