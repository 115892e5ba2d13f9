"""ATIF v1.7 → Storyline with a glom spec: the field renames of docs/formats.md ("ATIF"), for the benchmark only.

glom is installed in the dev venv for this comparison; it is not a mapc dependency, so it is imported here
only. The spec does the renames, null-as-absent (`Coalesce(..., skip=(None,), default=SKIP)`), the kind,
latency and duration rules and observation.results, declaratively. glom has no notion of "the keys I did
not read", so unknown-key capture is a plain Python walk (`_residuals`), called once per trajectory node.
Leaves out: the BLAKE3 source_document_id (the constant "glom" stands in), validation, array/JSONL
containers, the reverse direction.
"""

from __future__ import annotations

from typing import Any

import orjson
from glom import SKIP, Coalesce, glom
from handwritten_atif import (
    AGENT_KEYS,
    CALL_KEYS,
    DEFAULT_KINDS,
    OBSERVATION_KEYS,
    ROOT_KEYS,
    STEP_KEYS,
    effective_kind,
    escape,
    latency_from,
    ttft_from,
)


def opt(path: Any) -> Coalesce:
    """An optional source value: missing or null leaves the target key out."""
    return Coalesce(path, skip=(None,), default=SKIP)


def _kind(step: dict[str, Any]) -> Any:
    kind = effective_kind(step["source"], step.get("tool_calls"))
    return SKIP if (step["source"], kind) in DEFAULT_KINDS else kind


def _metric(read: Any) -> Any:
    return opt(("metrics", lambda m: read(m) if type(m) is dict else None))


def _duration(extra: Any) -> Any:
    return extra["duration_ms"] if type(extra) is dict and type(extra.get("duration_ms")) is int else None


CALL = {
    "tcid": "tool_call_id",
    "fn": "function_name",
    "args": "arguments",
    "result": opt("result"),
    "duration_ms": opt(("extra", _duration)),
    "extra": opt("extra"),
}

TURN = {
    "id": "step_id",
    "kind": _kind,
    "ts": opt("timestamp"),
    "src": "source",
    "msg": "message",
    "reason": opt("reasoning_content"),
    "effort": opt("reasoning_effort"),
    "tool_calls": opt(("tool_calls", [CALL])),  # a null list fails inside Coalesce, which gives SKIP
    "observation": opt(("observation", {"results": "results"})),
    "metrics": opt("metrics"),
    "model": opt("model_name"),
    "nllm": opt("llm_call_count"),
    "copied": opt("is_copied_context"),
    "latency_ms": _metric(latency_from),
    "ttft_ms": _metric(ttft_from),
    "extra": opt("extra"),
}

AGENT = {
    "id": "name",
    "name": "name",
    "ver": "version",
    "model": opt("model_name"),
    "tools": opt("tool_definitions"),
    "extra": opt("extra"),
}

NODE = {
    "trajectory": opt("trajectory_id"),
    "agent": ("agent", AGENT),
    "children": opt(("subagent_trajectories", lambda subs: [s["trajectory_id"] for s in subs] or None)),
    "notes": opt("notes"),
    "final_metrics": opt("final_metrics"),
    "continued_trajectory_ref": opt("continued_trajectory_ref"),
    "extra": opt("extra"),
    "turns": ("steps", [TURN]),
}


def _residuals(node: dict[str, Any], ptr: str, norm: str) -> tuple[dict[str, Any], dict[str, int]]:
    fields: dict[str, Any] = {}
    counts: dict[str, int] = {}

    def take(obj: dict[str, Any], known: frozenset[str], p: str, n: str) -> None:
        for key, value in obj.items():
            if key not in known:
                fields[f"{p}/{escape(key)}"] = value
                counts[f"{n}/{escape(key)}"] = counts.get(f"{n}/{escape(key)}", 0) + 1

    take(node, ROOT_KEYS, ptr, norm)
    take(node["agent"], AGENT_KEYS, ptr + "/agent", norm + "/agent")
    for s, step in enumerate(node["steps"]):
        sp, sn = f"{ptr}/steps/{s}", norm + "/steps/*"
        take(step, STEP_KEYS, sp, sn)
        if type(step.get("observation")) is dict:
            take(step["observation"], OBSERVATION_KEYS, sp + "/observation", sn + "/observation")
        for c, call in enumerate(step.get("tool_calls") or ()):
            take(call, CALL_KEYS, f"{sp}/tool_calls/{c}", sn + "/tool_calls/*")
    return fields, counts


def forward(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """One ATIF trajectory → Storylines (root first, subagents depth-first) through the glom spec."""
    stories: list[dict[str, Any]] = []

    def visit(node: dict[str, Any], ptr: str, norm: str, parent_session: str | None, psid: str | None) -> None:
        body = glom(node, NODE)
        session = node.get("session_id") or node.get("trajectory_id") or parent_session
        story: dict[str, Any] = {
            "schema_version": "storyline/v1",
            "origin": {"format": "atif", "schema_version": node["schema_version"]},
            "session": session,
            **body,
        }
        if psid is not None:
            story["parent"] = {"psid": psid}
        fields, counts = _residuals(node, ptr, norm)
        if fields:
            story["unknown_fields"] = {"sources": {"atif": {"source_document_id": "glom", "fields": fields}}}
            story["unknown_key_counts"] = {"atif": counts}
        stories.append(story)
        for c, child in enumerate(node.get("subagent_trajectories") or ()):
            visit(
                child,
                f"{ptr}/subagent_trajectories/{c}",
                norm + "/subagent_trajectories/*",
                session,
                node.get("trajectory_id") or session,
            )

    visit(doc, "", "", None, None)
    return stories


def forward_bytes(data: bytes) -> bytes:
    """ATIF JSON (one trajectory) → Storyline JSON (one object, else an array)."""
    stories = forward(orjson.loads(data))
    return orjson.dumps(stories[0] if len(stories) == 1 else stories)
