"""Hypothesis strategies shared by the test suite: free JSON and valid Storyline documents.

Import them as ``from strategies import storyline_documents`` (``tests/`` is on ``sys.path``
through its ``conftest.py``).  Everything stays small so that properties run fast: a document has
at most three turns and two tool calls per turn, an object at most a few optional keys, and a free
JSON value at most a few leaves.  Strategies are built once (module constants, cached factories):
building them inside a draw is what makes generation slow.

Hostile object keys come up often: ``/``, ``~``, ``~01``, ``""``, ``"0"``, ``"01"`` and non-ASCII
text, so pointer escaping and "key that looks like an index" mistakes show.
"""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Any

from hypothesis import strategies as st

from mapc.engine import pointer

I64_MIN = -(2**63)
I64_MAX = 2**63 - 1
# Epoch seconds whose nanoseconds fit in i64 (R-TS): about 1677-09-21 … 2262-04-11.
EPOCH_SECONDS_MIN = -9_223_372_036
EPOCH_SECONDS_MAX = 9_223_372_036

HOSTILE_KEYS = ("/", "~", "~0", "~1", "~01", "a/b", "m~n", "", "0", "01", "-", " ", "é", "键", "🙂")
KNOWN_SOURCES = frozenset({"atif", "actf", "openai-msg", "agenticmd"})
ENV_STRINGS = ("name", "endpoint", "id", "event_type", "request_id")

# --- free JSON ---------------------------------------------------------------------------------


@functools.cache
def object_keys() -> st.SearchStrategy[str]:
    """Object keys, hostile ones often."""
    return st.one_of(st.sampled_from(HOSTILE_KEYS), st.text(max_size=6))


@functools.cache
def json_scalars() -> st.SearchStrategy[Any]:
    """JSON scalars as orjson gives them: None, bool, i64, finite float, str."""
    return st.one_of(
        st.none(),
        st.booleans(),
        st.integers(I64_MIN, I64_MAX),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=8),
    )


@functools.cache
def json_values(max_leaves: int = 6) -> st.SearchStrategy[Any]:
    """Free JSON: nested lists and objects (hostile keys) over `json_scalars`."""
    return st.recursive(
        json_scalars(),
        lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(object_keys(), inner, max_size=3)),
        max_leaves=max_leaves,
    )


@functools.cache
def json_objects(max_leaves: int = 6) -> st.SearchStrategy[dict[str, Any]]:
    """Free JSON objects (hostile keys)."""
    return st.dictionaries(object_keys(), json_values(max_leaves), max_size=3)


# --- scalars of the Storyline wire --------------------------------------------------------------


@functools.cache
def i64s() -> st.SearchStrategy[int]:
    """Signed 64-bit integers."""
    return st.integers(I64_MIN, I64_MAX)


@functools.cache
def short_text() -> st.SearchStrategy[str]:
    """Short strings, empty and hostile ones included."""
    return st.one_of(st.sampled_from(HOSTILE_KEYS), st.text(max_size=4))


@functools.cache
def non_empty_text() -> st.SearchStrategy[str]:
    """A non-empty string, hostile ones included."""
    return st.one_of(st.sampled_from([k for k in HOSTILE_KEYS if k]), st.text(min_size=1, max_size=6))


def _rfc3339(moment: datetime, separator: str, digits: int | None, zone: str | int) -> str:
    text = moment.strftime("%Y-%m-%d") + separator + moment.strftime("%H:%M:%S")
    if digits is not None:  # more than 9 digits are valid too: the parser truncates them
        text += "." + f"{moment.microsecond:06d}{moment.microsecond:06d}"[:digits]
    if isinstance(zone, str):
        return text + zone
    sign = "-" if zone < 0 else "+"
    return text + f"{sign}{abs(zone) // 60:02d}:{abs(zone) % 60:02d}"


@functools.cache
def rfc3339_strings() -> st.SearchStrategy[str]:
    """Timestamps the R-TS grammar accepts (chrono's RFC 3339), inside the i64-nanosecond range."""
    # A day of margin at each end keeps every offset inside 1677-09-21 … 2262-04-11.
    return st.builds(
        _rfc3339,
        st.datetimes(min_value=datetime(1678, 1, 2), max_value=datetime(2261, 12, 30)),
        st.sampled_from("Tt "),
        st.one_of(st.none(), st.integers(1, 12)),
        st.one_of(st.sampled_from(["Z", "z"]), st.integers(-(23 * 60 + 59), 23 * 60 + 59)),
    )


