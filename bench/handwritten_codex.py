"""A hand-written Codex rollout ⇄ Storyline converter: the baseline for `codex` (issue 18).

Written the way a competent user would write it (dicts, loops, orjson) for the rollouts
`rows_codex.py` generates: the session_meta gives the session and the agent; each message and
function call is a turn (the turn_context and reasoning records before it and the outputs, paired
by call_id, and events after it join it: reasoning text, env, token counts); the records it joins
ride whole in the turn's `extra`, as mapc keeps them.  The reverse writes the records back in the
order Codex wrote them on this corpus.

It is a baseline, not product code: it trusts its input (no validation, no envelope, no residuals,
no layout for records in another order, no unknown record types).

    forward_bytes(open("rollout.jsonl", "rb").read())   # → Storyline JSON (an array of one)
    reverse_bytes(storyline_bytes)                      # → JSONL
"""

from __future__ import annotations

from typing import Any

import orjson

SRC = {"user": "user", "assistant": "agent", "developer": "system", "system": "system"}
ROLE = {"user": "user", "agent": "assistant", "system": "developer"}
USAGE = (
    ("prompt_tokens", "input_tokens"),
    ("completion_tokens", "output_tokens"),
    ("cached_tokens", "cached_input_tokens"),
)


def _turn(n: int, rec: dict[str, Any], joined: dict[str, list[Any]]) -> dict[str, Any]:
    p = rec["payload"]
    turn: dict[str, Any] = {"id": n + 1, "ts": rec["timestamp"]}
    agent = p["type"] == "function_call" or p.get("role") == "assistant"
    if p["type"] == "function_call":
        turn.update(src="agent", msg="")
        turn["tool_calls"] = [{"tcid": p["call_id"], "fn": p["name"], "args": orjson.loads(p["arguments"])}]
    else:
        turn["src"] = SRC[p["role"]]
        texts = [c["text"] for c in p["content"]]
        turn["msg"] = texts[0] if len(texts) == 1 else [{"type": "text", "text": t} for t in texts]
    extra: dict[str, Any] = {}
    for key, name in (("context", "codex_context"), ("reasoning", "codex_reasoning"), ("events", "codex_events")):
        if joined.get(key):
            extra[name] = joined[key]
    if joined.get("context"):
        state = joined["context"][-1]["payload"]
        turn["env"] = {
            "event_type": "turn_context",
            "state": state,
            **({"id": state["turn_id"]} if "turn_id" in state else {}),
        }
    texts = [
        x["text"]
        for r in joined.get("reasoning", ())
        for k in ("summary", "content")
        for x in r["payload"].get(k) or ()
    ]
    if texts and agent:
        turn["reason"] = "\n\n".join(texts)
    counts = [
        e["payload"]["info"]
        for e in joined.get("events", ())
        if e["payload"]["type"] == "token_count" and e["payload"].get("info")
    ]
    if counts and agent:
        last = counts[-1]["last_token_usage"]
        metrics = {k: last[s] for k, s in USAGE if last.get(s) is not None}
        rest = {k: v for k, v in last.items() if k not in {s for _, s in USAGE}}
        turn["metrics"] = {**metrics, "extra": rest} if rest else metrics
    if joined.get("outputs"):
        turn["observation"] = {
            "results": [
                {
                    "source_call_id": o["payload"]["call_id"],
                    "content": o["payload"]["output"],
                    "extra": {"codex_ts": o["timestamp"], "codex_item": o["payload"]["type"]},
                }
                for o in joined["outputs"]
            ]
        }
    if extra:
        turn["extra"] = extra
    return turn


def forward(records: list[dict[str, Any]]) -> dict[str, Any]:
    meta = records[0]["payload"]
    items: list[tuple[dict[str, Any], dict[str, list[Any]]]] = []
    pending: dict[str, list[Any]] = {}
    calls: dict[str, int] = {}
    for rec in records[1:]:
        t, p = rec["type"], rec["payload"]
        kind = p["type"] if t == "response_item" else t
        if kind in ("message", "function_call"):
            items.append((rec, pending))
            pending = {}
            if kind == "function_call":
                calls[p["call_id"]] = len(items) - 1
        elif kind in ("turn_context", "reasoning"):
            pending.setdefault("context" if kind == "turn_context" else "reasoning", []).append(rec)
        elif kind == "function_call_output":
            items[calls[p["call_id"]]][1].setdefault("outputs", []).append(rec)
        else:
            items[-1][1].setdefault("events", []).append(rec)
    model = next((c["payload"]["model"] for _, j in items for c in j.get("context", ())), None)
    agent = {
        "id": "codex",
        "ver": meta["cli_version"],
        "name": meta["originator"],
        "extra": {"instructions": meta["instructions"], "model_provider": meta["model_provider"]},
    }
    if model:
        agent["model"] = model
    return {
        "schema_version": "storyline/v1",
        "origin": {"format": "codex"},
        "agent": agent,
        "session": meta["id"],
        "meta": {"codex": {"recorded_at": records[0]["timestamp"], "source": meta["source"]}},
        "started_at": meta["timestamp"],
        "task": {"env": {"state": {"cwd": meta["cwd"]}}},
        "turns": [_turn(n, rec, joined) for n, (rec, joined) in enumerate(items)],
    }


def reverse(story: dict[str, Any]) -> list[dict[str, Any]]:
    agent, codex = story["agent"], story["meta"]["codex"]
    meta = {
        "id": story["session"],
        "timestamp": story["started_at"],
        "cwd": story["task"]["env"]["state"]["cwd"],
        "originator": agent["name"],
        "cli_version": agent["ver"],
        "instructions": agent["extra"]["instructions"],
        "source": codex["source"],
        "model_provider": agent["extra"]["model_provider"],
    }
    out = [{"timestamp": codex["recorded_at"], "type": "session_meta", "payload": meta}]
    for turn in story["turns"]:
        extra = turn.get("extra", {})
        out += extra.get("codex_context", []) + extra.get("codex_reasoning", [])
        if turn.get("tool_calls"):
            c = turn["tool_calls"][0]
            p = {
                "type": "function_call",
                "name": c["fn"],
                "arguments": orjson.dumps(c["args"]).decode(),
                "call_id": c["tcid"],
            }
        else:
            kind = "output_text" if turn["src"] == "agent" else "input_text"
            parts = [turn["msg"]] if isinstance(turn["msg"], str) else [x["text"] for x in turn["msg"]]
            p = {"type": "message", "role": ROLE[turn["src"]], "content": [{"type": kind, "text": t} for t in parts]}
        out.append({"timestamp": turn["ts"], "type": "response_item", "payload": p})
        for r in (turn.get("observation") or {}).get("results", []):
            o = {"type": r["extra"]["codex_item"], "call_id": r["source_call_id"], "output": r["content"]}
            out.append({"timestamp": r["extra"]["codex_ts"], "type": "response_item", "payload": o})
        out += extra.get("codex_events", [])
    return out


def forward_bytes(data: bytes) -> bytes:
    return orjson.dumps([forward([orjson.loads(line) for line in data.splitlines() if line.strip()])])


def reverse_bytes(data: bytes) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for s in orjson.loads(data) for r in reverse(s))
