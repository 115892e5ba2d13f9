"""A hand-written Codex rollout ⇄ Storyline converter: the baseline for `codex` (issue 18).

Written the way a competent user would write it (dicts, loops, orjson) for the rollouts
`rows_codex.py` generates: the session_meta gives the session and the agent; each message and
function call is a turn; each output joins its call's turn by call_id; the session_meta,
turn_context, reasoning and event records are kept whole at their line (as mapc keeps them) and
lend the next / previous turn its env, reasoning text and token counts.  The reverse puts every
record back at its line.

It is a baseline, not product code: it trusts its input (no validation, no envelope, no unknown keys, no
unknown record types, no records of other kinds).

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


def _turn(rec: dict[str, Any]) -> dict[str, Any]:
    p = rec["payload"]
    turn: dict[str, Any] = {"ts": rec["timestamp"]}
    if p["type"] == "function_call":
        turn.update(src="agent", msg="")
        turn["tool_calls"] = [{"tcid": p["call_id"], "fn": p["name"], "args": orjson.loads(p["arguments"])}]
    else:
        texts = [c["text"] for c in p["content"]]
        turn.update(
            src=SRC[p["role"]], msg=texts[0] if len(texts) == 1 else [{"type": "text", "text": t} for t in texts]
        )
    return turn


def _metrics(p: dict[str, Any]) -> dict[str, Any] | None:
    last = (p.get("info") or {}).get("last_token_usage") if p["type"] == "token_count" else None
    if not last:
        return None
    out = {k: last[s] for k, s in USAGE if last.get(s) is not None}
    rest = {k: v for k, v in last.items() if k not in {s for _, s in USAGE}}
    return {**out, "extra": rest} if rest else out


def forward(records: list[dict[str, Any]], document_id: str = "session.jsonl") -> dict[str, Any]:
    """The Storyline of a rollout: records that make no turn are kept whole at their line; an
    output keeps its time and its call_id (where the reverse puts it back)."""
    fields: dict[str, Any] = {}
    kept: dict[str, Any] = {}  # keys codex defines that a Storyline has no field for: origin.kept
    turns: list[dict[str, Any]] = []
    lend: dict[str, Any] = {}
    calls: dict[str, int] = {}
    for i, rec in enumerate(records):
        t, p = rec["type"], rec["payload"]
        kind = p["type"] if t == "response_item" else t
        if kind in ("message", "function_call"):
            turn = _turn(rec)
            if "env" in lend:
                turn["env"] = lend.pop("env")
            if "reason" in lend and turn["src"] == "agent":
                turn["reason"] = lend.pop("reason")
            lend = {}
            turns.append(turn)
            if kind == "function_call":
                calls[p["call_id"]] = len(turns) - 1
        elif kind == "function_call_output":
            kept[f"/{i}/timestamp"] = rec["timestamp"]
            kept[f"/{i}/payload/call_id"] = p["call_id"]
            owner = turns[calls[p["call_id"]]]
            owner.setdefault("observation", {"results": []})["results"].append(
                {"source_call_id": p["call_id"], "content": p["output"]}
            )
        else:
            fields[f"/{i}"] = rec
            if kind == "turn_context":
                lend["env"] = {
                    "event_type": "turn_context",
                    "state": p,
                    **({"id": p["turn_id"]} if "turn_id" in p else {}),
                }
            elif kind == "reasoning":
                texts = [x["text"] for k in ("summary", "content") for x in p.get(k) or ()]
                if texts:
                    lend["reason"] = "\n\n".join(texts)
            elif kind == "event_msg" and turns and turns[-1]["src"] == "agent" and (m := _metrics(p)) is not None:
                turns[-1]["metrics"] = m
    meta = records[0]["payload"]
    model = next((r["payload"]["model"] for r in records if r["type"] == "turn_context"), None)
    agent = {
        "id": "codex",
        "ver": meta["cli_version"],
        "name": meta["originator"],
        **({"model": model} if model else {}),
    }
    counts: dict[str, int] = {}
    for ptr in fields:
        star = "/*" + ptr[ptr.index("/", 1) :] if ptr.count("/") > 1 else "/*"
        counts[star] = counts.get(star, 0) + 1
    origin: dict[str, Any] = {"format": "codex"}
    if kept:
        origin["kept"] = {"source_document_id": document_id, "fields": kept}
    return {
        "schema_version": "storyline/v1",
        "origin": origin,
        "agent": agent,
        "session": meta["id"],
        "started_at": meta["timestamp"],
        "finished_at": records[-1]["timestamp"],
        "turns": [{"id": n, **t} for n, t in enumerate(turns, start=1)],
        "unknown_fields": {"sources": {"codex": {"source_document_id": document_id, "fields": fields}}},
        "unknown_key_counts": {"codex": counts},
    }


def reverse(story: dict[str, Any]) -> list[dict[str, Any]]:
    """The records back: whole ones at their line, turns in order between them, each output where
    its call_id says."""
    fields = story["unknown_fields"]["sources"]["codex"]["fields"]
    kept = (story["origin"].get("kept") or {}).get("fields", {})
    whole = {int(k[1:]): v for k, v in fields.items() if k.count("/") == 1}
    marks = {int(k.split("/")[1]): v for k, v in kept.items() if k.endswith("/payload/call_id")}
    times = {int(k.split("/")[1]): v for k, v in kept.items() if k.endswith("/timestamp")}
    results = {r["source_call_id"]: r for t in story["turns"] for r in (t.get("observation") or {}).get("results", ())}
    queue = list(story["turns"])
    out = []
    for i in range(len(whole) + len(marks) + len(queue)):
        if i in whole:
            out.append(whole[i])
        elif i in marks:
            r = results[marks[i]]
            payload = {"type": "function_call_output", "call_id": marks[i], "output": r["content"]}
            out.append({"timestamp": times[i], "type": "response_item", "payload": payload})
        else:
            turn = queue.pop(0)
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
                p = {
                    "type": "message",
                    "role": ROLE[turn["src"]],
                    "content": [{"type": kind, "text": t} for t in parts],
                }
            out.append({"timestamp": turn["ts"], "type": "response_item", "payload": p})
    return out


def forward_bytes(data: bytes) -> bytes:
    return orjson.dumps([forward([orjson.loads(line) for line in data.splitlines() if line.strip()])])


def reverse_bytes(data: bytes) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for s in orjson.loads(data) for r in reverse(s))
