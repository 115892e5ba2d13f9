"""The OpenAI Messages rows: the orjson floor, and mapc's openai-msg spec forward and reverse.

Data sets: `openai` (a generated corpus: sessions of several steps, each row with its full message
history, tool calls with JSON-string arguments, env and metric keys, an unknown row key) and
`openai-storyline` (mapc's forward output of `openai`: the input of both reverse rows).  The baselines
are the orjson floor and the hand-written converter (handwritten_openai.py), which gives the same
Storylines and rows on this corpus (tests/bench/test_handwritten_openai.py).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import handwritten_openai
import orjson
from harness import Sample, Work, bench, dataset, load

from mapc.engine import convert, storyline


def _session(rng: random.Random, sid: str) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are a careful coding agent. " * 4}]
    rows = []
    for step in range(1, rng.randint(4, 10) + 1):
        user = {"role": "user", "content": f"Step {step}: " + "please look at the failing test and fix it. " * 3}
        call = {
            "id": f"{sid}-call-{step}",
            "type": "function",
            "function": {
                "name": "run",
                "arguments": orjson.dumps({"cmd": f"pytest -k case_{step}", "n": step}).decode(),
            },
        }
        response = {"role": "assistant", "content": "Running the test to see the failure. " * 2, "tool_calls": [call]}
        result = {"role": "tool", "tool_call_id": call["id"], "content": "FAILED test_case - AssertionError " * 4}
        rows.append(
            {
                "session_id": sid,
                "step_id": step,
                "job_id": "bench-run",
                "agent_model": "bench-model",
                "created_at": 1_785_000_000 + step,
                "messages": [*history, user, result],
                "response": response,
                "env_name": "bench-env",
                "id": f"{sid}-{step}",
                "reward": rng.random(),
                "is_terminal": False,
                "meta_json": {"env_state": {"total_latency_ms": rng.randint(5, 500), "total_tokens": 1000 + step}},
                "x_vendor": step,
            }
        )
        history = [*history, user, result, response]
    return rows


@dataset("openai")
def _openai(mb: float, data_dir: Path) -> bytes:
    rng = random.Random(7)
    rows: list[dict[str, Any]] = []
    size, n = 0, 0
    while size < mb * 1_000_000:
        session = _session(rng, f"s{n}")
        size += len(orjson.dumps(session))
        rows.extend(session)
        n += 1
    return orjson.dumps({"session_steps": rows})


@dataset("openai-storyline")
def _openai_storyline(mb: float, data_dir: Path) -> bytes:
    """The Storylines of the `openai` data set: the input of the reverse row."""
    return orjson.dumps(convert.into_storyline("openai-msg", load("openai", mb, data_dir).data))


@bench("orjson loads+dumps openai (floor)", group="openai", data="openai", baseline="handwritten openai forward")
def _orjson_floor(sample: Sample) -> Work:
    return lambda: orjson.dumps(orjson.loads(sample.data))


@bench("handwritten openai forward", group="openai", data="openai", baseline="handwritten openai forward")
def _handwritten_forward(sample: Sample) -> Work:
    return lambda: handwritten_openai.forward_bytes(sample.data)


@bench("handwritten openai reverse", group="openai", data="openai-storyline", baseline="handwritten openai forward")
def _handwritten_reverse(sample: Sample) -> Work:
    return lambda: handwritten_openai.reverse_bytes(sample.data)


@bench("mapc openai forward (mapping only)", group="openai", data="openai", baseline="handwritten openai forward")
def _mapc_forward_mapping(sample: Sample) -> Work:
    from mapc.engine import catalog, run

    program = catalog.program("openai-msg")
    return lambda: orjson.dumps([m.story for m in run.forward(program, orjson.loads(sample.data))])


@bench(
    "mapc openai reverse (mapping only)", group="openai", data="openai-storyline", baseline="handwritten openai reverse"
)
def _mapc_reverse_mapping(sample: Sample) -> Work:
    from mapc.engine import catalog, run

    program = catalog.program("openai-msg")

    def work() -> bytes:
        return orjson.dumps(run.reverse(program, storyline.documents(orjson.loads(sample.data)))[0].document)

    return work


@bench("mapc openai forward", group="openai", data="openai", baseline="handwritten openai forward")
def _mapc_forward(sample: Sample) -> Work:
    return lambda: orjson.dumps(convert.into_storyline("openai-msg", sample.data))


@bench("mapc openai reverse", group="openai", data="openai-storyline", baseline="handwritten openai reverse")
def _mapc_reverse(sample: Sample) -> Work:
    return lambda: orjson.dumps(convert.from_storyline("openai-msg", storyline.documents(orjson.loads(sample.data))))