@functools.cache
def timestamps() -> st.SearchStrategy[str | int]:
    """R-TS values: an RFC 3339 string or integer Unix epoch seconds."""
    return st.one_of(rfc3339_strings(), st.integers(EPOCH_SECONDS_MIN, EPOCH_SECONDS_MAX))


@functools.cache
def pointers() -> st.SearchStrategy[str]:
    """RFC 6901 pointers over hostile tokens (``""`` included: the whole document)."""
    tokens = st.one_of(object_keys(), st.integers(0, 12).map(str))
    return st.lists(tokens, max_size=3).map(pointer.format)


def _nullable(value: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """An Option field's value: null (which means absent) or a value."""
    return st.one_of(st.none(), value)


# --- objects -------------------------------------------------------------------------------------


@functools.cache
def _key_subsets(keys: tuple[str, ...], at_most: int) -> st.SearchStrategy[list[str]]:
    return st.lists(st.sampled_from(keys), unique=True, max_size=at_most)


def _draw_fields(
    draw: st.DrawFn,
    required: dict[str, Any],
    optional: dict[str, st.SearchStrategy[Any]],
    at_most: int,
) -> dict[str, Any]:
    """`required` plus up to `at_most` of the `optional` keys, in random order.

    Drawing a subset, rather than deciding every key, keeps documents small while every optional
    key still shows up, with a value or (where its strategy allows) with null."""
    out = dict(required)
    for key in draw(_key_subsets(tuple(optional), at_most)):
        out[key] = draw(optional[key])
    return out


@st.composite
def origins(draw: st.DrawFn) -> dict[str, Any]:
    """R-O: format non-empty; schema_version and document_id non-empty when present; `kept`, the
    values of keys the format defines that no Storyline field says (engine/known.py)."""
    optional = {
        "schema_version": _nullable(non_empty_text()),
        "document_id": _nullable(non_empty_text()),
        "kept": st.fixed_dictionaries(
            {"source_document_id": short_text(), "fields": st.dictionaries(pointers(), json_values(1), max_size=1)}
        ),
    }
    return _draw_fields(draw, {"format": draw(non_empty_text())}, optional, 2)


_AGENT_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "name": _nullable(short_text()),
    "ver": _nullable(short_text()),
    "model": _nullable(short_text()),
    "tools": json_values(3),
    "extra": json_values(3),
}


@st.composite
def agents(draw: st.DrawFn) -> dict[str, Any]:
    """R-A: agent.id non-empty; name/ver/model strings; tools/extra any JSON."""
    return _draw_fields(draw, {"id": draw(non_empty_text())}, _AGENT_FIELDS, 2)


_PARENT_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "scid": _nullable(short_text()),
    "ptid": _nullable(i64s()),
    "rel": st.sampled_from(["spawn", "handoff", ""]),  # a plain String in the reference: never null
}


@st.composite
def parents(draw: st.DrawFn) -> dict[str, Any]:
    """The parent link: psid required."""
    return _draw_fields(draw, {"psid": draw(short_text())}, _PARENT_FIELDS, 3)


_ENV_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    **{key: _nullable(short_text()) for key in ENV_STRINGS},
    "state": _nullable(json_objects(3)),
}


@st.composite
def envs(draw: st.DrawFn, carrying: bool = False) -> dict[str, Any]:
    """task.env / turns[].env; with `carrying`, one string field holds a value (R-TASK)."""
    env = _draw_fields(draw, {}, _ENV_FIELDS, 3)
    if carrying:
        env[draw(st.sampled_from(ENV_STRINGS))] = draw(short_text())
    return env


