"""The Codex CLI rollout rows (issue 18): the orjson floor, a hand-written converter, and mapc's
codex spec forward and reverse.

Data sets: `codex` (one generated rollout of the size asked for: a session_meta, then turns of a
turn_context, a user message and its event, reasoning with encrypted content, a function call
with its output and token count, and an assistant message with its events) and
`codex-storyline` (mapc's forward output of `codex`: the input of both reverse rows).  The
hand-written converter (handwritten_codex.py) gives the same Storyline and records as mapc on
this corpus (tests/bench/test_handwritten_codex.py).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import handwritten_codex
import orjson
from harness import Sample, Work, bench, dataset, load

from mapc.engine import convert, storyline

USAGE = {
    "input_tokens": 9000,
    "cached_input_tokens": 8192,
    "output_tokens": 120,
    "reasoning_output_tokens": 64,
    "total_tokens": 9120,
}


def _turn(rng: random.Random, n: int, clock: list[int]) -> list[dict[str, Any]]:
    def rec(rtype: str, payload: dict[str, Any]) -> dict[str, Any]:
        clock[0] += 1
        ms = clock[0]
        return {
            "timestamp": f"2025-11-20T{ms // 3_600_000 % 24:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d}"
            f".{ms % 1000:03d}Z",
            "type": rtype,
            "payload": payload,
        }

    ask = f"Step {n}: " + "please look at the failing test. " * rng.randint(1, 4)
    call_id = f"call_{n}"
    return [
        rec(
            "turn_context",
            {
                "turn_id": str(n),
                "cwd": "/srv/app",
                "approval_policy": "never",
                "model": "gpt-5-codex",
                "effort": "medium",
            },
        ),
        rec("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": ask}]}),
        rec("event_msg", {"type": "user_message", "message": ask, "images": []}),
        rec(
            "response_item",
            {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": "**Running the tests**"}],
                "content": None,
                "encrypted_content": "gAAAAB" + "x" * rng.randint(100, 400),
            },
        ),
        rec(
            "response_item",
            {
                "type": "function_call",
                "name": "shell",
                "arguments": orjson.dumps({"command": ["bash", "-lc", f"pytest -k case_{n}"]}).decode(),
                "call_id": call_id,
            },
        ),
        rec(
            "response_item",
            {
                "type": "function_call_output",
                "call_id": call_id,
                "output": "FAILED test_case - AssertionError " * rng.randint(1, 6),
            },
        ),
        rec(
            "event_msg",
            {
                "type": "token_count",
                "info": {"total_token_usage": USAGE, "last_token_usage": USAGE},
                "rate_limits": None,
            },
        ),
        rec(
            "response_item",
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "The test fails on an assertion. " * 2}],
            },
        ),
        rec("event_msg", {"type": "agent_message", "message": "The test fails on an assertion."}),
        rec(
            "event_msg",
            {
                "type": "token_count",
                "info": {"total_token_usage": USAGE, "last_token_usage": USAGE},
                "rate_limits": None,
            },
        ),
    ]


@dataset("codex")
def _codex(mb: float, data_dir: Path) -> bytes:
    rng, clock = random.Random(18), [0]
    meta = {
        "id": "019a3f6e-5d21-7c80-b1e4-9f0a2b3c4d5e",
        "timestamp": "2025-11-20T00:00:00.000Z",
        "cwd": "/srv/app",
        "originator": "codex_cli_rs",
        "cli_version": "0.63.0",
        "instructions": None,
        "source": "cli",
        "model_provider": "openai",
    }
    out = [orjson.dumps({"timestamp": "2025-11-20T00:00:00.001Z", "type": "session_meta", "payload": meta}) + b"\n"]
    size, n = len(out[0]), 0
    while size < mb * 1_000_000:
        n += 1
        for r in _turn(rng, n, clock):
            line = orjson.dumps(r) + b"\n"
            out.append(line)
            size += len(line)
    return b"".join(out)


@dataset("codex-storyline")
def _codex_storyline(mb: float, data_dir: Path) -> bytes:
    """The Storyline of the `codex` data set: the input of the reverse rows."""
    return orjson.dumps(convert.into_storyline("codex", load("codex", mb, data_dir).data, jsonl=True))


@bench("orjson loads+dumps codex (floor)", group="codex", data="codex", baseline="handwritten codex forward")
def _orjson_floor(sample: Sample) -> Work:
    return lambda: b"".join(orjson.dumps(orjson.loads(line)) for line in sample.data.splitlines())


@bench("handwritten codex forward", group="codex", data="codex", baseline="handwritten codex forward")
def _handwritten_forward(sample: Sample) -> Work:
    return lambda: handwritten_codex.forward_bytes(sample.data)


@bench("handwritten codex reverse", group="codex", data="codex-storyline", baseline="handwritten codex reverse")
def _handwritten_reverse(sample: Sample) -> Work:
    return lambda: handwritten_codex.reverse_bytes(sample.data)


@bench("mapc codex forward", group="codex", data="codex", baseline="handwritten codex forward")
def _mapc_forward(sample: Sample) -> Work:
    return lambda: orjson.dumps(convert.into_storyline("codex", sample.data, jsonl=True))


@bench("mapc codex reverse", group="codex", data="codex-storyline", baseline="handwritten codex reverse")
def _mapc_reverse(sample: Sample) -> Work:
    def work() -> bytes:
        records = convert.from_storyline("codex", storyline.documents(orjson.loads(sample.data)))
        return b"".join(orjson.dumps(r) + b"\n" for r in records)

    return work
