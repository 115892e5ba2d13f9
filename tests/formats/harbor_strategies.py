"""Hypothesis strategies for ATIF trajectories that Harbor 0.26's `Trajectory` model accepts.

`atif_strategies` draws what mapc's permissive reading accepts (unknown keys at every level, any
`source`, any `arguments`); this module draws what the format's owner accepts, with every feature
its models define (`harbor/models/trajectories/`, ATIF v1.0–v1.8):

- subagent trees (several children, nested), each child with its own `trajectory_id`;
- every `source` (user, agent, system) anywhere: a trailing user step, system steps mid-run;
- continuation segments (`continued_trajectory_ref`, segments sharing one `session_id`);
- explicit nulls of optional fields, empty lists where a list is allowed;
- multimodal messages and observation contents: text, image and audio parts (`AudioSource`,
  v1.8, with and without `duration_sec`);
- observation results with and without a `source_call_id` (always one of the step's calls),
  `subagent_trajectory_ref`s, `extra`;
- every `schema_version` from ATIF-v1.0 to ATIF-v1.8;
- `extra` objects (free JSON, hostile keys) at the root, agent, step, tool call, result, metrics.

Documents are also inside mapc's own reject rules (a non-empty root identity, non-empty unique ids,
RFC 3339 timestamps), so every drawn document with a `schema_version` converts.
"""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Any

from hypothesis import strategies as st
from strategies import json_objects, non_empty_text

VERSIONS = tuple(f"ATIF-v1.{n}" for n in range(9))
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
IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")

_ABSENT: Any = object()
_TEXT = st.text(max_size=8)
_NON_EMPTY = non_empty_text()
_EXTRA = json_objects(3)


def _maybe(value: st.SearchStrategy[Any], null: bool = True) -> st.SearchStrategy[Any]:
    """Absent, an explicit null, or a value."""
    return st.one_of(st.just(_ABSENT), st.none(), value) if null else st.one_of(st.just(_ABSENT), value)


def _optionals(fields: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({k: _maybe(v) for k, v in fields.items()}).map(
        lambda d: {k: v for k, v in d.items() if v is not _ABSENT}
    )


@functools.cache
def timestamps() -> st.SearchStrategy[str]:
    """ISO 8601 text both Harbor (`datetime.fromisoformat`) and mapc (RFC 3339) accept."""

    def render(moment: datetime, frac: int | None, zone: int | None) -> str:
        text = moment.strftime("%Y-%m-%dT%H:%M:%S")
        if frac is not None:
            text += "." + str(frac).rjust(6, "0")[: 1 + frac % 6]
        if zone is None:
            return text + "Z"
        sign = "+" if zone >= 0 else "-"
        return text + f"{sign}{abs(zone) // 60:02d}:{abs(zone) % 60:02d}"

    return st.builds(
        render,
        st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(2200, 1, 1)),
        st.one_of(st.none(), st.integers(0, 999_999)),
        st.one_of(st.none(), st.integers(-(23 * 60 + 59), 23 * 60 + 59)),
    )


@functools.cache
def content_parts() -> st.SearchStrategy[dict[str, Any]]:
    """One ContentPart: text, image (ImageSource) or audio (AudioSource, ATIF v1.8)."""
    text = st.builds(lambda t: {"type": "text", "text": t}, _TEXT)
    image = st.builds(
        lambda m, p: {"type": "image", "source": {"media_type": m, "path": p}},
        st.sampled_from(IMAGE_TYPES),
        st.sampled_from(["images/a.png", "https://example.org/x.jpg", "/abs/y.webp"]),
    )
    audio_source = st.builds(
        lambda m, p, d: {"media_type": m, "path": p, **({} if d is _ABSENT else {"duration_sec": d})},
        st.sampled_from(AUDIO_TYPES),
        st.sampled_from(["audio/a.wav", "s3://bucket/clip.mp3"]),
        _maybe(st.one_of(st.integers(0, 10**4), st.floats(0, 1e4, allow_nan=False))),
    )
    audio = st.builds(lambda s: {"type": "audio", "source": s}, audio_source)
    return st.one_of(text, text, image, audio)


@functools.cache
def contents() -> st.SearchStrategy[Any]:
    """A message or result content: text, or a list of parts (possibly empty)."""
    return st.one_of(_TEXT, _TEXT, st.lists(content_parts(), max_size=3))