RESULT_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "correct": _nullable(st.booleans()),
    "final_answer": json_values(3),
    "ground_truth": json_values(3),
    "status": _nullable(short_text()),
    "score": json_values(3),
    "max_score": json_values(3),
    "error": _nullable(short_text()),
    "artifacts": json_values(3),
    # The ACTF extras, typed as storyline-v1.schema.json documents them.
    "task_correct": _nullable(st.booleans()),
    "category": _nullable(short_text()),
    "attempts_tried": _nullable(i64s()),
    "solved_at": json_values(3),
    "retry_count": json_values(3),
    "retry_counts": json_values(3),
}
_RESULT_EXTRAS = st.dictionaries(object_keys().filter(lambda k: k not in RESULT_FIELDS), json_values(3), max_size=2)


@st.composite
def results(draw: st.DrawFn, carrying: bool = False) -> dict[str, Any]:
    """task.result: typed keys, the ACTF extras and free extra keys; with `carrying`, one
    non-null value (R-TASK)."""
    result = {**draw(_RESULT_EXTRAS), **_draw_fields(draw, {}, RESULT_FIELDS, 3)}
    if carrying:
        result["correct"] = draw(st.booleans())
    return result


_LLM_WITH_K = st.builds(lambda k: {"k": k}, st.integers(1, I64_MAX))
_TASK_PARTS: dict[str, tuple[st.SearchStrategy[Any], st.SearchStrategy[Any]]] = {
    "env": (envs(carrying=True), _nullable(envs())),
    "llm": (_LLM_WITH_K, _nullable(st.one_of(_LLM_WITH_K, st.just({}), st.just({"k": None})))),
    "result": (results(carrying=True), _nullable(results())),
}


@st.composite
def tasks(draw: st.DrawFn) -> dict[str, Any]:
    """R-TASK: a task with at least one of env, llm.k (> 0) or result carrying a value."""
    carrier = draw(st.sampled_from(sorted(_TASK_PARTS)))
    task = {carrier: draw(_TASK_PARTS[carrier][0])}
    for key in draw(_key_subsets(tuple(sorted(_TASK_PARTS)), 2)):
        if key != carrier:
            task[key] = draw(_TASK_PARTS[key][1])
    return task


@st.composite
def document_prompts(draw: st.DrawFn) -> dict[str, Any]:
    """R-P document prompt: at least one non-empty string."""
    key, other = draw(st.sampled_from([("system", "user"), ("user", "system")]))
    prompt = {key: draw(st.text(min_size=1, max_size=4))}
    if draw(st.booleans()):
        prompt[other] = draw(_nullable(short_text()))
    return prompt


@functools.cache
def turn_prompts() -> st.SearchStrategy[dict[str, Any]]:
    """R-P turn prompt: at least one non-empty string, or the explicit clear."""
    return st.one_of(document_prompts(), st.just({"system": "", "user": ""}))


@st.composite
def responses(draw: st.DrawFn) -> dict[str, Any]:
    """R-RESP: status and/or exit_code, at least one of them non-null."""
    values = {"status": short_text(), "exit_code": i64s()}
    key, other = draw(st.sampled_from([("status", "exit_code"), ("exit_code", "status")]))
    response = {key: draw(values[key])}
    if draw(st.booleans()):
        response[other] = draw(_nullable(values[other]))
    return response


_TOOL_CALL_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "result": json_values(3),
    "duration_ms": _nullable(i64s()),
    "extra": json_values(3),
    "kind": _nullable(st.sampled_from(["", "tool_use", "command_execution"])),
    "response": _nullable(responses()),
}


def draw_tool_call(draw: st.DrawFn, tcid: str) -> dict[str, Any]:
    """One tool call with the given (document-unique) tcid."""
    required = {"tcid": tcid, "fn": draw(non_empty_text()), "args": draw(json_values(3))}
    return _draw_fields(draw, required, _TOOL_CALL_FIELDS, 3)


TURN_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "kind": _nullable(st.sampled_from(["dialogue", "autonomous", "internal", "llm.request", ""])),
    "ts": _nullable(timestamps()),
    "reason": _nullable(short_text()),
    "effort": json_values(3),
    "observation": json_values(3),
    "metrics": json_values(3),
    "model": _nullable(short_text()),
    "nllm": _nullable(i64s()),
    "copied": _nullable(st.booleans()),
    "latency_ms": _nullable(i64s()),
    "ttft_ms": _nullable(i64s()),
    "extra": json_values(3),
    "env": _nullable(envs()),
    "prompt": _nullable(turn_prompts()),
    "finished_at": _nullable(timestamps()),
}
_SOURCES = st.one_of(st.sampled_from(["user", "agent", "system", "tool"]), non_empty_text())


