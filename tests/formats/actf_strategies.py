"""Hypothesis strategies for ACTF v1.0 documents (docs/formats.md, ACTF) that mapc must accept.

Every document drawn here passes the 14 reject rules: a non-blank ``task_id`` and ``category``,
``solved_at`` null or a string, ``k ≥ attempts_tried == len(attempts) ≥ 1``, non-blank attempt
keys, ``schema_version: "ACTF_v1.0"``, RFC 3339 timestamps (space, ``t`` and ``T`` separators),
step ids ≥ 1 and strictly increasing, equal ``tools``/``assistant_content.tool_calls`` when both are
non-empty, effective tool ids unique in a step, observations referring to a tool of their step.
It also makes a valid Storyline: tool ids are unique in a whole attempt (R-TC1), every tool has a
non-empty ``fn`` candidate.

Drawn on purpose: several attempts with keys such as ``"10"``, ``"2"``, ``"a/b"``, ``"~"`` (file
order is kept, not string order); unknown keys at the root, attempt, trajectory, step,
``assistant_content``, tool and observation level, with hostile names (``/``, ``~``, ``~01``, ``"0"``,
``"10"``, ``""``); null metrics and float milliseconds; prompt pairs drawn from a small pool, so
they repeat, change between steps and clear; ``tool_use`` tools (``name``/``input``),
``command_execution`` tools (``command``/``aggregated_output``/``exit_code``/``status``), ``function``
and ``arguments`` tools and tools with only free keys; blank, missing and null ids (the synthesized
``step-{step_id}-tool-{i}``); tools only in ``tools``, only in ``assistant_content.tool_calls``, or
equal in both; observations with ``tool_use_id``, ``id``, ``aggregated_output``; ``status: ""``,
``error: ""``, ``artifacts`` ``{}`` or ``[]``, empty and full ``extra``/``meta``, ``max_score``,
``retry_count``/``retry_counts``, an ``events`` list.

Left out, because mapc loses them today (each has its own minimal test in test_actf.py): a
``ground_truth``/``artifacts``/``extra``/``meta`` that is missing or null; a missing or null
``tools`` (or ``tool_calls``) beside a non-empty other list; a tool ``type`` that is missing or
null.

`normalized` is the comparison the fidelity boundary allows (docs/formats.md, ACTF "Fidelity": only the
missing/null distinction of known fields may differ).
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from hypothesis import strategies as st
from strategies import json_values, rfc3339_strings

# Known keys per level (the keys the format knows, plus the trajectory's `events`).
ROOT_KEYS = frozenset(
    {"task_id", "correct", "attempts", "category", "k", "attempts_tried", "solved_at", "retry_count", "retry_counts"}
)
ATTEMPT_KEYS = frozenset(
    {
        "correct",
        "trajectory",
        "status",
        "score",
        "analysis_result",
        "final_answer",
        "ground_truth",
        "error",
        "artifacts",
        "extra",
        "meta",
        "max_score",
    }
)
TRAJECTORY_KEYS = frozenset({"schema_version", "steps", "started_at", "finished_at", "events"})
STEP_KEYS = frozenset(
    {
        "step_id",
        "assistant_content",
        "metric",
        "tools",
        "observation",
        "started_at",
        "finished_at",
        "system_prompt",
        "user_content",
    }
)
ASSISTANT_KEYS = frozenset({"content", "reasoning_content", "tool_calls"})
TOOL_KEYS = frozenset(
    {"type", "id", "name", "input", "arguments", "command", "aggregated_output", "status", "exit_code", "function"}
)
METRIC_KEYS = ("prompt_tokens_len", "completion_tokens_len", "llm_infer_ms", "env_action_ms", "stop_reason")
OBSERVATION_KEYS = frozenset({"type"})

# The ACTF data model's defaults (docs/formats.md, ACTF "Defaults"): a known key that is missing, null or
# this value reads the same.  Keys not listed default to null.
ATTEMPT_DEFAULTS = {"status": "", "error": ""}
STEP_DEFAULTS = {"system_prompt": "", "user_content": "", "tools": [], "observation": []}
ASSISTANT_DEFAULTS = {"content": "", "reasoning_content": "", "tool_calls": []}
TOOL_DEFAULTS = {"type": "", "id": ""}

HOSTILE_UNKNOWN_KEYS = ("vendor/x", "a~b", "~01", "~1", "/", "~", "0", "10", "01", "", "-", " ", "键")
ATTEMPT_KEY_POOL = ("1", "2", "10", "0", "01", "a/b", "~", "x~1y", "#", " a", "键")
ENVELOPE_KEY = "_storyline"
SCHEMA_VERSION = "ACTF_v1.0"

_ABSENT: Any = object()
_JSON = json_values(4)
_JSON_SMALL = json_values(2)
_NON_NULL = _JSON_SMALL.filter(lambda v: v is not None)
_TEXT = st.text(max_size=6)
_NON_BLANK = st.text(min_size=1, max_size=6).filter(str.strip)


@functools.cache
def unknown_keys(known: frozenset[str], *, root: bool = False) -> st.SearchStrategy[str]:
    """Object keys the ACTF model does not know at a level with `known` keys."""
    keys = st.one_of(st.sampled_from(HOSTILE_UNKNOWN_KEYS), st.text(max_size=5))
    return keys.filter(lambda k: k not in known and not (root and k == ENVELOPE_KEY))


@functools.cache
def unknowns(known: frozenset[str], *, root: bool = False) -> st.SearchStrategy[dict[str, Any]]:
    """0–2 unknown keys with free JSON values (null and nested values included)."""
    return st.dictionaries(unknown_keys(known, root=root), _JSON_SMALL, max_size=2)


def _put(draw: st.DrawFn, obj: dict[str, Any], key: str, value: st.SearchStrategy[Any]) -> None:
    """Set `key` to a drawn value unless it is `_ABSENT`."""
    v = draw(value)
    if v is not _ABSENT:
        obj[key] = v


def _maybe(value: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Absent, an explicit null, or a value."""
    return st.one_of(st.just(_ABSENT), st.none(), value)


