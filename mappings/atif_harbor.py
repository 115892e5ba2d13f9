"""ATIF exactly as Harbor 0.26 validates it: `mapc validate --format atif --strict`.

Harbor (the format's owner) checks a trajectory with its pydantic models
(`harbor/models/trajectories/`, `harbor.utils.trajectory_validator`); since ATIF-v1.8 has no RFC
text, those models are the reference for it (issue 15).  This module is a port of them, value by
value, so mapc can say what Harbor says without Harbor (which needs Python >= 3.12 and a large
dependency tree):

- every object is closed (`extra="forbid"`); `extra` is the one place for other keys;
- pydantic's lax coercions are Harbor's rules too: an integer field takes `True`, `2.0` and
  `" 2 "`; a boolean `"yes"`, `1`; a float `"1.5"`; a string field takes only a string;
- the models' own validators: step ids 1, 2, 3…; fields only an agent step may carry; no metrics or
  reasoning on an agent step with `llm_call_count: 0`; every `source_call_id` names a tool call of
  its step; embedded subagents have unique `trajectory_id`s; content parts of the right kind
  (image parts an `ImageSource`, audio parts an `AudioSource`, normalised media types); a
  subagent reference names an id or a path; timestamps `datetime.fromisoformat` reads.

`tests/data/harbor/verdicts.jsonl` holds Harbor's own verdicts on a corpus (recorded by
`tests/data/harbor/record.py`); `tests/formats/test_harbor.py` checks that this port agrees.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

from mapc.engine import pointer
from mapc.engine.problems import Problem

VERSIONS = tuple(f"ATIF-v1.{n}" for n in range(9))
SOURCES = ("system", "user", "agent")
IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
AUDIO_TYPES = (
    "audio/wav",
    "audio/mpeg",
    "audio/mp4",
    "audio/aac",
    "audio/ogg",
    "audio/flac",
    "audio/webm",
    "audio/aiff",
)
AUDIO_ALIASES = {
    "audio/mp3": "audio/mpeg",
    "audio/mpga": "audio/mpeg",
    "audio/x-mpeg": "audio/mpeg",
    "audio/x-wav": "audio/wav",
    "audio/wave": "audio/wav",
    "audio/vnd.wave": "audio/wav",
    "audio/x-m4a": "audio/mp4",
    "audio/m4a": "audio/mp4",
    "audio/x-aac": "audio/aac",
    "audio/x-flac": "audio/flac",
    "audio/x-aiff": "audio/aiff",
}
_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})
_FALSE = frozenset({"0", "off", "f", "false", "n", "no"})
_INT_TEXT = re.compile(r"^[+-]?\d+(\.0*)?$")

_Bad = object()  # a value that does not coerce
Path = tuple[str | int, ...]


class _Errors:
    """Collects (path, code, message); `count` says whether a part added any."""

    def __init__(self) -> None:
        self.items: list[tuple[Path, str, str]] = []

    def add(self, at: Path, code: str, message: str) -> None:
        self.items.append((at, code, message))

    @property
    def count(self) -> int:
        return len(self.items)


# --- pydantic's lax scalars ------------------------------------------------------------------------


def _int(v: Any) -> Any:
    if type(v) is int:
        return v
    if type(v) is bool:
        return int(v)
    if type(v) is float:
        return int(v) if v == v and v not in (float("inf"), float("-inf")) and v == int(v) else _Bad
    if type(v) is str:
        text = v.strip()
        try:
            return int(text)
        except ValueError:
            return int(float(text)) if _INT_TEXT.match(text) else _Bad
    return _Bad


def _float(v: Any) -> Any:
    if type(v) in (int, float, bool):
        return float(v)
    if type(v) is str:
        try:
            return float(v.strip())
        except ValueError:
            return _Bad
    return _Bad


def _bool(v: Any) -> Any:
    if type(v) is bool:
        return v
    if type(v) in (int, float) and v in (0, 1):
        return bool(v)
    if type(v) is str:
        low = v.lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
    return _Bad


def _str(v: Any) -> Any:
    return v if type(v) is str else _Bad


_SCALARS: dict[str, Callable[[Any], Any]] = {"int": _int, "float": _float, "bool": _bool, "str": _str}


def _scalar(e: _Errors, at: Path, kind: str, v: Any, *, ge: float | None = None) -> Any:
    got = _SCALARS[kind](v)
    if got is _Bad:
        e.add(at, "harbor.type", f"expected {_NAMES[kind]}, got {_json_type(v)}")
        return _Bad
    if ge is not None and got < ge:
        e.add(at, "harbor.range", f"must be >= {ge:g}, got {got!r}")
        return _Bad
    return got


_NAMES = {"int": "an integer", "float": "a number", "bool": "a boolean", "str": "a string"}


def _json_type(v: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(v), "a number"
    )


# --- objects ---------------------------------------------------------------------------------------

Field = tuple[str, bool, Callable[[_Errors, Path, Any], Any]]  # (name, required, check → coerced value)


def _object(e: _Errors, at: Path, v: Any, fields: list[Field]) -> dict[str, Any] | None:
    """Check a closed object; its coerced known values (None when `v` is not an object)."""
    if type(v) is not dict:
        e.add(at, "harbor.type", f"expected an object, got {_json_type(v)}")
        return None
    known = {name for name, _, _ in fields}
    out: dict[str, Any] = {}
    for name, required, check in fields:
        if name not in v:
            if required:
                e.add((*at, name), "harbor.missing", f"{name} is required")
            out[name] = None
            continue
        out[name] = check(e, (*at, name), v[name])
    for key in v:
        if key not in known:
            e.add((*at, key), "harbor.extra_forbidden", f"{key!r} is not an ATIF key here (Harbor: extra='forbid')")
    return out


def _optional(check: Callable[[_Errors, Path, Any], Any]) -> Callable[[_Errors, Path, Any], Any]:
    return lambda e, at, v: None if v is None else check(e, at, v)


def _kind(kind: str, ge: float | None = None) -> Callable[[_Errors, Path, Any], Any]:
    return lambda e, at, v: _scalar(e, at, kind, v, ge=ge)


def _dict(e: _Errors, at: Path, v: Any) -> Any:
    if type(v) is not dict:
        e.add(at, "harbor.type", f"expected an object, got {_json_type(v)}")
        return _Bad
    return v


def _list_of(item: Callable[[_Errors, Path, Any], Any], min_length: int = 0) -> Callable[[_Errors, Path, Any], Any]:
    def check(e: _Errors, at: Path, v: Any) -> Any:
        if type(v) is not list:
            e.add(at, "harbor.type", f"expected an array, got {_json_type(v)}")
            return _Bad
        if len(v) < min_length:
            e.add(at, "harbor.too_short", f"must have at least {min_length} item(s)")
            return _Bad
        return [item(e, (*at, i), x) for i, x in enumerate(v)]

    return check


def _literal(options: tuple[str, ...]) -> Callable[[_Errors, Path, Any], Any]:
    def check(e: _Errors, at: Path, v: Any) -> Any:
        if type(v) is not str or v not in options:
            e.add(at, "harbor.literal", f"expected one of {', '.join(options)}, got {v!r}")
            return _Bad
        return v

    return check


# --- the models ------------------------------------------------------------------------------------


def _image_source(e: _Errors, at: Path, v: Any) -> Any:
    got = _object(e, at, v, [("media_type", True, _literal(IMAGE_TYPES)), ("path", True, _kind("str"))])
    return None if got is None else {"kind": "image", **got}


def _audio_media_type(e: _Errors, at: Path, v: Any) -> Any:
    if type(v) is str:
        low = v.strip().lower()
        v = AUDIO_ALIASES.get(low, low)
    return _literal(AUDIO_TYPES)(e, at, v)


def _audio_source(e: _Errors, at: Path, v: Any) -> Any:
    fields: list[Field] = [
        ("media_type", True, _audio_media_type),
        ("path", True, _kind("str")),
        ("duration_sec", False, _optional(_kind("float", ge=0))),
    ]
    got = _object(e, at, v, fields)
    return None if got is None else {"kind": "audio", **got}


def _media_source(e: _Errors, at: Path, v: Any) -> Any:
    """`ImageSource | AudioSource | None`: whichever member accepts the value."""
    for member in (_image_source, _audio_source):
        trial = _Errors()
        got = member(trial, at, v)
        if not trial.count:
            return got
    e.add(at, "harbor.type", "expected an ImageSource or an AudioSource")
    return _Bad


def _content_part(e: _Errors, at: Path, v: Any) -> Any:
    before = e.count
    got = _object(
        e,
        at,
        v,
        [
            ("type", True, _literal(("text", "image", "audio"))),
            ("text", False, _optional(_kind("str"))),
            ("source", False, _optional(_media_source)),
        ],
    )
    if got is None or e.count > before:
        return _Bad
    kind, text, source = got["type"], got["text"], got["source"]
    if kind == "text":
        if text is None:
            e.add(at, "harbor.value", "'text' field is required when type='text'")
        elif source is not None:
            e.add(at, "harbor.value", "'source' field is not allowed when type='text'")
    elif source is None:
        e.add(at, "harbor.value", f"'source' field is required when type='{kind}'")
    elif text is not None:
        e.add(at, "harbor.value", f"'text' field is not allowed when type='{kind}'")
    elif source["kind"] != kind:
        e.add(at, "harbor.value", f"type='{kind}' requires a {kind} source, got media_type {source['media_type']!r}")
    return got


def _content(nullable: bool) -> Callable[[_Errors, Path, Any], Any]:
    """`str | list[ContentPart]` (`| None` for results)."""

    def check(e: _Errors, at: Path, v: Any) -> Any:
        if v is None and nullable:
            return None
        if type(v) is str:
            return v
        if type(v) is list:
            return _list_of(_content_part)(e, at, v)
        e.add(at, "harbor.type", f"expected a string or an array of content parts, got {_json_type(v)}")
        return _Bad

    return check


def _effort(e: _Errors, at: Path, v: Any) -> Any:
    """`str | float | None`."""
    if v is None or type(v) is str:
        return v
    return _scalar(e, at, "float", v)


def _ref(e: _Errors, at: Path, v: Any) -> Any:
    before = e.count
    got = _object(
        e,
        at,
        v,
        [
            ("trajectory_id", False, _optional(_kind("str"))),
            ("session_id", False, _optional(_kind("str"))),
            ("trajectory_path", False, _optional(_kind("str"))),
            ("extra", False, _optional(_dict)),
        ],
    )
    if got is not None and e.count == before and got["trajectory_id"] is None and got["trajectory_path"] is None:
        e.add(at, "harbor.value", "a subagent reference must set trajectory_id or trajectory_path")
    return got


def _result(e: _Errors, at: Path, v: Any) -> Any:
    return _object(
        e,
        at,
        v,
        [
            ("source_call_id", False, _optional(_kind("str"))),
            ("content", False, _content(nullable=True)),
            ("subagent_trajectory_ref", False, _optional(_list_of(_ref))),
            ("extra", False, _optional(_dict)),
        ],
    )


def _observation(e: _Errors, at: Path, v: Any) -> Any:
    return _object(e, at, v, [("results", True, _list_of(_result))])


def _tool_call(e: _Errors, at: Path, v: Any) -> Any:
    return _object(
        e,
        at,
        v,
        [
            ("tool_call_id", True, _kind("str")),
            ("function_name", True, _kind("str")),
            ("arguments", True, _dict),
            ("extra", False, _optional(_dict)),
        ],
    )


def _metrics(e: _Errors, at: Path, v: Any) -> Any:
    return _object(
        e,
        at,
        v,
        [
            ("prompt_tokens", False, _optional(_kind("int"))),
            ("completion_tokens", False, _optional(_kind("int"))),
            ("cached_tokens", False, _optional(_kind("int"))),
            ("cost_usd", False, _optional(_kind("float"))),
            ("prompt_token_ids", False, _optional(_list_of(_kind("int")))),
            ("completion_token_ids", False, _optional(_list_of(_kind("int")))),
            ("logprobs", False, _optional(_list_of(_kind("float")))),
            ("extra", False, _optional(_dict)),
        ],
    )


def _final_metrics(e: _Errors, at: Path, v: Any) -> Any:
    return _object(
        e,
        at,
        v,
        [
            ("total_prompt_tokens", False, _optional(_kind("int"))),
            ("total_completion_tokens", False, _optional(_kind("int"))),
            ("total_cached_tokens", False, _optional(_kind("int"))),
            ("total_cost_usd", False, _optional(_kind("float"))),
            ("total_steps", False, _optional(_kind("int", ge=0))),
            ("extra", False, _optional(_dict)),
        ],
    )


def _timestamp(e: _Errors, at: Path, v: Any) -> Any:
    if _scalar(e, at, "str", v) is _Bad:
        return _Bad
    try:
        datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError as exc:
        e.add(at, "harbor.value", f"Invalid ISO 8601 timestamp: {exc}")
        return _Bad
    return v


_AGENT_ONLY = ("model_name", "reasoning_effort", "reasoning_content", "tool_calls", "metrics")


def _step(e: _Errors, at: Path, v: Any) -> Any:
    before = e.count
    got = _object(
        e,
        at,
        v,
        [
            ("step_id", True, _kind("int", ge=1)),
            ("timestamp", False, _optional(_timestamp)),
            ("source", True, _literal(SOURCES)),
            ("model_name", False, _optional(_kind("str"))),
            ("reasoning_effort", False, _effort),
            ("message", True, _content(nullable=False)),
            ("reasoning_content", False, _optional(_kind("str"))),
            ("tool_calls", False, _optional(_list_of(_tool_call))),
            ("observation", False, _optional(_observation)),
            ("metrics", False, _optional(_metrics)),
            ("is_copied_context", False, _optional(_kind("bool"))),
            ("llm_call_count", False, _optional(_kind("int", ge=0))),
            ("extra", False, _optional(_dict)),
        ],
    )
    if got is None or e.count > before:
        return got if got is not None else _Bad
    if got["source"] != "agent":
        for name in _AGENT_ONLY:
            if got[name] is not None:
                e.add(at, "harbor.value", f"{name} is only applicable when source is 'agent', not {got['source']!r}")
                return got
    if got["llm_call_count"] == 0 and got["source"] == "agent":
        for name in ("metrics", "reasoning_content"):
            if got[name] is not None:
                e.add(at, "harbor.value", f"{name} must be absent when llm_call_count is 0 on an agent step")
                return got
    return got


def _agent(e: _Errors, at: Path, v: Any) -> Any:
    return _object(
        e,
        at,
        v,
        [
            ("name", True, _kind("str")),
            ("version", True, _kind("str")),
            ("model_name", False, _optional(_kind("str"))),
            ("tool_definitions", False, _optional(_list_of(_dict))),
            ("extra", False, _optional(_dict)),
        ],
    )


def _trajectory(e: _Errors, at: Path, v: Any) -> Any:
    before = e.count
    got = _object(
        e,
        at,
        v,
        [
            ("schema_version", False, _literal(VERSIONS)),
            ("session_id", False, _optional(_kind("str"))),
            ("trajectory_id", False, _optional(_kind("str"))),
            ("agent", True, _agent),
            ("steps", True, _list_of(_step, min_length=1)),
            ("notes", False, _optional(_kind("str"))),
            ("final_metrics", False, _optional(_final_metrics)),
            ("continued_trajectory_ref", False, _optional(_kind("str"))),
            ("extra", False, _optional(_dict)),
            ("subagent_trajectories", False, _optional(_list_of(_trajectory))),
        ],
    )
    if got is None or e.count > before:
        return got if got is not None else _Bad
    for problem in _trajectory_rules(at, got):
        e.add(*problem)
        return got
    return got


def _trajectory_rules(at: Path, t: dict[str, Any]) -> Iterator[tuple[Path, str, str]]:
    """The Trajectory model's validators, in Harbor's order (the first failing one is reported)."""
    for i, step in enumerate(t["steps"]):
        if step["step_id"] != i + 1:
            yield (
                (*at, "steps", i, "step_id"),
                "harbor.value",
                f"expected {i + 1} (sequential from 1), got {step['step_id']}",
            )
            return
    seen: set[str] = set()
    for i, sub in enumerate(t["subagent_trajectories"] or []):
        sat = (*at, "subagent_trajectories", i, "trajectory_id")
        if sub["trajectory_id"] is None:
            yield sat, "harbor.value", "an embedded subagent needs a trajectory_id"
            return
        if sub["trajectory_id"] in seen:
            yield (
                sat,
                "harbor.value",
                f"trajectory_id {sub['trajectory_id']!r} is not unique within subagent_trajectories",
            )
            return
        seen.add(sub["trajectory_id"])
    for i, step in enumerate(t["steps"]):
        if step["observation"] is None:
            continue
        ids = {c["tool_call_id"] for c in step["tool_calls"] or []}
        for j, result in enumerate(step["observation"]["results"]):
            if result["source_call_id"] is not None and result["source_call_id"] not in ids:
                yield (
                    (*at, "steps", i, "observation", "results", j, "source_call_id"),
                    "harbor.value",
                    f"source_call_id {result['source_call_id']!r} is not a tool_call_id of step {step['step_id']}",
                )
                return


def problems(doc: Any) -> list[Problem]:
    """Every problem Harbor 0.26's `Trajectory` model finds in `doc` (one trajectory), with pointers."""
    e = _Errors()
    _trajectory(e, (), doc)
    return [Problem(code, pointer.format([str(p) for p in at]), message) for at, code, message in e.items]


