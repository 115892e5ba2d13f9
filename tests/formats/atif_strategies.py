"""Hypothesis strategies for ATIF v1.7 trajectories (docs/formats.md, ATIF) that mapc must accept.

Every document drawn here passes every ATIF reject rule: a non-empty identity at the root,
non-empty trajectory ids unique in the whole tree (the root's included), non-empty agent name and
version, step ids ≥ 1 and unique per node, non-empty tool call ids unique per node, RFC 3339
timestamps, observations with ``results``.  Values the Storyline validator needs non-empty (a
step ``source``, a ``function_name``) are non-empty too.

Unknown keys are drawn at the root, the agent, every step, tool call and observation, with hostile
names (``/``, ``~``, ``~01``, ``"0"``, ``""``…) and free JSON values (null and nested ones).
Known optional fields are absent, null or set; an explicit null of a known optional field is
the one difference the fidelity boundary allows (see `without_known_nulls`).

Identities: document ids (``trajectory_id``, else ``session_id``) must also be unique in a tree
for the reverse to rebuild it; the root's ``session_id`` standing in as its document id and a
child's ``trajectory_id`` equal to it is a separate, minimal test, so identities here come from
disjoint namespaces (``{prefix}S…``, ``{prefix}T…``).
"""

from __future__ import annotations

import functools
from typing import Any

from hypothesis import strategies as st
from strategies import json_values, non_empty_text, rfc3339_strings

from mapc.engine.values import json_equal

ROOT_KEYS = frozenset(
    {
        "schema_version",
        "session_id",
        "trajectory_id",
        "agent",
        "steps",
        "notes",
        "final_metrics",
        "continued_trajectory_ref",
        "extra",
        "subagent_trajectories",
    }
)
AGENT_KEYS = frozenset({"name", "version", "model_name", "tool_definitions", "extra"})
STEP_KEYS = frozenset(
    {
        "step_id",
        "timestamp",
        "source",
        "message",
        "model_name",
        "reasoning_effort",
        "reasoning_content",
        "tool_calls",
        "observation",
        "metrics",
        "extra",
        "llm_call_count",
        "is_copied_context",
    }
)
TOOL_CALL_KEYS = frozenset({"tool_call_id", "function_name", "arguments", "result", "extra"})
OBSERVATION_KEYS = frozenset({"results"})

# Known keys that may be left out; for these (and only these) null and missing mean the same.
ROOT_OPTIONAL = ROOT_KEYS - {"schema_version", "agent", "steps"}
AGENT_OPTIONAL = AGENT_KEYS - {"name", "version"}
STEP_OPTIONAL = STEP_KEYS - {"step_id", "source", "message"}
TOOL_CALL_OPTIONAL = TOOL_CALL_KEYS - {"tool_call_id", "function_name", "arguments"}

# Key names that break naive pointer code: escapes, "looks like an index", empty, non-ASCII.
HOSTILE_UNKNOWN_KEYS = (
    "vendor/root",
    "a~b",
    "~01",
    "~1",
    "/",
    "~",
    "0",
    "1",
    "01",
    "",
    "-",
    " ",
    "x-vendor",
    "键",
)
ENVELOPE_KEY = "_storyline"  # reserved at a document root (docs/envelope.md): never an unknown key

_ABSENT: Any = object()
_JSON = json_values(4)
_JSON_SMALL = json_values(2)
_NON_EMPTY = non_empty_text()


def _nested(depth: int, leaf: Any) -> Any:
    out = leaf
    for n in range(depth):
        out = [out] if n % 2 else {"d": out}
    return out


# A deeply nested value, rare, in a free place (a step's `extra`): as deep as the laws' own writer
# (orjson, 254 levels) can write it with the document and a hop's envelope around it.  Deeper
# values, up to the 1,024 levels mapc parses, are tests/hardening's (mapc writes those with the
# standard library).
DEEP = st.builds(_nested, st.integers(100, 230), st.sampled_from([None, 1, "x", {}]))


@functools.cache
def parts() -> st.SearchStrategy[Any]:
    """A content part as mapc reads it: Harbor's text, image and audio parts (ATIF v1.6–v1.8), each
    with unknown keys at times, or any other object (a future part type)."""
    from harbor_strategies import content_parts

    known = st.builds(lambda p, extra: {**p, **extra}, content_parts(), unknowns(frozenset({"type", "text", "source"})))
    return st.one_of(known, known, known, st.dictionaries(_NON_EMPTY, _JSON_SMALL, max_size=2))