# --- scalars ------------------------------------------------------------------------------------

_MILLIS = st.one_of(
    st.none(),
    st.integers(0, 10**9),
    st.floats(-1e9, 1e9, allow_nan=False, allow_infinity=False),
    st.sampled_from([12.5, 10.0, 0.999, -3.9]),
)
_COUNT = st.one_of(st.none(), st.integers(0, 10**6), st.sampled_from([1.5, 0.0]))
_METRIC_VALUES = {
    "prompt_tokens_len": _COUNT,
    "completion_tokens_len": _COUNT,
    "llm_infer_ms": _MILLIS,
    "env_action_ms": _MILLIS,
    "stop_reason": st.one_of(st.none(), st.sampled_from(["stop", "tool_use", "length", ""]), _JSON_SMALL),
}
# Prompt values from small pools, so consecutive steps repeat, change and clear.
_SYSTEM = st.sampled_from([_ABSENT, None, "", "", "sys-A", "sys-A", "sys-B"])
_USER = st.sampled_from([_ABSENT, None, "", "", "user-1", "user-1", "user-2"])
_STATUS = st.one_of(st.sampled_from([_ABSENT, None, "", "completed", "failed"]), _TEXT)
_OBS_TYPES = st.sampled_from([_ABSENT, None, "", "tool_result", "command_execution", "note"])


@st.composite
def metrics(draw: st.DrawFn) -> dict[str, Any]:
    """A step `metric`: each known key absent, null or a number (floats included), plus free keys."""
    out: dict[str, Any] = {}
    for key in METRIC_KEYS:
        _put(draw, out, key, st.one_of(st.just(_ABSENT), _METRIC_VALUES[key]))
    out.update(draw(st.dictionaries(unknown_keys(frozenset(METRIC_KEYS)), _JSON_SMALL, max_size=1)))
    return out


# --- tools and observations -----------------------------------------------------------------------

_TOOL_SHAPES = st.sampled_from(["tool_use", "tool_use", "command_execution", "command_execution", "function", "args"])
_TOOL_SHAPES_WITH_OPAQUE = st.one_of(_TOOL_SHAPES, st.just("opaque"))


