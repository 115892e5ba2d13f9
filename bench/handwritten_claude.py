"""A hand-written Claude Code session → Storyline converter: the baseline for `claude-code`.

Written the way a user would write one (Harbor's agents do the same, inside each agent class): read
the JSONL lines, follow the parentUuid chain back from the last user/assistant record (rescuing
records of one API message and the results of the chain's calls), make a user turn of each user
text record, an agent turn of each assistant record (text, thinking, tool_use), put each
tool_result into the observation of the turn whose tool_use it answers, and usage (on the last
record of each API message) into metrics.  It gives the same turns as mapc on the real session
(tests/bench/test_handwritten_claude.py) and keeps nothing else: no residuals, no envelope, no
validation, no reverse.

    forward_bytes(open("session.jsonl", "rb").read())   # → Storyline JSON
"""

from __future__ import annotations

from typing import Any

import orjson


def _active(records: list[dict[str, Any]]) -> set[int]:
    by_id = {r["uuid"]: i for i, r in enumerate(records) if "uuid" in r}
    leaf = max(i for i, r in enumerate(records) if r.get("type") in ("user", "assistant", "system") and "uuid" in r)
    chain, i = set(), leaf
    while i is not None and i not in chain:
        chain.add(i)
        parent = records[i].get("parentUuid") or records[i].get("logicalParentUuid")
        i = by_id.get(parent)
    first = min(chain)
    chain |= {j for j, r in enumerate(records) if j < first and by_id.get(r.get("parentUuid")) is None}
    chain |= {j for j, r in enumerate(records) if j > leaf and by_id.get(r.get("parentUuid")) in chain}
    chain |= {j for j, r in enumerate(records) if "uuid" not in r}
    while True:
        groups = {records[j].get("message", {}).get("id") for j in chain if records[j].get("type") == "assistant"}
        calls = {b["id"] for j in chain for b in _blocks(records[j]) if b.get("type") == "tool_use"}
        answered = {b["tool_use_id"] for j in chain for b in _blocks(records[j]) if b.get("type") == "tool_result"}
        more = set()
        for j, r in enumerate(records):
            if j in chain or "uuid" not in r:
                continue
            blocks = _blocks(r)
            if (r.get("type") == "assistant" and r["message"].get("id") in groups) or any(
                b.get("tool_use_id") in calls or b.get("id") in answered for b in blocks
            ):
                more.add(j)
        if not more:
            return chain
        chain |= more


def _blocks(record: dict[str, Any]) -> list[dict[str, Any]]:
    content = record.get("message", {}).get("content") if type(record.get("message")) is dict else None
    return content if type(content) is list else []


def forward_bytes(data: bytes) -> bytes:
    records = [orjson.loads(line) for line in data.splitlines() if line.strip()]
    active = _active(records)
    last_of: dict[str, int] = {}
    for i in sorted(active):
        if records[i].get("type") == "assistant":
            last_of[records[i]["message"]["id"]] = i
    turns: list[dict[str, Any]] = []
    owner: dict[str, dict[str, Any]] = {}
    for i, r in enumerate(records):
        kind = r.get("type")
        if i not in active or kind not in ("user", "assistant", "system"):
            continue
        if kind == "system":
            if r.get("subtype") == "compact_boundary":
                turns.append({"src": "system", "ts": r["timestamp"], "msg": r.get("content")})
            continue
        blocks = _blocks(r)
        if kind == "user":
            if (
                blocks
                and all(b.get("type") == "tool_result" for b in blocks)
                and all(b["tool_use_id"] in owner for b in blocks)
            ):
                for b in blocks:
                    results = owner[b["tool_use_id"]].setdefault("observation", {"results": []})["results"]
                    results.append({"source_call_id": b["tool_use_id"], "content": b.get("content")})
                continue
            turns.append({"src": "user", "ts": r["timestamp"], "msg": r["message"]["content"]})
            continue
        message = r["message"]
        turn: dict[str, Any] = {"src": "agent", "ts": r["timestamp"], "model": message.get("model")}
        turn["msg"] = "\n\n".join(b["text"] for b in blocks if b.get("type") == "text")
        thinking = [b["thinking"] for b in blocks if b.get("type") == "thinking"]
        if thinking:
            turn["reason"] = "\n\n".join(thinking)
        calls = [{"tcid": b["id"], "fn": b["name"], "args": b["input"]} for b in blocks if b.get("type") == "tool_use"]
        if calls:
            turn["tool_calls"] = calls
        usage = message.get("usage")
        if last_of.get(message.get("id")) == i and usage:
            i_, c, rd, o = (
                usage[k]
                for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
            )
            turn["metrics"] = {
                "prompt_tokens": i_ + c + rd,
                "completion_tokens": o,
                "cached_tokens": rd,
                "extra": {"cache_creation_input_tokens": c},
            }
        turns.append(turn)
        for call in calls:
            owner[call["tcid"]] = turn
    for n, t in enumerate(turns, start=1):
        t["id"] = n
    first = next(r for r in records if "sessionId" in r)
    story = {
        "schema_version": "storyline/v1",
        "origin": {"format": "claude-code"},
        "session": first["sessionId"],
        "agent": {"id": "claude-code", "ver": first.get("version")},
        "turns": turns,
    }
    return orjson.dumps(story)