_METRICS = _optionals(
    {
        "prompt_tokens": st.integers(0, 10**6),
        "completion_tokens": st.integers(0, 10**6),
        "cached_tokens": st.integers(0, 10**6),
        "cost_usd": st.floats(0, 10, allow_nan=False),
        "prompt_token_ids": st.lists(st.integers(0, 10**5), max_size=3),
        "completion_token_ids": st.lists(st.integers(0, 10**5), max_size=3),
        "logprobs": st.lists(st.floats(-50, 0, allow_nan=False), max_size=3),
        "extra": _EXTRA,
    }
)
_FINAL_METRICS = _optionals(
    {
        "total_prompt_tokens": st.integers(0, 10**7),
        "total_completion_tokens": st.integers(0, 10**7),
        "total_cached_tokens": st.integers(0, 10**7),
        "total_cost_usd": st.floats(0, 100, allow_nan=False),
        "total_steps": st.integers(0, 100),
        "extra": _EXTRA,
    }
)
_AGENT = _optionals(
    {
        "model_name": _TEXT,
        "tool_definitions": st.lists(json_objects(3), max_size=2),
        "extra": _EXTRA,
    }
)


def _refs(draw: st.DrawFn, child_ids: list[str]) -> list[dict[str, Any]]:
    """Subagent references: by an embedded child's id, by a path, or both; session_id informational."""
    out = []
    for _ in range(draw(st.integers(1, 2))):
        ref: dict[str, Any] = {}
        how = draw(st.sampled_from(["id", "path", "both"] if child_ids else ["path"]))
        if how in ("id", "both"):
            ref["trajectory_id"] = draw(st.sampled_from(child_ids))
        if how in ("path", "both"):
            ref["trajectory_path"] = draw(st.sampled_from(["sub/a.json", "s3://b/t.json"]))
        ref.update(draw(_optionals({"session_id": _TEXT, "extra": _EXTRA})))
        out.append(ref)
    return out