def is_known_version(version: Any) -> bool:
    """True for a `schema_version` Harbor 0.26 defines (ATIF-v1.0 … ATIF-v1.8)."""
    return version in VERSIONS


# --- writing: what Harbor forbids goes to ATIF's extension slots -----------------------------------

TRAJECTORY_KEYS = (
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
)
AGENT_KEYS = ("name", "version", "model_name", "tool_definitions", "extra")
STEP_KEYS = (
    "step_id",
    "timestamp",
    "source",
    "model_name",
    "reasoning_effort",
    "message",
    "reasoning_content",
    "tool_calls",
    "observation",
    "metrics",
    "is_copied_context",
    "llm_call_count",
    "extra",
)
TOOL_CALL_KEYS = ("tool_call_id", "function_name", "arguments", "extra")
RESULT_KEYS = ("source_call_id", "content", "subagent_trajectory_ref", "extra")
METRICS_KEYS = (
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "cost_usd",
    "prompt_token_ids",
    "completion_token_ids",
    "logprobs",
    "extra",
)
FINAL_METRICS_KEYS = (
    "total_prompt_tokens",
    "total_completion_tokens",
    "total_cached_tokens",
    "total_cost_usd",
    "total_steps",
    "extra",
)


def _fits(check: Callable[[_Errors, Path, Any], Any], value: Any) -> bool:
    e = _Errors()
    check(e, (), value)
    return not e.count


