"""Deterministic generators of large, valid benchmark documents: one ATIF v1.7 trajectory or one storyline/v1.

The same seed and size always give the same bytes, so a benchmark file can be regenerated instead of
committed. Sizes are in MB of 10^6 bytes of compact JSON, as `orjson.dumps` writes it.

    python bench/generate.py atif --mb 30 -o bench/data/atif-30mb.json
    python bench/generate.py storyline --mb 30 -o bench/data/storyline-30mb.json
    python bench/generate.py actf --mb 30 -o bench/data/actf-30mb.json

The content imitates real agent runs (docs/formats.md and tests/data/fixtures/atif/): user, agent and
system steps, RFC3339 timestamps in several spellings, messages of log-uniform length (some content-part
lists), tool calls with arguments, results and `extra` (some with an integer or float `duration_ms`),
observations, metrics whose latency comes from `latency_ms`, `elapsed_ms` or `duration_ms` (and a few that
give none), plus unknown keys at every level ATIF allows them, including keys with ``/`` and ``~``.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

VERSION = 1
"""Bumped whenever the output changes, so cached files in bench/data/ are not reused by mistake."""

MB = 1_000_000

_WORD_TEXT = """
the agent reads config parser returns error retry build test passes fails module function value
request response cache index schema pointer storyline trajectory step tool call result output input
deploy pending capacity cluster node worker queue timeout latency token model prompt context file
directory branch commit diff patch review merge release version unicode escape string number array
object null boolean field key residual mapping forward reverse round trip check valid invalid
"""
_WORDS = tuple(_WORD_TEXT.split())
# Non-ASCII and characters JSON must escape, so serializers and hashes see them.
_SPICE = (
    "数据轨迹",
    "über",
    "naïve café",
    "🚀",
    'a "quoted" word',
    "tab\there",
    "line\nbreak",
    "back\\slash",
)
_TOOLS = ("bash", "read_file", "write_file", "search", "http_get", "calculator")
_UNKNOWN_STEP_KEYS = ("vendor_step", "x-trace/id", "cost~usd", "0", "vendor_null")
_UNKNOWN_CALL_KEYS = ("vendor/call~meta", "retries")
_UNKNOWN_OBS_KEYS = ("obs_vendor", "summary/short")
_EPOCH = datetime(2026, 6, 15, 9, 0, 0, tzinfo=UTC)


class _Content:
    """A seeded source of text: slices of one pre-built corpus, so long messages cost one slice each."""

    def __init__(self, rng: random.Random, size: int = 1 << 18) -> None:
        self.rng = rng
        parts: list[str] = []
        total = 0
        while total < size:
            word = rng.choice(_SPICE) if rng.random() < 0.02 else rng.choice(_WORDS)
            sep = ".\n" if rng.random() < 0.03 else (", " if rng.random() < 0.08 else " ")
            parts.append(word + sep)
            total += len(word) + len(sep)
        self.corpus = "".join(parts)

    def text(self, lo: int, hi: int) -> str:
        """A slice of `lo`..`hi` characters, log-uniformly distributed (short messages are common)."""
        n = int(lo * (hi / lo) ** self.rng.random())
        start = self.rng.randrange(len(self.corpus) - n)
        return self.corpus[start : start + n]

    def word(self) -> str:
        """One plain ASCII word."""
        return self.rng.choice(_WORDS)


def _rfc3339(rng: random.Random, at: datetime) -> str:
    """`at` in one of the RFC3339 spellings agents write (all valid per docs/storyline.md, R-TS)."""
    r = rng.random()
    if r < 0.5:
        return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"
    if r < 0.8:
        return at.strftime("%Y-%m-%dT%H:%M:%SZ")
    if r < 0.95:
        return at.isoformat(timespec="microseconds")  # ...+00:00
    return (at + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%S+02:00")  # same instant, local offset


def _arguments(c: _Content, fn: str) -> dict[str, Any]:
    rng = c.rng
    if fn == "bash":
        return {
            "command": c.text(10, 200),
            "timeout": rng.choice((30, 60, 120, 600)),
            "description": c.text(10, 80),
        }
    if fn == "read_file":
        return {"path": f"/repo/src/{c.word()}/{c.word()}.py", "offset": rng.randint(0, 900), "limit": 200}
    if fn == "write_file":
        return {"path": f"/repo/src/{c.word()}.py", "content": c.text(50, 3000)}
    if fn == "search":
        return {"query": c.text(5, 60), "limit": rng.randint(1, 20)}
    if fn == "http_get":
        return {
            "url": f"https://example.invalid/{c.word()}?q={rng.randint(0, 9999)}",
            "headers": {"accept": "*/*"},
        }
    return {"expression": f"{rng.randint(1, 999)} * {rng.randint(1, 999)} + {rng.randint(1, 99)}"}


def _metrics(rng: random.Random) -> dict[str, Any]:
    """Token counts plus a latency that exercises every branch of the §1.4 fallback chain."""
    m: dict[str, Any] = {
        "prompt_tokens": rng.randint(100, 90_000),
        "completion_tokens": rng.randint(5, 4_000),
    }
    if rng.random() < 0.3:
        m["cached_tokens"] = rng.randint(0, m["prompt_tokens"])
    r = rng.random()
    if r < 0.55:
        m["latency_ms"] = rng.randint(80, 60_000)
    elif r < 0.65:
        m["latency_ms"] = round(rng.uniform(80, 60_000), 3)  # float: truncated
    elif r < 0.78:
        m["elapsed_ms"] = rng.randint(80, 60_000)
    elif r < 0.86:
        m["duration_ms"] = rng.randint(80, 60_000)
    elif r < 0.88:
        m["latency_ms"] = "slow"  # present but not a number: no latency, no fall-through
        m["elapsed_ms"] = rng.randint(80, 60_000)
    elif r < 0.89:
        m["latency_ms"] = None
    t = rng.random()
    if t < 0.65:
        m["ttft_ms"] = rng.randint(10, 3_000)
    elif t < 0.7:
        m["ttft_ms"] = round(rng.uniform(10, 3_000), 2)
    if rng.random() < 0.1:
        m["cost_usd"] = round(rng.uniform(0, 0.5), 6)
    return m


class _Ids:
    """Tool call ids unique in the whole document (ATIF needs per node, Storyline per document)."""

    def __init__(self, rng: random.Random, tag: str) -> None:
        self.rng, self.tag, self.n = rng, tag, 0

    def next(self) -> str:
        self.n += 1
        return f"call_{self.tag}_{self.n:06d}_{self.rng.getrandbits(40):010x}"


def _atif_tool_call(c: _Content, ids: _Ids) -> dict[str, Any]:
    rng = c.rng
    fn = rng.choice(_TOOLS)
    call: dict[str, Any] = {"tool_call_id": ids.next(), "function_name": fn, "arguments": _arguments(c, fn)}
    if rng.random() < 0.15:
        call["result"] = {"exit_code": rng.choice((0, 0, 0, 1)), "stdout": c.text(10, 400)}
    r = rng.random()
    if r < 0.5:
        call["extra"] = {"duration_ms": rng.randint(1, 30_000)}
    elif r < 0.6:
        call["extra"] = {"duration_ms": round(rng.uniform(1, 30_000), 2)}  # float: not promoted
    elif r < 0.75:
        call["extra"] = {"tool_use_name": fn, "cache_hit": rng.random() < 0.5}
    if rng.random() < 0.03:
        call[rng.choice(_UNKNOWN_CALL_KEYS)] = {"attempt": rng.randint(1, 3)}
    return call


def _observation(c: _Content, calls: list[dict[str, Any]], id_key: str) -> dict[str, Any]:
    rng = c.rng
    results = []
    for call in calls:
        res: dict[str, Any] = {"source_call_id": call[id_key]}
        if rng.random() < 0.1:
            res["content"] = [{"type": "text", "text": c.text(20, 2000)}]
        else:
            res["content"] = c.text(20, 4000)
        if rng.random() < 0.3:
            res["status"] = rng.choice(("success", "success", "error"))
        results.append(res)
    return {"results": results}


def _message(c: _Content, lo: int, hi: int) -> Any:
    """Mostly a string; sometimes a content-part list with an image, as multimodal_18.json has."""
    if c.rng.random() < 0.06:
        return [
            {"type": "text", "text": c.text(lo, hi)},
            {
                "type": "image_url",
                "image_url": {"url": f"https://example.invalid/img-{c.rng.randint(0, 99999)}.png"},
            },
        ]
    return c.text(lo, hi)


def _atif_step(c: _Content, ids: _Ids, step_id: int, at: datetime) -> dict[str, Any]:
    rng = c.rng
    r = rng.random()
    source = "user" if r < 0.22 else "system" if r < 0.26 else "environment" if r < 0.265 else "agent"
    step: dict[str, Any] = {"step_id": step_id}
    if rng.random() < 0.95:
        step["timestamp"] = _rfc3339(rng, at)
    step["source"] = source
    if source != "agent":
        step["message"] = _message(c, 20, 3000) if source == "user" else c.text(100, 2000)
        if rng.random() < 0.2:
            step["is_copied_context"] = rng.random() < 0.3
    else:
        step["model_name"] = "bench-model-1"
        calls = [_atif_tool_call(c, ids) for _ in range(rng.choice((1, 1, 1, 2, 3)))] if rng.random() < 0.55 else []
        step["message"] = "" if calls and rng.random() < 0.3 else c.text(10, 2500)
        if rng.random() < 0.3:
            step["reasoning_content"] = c.text(50, 1500)
        if rng.random() < 0.1:
            step["reasoning_effort"] = rng.choice(("low", "high", {"level": "medium", "budget": 2048}))
        if calls:
            step["tool_calls"] = calls
            step["observation"] = _observation(c, calls, "tool_call_id")
            if rng.random() < 0.02:
                step["observation"][rng.choice(_UNKNOWN_OBS_KEYS)] = c.text(5, 40)
        elif rng.random() < 0.02:
            step["tool_calls"] = []  # present but empty: effective kind stays "dialogue"
        if rng.random() < 0.9:
            step["metrics"] = _metrics(rng)
        step["llm_call_count"] = rng.choice((1, 1, 1, 2))
    if rng.random() < 0.3:
        step["extra"] = {"ordinal": step_id, "span": f"{rng.getrandbits(64):016x}"}
    if rng.random() < 0.03:
        key = rng.choice(_UNKNOWN_STEP_KEYS)
        step[key] = None if key == "vendor_null" else {"v": rng.randint(0, 99)}
    return step


def _atif_steps(c: _Content, ids: _Ids, budget: int) -> list[dict[str, Any]]:
    """Steps until their compact JSON reaches `budget` bytes; ids 1.. in order, one system prompt first."""
    at = _EPOCH
    first: dict[str, Any] = {"step_id": 1, "timestamp": _rfc3339(c.rng, at), "source": "system"}
    first["message"] = c.text(500, 2000)
    steps, size = [first], len(orjson.dumps(first))
    while size < budget:
        at += timedelta(milliseconds=c.rng.randint(50, 90_000))
        step = _atif_step(c, ids, len(steps) + 1, at)
        steps.append(step)
        size += len(orjson.dumps(step)) + 1
    return steps


def _atif_agent(c: _Content, name: str) -> dict[str, Any]:
    agent: dict[str, Any] = {"name": name, "version": "3.2.1", "model_name": "bench-model-1"}
    agent["tool_definitions"] = [{"name": fn, "description": c.text(20, 120)} for fn in _TOOLS]
    agent["extra"] = {"harness": "bench", "os": "linux"}
    agent["vendor_build"] = "2026.06.15"  # unknown agent keys
    agent["build/flags~x"] = ["-O2"]
    return agent


def _atif_trajectory(c: _Content, tag: str, budget: int, *, session: bool) -> dict[str, Any]:
    ids = _Ids(c.rng, tag)
    doc: dict[str, Any] = {"schema_version": "ATIF-v1.7"}
    if session:
        doc["session_id"] = f"session-{tag}"
    doc["trajectory_id"] = f"traj-{tag}"
    doc["agent"] = _atif_agent(c, f"agent-{tag}")
    doc["steps"] = _atif_steps(c, ids, budget)
    doc["notes"] = f"Generated benchmark trajectory {tag}."
    doc["vendor_child"] = {"tag": tag}
    return doc


def atif(size: int, seed: int = 0) -> dict[str, Any]:
    """One ATIF v1.7 trajectory of about `size` bytes (compact JSON) with two subagents, one nested.

    Subagent 0 has its own `session_id` and a nested subagent; subagent 1 has only a `trajectory_id`,
    so both branches of the §1.4 child session rule are exercised.
    """
    rng = random.Random(seed)
    c = _Content(rng)
    child_budget = max(6_000, size // 200)
    doc = _atif_trajectory(c, "root", max(1, size - 3 * child_budget - 4_000), session=True)
    doc["final_metrics"] = {
        "total_prompt_tokens": sum(s.get("metrics", {}).get("prompt_tokens", 0) for s in doc["steps"]),
        "total_steps": len(doc["steps"]),
        "total_cost_usd": 12.345678,
    }
    doc["continued_trajectory_ref"] = "traj-previous-run"
    doc["extra"] = {"benchmark": True, "seed": seed}
    doc["vendor_root"] = {"exporter": "bench", "seed": seed}  # unknown root keys, one with `/` and `~`
    doc["harbor/export~v"] = 2
    del doc["vendor_child"]
    sub0 = _atif_trajectory(c, "sub0", child_budget, session=True)
    sub0["subagent_trajectories"] = [_atif_trajectory(c, "sub0-0", child_budget, session=False)]
    sub1 = _atif_trajectory(c, "sub1", child_budget, session=False)
    doc["subagent_trajectories"] = [sub0, sub1]
    return doc


# -- storyline/v1 ------------------------------------------------------------------------------------


def _storyline_call(c: _Content, ids: _Ids) -> dict[str, Any]:
    rng = c.rng
    fn = rng.choice(_TOOLS)
    call: dict[str, Any] = {"tcid": ids.next(), "fn": fn, "args": _arguments(c, fn)}
    if rng.random() < 0.2:
        call["result"] = c.text(10, 600)
    if rng.random() < 0.5:
        call["duration_ms"] = rng.randint(1, 30_000)
        call["extra"] = {"duration_ms": call["duration_ms"]}
    if rng.random() < 0.3:
        call["kind"] = "command_execution" if fn == "bash" else "tool_use"
    if rng.random() < 0.3:
        call["response"] = rng.choice(({"status": "completed", "exit_code": 0}, {"status": "failed"}, {"exit_code": 2}))
    return call


def _storyline_turn(c: _Content, ids: _Ids, turn_id: int, at: datetime) -> dict[str, Any]:
    rng = c.rng
    r = rng.random()
    src = "user" if r < 0.22 else "system" if r < 0.26 else "agent"
    turn: dict[str, Any] = {"id": turn_id}
    if rng.random() < 0.1:
        turn["kind"] = rng.choice(("llm.request", "context", "autonomous", "dialogue"))
    t = rng.random()
    if t < 0.6:
        turn["ts"] = _rfc3339(rng, at)
    elif t < 0.9:
        turn["ts"] = round(at.timestamp(), 3)  # epoch seconds, exact to the millisecond
    turn["src"] = src
    copied = rng.random() < 0.05
    if src != "agent":
        turn["msg"] = _message(c, 20, 3000)
    else:
        calls = [_storyline_call(c, ids) for _ in range(rng.choice((1, 1, 2, 3)))] if rng.random() < 0.55 else []
        turn["msg"] = None if calls and rng.random() < 0.2 else c.text(10, 2500)
        if rng.random() < 0.3:
            turn["reason"] = c.text(50, 1500)
        if rng.random() < 0.1:
            turn["effort"] = rng.choice(("low", {"level": "high"}))
        if calls:
            turn["tool_calls"] = calls
            turn["observation"] = _observation(c, calls, "tcid")
        if rng.random() < 0.9:
            m = _metrics(rng)
            turn["metrics"] = m
            lat = m.get("latency_ms", m.get("elapsed_ms"))
            if type(lat) in (int, float):
                turn["latency_ms"] = int(lat)
            if type(m.get("ttft_ms")) in (int, float):
                turn["ttft_ms"] = int(m["ttft_ms"])
        turn["model"] = "bench-model-1"
        turn["nllm"] = rng.choice((1, 1, 2))
    if copied:
        turn["copied"] = True
    if rng.random() < 0.2:
        turn["extra"] = {"ordinal": turn_id}
    if rng.random() < 0.1:
        turn["env"] = {"request_id": f"req-{turn_id}", "state": {"cwd": f"/repo/{c.word()}"}}
    if not copied and rng.random() < 0.05:
        p = rng.random()
        turn["prompt"] = (
            {"system": "", "user": ""}  # the explicit clear of the document prompt
            if p < 0.3
            else {"system": c.text(20, 200)}
            if p < 0.6
            else {"system": c.text(20, 200), "user": c.text(20, 400)}
        )
    if rng.random() < 0.1:
        turn["finished_at"] = _rfc3339(rng, at + timedelta(milliseconds=rng.randint(1, 5000)))
    return turn


def _vendor_unknowns(c: _Content, n: int) -> dict[str, Any]:
    """`n` residual fields of an unknown source: raw pointers, some with escaped `/` (~1) and `~` (~0)."""
    fields: dict[str, Any] = {"/vendor_root": {"exporter": "bench"}, "/a~0b/c~1d": None, "/0": "numeric key"}
    i = 0
    while len(fields) < n:
        fields[f"/items/{i}/vendor~1x"] = c.text(5, 60)
        if len(fields) < n:
            fields[f"/items/{i}/meta~0flag"] = c.rng.random() < 0.5
        i += 1
    return fields


def storyline(size: int, seed: int = 0) -> dict[str, Any]:
    """One valid storyline/v1 document of about `size` bytes that uses every optional part of docs/storyline.md.

    Its residuals belong to an unknown source, ``vendor``, whose pointers are not normalized, so each
    pointer is counted once under itself in `unknown_key_counts` (docs/envelope.md).
    """
    rng = random.Random(seed)
    c = _Content(rng)
    ids = _Ids(rng, "sl")
    fields = _vendor_unknowns(c, max(3, size // 20_000))
    doc: dict[str, Any] = {
        "schema_version": "storyline/v1",
        "origin": {"format": "vendor", "schema_version": "vendor-2", "document_id": f"doc-{seed}"},
        "run": f"run-{seed}",
        "trajectory": f"traj-{seed}",
        "attempt_id": "1",
        "session": f"session-{seed}",
        "agent": {
            "id": "bench-agent",
            "name": "Bench Agent",
            "ver": "3.2.1",
            "model": "bench-model-1",
            "tools": [{"name": fn} for fn in _TOOLS],
            "extra": {"harness": "bench"},
        },
        "parent": {"psid": "session-parent", "scid": "call_parent_1", "ptid": 7, "rel": "handoff"},
        "children": ["traj-child-1", "traj-child-2"],
        "notes": "Generated benchmark storyline.",
        "task": {
            "env": {
                "name": "bench-env",
                "endpoint": "https://env.example.invalid",
                "id": "env-1",
                "event_type": "episode",
                "request_id": "req-0",
                "state": {"cwd": "/repo", "dataset_type": "train"},
            },
            "llm": {"k": 4},
            "result": {
                "correct": True,
                "final_answer": "42",
                "ground_truth": "42",
                "status": "completed",
                "score": 1.0,
                "max_score": 1,
                "artifacts": {"patch": "diff --git a/x b/x"},
                "task_correct": True,  # ACTF-private keys: a flattened extra of task.result
                "category": "coding",
                "attempts_tried": 1,
                "solved_at": "1",
            },
        },
        "prompt": {"system": c.text(100, 800), "user": c.text(50, 400)},
        "started_at": "2026-06-15T09:00:00Z",
        "finished_at": 1781600000.25,
        "final_metrics": {"total_steps": 0, "reward": 1.0},
        "continued_trajectory_ref": "traj-previous-run",
        "extra": {"benchmark": True},
        "meta": {"generator": "bench/generate.py", "version": VERSION},
        "unknown_fields": {"sources": {"vendor": {"source_document_id": f"vendor-doc-{seed}", "fields": fields}}},
        "unknown_key_counts": {"vendor": dict.fromkeys(fields, 1)},
    }
    turns: list[dict[str, Any]] = []
    at, total = _EPOCH, len(orjson.dumps(doc))
    while total < size or not turns:
        at += timedelta(milliseconds=rng.randint(50, 90_000))
        turn = _storyline_turn(c, ids, len(turns) + 1, at)
        turns.append(turn)
        total += len(orjson.dumps(turn)) + 1
    doc["final_metrics"]["total_steps"] = len(turns)
    doc["turns"] = turns
    return doc


# -- ACTF v1.0 ---------------------------------------------------------------------------------------

_ACTF_UNKNOWN_STEP_KEYS = ("vendor_step", "trace/span~id", "0")
_ACTF_SYSTEM = (
    "You are a software engineering agent. Work in /repo, run the tests, keep changes minimal, and "
    "explain what you changed when you are done."
)


def _actf_time(at: datetime) -> str:
    """The ACTF spelling: a space separator and a +00:00 offset, sometimes with microseconds."""
    if at.microsecond:
        return at.strftime("%Y-%m-%d %H:%M:%S.%f+00:00")
    return at.strftime("%Y-%m-%d %H:%M:%S+00:00")


def _actf_tool(c: _Content, tool_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A tool and its observation: `tool_use` (name/input, tool_result) or `command_execution`."""
    rng = c.rng
    if rng.random() < 0.45:
        output = c.text(20, 4000)
        exit_code = rng.choice((0, 0, 0, 1, 2))
        tool = {
            "type": "command_execution",
            "id": tool_id,
            "command": c.text(10, 200),
            "aggregated_output": output,
            "exit_code": exit_code,
            "status": "completed" if exit_code == 0 else "failed",
        }
        obs = {"type": "command_execution", "id": tool_id, "aggregated_output": output, "exit_code": exit_code}
        return tool, obs
    fn = rng.choice(_TOOLS)
    tool = {"type": "tool_use", "id": tool_id, "name": fn, "input": _arguments(c, fn)}
    obs: dict[str, Any] = {"tool_use_id": tool_id, "type": "tool_result", "content": c.text(20, 4000)}
    obs["is_error"] = rng.random() < 0.08
    if rng.random() < 0.03:
        obs["vendor/obs"] = {"cache": rng.random() < 0.5}  # observation keys are copied whole
    return tool, obs


