"""Codex CLI rollouts: the named functions `codex.yaml` calls (a record's turn and back, its
output, and the values kept records lend to turns)."""

from __future__ import annotations

from typing import Any

from mapc.engine.functions import register, rfc3339_text
from mapc.engine.values import MISSING
from mapc.mappings.openai_chat import json_text_value, json_value_text

_SRC = {"user": "user", "assistant": "agent", "developer": "system", "system": "system"}
_ROLE = {"user": "user", "agent": "assistant", "system": "developer"}
_CALLS = ("function_call", "custom_tool_call", "local_shell_call")
_OUTPUTS = ("function_call_output", "custom_tool_call_output")
_USAGE = (
    ("prompt_tokens", "input_tokens"),
    ("completion_tokens", "output_tokens"),
    ("cached_tokens", "cached_input_tokens"),
)


def _payload(record: Any) -> dict[str, Any]:
    p = record.get("payload") if type(record) is dict else None
    return p if type(p) is dict else {}


def _ts(turn: Any) -> Any:
    """A record's timestamp: the turn's, as RFC 3339 text (a turn from elsewhere may have none)."""
    ts = rfc3339_text(turn.get("ts", MISSING))
    return ts if type(ts) is str else "1970-01-01T00:00:00.000Z"


def _texts(parts: Any, kinds: tuple[str, ...]) -> list[str] | None:
    ok = type(parts) is list and parts and all(type(p) is dict and set(p) == {"type", "text"} for p in parts)
    return (
        [p["text"] for p in parts] if ok and all(p["type"] in kinds and type(p["text"]) is str for p in parts) else None
    )


@register("codex_is_turn", 1)
def codex_is_turn(record: Any) -> bool:
    return _payload(record).get("type") in ("message", *_CALLS)


@register("codex_is_output", 1)
def codex_is_output(record: Any) -> bool:
    return _payload(record).get("type") in _OUTPUTS


@register("codex_session", 1)
def codex_session(record: Any) -> Any:
    return _payload(record).get("id", MISSING) if record.get("type") == "session_meta" else MISSING


@register("codex_started", 1)
def codex_started(record: Any) -> Any:
    return _payload(record).get("timestamp", MISSING) if record.get("type") == "session_meta" else MISSING


@register("codex_turn", 1)
def codex_turn(record: Any) -> Any:
    """A message (role → src; text items as text, several as text parts) or a call (one tool call:
    JSON arguments decoded, a custom tool's text as {"input": text}, a shell action)."""
    p = _payload(record)
    if p.get("type") == "message":
        role, content = p.get("role"), p.get("content")
        texts = _texts(content, ("input_text", "output_text"))
        msg = (
            content if texts is None else texts[0] if len(texts) == 1 else [{"type": "text", "text": t} for t in texts]
        )
        return {"src": _SRC.get(role, role) if type(role) is str else role, "msg": msg}
    kind, name = p.get("type"), p.get("name", "local_shell")
    args = (
        p["action"]
        if kind == "local_shell_call"
        else {"input": p.get("input")}
        if kind == "custom_tool_call"
        else json_text_value(p.get("arguments"))
    )
    turn = {"src": "agent", "msg": "", "tool_calls": [{"tcid": p.get("call_id"), "fn": name, "args": args}]}
    return {**turn, "extra": {"codex_item": kind}} if kind != "function_call" else turn


@register("codex_turn_back", 1)
def codex_turn_back(turn: Any) -> Any:
    """The record of a turn: a message, or a call of its first tool call."""
    kind = (
        (turn.get("extra") or {}).get("codex_item", "function_call")
        if type(turn.get("extra")) is dict
        else "function_call"
    )
    calls = turn.get("tool_calls")
    if type(calls) is list and calls and type(calls[0]) is dict:
        c = calls[0]
        p: dict[str, Any] = {"type": kind, "call_id": c.get("tcid")}
        if kind == "local_shell_call":
            p["action"] = c.get("args")
        elif kind == "custom_tool_call" and type(c.get("args")) is dict and set(c["args"]) == {"input"}:
            p.update(name=c.get("fn"), input=c["args"]["input"])
        else:
            p.update(type="function_call", name=c.get("fn"), arguments=json_value_text(c.get("args")))
        return {"timestamp": _ts(turn), "payload": p}
    msg, src = turn.get("msg"), turn.get("src")
    kind = "output_text" if src == "agent" else "input_text"
    content = (
        [{"type": kind, "text": msg}]
        if type(msg) is str
        else [_item(x, kind) for x in msg]
        if type(msg) is list
        else msg
    )
    role = _ROLE.get(src, src) if type(src) is str else src
    return {"timestamp": _ts(turn), "payload": {"type": "message", "role": role, "content": content}}