def _content() -> st.SearchStrategy[Any]:
    """A message or result content: any JSON (text mostly, null included) or a list of parts."""
    return st.one_of(_JSON, st.lists(parts(), max_size=3))


def _result() -> st.SearchStrategy[Any]:
    """An observation result: Harbor's shape (content, source_call_id, subagent refs, extra) with
    unknown keys, or any JSON (mapc keeps what it cannot read whole)."""
    shaped = st.builds(
        lambda content, extra, more: {"content": content, **extra, **more},
        _content(),
        _optionals({"extra": _JSON_SMALL, "subagent_trajectory_ref": st.lists(_JSON_SMALL, max_size=1)}),
        unknowns(frozenset({"content", "source_call_id", "extra", "subagent_trajectory_ref"})),
    )
    return st.one_of(shaped, _JSON_SMALL)


@functools.cache
def unknown_keys(known: frozenset[str], *, root: bool = False) -> st.SearchStrategy[str]:
    """Object keys the ATIF model does not know at a level with `known` keys."""
    keys = st.one_of(st.sampled_from(HOSTILE_UNKNOWN_KEYS), st.text(max_size=5))
    return keys.filter(lambda k: k not in known and not (root and k == ENVELOPE_KEY))


@functools.cache
def unknowns(known: frozenset[str], *, root: bool = False) -> st.SearchStrategy[dict[str, Any]]:
    """0–2 unknown keys with free JSON values (null and nested values included)."""
    return st.dictionaries(unknown_keys(known, root=root), _JSON, max_size=2)