def _actf_step(c: _Content, ids: _Ids, step_id: int, at: datetime, user: str) -> dict[str, Any]:
    rng = c.rng
    tools: list[dict[str, Any]] = []
    observation: list[dict[str, Any]] = []
    if rng.random() < 0.7:
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            tool, obs = _actf_tool(c, ids.next() if rng.random() < 0.97 else "")
            if rng.random() < 0.02:
                tool["vendor/tool~meta"] = {"retries": rng.randint(0, 3)}
            tools.append(tool)
            observation.append(obs)
        for i, (tool, obs) in enumerate(zip(tools, observation, strict=True)):
            if not tool["id"]:  # a blank id: the effective id is step-{step_id}-tool-{i}
                obs["id" if "id" in obs else "tool_use_id"] = f"step-{step_id}-tool-{i}"
    r = rng.random()
    metric: dict[str, Any] = {
        "prompt_tokens_len": rng.randint(200, 120_000),
        "completion_tokens_len": rng.randint(5, 4_000),
        "llm_infer_ms": round(rng.uniform(80, 60_000), 1) if r < 0.9 else None,
        "env_action_ms": round(rng.uniform(1, 30_000), 1) if tools and rng.random() < 0.8 else None,
        "stop_reason": ("tool_use" if tools else "stop") if rng.random() < 0.95 else None,
    }
    if rng.random() < 0.05:
        metric["cached_tokens_len"] = rng.randint(0, metric["prompt_tokens_len"])
    step: dict[str, Any] = {
        "step_id": step_id,
        "assistant_content": {
            "content": "" if tools and rng.random() < 0.6 else c.text(10, 2500),
            "reasoning_content": c.text(50, 1500) if rng.random() < 0.6 else "",
            "tool_calls": [dict(t) for t in tools],
        },
        "metric": metric,
        "system_prompt": _ACTF_SYSTEM,
        "user_content": user,
        "tools": tools,
        "observation": observation,
        "started_at": _actf_time(at),
        "finished_at": _actf_time(at + timedelta(milliseconds=rng.randint(100, 60_000))),
    }
    if rng.random() < 0.02:
        step[rng.choice(_ACTF_UNKNOWN_STEP_KEYS)] = {"v": rng.randint(0, 99)}
    return step


