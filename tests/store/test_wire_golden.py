"""The wire tables' results, byte for byte: every recorded event set and a seeded corpus of generated
ones, projected (`events.project_records`), synthesized back (`events.synthesize_wire`) and each
table printed (`wire.markdown`), compared with the digests in ``tests/data/events/wire-golden.json``.

The digests were written before the tables were rewritten in the engine's rule vocabulary
(mappings/wire/), so this test is the before/after comparison of that rewrite: it fails on any
byte that changed.  A change meant to alter the results rewrites the file on purpose
(``.venv/bin/python tests/store/test_wire_golden.py --write``), in its own commit that says why.

The generated corpus is seeded (`random.Random(n)`), not hypothesis-drawn, so its cases are the
same on every run and every hypothesis version: Storylines of every turn shape the writers write
(texts and text parts, reasoning, parallel tool calls and results, refusals, usage with extra keys,
failed calls, streamed or not), synthesized to events whose bodies then get what a real recorder
sees and the tables do not read: unknown request parameters, message and block keys, unknown block
types, response keys.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from mapc.engine.problems import MapcError
from mapc.store import events, wire

DATA = Path(__file__).resolve().parents[1] / "data" / "events"
GOLDEN = DATA / "wire-golden.json"
PROTOCOLS = ["anthropic-messages", "openai-chat-completions", "openai-responses", "gemini-generate-content"]
SEEDS = 40  # generated Storylines per protocol


def _bytes(value: Any) -> bytes:
    return orjson.dumps(value)  # insertion order kept: the order of keys is part of the result


def _outcome(thunk: Any) -> Any:
    """What `thunk()` gives, or the problems it raises (an error is a result too)."""
    try:
        return thunk()
    except MapcError as exc:
        return {"error": [p.as_dict() for p in exc.problems]}


def _project(records: list[dict[str, Any]]) -> Any:
    notes: list[Any] = []
    story = _outcome(lambda: events.project_records(copy.deepcopy(records), notes=notes))
    return {"story": story, "notes": [p.as_dict() for p in notes]}


def _synthesize(story: Any, protocol: str) -> Any:
    if type(story) is not dict or "turns" not in story:
        return None
    notes: list[Any] = []
    made = _outcome(lambda: events.synthesize_wire(copy.deepcopy(story), protocol, notes=notes))
    return {"events": made, "notes": [p.as_dict() for p in notes]}


# --- the seeded corpus ------------------------------------------------------------------------------

STOPS = {
    "anthropic-messages": ["end_turn", "tool_use"],
    "openai-chat-completions": ["stop", "tool_calls"],
    "openai-responses": ["completed", "incomplete"],
    "gemini-generate-content": ["STOP", "MAX_TOKENS"],
}


def _text(rng: random.Random) -> str:
    return "".join(rng.choice("ab yz\n") for _ in range(rng.randint(1, 6)))


def _args(rng: random.Random) -> dict[str, Any]:
    return {k: rng.choice([rng.randint(0, 9), _text(rng)]) for k in rng.sample(["q", "n", "path"], rng.randint(0, 2))}


def story_of(rng: random.Random, protocol: str) -> dict[str, Any]:
    """A Storyline the protocol's writer can write (as tests/store/test_synthesize_wire.py's law draws)."""
    gemini, openai = protocol == "gemini-generate-content", protocol.startswith("openai")
    kinds = ["user", "agent"] + (["system"] if openai else [])
    turns: list[dict[str, Any]] = []
    calls = 0
    for n in range(rng.randint(1, 7)):
        src = rng.choice(kinds)
        turn: dict[str, Any] = {"id": n + 1, "src": src}
        if src != "agent":
            turn["msg"] = _text(rng) if rng.random() < 0.7 else [{"type": "text", "text": _text(rng)} for _ in "ab"]
            if src == "system" and rng.random() < 0.5:
                turn["extra"] = {"role": "developer"}
            turns.append(turn)
            continue
        if rng.random() < 0.15:
            turn.update(msg="", extra={"status": 429, "error": {"type": "rate_limit_error", "message": _text(rng)}})
            turns.append(turn)
            continue
        turn["msg"] = rng.choice(["", _text(rng)])
        if rng.random() < 0.5:
            turn["reason"] = _text(rng)
        tool_calls = []
        for _ in range(rng.randint(0, 2)):
            calls += 1
            tool_calls.append({"tcid": f"call_{calls}", "fn": rng.choice(["read", "run"]), "args": _args(rng)})
        if tool_calls:
            turn["tool_calls"] = tool_calls
            if rng.random() < 0.6:
                results = []
                for c in tool_calls:
                    content = _args(rng) if gemini else _text(rng)
                    result: dict[str, Any] = {"source_call_id": c["tcid"], "content": content}
                    if protocol == "anthropic-messages" and rng.random() < 0.3:
                        result["is_error"] = rng.random() < 0.5
                    results.append(result)
                turn["observation"] = {"results": results}
        extra: dict[str, Any] = {}
        if rng.random() < 0.5:
            extra["stop_reason"] = rng.choice(STOPS[protocol])
        if rng.random() < 0.5:
            extra["id"] = f"resp_{n}"
        if openai and rng.random() < 0.25:
            extra["refusal"] = _text(rng)
        if extra:
            turn["extra"] = extra
        if rng.random() < 0.5:
            turn["model"] = rng.choice(["m-1", "m-2"])
        if rng.random() < 0.5:
            turn["metrics"] = {"input_tokens": rng.randint(0, 99), "output_tokens": rng.randint(0, 99)}
        turns.append(turn)
    if not gemini and rng.random() < 0.4:
        turns[0].setdefault("extra", {})["params"] = {"stream": True}
    return {"schema_version": "storyline/v1", "session": "golden", "agent": {"id": "a", "name": "a"}, "turns": turns}


def _objects(value: Any) -> list[dict[str, Any]]:
    """Every object inside `value` (depth first)."""
    out = []
    stack = [value]
    while stack:
        node = stack.pop()
        if type(node) is dict:
            out.append(node)
            stack.extend(node.values())
        elif type(node) is list:
            stack.extend(node)
    return out


def recorded_like(rng: random.Random, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The synthesized records with what a recorder sees and no table reads: a parameter, keys on
    messages, blocks and responses, an unknown block type; JSON bodies only (SSE text is left)."""
    out = copy.deepcopy(records)
    for record in out:
        http = record["payload"].get("http") if type(record["payload"]) is dict else None
        if http is None:
            continue
        for key in ("request_body", "response_body"):
            body = http.get(key)
            if type(body) is not dict:
                continue
            if rng.random() < 0.5:
                body["temperature"] = rng.choice([0, 0.5])
            for obj in _objects(body):
                roll = rng.random()
                if roll < 0.15:
                    obj["cache_control"] = {"type": "ephemeral"}
                elif roll < 0.2 and type(obj.get("content")) is list:
                    obj["content"].append({"type": "image", "source": {"data": _text(rng)}})
                elif roll < 0.25 and type(obj.get("parts")) is list:
                    obj["parts"].append({"inlineData": {"mimeType": "image/png", "data": _text(rng)}})
    return out


