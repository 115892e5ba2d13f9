"""`mapc stats` against a computation by hand (plain Python over the fixtures' Storylines), and
`mapc query --format`, the convenience columns and the documented columns."""

from __future__ import annotations

import csv
import io
import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from mapc.cli.main import cli
from mapc.engine import convert
from mapc.store.rows import results_by_call

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "fixtures"
SOURCES = (("atif", "atif"), ("actf", "actf"), ("openai-msg", "openai-msg"))


@pytest.fixture(scope="module")
def stories() -> list[dict[str, Any]]:
    out = []
    for folder, fmt in SOURCES:
        for path in sorted((FIXTURES / folder).glob("*.json")):
            out.extend(convert.into_storyline(fmt, path.read_bytes()))
    return out


@pytest.fixture
def dataset(tmp_path, runner) -> Path:
    root = tmp_path / "ds"
    folders = [str(FIXTURES / folder) for folder, _ in SOURCES]
    result = runner.invoke(cli, ["store", *folders, "--to", str(root)])
    assert result.exit_code == 0, result.output
    return root


def _int(value: Any) -> int | None:
    return value if type(value) is int else None


def _is_error(call: dict[str, Any], turn: dict[str, Any]) -> bool | None:
    flags = [r["is_error"] for r in results_by_call(turn.get("observation")).get(call["tcid"], []) if "is_error" in r]
    code = _int((call.get("response") or {}).get("exit_code"))
    if any(f is True for f in flags) or (code is not None and code != 0):
        return True
    if any(f is False for f in flags) or code == 0:
        return False
    return None


def _rank(values: list[int]) -> dict[str, Any]:
    ordered = sorted(values)
    picks = {
        f"p{round(q * 100)}": ordered[math.ceil(q * len(ordered)) - 1] if ordered else None for q in (0.5, 0.9, 0.99)
    }
    return {"n": len(ordered), **picks}


def by_hand(stories: list[dict[str, Any]]) -> dict[str, Any]:
    """What `mapc stats --json` must print, computed from the Storylines without SQL."""
    tokens = {"prompt": 0, "completion": 0, "cached": 0}
    latencies, durations = [], []
    errors = known = 0
    agents: dict[str, dict[str, Any]] = {}
    models: dict[Any, dict[str, Any]] = {}
    model_latency: dict[Any, list[int]] = defaultdict(list)
    tools: dict[str, dict[str, Any]] = {}
    tool_durations: dict[str, list[int]] = defaultdict(list)
    for doc in stories:
        agent = agents.setdefault(doc["agent"]["id"], {"documents": 0, "turns": 0, "tool_calls": 0, "e": 0, "k": 0})
        agent["documents"] += 1
        for turn in doc["turns"]:
            agent["turns"] += 1
            metrics = turn.get("metrics") if isinstance(turn.get("metrics"), dict) else {}
            counts = {k: _int(metrics.get(f"{k}_tokens")) or 0 for k in tokens}
            for key, n in counts.items():
                tokens[key] += n
            if turn.get("latency_ms") is not None:
                latencies.append(turn["latency_ms"])
            if turn["src"] == "agent":
                name = turn.get("model") or doc["agent"].get("model")
                model = models.setdefault(name, {"agent_turns": 0, "prompt_tokens": 0, "completion_tokens": 0})
                model["agent_turns"] += 1
                model["prompt_tokens"] += counts["prompt"]
                model["completion_tokens"] += counts["completion"]
                if turn.get("latency_ms") is not None:
                    model_latency[name].append(turn["latency_ms"])
            for call in turn.get("tool_calls") or []:
                agent["tool_calls"] += 1
                tool = tools.setdefault(call["fn"], {"calls": 0, "e": 0, "k": 0})
                tool["calls"] += 1
                flag = _is_error(call, turn)
                if flag is not None:
                    known += 1
                    agent["k"] += 1
                    tool["k"] += 1
                if flag:
                    errors += 1
                    agent["e"] += 1
                    tool["e"] += 1
                if call.get("duration_ms") is not None:
                    durations.append(call["duration_ms"])
                    tool_durations[call["fn"]].append(call["duration_ms"])

    def rate(e: int, k: int) -> float | None:
        return e / k if k else None

    return {
        "documents": len(stories),
        "turns": sum(len(d["turns"]) for d in stories),
        "tool_calls": sum(len(t.get("tool_calls") or []) for d in stories for t in d["turns"]),
        "tokens": tokens,
        "tool_errors": {"errors": errors, "known": known, "rate": rate(errors, known)},
        "latency_ms": _rank(latencies),
        "tool_duration_ms": _rank(durations),
        "agents": sorted(
            (
                {
                    "agent": name,
                    "documents": a["documents"],
                    "turns": a["turns"],
                    "tool_calls": a["tool_calls"],
                    "tool_errors": a["e"],
                    "error_rate": rate(a["e"], a["k"]),
                }
                for name, a in agents.items()
            ),
            key=lambda a: (-a["documents"], a["agent"]),
        ),
        "models": sorted(
            ({"model": name, **m, "latency_ms": _rank(model_latency[name])} for name, m in models.items()),
            key=lambda m: (-m["agent_turns"], m["model"] is None, m["model"] or ""),
        ),
        "tools": sorted(
            (
                {
                    "tool": fn,
                    "calls": t["calls"],
                    "errors": t["e"],
                    "error_rate": rate(t["e"], t["k"]),
                    "duration_ms": _rank(tool_durations[fn]),
                }
                for fn, t in tools.items()
            ),
            key=lambda t: (-t["calls"], t["tool"]),
        ),
    }