def _slot(obj: dict[str, Any], keys: list[str], into: dict[str, Any] | None = None) -> dict[str, Any]:
    """`obj` with `keys` moved into its `extra` (or into `into`'s), unless `extra` cannot take them."""
    if not keys:
        return obj
    holder = obj if into is None else into
    extra = holder.get("extra")
    if extra is None:
        extra = {}
    if type(extra) is not dict:
        return obj
    moved = {k: obj[k] for k in keys if k not in extra}
    if not moved:
        return obj
    out = {k: v for k, v in obj.items() if k not in moved}
    if into is None:
        out["extra"] = {**extra, **moved}
    else:
        into["extra"] = {**extra, **moved}
    return out


def _closed(obj: dict[str, Any], known: tuple[str, ...], fields: list[Field]) -> dict[str, Any]:
    """Unknown keys, and known ones whose values Harbor refuses, into `extra`."""
    bad = [k for k in obj if k not in known]
    for name, _required, check in fields:
        if name in obj and name != "extra" and not _fits(check, obj[name]):
            bad.append(name)
    return _slot(obj, bad)


_METRIC_FIELDS: list[Field] = [
    (k, False, _optional(_kind("int"))) for k in ("prompt_tokens", "completion_tokens", "cached_tokens")
] + [
    ("cost_usd", False, _optional(_kind("float"))),
    ("prompt_token_ids", False, _optional(_list_of(_kind("int")))),
    ("completion_token_ids", False, _optional(_list_of(_kind("int")))),
    ("logprobs", False, _optional(_list_of(_kind("float")))),
]
_FINAL_FIELDS: list[Field] = [
    (k, False, _optional(_kind("int")))
    for k in ("total_prompt_tokens", "total_completion_tokens", "total_cached_tokens")
] + [("total_cost_usd", False, _optional(_kind("float"))), ("total_steps", False, _optional(_kind("int", ge=0)))]