def _actf_attempt(c: _Content, tag: str, budget: int) -> dict[str, Any]:
    rng = c.rng
    ids = _Ids(rng, tag)
    at = _EPOCH + timedelta(hours=rng.randint(0, 48))
    started = at
    user = c.text(100, 1500)
    steps: list[dict[str, Any]] = []
    size = 0
    while size < budget or not steps:
        at += timedelta(milliseconds=rng.randint(50, 90_000))
        r = rng.random()
        if steps and r < 0.6:
            turn_user = user  # the baseline again: no turn prompt
        elif steps and r < 0.7:
            turn_user = ""  # neither prompt: the explicit clear (the system prompt stays)
        else:
            turn_user = c.text(20, 800)  # a new user turn: an overlay
        step = _actf_step(c, ids, len(steps) + 1, at, turn_user)
        if r < 0.7 and steps and rng.random() < 0.1:
            step["system_prompt"] = ""
            step["user_content"] = ""
        steps.append(step)
        size += len(orjson.dumps(step)) + 1
    correct = rng.random() < 0.4
    attempt: dict[str, Any] = {
        "correct": correct,
        "final_answer": c.text(20, 400) if rng.random() < 0.8 else None,
        "ground_truth": c.text(20, 200),
        "trajectory": {
            "schema_version": "ACTF_v1.0",
            "steps": steps,
            "started_at": _actf_time(started),
            "finished_at": _actf_time(at),
        },
        "status": "completed" if rng.random() < 0.85 else "failed",
        "score": 1.0 if correct else round(rng.uniform(0, 0.9), 3),
        "error": "" if rng.random() < 0.9 else c.text(20, 200),
        "artifacts": {"patch": c.text(50, 800)} if rng.random() < 0.5 else {},
        "extra": {"harness": "bench", "seed_tag": tag} if rng.random() < 0.5 else {},
        "analysis_result": {"verdict": rng.choice(("pass", "fail")), "notes": c.text(10, 200)},
        "meta": {"runner": "bench/generate.py", "host": f"worker-{rng.randint(1, 64)}"},
    }
    if rng.random() < 0.3:
        attempt["max_score"] = 1.0
    if rng.random() < 0.2:
        attempt["vendor_attempt"] = {"queue": c.word()}  # an unknown attempt key
    return attempt