def _tool(draw: st.DrawFn, tool_id: Any) -> dict[str, Any]:
    shape = draw(_TOOL_SHAPES_WITH_OPAQUE)
    tool: dict[str, Any] = {}
    statuses = ["", "ok", "error"]
    if shape == "tool_use":
        tool["type"] = "tool_use"
        tool["name"] = draw(st.one_of(st.sampled_from(["Bash", "Read", "Edit"]), _NON_BLANK))
        tool["input"] = draw(_JSON_SMALL)
        if draw(st.booleans()):
            tool["status"] = draw(st.one_of(st.sampled_from(statuses), _NON_NULL))  # opaque: any JSON
        if draw(st.integers(0, 4)) == 0:
            tool["command"] = draw(_TEXT)  # beside input: not the args, kept as it is
            if draw(st.booleans()):
                del tool["input"]  # then the args are {"command": …}
    elif shape == "command_execution":
        tool["type"] = "command_execution"
        tool["command"] = draw(st.one_of(st.sampled_from(["ls -la", "cargo test"]), _TEXT, _NON_NULL))
        _put(draw, tool, "aggregated_output", st.one_of(st.just(_ABSENT), _NON_NULL, _TEXT))
        codes = st.one_of(st.integers(-(2**31), 2**31), st.just(1.0))
        _put(draw, tool, "exit_code", st.one_of(st.just(_ABSENT), codes))
        _put(draw, tool, "status", st.one_of(st.just(_ABSENT), st.sampled_from([*statuses, "completed"])))
    elif shape == "function":
        tool["type"] = draw(st.sampled_from(["function", "function_call"]))
        function = {"name": draw(st.one_of(_NON_BLANK, _NON_NULL)), "arguments": draw(_JSON_SMALL)}
        tool["function"] = draw(st.sampled_from([function, {"arguments": function["arguments"]}, {"name": "f"}]))
    elif shape == "args":
        tool["type"] = "mcp"
        if draw(st.booleans()):
            tool["name"] = draw(st.one_of(_NON_BLANK, _NON_NULL))
        tool["arguments"] = draw(_JSON_SMALL)
        if draw(st.integers(0, 4)) == 0:
            tool["command"] = draw(_TEXT)
    else:  # only free keys: the arguments are the tool's remaining fields
        tool["type"] = draw(_NON_BLANK)
    if tool_id is not _ABSENT:
        tool["id"] = tool_id
    tool.update(draw(unknowns(TOOL_KEYS)))
    items = list(tool.items())
    order = draw(st.permutations(range(len(items))))
    return dict(items[i] for i in order)


def _tool_ids(draw: st.DrawFn, n: int, fresh: list[int]) -> list[Any]:
    """`n` ids: explicit ones unique in the attempt, or blank/missing/null (synthesized)."""
    out: list[Any] = []
    kinds = ["id", "id", "id", "blank", "spaces", "absent", "null"]
    for _ in range(n):
        kind = draw(st.sampled_from(kinds))
        if kind == "id":
            fresh[0] += 1
            out.append(f"call-{fresh[0]}" + draw(st.sampled_from(["", "/x", "~y", "é"])))
        else:
            out.append({"blank": "", "spaces": " ", "absent": _ABSENT, "null": None}[kind])
    return out


def _effective_id(tool: dict[str, Any], step_id: int, i: int) -> str:
    tool_id = tool.get("id")
    return tool_id if type(tool_id) is str and tool_id.strip() else f"step-{step_id}-tool-{i}"


def _observation(draw: st.DrawFn, ids: list[str]) -> dict[str, Any]:
    obs: dict[str, Any] = {}
    ref = draw(st.sampled_from(["tool_use_id", "id", "none"])) if ids else "none"
    if ref != "none":
        obs[ref] = draw(st.sampled_from(ids))
    _put(draw, obs, "type", _OBS_TYPES)
    body = draw(st.sampled_from(["content", "aggregated_output", "both", "same", "neither"]))
    if body in ("content", "both", "same"):
        obs["content"] = draw(_JSON_SMALL)
    if body in ("aggregated_output", "both"):
        obs["aggregated_output"] = draw(_JSON_SMALL)
    if body == "same":
        obs["aggregated_output"] = obs["content"]
    if draw(st.booleans()):
        obs["is_error"] = draw(st.booleans())
    obs.update(
        draw(
            st.dictionaries(
                st.one_of(unknown_keys(OBSERVATION_KEYS), st.just("source_call_id")), _JSON_SMALL, max_size=2
            )
        )
    )
    return obs


# --- steps, attempts, documents -------------------------------------------------------------------

_TOOL_PLACES = st.sampled_from(["none", "tools", "tools", "tool_calls", "both", "both"])
_NONE_LIST = st.sampled_from([_ABSENT, None, []])