def _sequential(steps: list[Any]) -> list[Any]:
    """Step ids 1, 2, 3… as Harbor requires (a Storyline's turn ids need not be): a step whose id
    changes keeps its own in `extra.step_id`."""
    out = []
    for i, step in enumerate(steps, start=1):
        extra = step.get("extra") if type(step) is dict else None
        if (
            type(step) is dict
            and step.get("step_id") != i
            and (extra is None or (type(extra) is dict and "step_id" not in extra))
        ):
            step = {**step, "step_id": i, "extra": {**(extra or {}), "step_id": step.get("step_id")}}
        out.append(step)
    return out


def _step_slots(step: Any) -> Any:
    if type(step) is not dict:
        return step
    step = dict(step)
    extra = step.get("extra")
    if step.get("source") not in SOURCES and (extra is None or (type(extra) is dict and "source" not in extra)):
        # A source Harbor does not know (a Storyline `src` such as `tool`): in ATIF, what is
        # neither the agent's nor the system prompt is the agent's input, a user step; the
        # source itself rides in the step's `extra`.
        step["extra"] = {**(extra or {}), "source": step.get("source")}
        step["source"] = "user"
    moved: list[str] = [k for k in step if k not in STEP_KEYS]
    for name, check in (
        ("timestamp", _optional(_timestamp)),
        ("message", _content(nullable=False)),
        ("model_name", _optional(_kind("str"))),
        ("reasoning_effort", _effort),
        ("reasoning_content", _optional(_kind("str"))),
        ("is_copied_context", _optional(_kind("bool"))),
        ("llm_call_count", _optional(_kind("int", ge=0))),
    ):
        if name in step and not _fits(check, step[name]):
            moved.append(name)
    if step.get("source") != "agent":
        moved += [k for k in _AGENT_ONLY if step.get(k) is not None]
    elif step.get("llm_call_count") == 0 and "llm_call_count" not in moved:
        moved += [k for k in ("metrics", "reasoning_content") if step.get(k) is not None]
    if "metrics" not in moved and step.get("metrics") is not None:
        if type(step["metrics"]) is dict:
            step["metrics"] = _closed(step["metrics"], METRICS_KEYS, _METRIC_FIELDS)
        else:
            moved.append("metrics")
    ids: set[str] = set()
    if "tool_calls" not in moved and type(step.get("tool_calls")) is list:
        step["tool_calls"] = [_call_slots(c) for c in step["tool_calls"]]
        ids = {c["tool_call_id"] for c in step["tool_calls"] if type(c) is dict and type(c.get("tool_call_id")) is str}
    obs = step.get("observation")
    if type(obs) is dict and type(obs.get("results")) is list:
        step["observation"] = {**obs, "results": [_result_slots(r, ids) for r in obs["results"]]}
    step = _slot(step, list(dict.fromkeys(moved)))
    if "message" not in step and "message" in (step.get("extra") or {}):
        step = {**step, "message": ""}  # required: the value Harbor refuses is in the step's extra
    if type(step.get("observation")) is dict and set(step["observation"]) - {"results"}:
        obs = step["observation"]
        extra = step.get("extra") or {}
        if type(extra) is dict and "observation" not in extra:
            step = {**step, "observation": {"results": obs.get("results")}}
            step["extra"] = {**extra, "observation": {k: v for k, v in obs.items() if k != "results"}}
    return step


