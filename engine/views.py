"""Derived views of a Storyline: effective kind, env and prompt of a turn, and the document id.

Stored Storylines stay unmerged (R-ENV) and may leave ``kind`` out (R-KIND); these functions
compute what a reader sees.  They expect a document that has passed validation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

_ENV_STRINGS: Final = ("name", "endpoint", "id", "event_type", "request_id")


def effective_kind(turn: Mapping[str, Any]) -> str:
    """R-KIND: the turn's ``kind`` if present, else derived from ``src`` and ``tool_calls``.

    ``user`` → ``dialogue``, ``system`` → ``internal``, ``agent`` with at least one tool call →
    ``autonomous``, anything else → ``dialogue``.  Tool calls' own ``kind`` is never consulted.
    """
    kind = turn.get("kind")
    if kind is not None:
        return kind  # free text (R-KIND); the schema has checked it is a string
    src = turn.get("src")
    if src == "user":
        return "dialogue"
    if src == "system":
        return "internal"
    if src == "agent" and turn.get("tool_calls"):
        return "autonomous"
    return "dialogue"


def merge_env(base: Mapping[str, Any] | None, overlay: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """R-ENV: `overlay` shallow-merged over `base`; ``state`` is merged key by key.

    Each of the five string keys comes from `overlay` when present there (null is absent), else
    from `base`.  ``state`` holds `base`'s keys replaced or extended by `overlay`'s (shallow) and
    is left out when empty.  None when the merge holds nothing.
    """
    base = base or {}
    overlay = overlay or {}
    merged: dict[str, Any] = {}
    for key in _ENV_STRINGS:
        value = overlay.get(key)
        if value is None:
            value = base.get(key)
        if value is not None:
            merged[key] = value
    state = {**(base.get("state") or {}), **(overlay.get("state") or {})}
    if state:
        merged["state"] = state
    return merged or None


def effective_env(doc: Mapping[str, Any], turn_index: int) -> dict[str, Any] | None:
    """The env turn `turn_index` runs in: ``/task/env`` merged with the turn's ``env``.

    The merge is against ``/task/env`` only, never against the previous turn.  None when
    neither holds anything.
    """
    task = doc.get("task") or {}
    return merge_env(task.get("env"), doc["turns"][turn_index].get("env"))


def effective_prompt(doc: Mapping[str, Any], turn_index: int) -> dict[str, str] | None:
    """R-P: the turn's ``prompt`` if present (whole, missing keys ``""``), else the document's.

    Always both keys, ``{"system": …, "user": …}``; None when neither prompt exists.  A turn's
    explicit clear ``{"system": "", "user": ""}`` gives two empty strings, not the document's.
    """
    prompt = doc["turns"][turn_index].get("prompt")
    if prompt is None:
        prompt = doc.get("prompt")
    if prompt is None:
        return None
    return {"system": prompt.get("system") or "", "user": prompt.get("user") or ""}


def document_id(doc: Mapping[str, Any]) -> str:
    """The stable identity of a Storyline: ``trajectory`` if non-empty, else ``session``."""
    trajectory = doc.get("trajectory")
    if type(trajectory) is str and trajectory:
        return trajectory
    return doc["session"]


def call_results(turn: Mapping[str, Any]) -> dict[str, Any] | None:
    """The results of a turn's tool calls by call id, when its observation is just
    ``{results: [{source_call_id, content}, …]}`` answering its calls once each, in call order (what
    a format with one result per call says without loss); None for any other observation."""
    obs, calls = turn.get("observation"), turn.get("tool_calls")
    if type(obs) is not dict or set(obs) != {"results"} or type(calls) is not list:
        return None
    results = obs["results"]
    if type(results) is not list or not results:
        return None
    order = [c.get("tcid") for c in calls if type(c) is dict]
    seen: list[Any] = []
    for r in results:
        if type(r) is not dict or set(r) != {"source_call_id", "content"} or r["source_call_id"] not in order:
            return None
        seen.append(r["source_call_id"])
    if len(set(seen)) != len(seen) or seen != [t for t in order if t in seen]:
        return None
    return {r["source_call_id"]: r["content"] for r in results}