def _maybe(value: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Absent, an explicit null (a known optional field), or a value."""
    return st.one_of(st.just(_ABSENT), st.none(), value)


def _optionals(optional: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """The present ones of `optional` (each absent, null or a value), drawn as one strategy."""
    return st.fixed_dictionaries({k: _maybe(v) for k, v in optional.items()}).map(
        lambda d: {k: v for k, v in d.items() if v is not _ABSENT}
    )


@functools.cache
def millis() -> st.SearchStrategy[Any]:
    """A metrics timing: an int, a float (truncated on import), a string (no promotion) or null.

    Floats stay well inside the i64 range; huge ones are a separate minimal test.
    """
    return st.one_of(
        st.integers(-(10**12), 10**12),
        st.floats(-1e12, 1e12, allow_nan=False, allow_infinity=False),
        st.sampled_from(["12", "", "fast"]),
        st.none(),
    )


@functools.cache
def metrics() -> st.SearchStrategy[Any]:
    """Step metrics: an object with any of the promoted timing keys, or any JSON."""
    timing = st.fixed_dictionaries(
        {},
        optional={
            "latency_ms": millis(),
            "elapsed_ms": millis(),
            "duration_ms": millis(),
            "ttft_ms": millis(),
            "prompt_tokens": st.integers(0, 10**6),
            "vendor/x": _JSON_SMALL,
        },
    )
    return st.one_of(timing, timing, _JSON)


@functools.cache
def tool_extras() -> st.SearchStrategy[Any]:
    """A tool call `extra`: with ``duration_ms`` int (promoted), float or string (not), or any JSON."""
    with_duration = st.fixed_dictionaries(
        {
            "duration_ms": st.one_of(
                st.integers(-(10**12), 10**12),
                st.floats(-1e12, 1e12, allow_nan=False, allow_infinity=False),
                st.just("5"),
            )
        },
        optional={"raw": _JSON_SMALL, "0": _JSON_SMALL},
    )
    return st.one_of(with_duration, with_duration, _JSON)


_TOOL_CALL_OPTIONAL = _optionals({"result": _JSON, "extra": tool_extras()})
_STEP_OPTIONAL = _optionals(
    {
        "timestamp": rfc3339_strings(),
        "model_name": st.text(max_size=6),
        "reasoning_effort": _JSON_SMALL,
        "reasoning_content": st.text(max_size=6),
        "observation": st.builds(
            lambda results, extra: {"results": results, **extra},
            st.lists(_result(), max_size=3),
            unknowns(OBSERVATION_KEYS),
        ),
        "metrics": metrics(),
        "extra": st.one_of(_JSON, _JSON, _JSON, _JSON, _JSON, _JSON, _JSON, _JSON, _JSON, DEEP),
        "llm_call_count": st.integers(0, 10**6),
        "is_copied_context": st.booleans(),
    }
)
_AGENT_OPTIONAL = _optionals({"model_name": st.text(max_size=6), "tool_definitions": _JSON, "extra": _JSON})
_ROOT_OPTIONAL = _optionals(
    {
        "notes": st.text(max_size=6),
        "final_metrics": _JSON,
        "continued_trajectory_ref": st.text(max_size=6),
        "extra": _JSON,
    }
)
SOURCES = ("user", "agent", "system", "tool", "environment")
_SOURCE = st.one_of(st.sampled_from(SOURCES), st.sampled_from(SOURCES), _NON_EMPTY)
_ABSENT_NULL_OR_EMPTY = st.sampled_from(["absent", "null", "empty"])


def _absent_null_or_empty(draw: st.DrawFn, obj: dict[str, Any], key: str) -> None:
    """Leave `key` out, or set it to null or []: three ways of "none" that must survive."""
    choice = draw(_ABSENT_NULL_OR_EMPTY)
    if choice != "absent":
        obj[key] = None if choice == "null" else []


def _tool_call(draw: st.DrawFn, tool_call_id: str) -> dict[str, Any]:
    call: dict[str, Any] = {
        "tool_call_id": tool_call_id,
        "function_name": draw(_NON_EMPTY),
        "arguments": draw(_JSON),  # any JSON, null included (required)
        **draw(_TOOL_CALL_OPTIONAL),
    }
    call.update(draw(unknowns(TOOL_CALL_KEYS)))
    return call


def _step(draw: st.DrawFn, step_id: int, tool_call_ids: list[str]) -> dict[str, Any]:
    step: dict[str, Any] = {
        "step_id": step_id,
        "source": draw(_SOURCE),
        "message": draw(_content()),  # any JSON, null included (required), or content parts
        **draw(_STEP_OPTIONAL),
    }
    n_calls = draw(st.integers(0, min(2, len(tool_call_ids))))
    if n_calls:
        step["tool_calls"] = [_tool_call(draw, tool_call_ids.pop()) for _ in range(n_calls)]
    else:  # [] is kept apart from absent (R-ORDER)
        _absent_null_or_empty(draw, step, "tool_calls")
    step.update(draw(unknowns(STEP_KEYS)))
    return step


def _agent(draw: st.DrawFn) -> dict[str, Any]:
    agent: dict[str, Any] = {
        "name": draw(_NON_EMPTY),
        "version": draw(_NON_EMPTY),
        **draw(_AGENT_OPTIONAL),
    }
    agent.update(draw(unknowns(AGENT_KEYS)))
    return agent


class _Ids:
    """Fresh identities for one drawn tree: trajectory ids and sessions never collide."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.n = 0

    def next(self, kind: str, suffix: str) -> str:
        self.n += 1
        return f"{self.prefix}{kind}{self.n}{suffix}"


# Every version Harbor's models define (ATIF-v1.0 … v1.8), and one mapc does not know (a warning).
_SCHEMA_VERSIONS = st.sampled_from(["ATIF-v1.7", *(f"ATIF-v1.{n}" for n in range(9)), "x"])
_SUFFIXES = st.sampled_from(["", "/x", "~y", " é"])
_ROOT_SHAPES = st.sampled_from(["both", "session", "trajectory", "equal"])
_CHILD_SHAPES = st.sampled_from(["both", "trajectory", "shared"])  # shared: the parent's session_id


def _trajectory(
    draw: st.DrawFn, ids: _Ids, depth: int, top: bool, max_steps: int, parent_session: Any = None
) -> dict[str, Any]:
    doc: dict[str, Any] = {"schema_version": draw(_SCHEMA_VERSIONS), "agent": _agent(draw)}
    # Identity: the root needs a non-empty session_id or trajectory_id; a child a trajectory_id.
    # "equal" (session_id == trajectory_id) and an empty session_id are kept too; "shared": a
    # subagent with its parent's session_id (Harbor's subagents; one OpenAI session, one ACTF task).
    suffix = draw(_SUFFIXES)
    shape = draw(_ROOT_SHAPES if top else _CHILD_SHAPES)
    if shape != "session":
        doc["trajectory_id"] = ids.next("T", suffix)
    if shape == "shared" and parent_session:
        doc["session_id"] = parent_session
    elif shape == "equal":
        doc["session_id"] = doc["trajectory_id"]
    elif shape in ("both", "session"):
        doc["session_id"] = ids.next("S", suffix)
    elif draw(st.booleans()):
        doc["session_id"] = draw(st.sampled_from([None, ""]))
    n_steps = draw(st.integers(0, max_steps))
    step_ids = draw(st.lists(st.integers(1, 2**40), min_size=n_steps, max_size=n_steps, unique=True))
    call_ids = draw(st.lists(_NON_EMPTY, min_size=2 * n_steps, max_size=2 * n_steps, unique=True))
    doc["steps"] = [_step(draw, i, call_ids) for i in step_ids]
    doc.update(draw(_ROOT_OPTIONAL))
    if depth > 0:
        n_children = draw(st.integers(0, 2))
        if n_children:
            doc["subagent_trajectories"] = [
                _trajectory(draw, ids, depth - 1, False, max_steps, doc.get("session_id")) for _ in range(n_children)
            ]
        else:
            _absent_null_or_empty(draw, doc, "subagent_trajectories")
    doc.update(draw(unknowns(ROOT_KEYS, root=top)))
    return doc


@st.composite
def _documents(draw: st.DrawFn, prefix: str, max_depth: int, max_steps: int) -> dict[str, Any]:
    return _trajectory(draw, _Ids(prefix), max_depth, top=True, max_steps=max_steps)


def atif_documents(prefix: str = "", max_depth: int = 2, max_steps: int = 2) -> st.SearchStrategy[dict[str, Any]]:
    """A valid top-level ATIF trajectory, with subagents nested up to `max_depth` levels.

    Identities start with `prefix`, so documents drawn with different prefixes can share a file.
    """
    return _documents(prefix, max_depth, max_steps)


def atif_containers(max_size: int = 3) -> st.SearchStrategy[list[dict[str, Any]]]:
    """1–`max_size` valid trajectories with distinct identities, for array and JSONL files."""
    return st.integers(1, max_size).flatmap(
        lambda n: st.tuples(*(atif_documents(prefix=f"e{i}-", max_depth=1, max_steps=2) for i in range(n))).map(list)
    )


def without_known_nulls(doc: Any) -> Any:
    """`doc` without explicit nulls of known optional fields, at every level of the tree.

    The ATIF fidelity boundary: a known optional field that is null and one that is missing
    mean the same, so export never writes the null back.  Unknown keys keep their nulls.
    """
    out = _drop(doc, ROOT_OPTIONAL)
    if type(out.get("agent")) is dict:
        out["agent"] = _drop(out["agent"], AGENT_OPTIONAL)
    if type(out.get("steps")) is list:
        out["steps"] = [_step_without_nulls(s) for s in out["steps"]]
    if type(out.get("subagent_trajectories")) is list:
        out["subagent_trajectories"] = [without_known_nulls(c) for c in out["subagent_trajectories"]]
    return out


def _step_without_nulls(step: Any) -> Any:
    if type(step) is not dict:
        return step
    out = _drop(step, STEP_OPTIONAL)
    if type(out.get("tool_calls")) is list:
        out["tool_calls"] = [_drop(c, TOOL_CALL_OPTIONAL) if type(c) is dict else c for c in out["tool_calls"]]
    return out


def _drop(obj: dict[str, Any], optional: frozenset[str]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if not (v is None and k in optional)}


def has_known_nulls(doc: Any) -> bool:
    """True when `doc` has an explicit null of a known optional field somewhere."""
    return not json_equal(without_known_nulls(doc), doc)


@st.composite
def atif_segments(draw: st.DrawFn) -> list[dict[str, Any]]:
    """2–3 continuation segments of one run (ATIF v1.7): documents sharing one `session_id`, each
    with its own `trajectory_id`, a later one naming the one before in `continued_trajectory_ref`
    (or not: a ref is optional), for an array or JSONL file."""
    n = draw(st.integers(2, 3))
    docs = [draw(atif_documents(prefix=f"seg{k}-", max_depth=1, max_steps=2)) for k in range(n)]
    session = f"run-{draw(st.integers(0, 99))}"
    for k, doc in enumerate(docs):
        doc["session_id"] = session
        doc["trajectory_id"] = f"seg{k}-T"
        for child in doc.get("subagent_trajectories") or []:  # a subagent sharing the session, as Harbor writes them
            if draw(st.booleans()):
                child["session_id"] = session
        if k and draw(st.booleans()):
            doc["continued_trajectory_ref"] = docs[k - 1]["trajectory_id"]
    return docs