def _call_slots(call: Any) -> Any:
    if type(call) is not dict:
        return call
    moved = [k for k in call if k not in TOOL_CALL_KEYS]
    call = _slot(call, moved)
    if "arguments" in call and type(call["arguments"]) is not dict:
        extra = call.get("extra")
        if extra is None or (type(extra) is dict and "arguments" not in extra):
            call = {**call, "arguments": {}, "extra": {**(extra or {}), "arguments": call["arguments"]}}
    return call


def _result_slots(result: Any, ids: set[str]) -> Any:
    if type(result) is not dict:
        return result
    moved = [k for k in result if k not in RESULT_KEYS]
    ref = result.get("source_call_id")
    if ref is not None and (type(ref) is not str or ref not in ids):
        moved.append("source_call_id")
    if "content" in result and not _fits(_content(nullable=True), result["content"]):
        moved.append("content")
    if "subagent_trajectory_ref" in result and not _fits(_optional(_list_of(_ref)), result["subagent_trajectory_ref"]):
        moved.append("subagent_trajectory_ref")
    return _slot(result, moved)


def _trajectory_slots(doc: Any) -> Any:
    if type(doc) is not dict:
        return doc
    doc = dict(doc)
    moved = [k for k in doc if k not in TRAJECTORY_KEYS]
    for name in ("notes", "continued_trajectory_ref", "session_id", "trajectory_id"):
        if doc.get(name) is not None and type(doc[name]) is not str:
            moved.append(name)
    if type(doc.get("agent")) is dict:
        agent = _slot(doc["agent"], [k for k in doc["agent"] if k not in AGENT_KEYS])
        if agent.get("tool_definitions") is not None and not _fits(_list_of(_dict), agent["tool_definitions"]):
            agent = _slot(agent, ["tool_definitions"])
        doc["agent"] = agent
    if type(doc.get("final_metrics")) is dict:
        doc["final_metrics"] = _closed(doc["final_metrics"], FINAL_METRICS_KEYS, _FINAL_FIELDS)
    elif doc.get("final_metrics") is not None:
        moved.append("final_metrics")
    if type(doc.get("steps")) is list:
        doc["steps"] = _sequential([_step_slots(s) for s in doc["steps"]])
    if type(doc.get("subagent_trajectories")) is list:
        doc["subagent_trajectories"] = [_trajectory_slots(c) for c in doc["subagent_trajectories"]]
    return _slot(doc, moved)