def _result(draw: st.DrawFn, call_ids: list[str], child_ids: list[str]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    if call_ids and draw(st.booleans()):
        result["source_call_id"] = draw(st.sampled_from(call_ids))
    elif draw(st.booleans()):
        result["source_call_id"] = None
    result.update(draw(_optionals({"content": contents(), "extra": _EXTRA})))
    if draw(st.integers(0, 3)) == 0:
        result["subagent_trajectory_ref"] = _refs(draw, child_ids)
    return result


def _tool_call(draw: st.DrawFn, call_id: str) -> dict[str, Any]:
    call = {"tool_call_id": call_id, "function_name": draw(_NON_EMPTY), "arguments": draw(json_objects(4))}
    call.update(draw(_optionals({"extra": _EXTRA})))
    return call


def _step(draw: st.DrawFn, step_id: int, source: str, ids: _Ids, child_ids: list[str]) -> dict[str, Any]:
    step: dict[str, Any] = {"step_id": step_id, "source": source, "message": draw(contents())}
    step.update(draw(_optionals({"timestamp": timestamps(), "is_copied_context": st.booleans(), "extra": _EXTRA})))
    call_ids: list[str] = []
    if source == "agent":
        count = draw(_maybe(st.integers(0, 3)))
        no_llm = count == 0
        fields: dict[str, st.SearchStrategy[Any]] = {
            "model_name": _TEXT,
            "reasoning_effort": st.one_of(_TEXT, st.floats(0, 1, allow_nan=False)),
        }
        if not no_llm:
            fields["reasoning_content"] = _TEXT
            fields["metrics"] = _METRICS
        step.update(draw(_optionals(fields)))
        if count is not _ABSENT:
            step["llm_call_count"] = count
        n_calls = draw(st.integers(0, 2))
        if n_calls:
            call_ids = [ids.next("call", "") for _ in range(n_calls)]
            step["tool_calls"] = [_tool_call(draw, c) for c in call_ids]
        elif draw(st.booleans()):
            step["tool_calls"] = draw(st.sampled_from([None, []]))
    elif draw(st.integers(0, 3)) == 0:
        step["llm_call_count"] = draw(st.integers(0, 2))
    shape = draw(st.sampled_from(["none", "none", "null", "results"]))
    if shape == "null":
        step["observation"] = None
    elif shape == "results" or call_ids:
        step["observation"] = {"results": [_result(draw, call_ids, child_ids) for _ in range(draw(st.integers(0, 2)))]}
    return step


class _Ids:
    """Fresh identities within one drawn tree (sessions, trajectory ids, call ids never collide)."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.n = 0

    def next(self, kind: str, suffix: str) -> str:
        self.n += 1
        return f"{self.prefix}{kind}{self.n}{suffix}"


_SOURCE = st.sampled_from(["user", "agent", "agent", "system"])
_SUFFIX = st.sampled_from(["", "", "/x", "~y", " é"])


def _trajectory(
    draw: st.DrawFn, ids: _Ids, depth: int, top: bool, session: str | None, versioned: bool
) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    if draw(st.integers(0, 5)) or versioned:
        doc["schema_version"] = draw(st.sampled_from(VERSIONS))
    suffix = draw(_SUFFIX)
    if top:
        shape = draw(st.sampled_from(["both", "session", "trajectory"]))
        if shape in ("both", "session"):
            doc["session_id"] = session or ids.next("S", suffix)
        if shape in ("both", "trajectory"):
            doc["trajectory_id"] = ids.next("T", suffix)
    else:
        doc["trajectory_id"] = ids.next("T", suffix)
        own = draw(st.sampled_from(["absent", "null", "own", "shared"]))
        if own == "null":
            doc["session_id"] = None
        elif own == "own":
            doc["session_id"] = ids.next("S", suffix)
        elif own == "shared" and session:
            doc["session_id"] = session  # siblings and parent may share a run's session
    doc["agent"] = {"name": draw(_NON_EMPTY), "version": draw(_NON_EMPTY), **draw(_AGENT)}
    children: list[dict[str, Any]] = []
    if depth > 0:
        for _ in range(draw(st.integers(0, 2))):
            sid = doc.get("session_id") or session
            children.append(_trajectory(draw, ids, depth - 1, top=False, session=sid, versioned=versioned))
    child_ids = [c["trajectory_id"] for c in children]
    sources = draw(st.lists(_SOURCE, min_size=1, max_size=4))
    doc["steps"] = [_step(draw, i + 1, s, ids, child_ids) for i, s in enumerate(sources)]
    doc.update(
        draw(
            _optionals(
                {
                    "notes": _TEXT,
                    "final_metrics": _FINAL_METRICS,
                    "continued_trajectory_ref": st.sampled_from(["next.json", "s3://b/part-2.json"]),
                    "extra": _EXTRA,
                }
            )
        )
    )
    if children:
        doc["subagent_trajectories"] = children
    elif depth > 0 and draw(st.booleans()):
        doc["subagent_trajectories"] = draw(st.sampled_from([None, []]))
    return doc


@st.composite
def _documents(draw: st.DrawFn, prefix: str, max_depth: int, versioned: bool) -> dict[str, Any]:
    return _trajectory(draw, _Ids(prefix), max_depth, top=True, session=None, versioned=versioned)


def harbor_documents(
    prefix: str = "", max_depth: int = 2, versioned: bool = False
) -> st.SearchStrategy[dict[str, Any]]:
    """A trajectory Harbor 0.26 accepts, subagents nested up to `max_depth`.

    Harbor reads a missing `schema_version` as ATIF-v1.8; mapc's default reading requires one
    (docs/formats.md (ATIF)): with `versioned`, every trajectory of the tree has one, so mapc converts it."""
    return _documents(prefix, max_depth, versioned)


@st.composite
def continuation_segments(draw: st.DrawFn) -> list[dict[str, Any]]:
    """2–3 segments of one run: one `session_id`, each but the last naming its continuation."""
    session = draw(_NON_EMPTY)
    out = []
    n = draw(st.integers(2, 3))
    for i in range(n):
        doc = draw(harbor_documents(prefix=f"seg{i}-", max_depth=1, versioned=True))
        doc["session_id"] = session
        if i < n - 1:
            doc["continued_trajectory_ref"] = f"segment-{i + 1}.json"
        else:
            doc.pop("continued_trajectory_ref", None)
        out.append(doc)
    return out


__all__ = ["VERSIONS", "content_parts", "continuation_segments", "harbor_documents", "timestamps"]
