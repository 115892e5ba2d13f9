"""The OpenAI chat (fine-tuning JSONL) rows: the orjson floor, a hand-written converter, and mapc's
openai-chat spec forward and reverse.

Data sets: `chat` (generated fine-tuning lines: a system prompt, user questions, assistant tool calls
with compact JSON arguments answered by tool messages, a final answer with `weight`, `tools`) and
`chat-storyline` (mapc's forward output of `chat`: the input of both reverse rows).  The hand-written
converter (handwritten_chat.py) gives the same Storylines and lines on this corpus
(tests/bench/test_handwritten_chat.py).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import handwritten_chat
import orjson
from harness import Sample, Work, bench, dataset, load

from mapc.engine import convert, storyline

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "run",
            "description": "Run a shell command",
            "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
        },
    }
]


def _line(rng: random.Random, n: int) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a careful coding agent. " * 4}]
    for step in range(1, rng.randint(2, 6) + 1):
        messages.append({"role": "user", "content": f"Step {step}: " + "please look at the failing test. " * 3})
        call_id = f"call_{n}_{step}"
        args = orjson.dumps({"cmd": f"pytest -k case_{step}", "n": step}).decode()
        messages.append(
            {
                "role": "assistant",
                "tool_calls": [{"id": call_id, "type": "function", "function": {"name": "run", "arguments": args}}],
            }
        )
        messages.append({"role": "tool", "tool_call_id": call_id, "content": "FAILED test_case - AssertionError " * 4})
        messages.append({"role": "assistant", "content": "The test fails on an assertion. " * 2, "weight": step % 2})
    return {"messages": messages, "tools": TOOLS}


@dataset("chat")
def _chat(mb: float, data_dir: Path) -> bytes:
    rng = random.Random(11)
    out, size, n = [], 0, 0
    while size < mb * 1_000_000:
        line = orjson.dumps(_line(rng, n)) + b"\n"
        out.append(line)
        size += len(line)
        n += 1
    return b"".join(out)


@dataset("chat-storyline")
def _chat_storyline(mb: float, data_dir: Path) -> bytes:
    """The Storylines of the `chat` data set: the input of the reverse rows."""
    return orjson.dumps(convert.into_storyline("openai-chat", load("chat", mb, data_dir).data, jsonl=True))


@bench("orjson loads+dumps chat (floor)", group="chat", data="chat", baseline="handwritten chat forward")
def _orjson_floor(sample: Sample) -> Work:
    return lambda: b"".join(orjson.dumps(orjson.loads(line)) for line in sample.data.splitlines())


@bench("handwritten chat forward", group="chat", data="chat", baseline="handwritten chat forward")
def _handwritten_forward(sample: Sample) -> Work:
    return lambda: handwritten_chat.forward_bytes(sample.data)


@bench("handwritten chat reverse", group="chat", data="chat-storyline", baseline="handwritten chat reverse")
def _handwritten_reverse(sample: Sample) -> Work:
    return lambda: handwritten_chat.reverse_bytes(sample.data)


@bench("mapc chat forward", group="chat", data="chat", baseline="handwritten chat forward")
def _mapc_forward(sample: Sample) -> Work:
    return lambda: orjson.dumps(convert.into_storyline("openai-chat", sample.data, jsonl=True))


@bench("mapc chat reverse", group="chat", data="chat-storyline", baseline="handwritten chat reverse")
def _mapc_reverse(sample: Sample) -> Work:
    def work() -> bytes:
        docs = convert.from_storyline("openai-chat", storyline.documents(orjson.loads(sample.data)))
        return b"".join(orjson.dumps(d) + b"\n" for d in (docs if isinstance(docs, list) else [docs]))

    return work