def extension_slots(doc: Any, stories: list[dict[str, Any]]) -> Any:
    """`doc` (written from `stories`) with every value Harbor's models forbid moved into the ATIF
    extension slot (`extra`) of its object: unknown keys, values of the wrong type, agent-only
    fields of other steps, a `source_call_id` naming no call of its step; non-object `arguments`
    become `{}` with the value in the call's `extra`, a message Harbor refuses (null, an
    object, parts it does not know) becomes `""` with the value in the step's `extra`.  Step ids
    (the Storyline's turn ids) that are not 1, 2, 3… are renumbered, and a source Harbor does not
    know becomes `user`, each with its own value in the step's `extra`.

    Nothing is done for Storylines read from ATIF (or carrying ATIF's own residuals): their
    document is given back exactly as it was (issue 15: exactness wins over Harbor validity);
    nor for Storylines of no format (no `origin`), which get the plain ATIF export (docs/formats.md, "ATIF") as it is.
    A value moved here is not lost: the hop law (engine/provenance.py) carries it for the source
    format's way back.
    """
    for story in stories:
        origin = (story.get("origin") or {}).get("format")
        if origin in (None, "atif", "storyline"):
            return doc  # read from ATIF, or a Storyline of no format: the plain ATIF export
        if "atif" in ((story.get("unknown_fields") or {}).get("sources") or {}):
            return doc
    return _trajectory_slots(doc)
