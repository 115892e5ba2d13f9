"""Codex CLI rollouts: the named functions `codex.yaml` calls (a record's turn and back, an output
as a result and back, and the values kept records lend to turns)."""

from __future__ import annotations

from typing import Any

from mapc.engine.functions import register, rfc3339_text
from mapc.engine.values import MISSING
from mapc.mappings.openai_chat import json_text_value, json_value_text

_SRC = {"user": "user", "assistant": "agent", "developer": "system", "system": "system"}
_ROLE = {v: k for k, v in _SRC.items() if k != "system"}  # system → developer, as newer Codex writes
EPOCH = "1970-01-01T00:00:00.000Z"  # the time of a record from a turn that has none


def _ts(turn: dict[str, Any]) -> str:
    ts = rfc3339_text(turn.get("ts", MISSING))
    return ts if type(ts) is str else EPOCH


def _texts(parts: Any, kinds: tuple[str, ...]) -> list[str] | None:
    """The texts of a list of text items of these kinds (None: it is not one)."""
    if type(parts) is not list or not parts:
        return None
    ok = all(
        type(p) is dict and set(p) == {"type", "text"} and p["type"] in kinds and type(p["text"]) is str for p in parts
    )
    return [p["text"] for p in parts] if ok else None


@register("codex_turn", 1)
def codex_turn(record: Any) -> Any:
    """A message (role → src; text items as text, several as text parts) or a call (its tool call:
    JSON arguments decoded, a custom tool's text as {"input": text}, a shell action)."""
    p = record["payload"]
    kind = p["type"]
    if kind == "message":
        msg = texts = _texts(p.get("content"), ("input_text", "output_text"))
        if texts is None:
            msg = p.get("content")
        elif len(texts) == 1:
            msg = texts[0]
        else:
            msg = [{"type": "text", "text": t} for t in texts]
        return {"src": _SRC.get(p.get("role"), p.get("role")), "msg": msg}
    args = json_text_value(p.get("arguments")) if kind == "function_call" else p.get("action")
    if kind == "custom_tool_call":
        args = {"input": p.get("input")}
    turn = {
        "src": "agent",
        "msg": "",
        "tool_calls": [{"tcid": p.get("call_id"), "fn": p.get("name", "local_shell"), "args": args}],
    }
    return turn if kind == "function_call" else {**turn, "extra": {"codex_item": kind}}


@register("codex_turn_back", 1)
def codex_turn_back(turn: Any) -> Any:
    """The record of a turn: a call of its first tool call, or a message."""
    kind = _item_of(turn, "function_call")
    c = turn["tool_calls"][0] if type(turn.get("tool_calls")) is list and turn["tool_calls"] else None
    if type(c) is not dict:
        msg, part = turn.get("msg"), "output_text" if turn.get("src") == "agent" else "input_text"
        content = [_item(x, part) for x in msg] if type(msg) is list else [_item({"type": "text", "text": msg}, part)]
        role = _ROLE.get(turn.get("src"), turn.get("src"))
        return {"timestamp": _ts(turn), "payload": {"type": "message", "role": role, "content": content}}
    p: dict[str, Any] = {"type": kind, "call_id": c.get("tcid"), "name": c.get("fn")}
    if kind == "local_shell_call":
        p["action"] = c.get("args")
        if p["name"] == "local_shell":
            del p["name"]
    elif kind == "custom_tool_call" and type(c.get("args")) is dict and set(c["args"]) == {"input"}:
        p["input"] = c["args"]["input"]
    else:
        p.update(type="function_call", arguments=json_value_text(c.get("args")))
    return {"timestamp": _ts(turn), "payload": p}


def _item_of(holder: Any, default: str) -> Any:
    extra = holder.get("extra")
    return extra.get("codex_item", default) if type(extra) is dict else default


def _item(part: Any, kind: str) -> Any:
    """The content item of a Storyline message part: text, an image URL, an item of a type of its
    own as it is; any other value (null, a number, an object without a type) as text, for a
    content item needs a type (what the reading cannot give back rides in the envelope)."""
    if _texts([part], ("text",)) is not None:
        return {"type": kind, "text": part["text"]}
    url = part.get("image_url") if type(part) is dict and part.get("type") == "image_url" else None
    if type(url) is dict and type(url.get("url")) is str:
        return {"type": "input_image", "image_url": url["url"]}
    own = type(part) is dict and type(part.get("type")) is str and part["type"] != "text"
    if own and all(type(part[k]) is str for k in ("text", "image_url") if k in part):
        return part
    text = part.get("text") if type(part) is dict and part.get("type") == "text" else part
    return {"type": kind, "text": text if type(text) is str else "" if text is None else json_value_text(text)}


@register("codex_output", 1)
def codex_output(record: Any) -> Any:
    """A call's output as the result joined to the call's turn (by call_id)."""
    p = record["payload"]
    kind = {"extra": {"codex_item": p["type"]}} if p["type"] != "function_call_output" else {}
    return {"observation": {"results": [{"source_call_id": p.get("call_id"), "content": p.get("output"), **kind}]}}


@register("codex_output_back", 1)
def codex_output_back(turn: Any) -> Any:
    (r,) = turn["observation"]["results"]
    payload = {
        "type": _item_of(r, "function_call_output"),
        "call_id": r.get("source_call_id"),
        "output": r.get("content"),
    }
    return {"timestamp": _ts(turn), "payload": payload}


@register("codex_reason", 1)
def codex_reason(record: Any) -> Any:
    """Reasoning text: its summaries and raw text (encrypted content has none; it rides in the record)."""
    p = record["payload"]
    texts = [
        x["text"]
        for k in ("summary", "content")
        for x in p.get(k) or ()
        if type(x) is dict and type(x.get("text")) is str
    ]
    return "\n\n".join(texts) if texts else MISSING
