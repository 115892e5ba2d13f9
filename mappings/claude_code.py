"""Named functions of the claude-code spec (mappings/claude-code.yaml): Anthropic content blocks and
usage, each with the inverse the stream engine checks every record against."""

from __future__ import annotations

from typing import Any

from mapc.engine.functions import register
from mapc.engine.values import MISSING


def _blocks(record: Any) -> Any:
    message = record.get("message") if type(record) is dict else None
    return message.get("content", MISSING) if type(message) is dict else MISSING


@register("claude_all_results", 1)
def claude_all_results(record: Any) -> bool:
    """Whether a user record's content is tool_result blocks only (a tool's answer, not a message)."""
    blocks = _blocks(record)
    return (
        type(blocks) is list
        and bool(blocks)
        and all(type(b) is dict and b.get("type") == "tool_result" for b in blocks)
    )


@register("claude_results", 1)
def claude_results(record: Any) -> Any:
    """tool_result blocks as observation results (id and content); the message is empty."""
    out = []
    for b in _blocks(record):
        item = {"source_call_id": b.get("tool_use_id"), "content": b.get("content")}
        out.append({k: v for k, v in item.items() if v is not None})
    return {"msg": "", "observation": {"results": out}}


@register("claude_results_back", 1)
def claude_results_back(turn: Any) -> Any:
    """Observation results as a user message of tool_result blocks."""
    results = ((turn.get("observation") or {}).get("results")) or []
    blocks = [
        {"tool_use_id": r.get("source_call_id"), "type": "tool_result", "content": r.get("content", "")}
        for r in results
    ]
    return {"message": {"role": "user", "content": blocks}}


@register("claude_assistant", 1)
def claude_assistant(record: Any) -> Any:
    """An assistant record's blocks: text as the message, thinking as the reasoning, tool_use as calls."""
    blocks = _blocks(record)
    if type(blocks) is not list:
        return {"msg": blocks if blocks is not MISSING else ""}
    text = [b.get("text") for b in blocks if type(b) is dict and b.get("type") == "text"]
    thinking = [b.get("thinking") for b in blocks if type(b) is dict and b.get("type") == "thinking"]
    calls = [
        {"tcid": b.get("id"), "fn": b.get("name"), "args": b.get("input")}
        for b in blocks
        if type(b) is dict and b.get("type") == "tool_use"
    ]
    out: dict[str, Any] = {"msg": "\n\n".join(t for t in text if type(t) is str)}
    if thinking and all(type(t) is str for t in thinking):
        out["reason"] = "\n\n".join(str(t) for t in thinking)
    if calls:
        out["tool_calls"] = calls
    return out


@register("claude_assistant_back", 1)
def claude_assistant_back(turn: Any) -> Any:
    """A turn's reasoning, message and calls as Anthropic content blocks (that order)."""
    blocks: list[dict[str, Any]] = []
    if type(turn.get("reason")) is str:
        blocks.append({"type": "thinking", "thinking": turn["reason"]})
    msg = turn.get("msg")
    if type(msg) is str and msg:
        blocks.append({"type": "text", "text": msg})
    elif msg not in (None, ""):
        blocks.append({"type": "text", "text": msg if type(msg) is str else str(msg)})
    for call in turn.get("tool_calls") or []:
        blocks.append({"type": "tool_use", "id": call.get("tcid"), "name": call.get("fn"), "input": call.get("args")})
    return {"message": {"role": "assistant", "content": blocks}}


_USAGE = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")


@register("claude_usage", 1)
def claude_usage(record: Any) -> Any:
    """Anthropic usage as metrics: prompt = input + cache creation + cache read (all distinct)."""
    usage = (record.get("message") or {}).get("usage")
    if type(usage) is not dict or not all(type(usage.get(k)) is int for k in _USAGE):
        return MISSING
    i, c, r, o = (usage[k] for k in _USAGE)
    return {
        "prompt_tokens": i + c + r,
        "completion_tokens": o,
        "cached_tokens": r,
        "extra": {"cache_creation_input_tokens": c},
    }


@register("claude_usage_back", 1)
def claude_usage_back(turn: Any) -> Any:
    """Metrics back as Anthropic usage (input = prompt - cache read - cache creation)."""
    m = turn.get("metrics")
    if type(m) is not dict or not all(type(m.get(k)) is int for k in ("prompt_tokens", "completion_tokens")):
        return {}
    r = m.get("cached_tokens") if type(m.get("cached_tokens")) is int else 0
    extra: dict[str, Any] = m["extra"] if type(m.get("extra")) is dict else {}
    c = extra.get("cache_creation_input_tokens") if type(extra.get("cache_creation_input_tokens")) is int else 0
    usage = dict(zip(_USAGE, (m["prompt_tokens"] - c - r, c, r, m["completion_tokens"]), strict=True))
    return {"message": {"usage": usage}}


@register("claude_agent_session", 1)
def claude_agent_session(record: Any) -> Any:
    """A subagent transcript's session: the parent session and the agent id."""
    agent, session = record.get("agentId"), record.get("sessionId")
    return f"{session}/agent-{agent}" if type(agent) is str and type(session) is str else MISSING
