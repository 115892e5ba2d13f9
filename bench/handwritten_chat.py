"""A hand-written OpenAI chat (fine-tuning JSONL) ⇄ Storyline converter: the baseline for `openai-chat`.

Written the way a competent user would write it (dicts, loops, orjson) for the corpus `rows_chat.py`
generates: one Storyline per line; messages in order as turns (roles system/user/assistant → src
system/user/agent; id = position + 1), tool messages appended to the observation results of the
turn before, tool calls with their JSON-string arguments decoded, `tools` as `/agent/tools`, the
session and source document id the BLAKE3 of the line's canonical JSON, and unknown keys of the
line and its messages kept under their pointer.  The reverse writes the lines back (arguments as
compact JSON text).

It is a baseline, not product code: it trusts its input (no validation, no envelope, no check
that the reverse gives an argument text back).

    forward_bytes(open("train.jsonl", "rb").read())   # → Storyline JSON (an array, one per line)
    reverse_bytes(storyline_bytes)                    # → JSONL
"""

from __future__ import annotations

from typing import Any

import orjson

from mapc.engine.canonical import document_id

SOURCES = {"system": "system", "user": "user", "assistant": "agent", "tool": "tool"}
ROLES = {"system": "system", "user": "user", "agent": "assistant"}
MESSAGE_KEYS = frozenset(["role", "content", "tool_calls", "tool_call_id", "reasoning_content"])
LINE_KEYS = frozenset(["messages", "tools", "model"])
KEPT_KEYS = frozenset(["weight"])  # keys the format defines that a Storyline has no field for: origin.kept


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _story(line: dict[str, Any]) -> dict[str, Any]:
    sdid = document_id(line)
    fields: dict[str, Any] = {}
    kept: dict[str, Any] = {}
    turns: list[dict[str, Any]] = []
    for m, message in enumerate(line["messages"]):
        for key, value in message.items():
            if key not in MESSAGE_KEYS:
                (kept if key in KEPT_KEYS else fields)[f"/messages/{m}/{_escape(key)}"] = value
        if message["role"] == "tool":
            turn = turns[-1]
            results = turn.setdefault("observation", {}).setdefault("results", [])
            results.append({"source_call_id": message["tool_call_id"], "content": message.get("content")})
            continue
        turn = {"id": m + 1, "src": SOURCES[message["role"]], "msg": message.get("content")}
        if "tool_calls" in message:
            calls = []
            for call in message["tool_calls"]:
                text = call["function"]["arguments"]
                try:
                    args = orjson.loads(text)
                except orjson.JSONDecodeError:
                    args = text
                calls.append({"tcid": call["id"], "kind": call["type"], "fn": call["function"]["name"], "args": args})
            turn["tool_calls"] = calls
        turns.append(turn)
    for key, value in line.items():
        if key not in LINE_KEYS:
            fields[f"/{_escape(key)}"] = value
    story: dict[str, Any] = {
        "schema_version": "storyline/v1",
        "origin": {"format": "openai-chat"},
        "session": sdid,
        "agent": {"id": "openai-chat"},
    }
    if kept:
        story["origin"]["kept"] = {"source_document_id": sdid, "fields": kept}
    if "tools" in line:
        story["agent"]["tools"] = line["tools"]
    if fields:
        story["unknown_fields"] = {"sources": {"openai-chat": {"source_document_id": sdid, "fields": fields}}}
        counts: dict[str, int] = {}
        for ptr in fields:
            parts = ptr.split("/")
            if len(parts) > 3 and parts[1] == "messages":
                parts[2] = "*"
            key = "/".join(parts)
            counts[key] = counts.get(key, 0) + 1
        story["unknown_key_counts"] = {"openai-chat": dict(sorted(counts.items()))}
    story["turns"] = turns
    return story


def forward_bytes(data: bytes) -> bytes:
    """JSONL of chat conversations → a JSON array of Storylines."""
    return orjson.dumps([_story(orjson.loads(line)) for line in data.splitlines() if line.strip()])


def _line(story: dict[str, Any]) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for turn in story["turns"]:
        message: dict[str, Any] = {"role": ROLES[turn["src"]]}
        if turn.get("msg") is not None:
            message["content"] = turn["msg"]
        if "tool_calls" in turn:
            message["tool_calls"] = [
                {
                    "id": c["tcid"],
                    "type": c.get("kind", "function"),
                    "function": {"name": c["fn"], "arguments": orjson.dumps(c["args"]).decode()},
                }
                for c in turn["tool_calls"]
            ]
        messages.append(message)
        for result in (turn.get("observation") or {}).get("results") or ():
            messages.append({"role": "tool", "tool_call_id": result["source_call_id"], "content": result["content"]})
    line: dict[str, Any] = {"messages": messages}
    if "tools" in story["agent"]:
        line["tools"] = story["agent"]["tools"]
    fields = ((story.get("unknown_fields") or {}).get("sources") or {}).get("openai-chat", {}).get("fields", {})
    kept = (story["origin"].get("kept") or {}).get("fields", {})
    for ptr, value in [*kept.items(), *fields.items()]:
        tokens = [t.replace("~1", "/").replace("~0", "~") for t in ptr[1:].split("/")]
        node: Any = line
        for t in tokens[:-1]:
            node = node[int(t)] if type(node) is list else node[t]
        node[tokens[-1]] = value
    return line


def reverse_bytes(data: bytes) -> bytes:
    """A JSON array of Storylines → JSONL of chat conversations."""
    return b"".join(orjson.dumps(_line(s)) + b"\n" for s in orjson.loads(data))