def test_stats_json_is_the_hand_computation(dataset, runner, stories):
    result = runner.invoke(cli, ["stats", str(dataset), "--json"])
    assert result.exit_code == 0, result.output
    got = json.loads(result.stdout)
    expected = by_hand(stories)
    assert got == expected
    # the fixtures exercise what is counted: tokens, an error and a success, latencies, several models
    assert got["tokens"]["prompt"] > 0 and got["tool_errors"] == {"errors": 1, "known": 2, "rate": 0.5}
    assert got["latency_ms"]["n"] > 0 and len(got["models"]) > 2


def test_stats_table_on_a_terminal(dataset, runner):
    result = runner.invoke(cli, ["stats", str(dataset)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "overview"
    assert [line.split()[-1] for line in lines[3:6]] == ["11", "80", "24"]
    for title in ("latency (ms)", "per agent", "per model (agent turns)", "per tool"):
        assert title in lines
    assert any(line.startswith("Bash ") and "50.0%" in line for line in lines)


def test_stats_of_no_dataset_is_a_data_error(tmp_path, runner):
    (tmp_path / "empty").mkdir()
    result = runner.invoke(cli, ["stats", str(tmp_path / "empty")])
    assert result.exit_code == 1 and "[store.not_a_dataset]" in result.stderr


# --- query --format and the convenience columns -------------------------------------------------------


SQL = (
    "select session_id, function_name, is_error, exit_code, status from tool_calls"
    " where is_error is not null order by 1"
)


def test_query_formats(dataset, runner):
    as_json = json.loads(runner.invoke(cli, ["query", str(dataset), SQL, "--format", "json"]).stdout)
    assert as_json == [
        {
            "session_id": "example-code-repair",
            "function_name": "Bash",
            "is_error": True,
            "exit_code": None,
            "status": None,
        },
        {
            "session_id": "make-doom-for-mips-trimmed",
            "function_name": "Bash",
            "is_error": False,
            "exit_code": None,
            "status": None,
        },
    ]
    assert json.loads(runner.invoke(cli, ["query", str(dataset), SQL, "--json"]).stdout) == as_json
    lines = runner.invoke(cli, ["query", str(dataset), SQL, "--format", "jsonl"]).stdout.splitlines()
    assert [json.loads(line) for line in lines] == as_json
    text = runner.invoke(cli, ["query", str(dataset), SQL, "--format", "csv"]).stdout
    assert list(csv.reader(io.StringIO(text))) == [
        ["session_id", "function_name", "is_error", "exit_code", "status"],
        ["example-code-repair", "Bash", "true", "", ""],
        ["make-doom-for-mips-trimmed", "Bash", "false", "", ""],
    ]
    table = runner.invoke(cli, ["query", str(dataset), SQL, "--format", "table"]).stdout
    assert table.splitlines()[0].split() == ["session_id", "function_name", "is_error", "exit_code", "status"]
    assert table.endswith("(2 rows)\n")
    clash = runner.invoke(cli, ["query", str(dataset), SQL, "--json", "--format", "csv"])
    assert clash.exit_code == 2


def test_sessions_with_an_error_are_one_where(dataset, runner):
    sql = "select distinct session_id from tool_calls where is_error"
    out = runner.invoke(cli, ["query", str(dataset), sql, "--json"])
    assert json.loads(out.stdout) == [{"session_id": "example-code-repair"}]


def test_convenience_columns_read_only_values_of_their_type(tmp_path, runner):
    doc = {
        "schema_version": "storyline/v1",
        "session": "s",
        "agent": {"id": "a"},
        "task": {"result": {"score": "0.9", "correct": True, "status": "done"}},
        "final_metrics": {"reward": 0.25, "total_prompt_tokens": 1.5},
        "turns": [
            {"id": 1, "src": "agent", "msg": "x", "metrics": {"prompt_tokens": "12", "completion_tokens": 3}},
            {
                "id": 2,
                "src": "agent",
                "msg": None,
                "tool_calls": [
                    {"tcid": "c1", "fn": "sh", "args": {}, "response": {"exit_code": 2}},
                    {"tcid": "c2", "fn": "sh", "args": {}, "response": {"status": "ok", "exit_code": 0}},
                    {"tcid": "c3", "fn": "sh", "args": {}, "response": {"status": "ok"}},
                ],
            },
        ],
    }
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    root = tmp_path / "ds"
    assert runner.invoke(cli, ["store", str(path), "--to", str(root)]).exit_code == 0

    def q(sql: str) -> list[dict[str, Any]]:
        out = runner.invoke(cli, ["query", str(root), sql, "--json"])
        assert out.exit_code == 0, out.output
        return json.loads(out.stdout)

    assert q("select correct, score, result_status, reward, total_prompt_tokens from runs") == [
        {"correct": True, "score": None, "result_status": "done", "reward": 0.25, "total_prompt_tokens": None}
    ]
    assert q("select prompt_tokens, completion_tokens from steps order by step_id") == [
        {"prompt_tokens": None, "completion_tokens": 3},
        {"prompt_tokens": None, "completion_tokens": None},
    ]
    assert q("select tool_call_id, is_error, exit_code, status from tool_calls order by 1") == [
        {"tool_call_id": "c1", "is_error": True, "exit_code": 2, "status": None},
        {"tool_call_id": "c2", "is_error": False, "exit_code": 0, "status": "ok"},
        {"tool_call_id": "c3", "is_error": None, "exit_code": None, "status": "ok"},
    ]