def _step(draw: st.DrawFn, step_id: int, fresh: list[int]) -> dict[str, Any]:
    step: dict[str, Any] = {"step_id": step_id}
    assistant: dict[str, Any] = {}
    _put(draw, assistant, "content", st.one_of(st.sampled_from([_ABSENT, None, ""]), _TEXT, _JSON_SMALL))
    _put(draw, assistant, "reasoning_content", st.one_of(st.sampled_from([_ABSENT, None, ""]), _TEXT))
    place = draw(_TOOL_PLACES)
    n_tools = 0 if place == "none" else draw(st.integers(1, 2))
    tools = [_tool(draw, tool_id) for tool_id in _tool_ids(draw, n_tools, fresh)]
    if place == "none":
        # No tools: both lists absent, null or [].
        _put(draw, step, "tools", _NONE_LIST)
        _put(draw, assistant, "tool_calls", _NONE_LIST)
    elif place == "tools":
        step["tools"] = tools
        assistant["tool_calls"] = []  # explicitly empty (missing or null: see the module docstring)
    elif place == "tool_calls":
        step["tools"] = []
        assistant["tool_calls"] = tools
    else:
        step["tools"] = tools
        assistant["tool_calls"] = copy.deepcopy(tools)
    assistant.update(draw(unknowns(ASSISTANT_KEYS)))
    step["assistant_content"] = assistant
    step["metric"] = draw(metrics())
    _put(draw, step, "system_prompt", _SYSTEM)
    _put(draw, step, "user_content", _USER)
    ids = [_effective_id(t, step_id, i) for i, t in enumerate(tools)]
    n_obs = draw(st.integers(0, 2))
    if n_obs:
        step["observation"] = [_observation(draw, ids) for _ in range(n_obs)]
    else:
        _put(draw, step, "observation", _NONE_LIST)
    step["started_at"] = draw(rfc3339_strings())
    step["finished_at"] = draw(rfc3339_strings())
    step.update(draw(unknowns(STEP_KEYS)))
    return step


def _trajectory(draw: st.DrawFn, max_steps: int) -> dict[str, Any]:
    fresh = [0]
    n_steps = draw(st.integers(1, max_steps))
    step_ids = sorted(draw(st.lists(st.integers(1, 2**40), min_size=n_steps, max_size=n_steps, unique=True)))
    steps = [_step(draw, sid, fresh) for sid in step_ids]
    trajectory: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "steps": steps,
        "started_at": draw(rfc3339_strings()),
        "finished_at": draw(rfc3339_strings()),
    }
    if draw(st.integers(0, 9)) == 0:
        trajectory["events"] = draw(st.lists(_JSON_SMALL, max_size=2))
    trajectory.update(draw(unknowns(TRAJECTORY_KEYS)))
    return trajectory


def _attempt(draw: st.DrawFn, max_steps: int) -> dict[str, Any]:
    attempt: dict[str, Any] = {"correct": draw(st.booleans()), "trajectory": _trajectory(draw, max_steps)}
    _put(draw, attempt, "status", _STATUS)
    _put(draw, attempt, "score", _maybe(_JSON_SMALL))
    _put(draw, attempt, "final_answer", _maybe(_JSON_SMALL))
    attempt["ground_truth"] = draw(st.one_of(_TEXT, _NON_NULL))
    _put(draw, attempt, "error", st.one_of(st.sampled_from([_ABSENT, None, "", ""]), _TEXT))
    attempt["artifacts"] = draw(st.one_of(st.sampled_from([{}, []]), _NON_NULL))
    attempt["extra"] = draw(st.one_of(st.just({}), st.dictionaries(_TEXT, _JSON_SMALL, min_size=1, max_size=2)))
    attempt["meta"] = draw(st.one_of(st.just({}), st.dictionaries(_TEXT, _JSON_SMALL, min_size=1, max_size=2)))
    _put(draw, attempt, "analysis_result", st.one_of(st.sampled_from([_ABSENT, None, {}]), _JSON_SMALL))
    _put(draw, attempt, "max_score", _maybe(st.one_of(st.sampled_from([1, 10.0, 100, "", {}]), _JSON_SMALL)))
    attempt.update(draw(unknowns(ATTEMPT_KEYS)))
    items = list(attempt.items())
    order = draw(st.permutations(range(len(items))))
    return dict(items[i] for i in order)


