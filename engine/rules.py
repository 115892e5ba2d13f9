"""The Storyline (``storyline/v1``) rules that JSON Schema cannot say (docs/storyline.md, "Rules").

`iter_problems` walks a document once and yields every broken rule as a `Problem`, in document
order: root fields in the order mapc writes them, then turns in array order, each turn's fields
in written order.  Shapes, types, required keys, undeclared keys and non-empty strings are the
structural validator's (``schema.py``): every check here looks at a value only once its type is
right and stays silent otherwise, so no mistake is reported twice and no document crashes it.

The walk is built for 30 MB documents: one pass over the turns, and nothing is allocated for a
valid value beyond the two identity maps (turn ids, tool call ids) the uniqueness rules need.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any, Final

from mapc.engine.problems import Problem
from mapc.engine.residual import Tree, iter_field_problems, iter_sources, recompute_counts
from mapc.engine.timestamp import TimestampError, timestamp_ns
from mapc.engine.values import MISSING, json_equal

SCHEMA_VERSION: Final = "storyline/v1"

_ENV_STRINGS: Final = ("name", "endpoint", "id", "event_type", "request_id")
_TASK_KEYS: Final = frozenset(("env", "llm", "result"))
_PROMPT_KEYS: Final = frozenset(("system", "user"))


def iter_problems(doc: Any, count_trees: Mapping[str, Tree]) -> Iterator[Problem]:
    """Yield every semantic Storyline problem of `doc`, in document order.

    `count_trees` gives, per residual source, the count tree `recompute_counts` uses to check
    ``unknown_key_counts`` (R-UKC).  A ``schema_version`` other than ``storyline/v1`` is an
    unsupported document: that one problem is yielded and nothing else is checked.
    """
    if type(doc) is not dict:
        return
    problem = version_problem(doc)
    if problem is not None:
        yield problem
        return
    for problem in (
        _task_problem(doc.get("task")),
        _prompt_problem(doc.get("prompt"), "/prompt", clear_allowed=False),
        _timestamp_problem(doc.get("started_at"), "/started_at"),
        _timestamp_problem(doc.get("finished_at"), "/finished_at"),
    ):
        if problem is not None:
            yield problem
    unknown_fields = doc.get("unknown_fields", MISSING)
    yield from iter_field_problems(unknown_fields)
    problem = _counts_problem(unknown_fields, doc.get("unknown_key_counts", MISSING), count_trees)
    if problem is not None:
        yield problem
    turns = doc.get("turns")
    if type(turns) is list:
        yield from _iter_turn_problems(turns)


def version_problem(doc: Any) -> Problem | None:
    """R-V1: a string ``schema_version`` other than ``storyline/v1`` makes `doc` *unsupported*.

    A missing or non-string version is a structural problem, not this one.  Callers that want
    to fail closed check this first: nothing else about an unsupported document is meaningful.
    """
    version = doc.get("schema_version") if type(doc) is dict else None
    if type(version) is not str or version == SCHEMA_VERSION:
        return None
    return Problem(
        "storyline.unsupported_version",
        "/schema_version",
        f"expected schema_version {_quote(SCHEMA_VERSION)}, found {_quote(version)}",
    )


def _iter_turn_problems(turns: list[Any]) -> Iterator[Problem]:
    """R-TID, R-TS, R-TC1 and R-P for each turn, in one pass."""
    turn_at: dict[int, int] = {}  # turn id -> index of the turn that first used it
    call_at: dict[str, int] = {}  # tcid -> index of the turn that first used it
    for i, turn in enumerate(turns):
        if type(turn) is not dict:
            continue
        tid = turn.get("id")
        if type(tid) is int:
            first = turn_at.setdefault(tid, i)
            if first != i:
                yield Problem(
                    "storyline.duplicate_turn_id",
                    f"/turns/{i}/id",
                    f"expected a unique turn id; turn id {tid} already used by /turns/{first}",
                )
        ts = turn.get("ts")
        if ts is not None:
            error = _timestamp_error(ts)  # the pointer is made only for a bad one
            if error is not None:
                yield Problem("storyline.bad_timestamp", f"/turns/{i}/ts", error)
        calls = turn.get("tool_calls")
        if type(calls) is list:
            for j, call in enumerate(calls):  # R-TC1 (_iter_call_problems), inline: no generator per turn
                tcid = call.get("tcid") if type(call) is dict else None
                if type(tcid) is not str or not tcid:
                    continue
                known = len(call_at)
                call_at.setdefault(tcid, i)
                if len(call_at) == known:
                    yield from _iter_call_problems(calls[j : j + 1], i, call_at, turns, start=j)
        prompt = turn.get("prompt")
        if type(prompt) is dict:  # null is absent; another type is the schema's error
            if turn.get("copied") is True:
                yield Problem(
                    "storyline.prompt_on_copied_turn",
                    f"/turns/{i}/prompt",
                    "expected no prompt on a copied turn (copied: true), not even the explicit clear",
                )
            else:
                problem = _prompt_problem(prompt, f"/turns/{i}/prompt", clear_allowed=True)
                if problem is not None:
                    yield problem
        finished = turn.get("finished_at")
        if finished is not None:
            error = _timestamp_error(finished)
            if error is not None:
                yield Problem("storyline.bad_timestamp", f"/turns/{i}/finished_at", error)


def _iter_call_problems(
    calls: list[Any], i: int, call_at: dict[str, int], turns: list[Any], start: int = 0
) -> Iterator[Problem]:
    """R-TC1: each ``tcid`` unique across the whole document (`calls` of turn `i`, the first at
    index `start` of its turn's calls).

    Emptiness (R-TC1) and R-RESP (``response: {}``) are structural: the schema gives ``tcid``
    ``minLength: 1`` and ``response`` an ``anyOf`` requiring ``status`` or ``exit_code``.
    """
    for j, call in enumerate(calls, start):
        tcid = call.get("tcid") if type(call) is dict else None
        # Not a string, or "": the schema's to report (and two empty ids are not duplicates).
        if type(tcid) is not str or not tcid:
            continue
        known = len(call_at)
        first = call_at.setdefault(tcid, i)
        if len(call_at) == known:  # not added: an earlier call holds this id
            # Only the turn is recorded (no tuple per call); find the call now, on failure.
            earlier = f"/turns/{first}/tool_calls/{_first_call_index(turns[first], tcid)}"
            yield Problem(
                "storyline.duplicate_tcid",
                f"/turns/{i}/tool_calls/{j}/tcid",
                f"expected a tool call id unique in the document; tool call id {_quote(tcid)} "
                f"already used by {earlier}",
            )


def _first_call_index(turn: dict[str, Any], tcid: str) -> int:
    """Index of the first call of `turn` with `tcid` (it is known to exist)."""
    for j, call in enumerate(turn["tool_calls"]):
        if type(call) is dict and call.get("tcid") == tcid:
            return j
    raise AssertionError("unreachable: tcid recorded for this turn")  # pragma: no cover


def _timestamp_error(value: Any) -> str | None:
    """`_timestamp_problem`'s message for `value`, or None (no pointer made for a good value)."""
    kind = type(value)
    if kind is not str and kind is not int and kind is not float:
        return None
    try:
        timestamp_ns(value)
    except TimestampError as error:
        return str(error)
    return None


def _timestamp_problem(value: Any, at: str) -> Problem | None:
    """R-TS: a string must be RFC 3339 and a number exact epoch seconds (null is absent)."""
    # bool and other types are the schema's type error, not a bad timestamp.
    kind = type(value)
    if kind is not str and kind is not int and kind is not float:
        return None
    try:
        timestamp_ns(value)
    except TimestampError as error:
        return Problem("storyline.bad_timestamp", at, str(error))
    return None


def _prompt_problem(prompt: Any, at: str, *, clear_allowed: bool) -> Problem | None:
    """R-P: a prompt holds at least one non-empty string.

    On a turn (`clear_allowed`), exactly ``{"system": "", "user": ""}`` is also accepted: it
    clears the document prompt for that turn.
    """
    if type(prompt) is not dict or not prompt.keys() <= _PROMPT_KEYS:
        return None  # not an object, or undeclared keys: the schema's to report
    system, user = prompt.get("system"), prompt.get("user")
    for value in (system, user):
        if value is not None and type(value) is not str:
            return None  # the schema's type error
    if system or user:
        return None
    if clear_allowed:
        if system == "" and user == "":
            return None
        expected = 'a non-empty "system" or "user", or exactly the explicit clear {"system":"","user":""}'
    else:
        expected = 'a non-empty "system" or "user" in the document prompt; omit an empty one'
    return Problem("storyline.empty_prompt", at, f"expected {expected}")


def _task_problem(task: Any) -> Problem | None:
    """R-TASK: a task, if present, carries an env value, ``llm.k`` or a result value."""
    if type(task) is not dict or not task.keys() <= _TASK_KEYS:
        return None  # not an object, or undeclared keys: the schema's to report
    if _env_carries(task.get("env")) or _llm_carries(task.get("llm")) or _result_carries(task.get("result")):
        return None
    return Problem(
        "storyline.empty_task",
        "/task",
        "expected a task with an env value, llm.k or a result value; omit an empty task",
    )


def _env_carries(env: Any) -> bool:
    if env is None:
        return False
    if type(env) is not dict:
        return True  # a type error, reported by the schema; not also "empty"
    state = env.get("state")
    if state is not None and (type(state) is not dict or state):
        return True
    return any(env.get(key) is not None for key in _ENV_STRINGS) or not env.keys() <= {*_ENV_STRINGS, "state"}


def _llm_carries(llm: Any) -> bool:
    if llm is None:
        return False
    return type(llm) is not dict or llm.get("k") is not None or not llm.keys() <= {"k"}


def _result_carries(result: Any) -> bool:
    if result is None:
        return False
    return type(result) is not dict or any(value is not None for value in result.values())


def _counts_problem(unknown_fields: Any, counts: Any, trees: Mapping[str, Tree]) -> Problem | None:
    """R-UKC: ``unknown_key_counts`` equals the counts recomputed from ``unknown_fields``.

    `MISSING` stands for an absent key.  Null, or any other malformed shape of either map, is
    the schema's to report (neither is an Option field in the reference), so nothing is said.
    """
    if not _fields_shaped(unknown_fields) or not _counts_shaped(counts):
        return None
    expected = recompute_counts(unknown_fields, trees)
    found = {} if counts is MISSING else counts
    if json_equal(expected, found):
        return None
    return Problem(
        "storyline.unknown_key_counts_mismatch",
        "" if counts is MISSING else "/unknown_key_counts",
        ("expected unknown_key_counts (missing here)" if counts is MISSING else "expected unknown_key_counts")
        + " to equal the counts recomputed from unknown_fields; "
        + _count_difference(expected, found),
    )


def _fields_shaped(unknown_fields: Any) -> bool:
    if unknown_fields is MISSING:
        return True
    sources = unknown_fields.get("sources") if type(unknown_fields) is dict else None
    return type(sources) is dict and sum(1 for _ in iter_sources(unknown_fields)) == len(sources)


def _counts_shaped(counts: Any) -> bool:
    if counts is MISSING:
        return True
    return type(counts) is dict and all(
        type(keys) is dict and all(type(n) is int and n >= 0 for n in keys.values()) for keys in counts.values()
    )


def _count_difference(expected: dict[str, dict[str, int]], found: dict[str, Any]) -> str:
    """Describe the first difference between two count maps, in sorted source and key order."""
    for source in sorted(expected.keys() | found.keys()):
        want, have = expected.get(source), found.get(source)
        if want is None:
            return f"source {_quote(source)} has no unknown fields, so it must have no counts entry"
        if have is None:
            return f"source {_quote(source)} has {len(want)} counted key(s) but no counts entry"
        for key in sorted(want.keys() | have.keys()):
            if key not in have:
                return f"source {_quote(source)} key {_quote(key)}: expected {want[key]}, found none"
            if key not in want:
                return f"source {_quote(source)} key {_quote(key)}: expected no entry, found {have[key]}"
            if want[key] != have[key]:
                return f"source {_quote(source)} key {_quote(key)}: expected {want[key]}, found {have[key]}"
    return "the two maps differ"  # pragma: no cover - json_equal and this walk agree


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)