def draw_turn(draw: st.DrawFn, turn_id: int, tcids: list[str] | None) -> dict[str, Any]:
    """One turn; `tcids` None leaves ``tool_calls`` out or null, else one call per tcid."""
    required = {"id": turn_id, "src": draw(_SOURCES), "msg": draw(json_values(3))}
    turn = _draw_fields(draw, required, TURN_FIELDS, 4)
    if turn.get("copied") is True:
        turn.pop("prompt", None)  # a copied turn never carries a prompt (R-P)
    if tcids is not None:
        turn["tool_calls"] = [draw_tool_call(draw, tcid) for tcid in tcids]
    elif draw(st.booleans()):
        turn["tool_calls"] = None
    return turn


# --- residuals ------------------------------------------------------------------------------------

_UNKNOWN_SOURCE_NAMES = st.one_of(st.sampled_from(["future-format", "x", "", "/", "~01"]), st.text(max_size=6)).filter(
    lambda name: name not in KNOWN_SOURCES
)


@st.composite
def unknown_residuals(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, dict[str, int]]]:
    """``(unknown_fields, unknown_key_counts)`` that agree (R-UKC), for unknown sources only.

    An unknown source keeps its pointers as they are, so each stored pointer counts 1 under
    itself, and a source with no field has no count entry."""
    names = draw(st.lists(_UNKNOWN_SOURCE_NAMES, min_size=1, max_size=2, unique=True))
    sources: dict[str, Any] = {}
    counts: dict[str, dict[str, int]] = {}
    for name in names:
        fields = draw(st.dictionaries(pointers(), json_values(3), max_size=3))
        sources[name] = {"source_document_id": draw(short_text()), "fields": fields}
        if fields:
            counts[name] = dict.fromkeys(fields, 1)
    return {"sources": sources}, counts


# --- whole documents --------------------------------------------------------------------------------

ROOT_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "origin": _nullable(origins()),
    "run": _nullable(short_text()),
    "trajectory": _nullable(non_empty_text()),
    "attempt_id": _nullable(short_text()),
    "parent": _nullable(parents()),
    "children": _nullable(st.lists(short_text(), max_size=2)),
    "notes": _nullable(short_text()),
    "task": _nullable(tasks()),
    "prompt": _nullable(document_prompts()),
    "started_at": _nullable(timestamps()),
    "finished_at": _nullable(timestamps()),
    "final_metrics": json_values(3),
    "continued_trajectory_ref": _nullable(short_text()),
    "extra": json_values(3),
    "meta": json_values(3),
}


@st.composite
def storyline_documents(draw: st.DrawFn, max_turns: int = 3) -> dict[str, Any]:
    """A valid ``storyline/v1`` document: schema-valid and semantically valid (docs/storyline.md).

    Every optional field is sometimes absent, sometimes null (where null means absent) and
    sometimes set; keys come in random order.  Turn ids are unique and in random order; tcids are
    unique across the document; timestamps are RFC 3339 strings or integer epoch seconds;
    ``unknown_fields`` (unknown sources) comes with the matching ``unknown_key_counts``.
    """
    required = {"schema_version": "storyline/v1", "session": draw(non_empty_text()), "agent": draw(agents())}
    doc = _draw_fields(draw, required, ROOT_FIELDS, 5)
    if draw(st.booleans()):
        doc["unknown_fields"], counts = draw(unknown_residuals())
        empty_written = draw(st.booleans())  # no count entry at all may also be written as {}
        if counts or empty_written:
            doc["unknown_key_counts"] = counts
    ids = draw(st.lists(i64s(), max_size=max_turns, unique=True))
    calls = [draw(st.one_of(st.none(), st.integers(0, 2))) for _ in ids]
    total = sum(n or 0 for n in calls)
    tcids = draw(st.lists(non_empty_text(), min_size=total, max_size=total, unique=True))
    doc["turns"] = []
    for turn_id, n in zip(ids, calls, strict=True):
        mine, tcids = (None, tcids) if n is None else (tcids[:n], tcids[n:])
        doc["turns"].append(draw_turn(draw, turn_id, mine))
    return doc