@st.composite
def _documents(draw: st.DrawFn, max_attempts: int, max_steps: int, task_id: str | None) -> dict[str, Any]:
    keys = draw(
        st.lists(
            st.one_of(st.sampled_from(ATTEMPT_KEY_POOL), _NON_BLANK),
            min_size=1,
            max_size=max_attempts,
            unique=True,
        )
    )
    n = len(keys)
    doc: dict[str, Any] = {
        "task_id": task_id
        if task_id is not None
        else draw(st.one_of(st.sampled_from(["task-1", "t/1", "t~1"]), _NON_BLANK)),
        "category": draw(st.one_of(st.sampled_from(["software-engineering", "math"]), _NON_BLANK)),
        "k": draw(st.integers(n, n + 3)),
        "correct": draw(st.booleans()),
        "attempts_tried": n,
        "solved_at": draw(st.one_of(st.none(), st.just(""), rfc3339_strings(), _NON_BLANK)),
        "attempts": {key: _attempt(draw, max_steps) for key in keys},
    }
    _put(draw, doc, "retry_count", _maybe(st.one_of(st.sampled_from(["", {}, []]), st.integers(0, 5), _NON_NULL)))
    _put(draw, doc, "retry_counts", _maybe(st.one_of(st.sampled_from(["", {}, []]), st.lists(st.integers(0, 5)))))
    doc.update(draw(unknowns(ROOT_KEYS, root=True)))
    return doc


def actf_documents(
    max_attempts: int = 3, max_steps: int = 3, task_id: str | None = None
) -> st.SearchStrategy[dict[str, Any]]:
    """A valid ACTF v1.0 document with 1–`max_attempts` attempts of 1–`max_steps` steps each."""
    return _documents(max_attempts, max_steps, task_id)


def actf_containers(max_size: int = 3) -> st.SearchStrategy[list[dict[str, Any]]]:
    """1–`max_size` valid documents with distinct task ids, for array and JSONL files."""
    return st.integers(1, max_size).flatmap(
        lambda n: st.tuples(*(actf_documents(2, 2, task_id=f"task-{i}") for i in range(n))).map(list)
    )


# --- the comparison of the fidelity boundary -------------------------------------------------------


def normalized(doc: Any) -> Any:
    """`doc` as the ACTF data model reads it, where only the missing/null distinction is lost.

    At every level, a known key whose value is null is dropped, and so is a known key holding the
    value the model reads a missing one as (docs/formats.md, ACTF "Defaults": ``status``/``error`` ``""``;
    ``system_prompt``/``user_content``/``content``/``reasoning_content`` ``""``; ``tools``/
    ``observation``/``tool_calls`` ``[]``; tool ``type``/``id`` ``""``).  A missing metric key is
    written null first (the five keys always exist in the model).  Unknown keys, their null values
    included, and every other value are compared exactly.  Observations are opaque objects except
    for ``type`` (null → ``""``).
    """
    if type(doc) is not dict:
        return doc
    out = _known(doc, ROOT_KEYS, {})
    attempts = out.get("attempts")
    if type(attempts) is dict:
        out["attempts"] = {k: _attempt_normalized(a) for k, a in attempts.items()}
    return out


def _known(obj: dict[str, Any], known: frozenset[str], defaults: dict[str, Any]) -> dict[str, Any]:
    return {
        k: v
        for k, v in obj.items()
        if not (k in known and (v is None or (k in defaults and v == defaults[k] and type(v) is type(defaults[k]))))
    }


def _attempt_normalized(attempt: Any) -> Any:
    if type(attempt) is not dict:
        return attempt
    out = _known(attempt, ATTEMPT_KEYS, ATTEMPT_DEFAULTS)
    trajectory = out.get("trajectory")
    if type(trajectory) is dict:
        trajectory = _known(trajectory, TRAJECTORY_KEYS, {})
        steps = trajectory.get("steps")
        if type(steps) is list:
            trajectory["steps"] = [_step_normalized(s) for s in steps]
        out["trajectory"] = trajectory
    return out


def _step_normalized(step: Any) -> Any:
    if type(step) is not dict:
        return step
    out = _known(step, STEP_KEYS, STEP_DEFAULTS)
    if type(out.get("metric")) is dict:
        out["metric"] = {**dict.fromkeys(METRIC_KEYS), **out["metric"]}
    assistant = out.get("assistant_content")
    if type(assistant) is dict:
        assistant = _known(assistant, ASSISTANT_KEYS, ASSISTANT_DEFAULTS)
        if type(assistant.get("tool_calls")) is list:
            assistant["tool_calls"] = [_tool_normalized(t) for t in assistant["tool_calls"]]
        out["assistant_content"] = assistant
    if type(out.get("tools")) is list:
        out["tools"] = [_tool_normalized(t) for t in out["tools"]]
    if type(out.get("observation")) is list:
        out["observation"] = [
            _known(o, OBSERVATION_KEYS, {"type": ""}) if type(o) is dict else o for o in out["observation"]
        ]
    return out


def _tool_normalized(tool: Any) -> Any:
    return _known(tool, TOOL_KEYS, TOOL_DEFAULTS) if type(tool) is dict else tool