def _item(part: Any, kind: str) -> Any:
    """A content item of a Storyline message part: text, an image URL; any other as it is."""
    if type(part) is dict and set(part) == {"type", "text"} and part["type"] == "text":
        return {"type": kind, "text": part["text"]}
    url = part.get("image_url") if type(part) is dict and part.get("type") == "image_url" else None
    return (
        {"type": "input_image", "image_url": url["url"]} if type(url) is dict and type(url.get("url")) is str else part
    )


@register("codex_compacted", 1)
def codex_compacted(record: Any) -> Any:
    return {"src": "system", "msg": _payload(record).get("message"), "extra": {"codex_item": "compacted"}}


@register("codex_compacted_back", 1)
def codex_compacted_back(turn: Any) -> Any:
    return {"timestamp": _ts(turn), "payload": {"message": turn.get("msg")}}


@register("codex_output", 1)
def codex_output(record: Any) -> Any:
    """A call's output as an observation result (joined to the call's turn by call_id)."""
    p = _payload(record)
    result = {"source_call_id": p.get("call_id"), "content": p.get("output")}
    if p.get("type") != "function_call_output":
        result["extra"] = {"codex_item": p.get("type")}
    return {"observation": {"results": [result]}}


@register("codex_output_back", 1)
def codex_output_back(turn: Any) -> Any:
    (r,) = turn["observation"]["results"]
    kind = (
        (r.get("extra") or {}).get("codex_item", "function_call_output")
        if type(r.get("extra")) is dict
        else "function_call_output"
    )
    payload = {"type": kind, "call_id": r.get("source_call_id"), "output": r.get("content")}
    return {"timestamp": _ts(turn), "payload": payload}


@register("codex_reason", 1)
def codex_reason(record: Any) -> Any:
    """Reasoning text: the summaries and raw text (encrypted content has none; it rides in the record)."""
    p = _payload(record)
    texts = [
        x["text"]
        for k in ("summary", "content")
        for x in p.get(k) or ()
        if type(x) is dict and type(x.get("text")) is str
    ]
    return "\n\n".join(texts) if texts else MISSING


@register("codex_env", 1)
def codex_env(record: Any) -> Any:
    """A turn context as the env of the turn after it: its settings as state, its turn id."""
    p = _payload(record)
    return {"event_type": "turn_context", "state": p, **({"id": p["turn_id"]} if type(p.get("turn_id")) is str else {})}


@register("codex_metrics", 1)
def codex_metrics(record: Any) -> Any:
    """A token_count's `last_token_usage` as metrics, OpenAI semantics (input includes cached,
    output includes reasoning); what ATIF has no field for goes to extra."""
    p = _payload(record)
    info = p.get("info") if p.get("type") == "token_count" else None
    last = info.get("last_token_usage") if type(info) is dict else None
    if type(last) is not dict:
        return MISSING
    out = {k: last[s] for k, s in _USAGE if last.get(s) is not None}
    extra = {k: v for k, v in last.items() if k not in {s for _, s in _USAGE}}
    return {**out, "extra": extra} if extra else out


@register("codex_session_meta", 1)
def codex_session_meta(story: Any) -> Any:
    """The session_meta record a rollout written from another format starts with."""
    agent = story.get("agent") or {}
    meta = {"id": story.get("session"), "timestamp": story.get("started_at") or "1970-01-01T00:00:00.000Z"}
    meta.update(cwd="", originator=agent.get("name") or "mapc", cli_version=agent.get("ver") or "")
    return {"timestamp": meta["timestamp"], "payload": meta}
