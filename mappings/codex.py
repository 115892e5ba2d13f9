"""Codex CLI rollouts: the named functions `codex.yaml` calls (roles, a message's content items,
one record's tool call, and the values promoted from records kept whole)."""

from __future__ import annotations

from typing import Any

from mapc.engine.functions import register
from mapc.engine.values import MISSING
from mapc.mappings.openai_chat import json_text_value, json_value_text

_SRC = {"user": "user", "assistant": "agent", "developer": "system", "system": "system"}
_ROLE = {"user": "user", "agent": "assistant", "system": "developer"}
_USAGE = (
    ("prompt_tokens", "input_tokens"),
    ("completion_tokens", "output_tokens"),
    ("cached_tokens", "cached_input_tokens"),
)


def _texts(parts: Any, kinds: Any) -> list[str] | None:
    ok = type(parts) is list and parts and all(type(p) is dict and set(p) == {"type", "text"} for p in parts)
    return (
        [p["text"] for p in parts] if ok and all(p["type"] in kinds and type(p["text"]) is str for p in parts) else None
    )


@register("codex_item", 2)
def codex_item(rtype: Any, ptype: Any) -> Any:
    """A record's type when the turn does not say it (not a message, not a function call)."""
    if rtype == "response_item" and ptype in ("message", "function_call"):
        return MISSING
    return ptype if rtype == "response_item" and type(ptype) is str else rtype


@register("codex_types", 2)
def codex_types(item: Any, tool_calls: Any) -> Any:
    """`type` and `payload.type` back (codex_item's inverse)."""
    if item is MISSING:
        return "response_item", "function_call" if tool_calls else "message"
    return (item, MISSING) if item == "compacted" else ("response_item", item)


@register("codex_src", 2)
def codex_src(rtype: Any, role: Any) -> Any:
    """A turn's source: a message's role (developer reads as system); agent for a call."""
    if rtype == "compacted":
        return "system"
    return "agent" if role is MISSING else _SRC.get(role, role) if type(role) is str else role


@register("codex_role", 3)
def codex_role(src: Any, item: Any, tool_calls: Any) -> Any:
    """A message's role back (none for calls and compactions)."""
    return MISSING if item is not MISSING or tool_calls else _ROLE.get(src, src) if type(src) is str else src


@register("codex_msg", 2)
def codex_msg(content: Any, message: Any) -> Any:
    """A turn's message: text items as text (parts when several), a compaction's summary, "" for a call."""
    texts = _texts(content, ("input_text", "output_text"))
    if type(message) is str or content is MISSING:
        return message if type(message) is str else ""
    return content if texts is None else texts[0] if len(texts) == 1 else [{"type": "text", "text": t} for t in texts]


@register("codex_content", 4)
def codex_content(msg: Any, src: Any, item: Any, tool_calls: Any) -> Any:
    """`content` (a message) and `message` (a compaction) back from a turn's message."""
    if item == "compacted" or item is not MISSING or tool_calls or msg is MISSING:
        return MISSING, msg if item == "compacted" else MISSING
    kind = "output_text" if src == "agent" else "input_text"
    return (
        [{"type": kind, "text": msg}]
        if type(msg) is str
        else [_item(p, kind) for p in msg]
        if type(msg) is list
        else msg
    ), MISSING


def _item(part: Any, kind: str) -> Any:
    """A content item of a Storyline message part: text, an image URL; any other as it is."""
    if type(part) is dict and set(part) == {"type", "text"} and part["type"] == "text":
        return {"type": kind, "text": part["text"]}
    url = part.get("image_url") if type(part) is dict and part.get("type") == "image_url" else None
    return (
        {"type": "input_image", "image_url": url["url"]} if type(url) is dict and type(url.get("url")) is str else part
    )


@register("codex_tool_calls", 5)
def codex_tool_calls(call_id: Any, name: Any, arguments: Any, text: Any, action: Any) -> Any:
    """A call record's tool call: JSON arguments decoded, free text as {"input": text}, a shell action."""
    if call_id is MISSING:
        return MISSING
    if action is not MISSING:
        return [{"tcid": call_id, "fn": "local_shell" if name is MISSING else name, "args": action}]
    args = {"input": text} if text is not MISSING else None if arguments is MISSING else json_text_value(arguments)
    return [{"tcid": call_id, "fn": name, "args": args}]


@register("codex_call_parts", 2)
def codex_call_parts(tool_calls: Any, item: Any) -> Any:
    """`call_id`, `name`, `arguments`, `input`, `action` back from a turn's tool call."""
    c = tool_calls[0] if type(tool_calls) is list and tool_calls and type(tool_calls[0]) is dict else {}
    tcid, fn, args = c.get("tcid", MISSING), c.get("fn", MISSING), c.get("args", MISSING)
    if not c:
        return (MISSING,) * 5
    if item == "local_shell_call":
        return tcid, MISSING if fn == "local_shell" else fn, MISSING, MISSING, args
    if item == "custom_tool_call" and type(args) is dict and set(args) == {"input"}:
        return tcid, fn, MISSING, args["input"], MISSING
    return tcid, fn, json_value_text(args), MISSING, MISSING


def _payloads(records: Any) -> list[dict[str, Any]]:
    ps = [r.get("payload") for r in records if type(r) is dict] if type(records) is list else []
    return [p for p in ps if type(p) is dict]


@register("codex_reason", 3)
def codex_reason(reasoning: Any, role: Any, call_id: Any) -> Any:
    """An agent turn's reasoning: the summaries and raw text of the reasoning records before it."""
    agent = role == "assistant" or (role is MISSING and call_id is not MISSING)
    texts = [
        x["text"]
        for p in _payloads(reasoning)
        for k in ("summary", "content")
        for x in p.get(k) or ()
        if type(x) is dict and type(x.get("text")) is str
    ]
    return "\n\n".join(texts) if texts and agent else MISSING


@register("codex_env", 1)
def codex_env(context: Any) -> Any:
    """A turn's environment: the last turn context before it (its turn id; its settings as state)."""
    p = (_payloads(context) or [MISSING])[-1]
    turn = {"id": p["turn_id"]} if p is not MISSING and type(p.get("turn_id")) is str else {}
    return MISSING if p is MISSING else {"event_type": "turn_context", "state": p, **turn}


@register("codex_metrics", 3)
def codex_metrics(events: Any, role: Any, call_id: Any) -> Any:
    """An agent turn's tokens: `last_token_usage` of the last token_count after it, OpenAI semantics
    (input includes cached, output includes reasoning); what ATIF has no field for goes to extra."""
    counts = [p["info"] for p in _payloads(events) if p.get("type") == "token_count" and type(p.get("info")) is dict]
    last = counts[-1].get("last_token_usage") if counts else None
    if type(last) is not dict or not (role == "assistant" or (role is MISSING and call_id is not MISSING)):
        return MISSING
    out = {k: last[s] for k, s in _USAGE if last.get(s) is not None}
    extra = {k: v for k, v in last.items() if k not in {s for _, s in _USAGE}}
    return {**out, "extra": extra} if extra else out


@register("codex_model", 1)
def codex_model(items: Any) -> Any:
    """The model of the first turn context (later ones are in each turn's env)."""
    ctx = [p for e in items if type(e) is dict for p in _payloads(e.get("context"))] if type(items) is list else []
    return next((p["model"] for p in ctx if type(p.get("model")) is str), MISSING)