def actf(size: int, seed: int = 0) -> dict[str, Any]:
    """One ACTF v1.0 task document of about `size` bytes: 12 attempts (keys "1".."12", "10" before
    "2" in the file) of many steps each, tools in both `tools` and `assistant_content.tool_calls`,
    observations, prompts that repeat, change and clear, float and null metrics, and unknown keys at
    the root (copied into every attempt's Storyline), attempt, step and tool level.
    """
    rng = random.Random(seed)
    c = _Content(rng)
    n = 12
    keys = [str(k) for k in (1, 10, 11, 12, 2, 3, 4, 5, 6, 7, 8, 9)]
    budget = max(2_000, (size - 2_000) // n)
    attempts = {key: _actf_attempt(c, f"a{key}", budget) for key in keys}
    solved = [k for k in keys if attempts[k]["correct"]]
    return {
        "task_id": f"bench-task-{seed}",
        "category": "software-engineering",
        "k": n,
        "correct": bool(solved),
        "attempts_tried": n,
        "solved_at": attempts[solved[0]]["trajectory"]["finished_at"] if solved else None,
        "attempts": attempts,
        "retry_count": rng.randint(0, 3),
        "benchmark/suite": {"name": "bench", "version": VERSION},  # unknown root keys
        "vendor~export": {"seed": seed},
    }


GENERATORS: dict[str, Callable[[int, int], dict[str, Any]]] = {"atif": atif, "storyline": storyline, "actf": actf}


def generate_bytes(kind: str, mb: float, seed: int = 0) -> bytes:
    """Compact JSON bytes of a `kind` document of about `mb` MB."""
    return orjson.dumps(GENERATORS[kind](int(mb * MB), seed))


def write(kind: str, mb: float, path: Path, seed: int = 0) -> Path:
    """Generate and write atomically (a temporary file, then rename), so no half file is ever cached."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(generate_bytes(kind, mb, seed))
    os.replace(tmp, path)
    return path


def main(argv: list[str] | None = None) -> int:
    """CLI: ``generate.py {actf,atif,storyline} --mb N -o PATH [--seed S]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=sorted(GENERATORS))
    parser.add_argument("--mb", type=float, default=30.0, help="approximate size in MB (10^6 bytes)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args(argv)
    path = write(args.kind, args.mb, args.output, args.seed)
    print(f"{path}: {path.stat().st_size / MB:.2f} MB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