def cases() -> dict[str, bytes]:
    """Every case's result bytes, by name."""
    out: dict[str, bytes] = {}
    for table in wire.tables():
        out[f"markdown:{table.protocol}"] = wire.markdown(table).encode()
    for path in sorted(DATA.glob("*.events.jsonl")):
        records = events.parse_jsonl(path.read_bytes())
        projected = _project(records)
        out[f"fixture:{path.name}:project"] = _bytes(projected)
        protocol = events.wire_protocol(projected["story"]) if type(projected["story"]) is dict else None
        if protocol:
            out[f"fixture:{path.name}:synthesize"] = _bytes(_synthesize(projected["story"], protocol))
    for protocol in PROTOCOLS:
        for n in range(SEEDS):
            rng = random.Random(f"{protocol}:{n}")
            story = story_of(rng, protocol)
            made = _synthesize(story, protocol)
            out[f"generated:{protocol}:{n}:synthesize"] = _bytes(made)
            if type(made["events"]) is not list:
                continue
            out[f"generated:{protocol}:{n}:project"] = _bytes(_project(made["events"]))
            noisy = recorded_like(rng, made["events"])
            projected = _project(noisy)
            out[f"generated:{protocol}:{n}:recorded:project"] = _bytes(projected)
            out[f"generated:{protocol}:{n}:recorded:synthesize"] = _bytes(_synthesize(projected["story"], protocol))
    return out


def digests() -> dict[str, str]:
    return {name: hashlib.sha256(data).hexdigest() for name, data in cases().items()}


def test_the_wire_tables_give_the_recorded_results_byte_for_byte():
    expected = json.loads(GOLDEN.read_text())
    found = digests()
    assert sorted(found) == sorted(expected)  # the same cases
    changed = [name for name in expected if found[name] != expected[name]]
    assert changed == [], f"{len(changed)} of {len(expected)} results changed, first: {changed[:5]}"


def test_the_corpus_reaches_every_shape_it_claims():
    made = cases()
    text = b"".join(made.values())
    for needle in (b'"cache_control"', b'"inlineData"', b'"image"', b'"unmapped"', b'"tool_calls"', b"event: ", b"429"):
        assert needle in text, needle


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        pytest.exit("usage: test_wire_golden.py --write  (rewrites tests/data/events/wire-golden.json)")
    GOLDEN.write_text(json.dumps(digests(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}")
