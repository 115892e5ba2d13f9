"""Record Harbor's verdict on a corpus of ATIF documents (tests read only the recorded verdicts).

    .venv/bin/python tests/data/harbor/record.py [--python /path/to/python3.12] [--venv DIR] [--only PREFIX]

Run with mapc's own Python (it draws documents with the test suite's generators and converts
fixtures with mapc).  It makes a virtual environment of its own with Python >= 3.12 (Harbor's
minimum), `pip install harbor==0.26.*` from PyPI, and asks Harbor's `Trajectory` model
(`verdict.py`) about every document.  It writes, beside itself:

- `verdicts.jsonl`: one line per document, `{"name", "doc", "valid", "errors", "harbor"}`;
- `trajectory.schema.json`: `Trajectory.model_json_schema()` as Harbor derives it (the model's
  shape; its validators — sequential step ids, agent-only fields, call references… — are not in it).

The corpus: the shipped ATIF fixtures; mapc's ATIF output for every shipped fixture of every format
(and for the Claude Code session with its subagents, and drawn Claude Code sessions; the Codex
rollouts, and 40 generated rollouts);
documents drawn from `harbor_documents` (Harbor-valid, every feature) and `atif_documents` (mapc's
permissive reading: unknown keys everywhere); mapc's ATIF output of drawn documents; and named
mutations of the Harbor-valid ones (the cases of issue 15: a source "assistant", arguments that
are not an object, `steps: []`, step ids out of sequence, a dangling `source_call_id`, ATIF-v2.0,
keys Harbor forbids at every level, every version v1.0–v1.8, pydantic's lax coercions…).
Generation is deterministic (`derandomize`), so a re-run gives the same corpus for the same code.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "formats")]

HARBOR = "harbor==0.26.*"


def draw_many(strategy: Any, n: int) -> list[Any]:
    """`n` examples of `strategy`, the same on every run."""
    from hypothesis import HealthCheck, Phase, given, settings

    out: list[Any] = []

    @settings(
        max_examples=n,
        derandomize=True,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        deadline=None,
    )
    @given(strategy)
    def collect(value: Any) -> None:
        out.append(value)

    collect()
    return out


# --- mutations: each takes a Harbor-valid document and a Random, returns the mutated copy or None ---


def _steps(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return doc["steps"]


def _any_step(doc: dict[str, Any], r: random.Random) -> dict[str, Any]:
    return r.choice(_steps(doc))


def _agent_steps(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in _steps(doc) if s["source"] == "agent"]


def _calls(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for s in _steps(doc) for c in s.get("tool_calls") or []]


def _results(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [x for s in _steps(doc) for x in ((s.get("observation") or {}).get("results") or [])]


def _parts(doc: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for s in _steps(doc):
        if type(s["message"]) is list:
            out.extend(s["message"])
        for x in (s.get("observation") or {}).get("results") or []:
            if type(x.get("content")) is list:
                out.extend(x["content"])
    return out


def m_source(value: Any):
    def f(doc, r):
        _any_step(doc, r)["source"] = value
        return doc

    return f


def m_arguments(value: Any):
    def f(doc, r):
        calls = _calls(doc)
        if not calls:
            return None
        r.choice(calls)["arguments"] = value
        return doc

    return f


def m_steps_empty(doc, r):
    doc["steps"] = []
    return doc


def m_step_id(value: Any):
    def f(doc, r):
        _any_step(doc, r)["step_id"] = value
        return doc

    return f


def m_step_ids_shifted(doc, r):
    for s in _steps(doc):
        s["step_id"] += 1
    return doc


def m_step_ids_gap(doc, r):
    if len(_steps(doc)) < 2:
        return None
    _steps(doc)[-1]["step_id"] += 3
    return doc


def m_dangling_call(doc, r):
    s = _any_step(doc, r)
    s["observation"] = {"results": [{"source_call_id": "no-such-call", "content": "x"}]}
    return doc


def m_call_elsewhere(doc, r):
    """A source_call_id naming a call of another step."""
    calls = [(i, c) for i, s in enumerate(_steps(doc)) for c in s.get("tool_calls") or []]
    others = [i for i in range(len(_steps(doc))) if all(i != j for j, _ in calls)]
    if not calls or not others:
        return None
    _, call = r.choice(calls)
    _steps(doc)[r.choice(others)]["observation"] = {"results": [{"source_call_id": call["tool_call_id"]}]}
    return doc


def m_version(value: Any):
    def f(doc, r):
        doc["schema_version"] = value
        return doc

    return f


def m_extra_key(where: str, key: str, value: Any = 1):
    def f(doc, r):
        places = {
            "root": [doc],
            "agent": [doc["agent"]],
            "step": _steps(doc),
            "tool_call": _calls(doc),
            "observation": [s["observation"] for s in _steps(doc) if s.get("observation")],
            "result": _results(doc),
            "metrics": [s["metrics"] for s in _steps(doc) if s.get("metrics")],
            "final_metrics": [doc["final_metrics"]] if doc.get("final_metrics") else [],
            "part": _parts(doc),
            "source": [p["source"] for p in _parts(doc) if p.get("source")],
            "child": doc.get("subagent_trajectories") or [],
        }[where]
        if not places:
            return None
        r.choice(places)[key] = value
        return doc

    return f


def m_in_extra(key: str, value: Any):
    def f(doc, r):
        doc["extra"] = {**(doc.get("extra") or {}), key: value}
        return doc

    return f


def m_agent_only(field: str, value: Any):
    def f(doc, r):
        others = [s for s in _steps(doc) if s["source"] != "agent"]
        if not others:
            return None
        r.choice(others)[field] = value
        return doc

    return f


def m_no_llm(field: str, value: Any):
    def f(doc, r):
        agents = _agent_steps(doc)
        if not agents:
            return None
        s = r.choice(agents)
        s["llm_call_count"] = 0
        s[field] = value
        return doc

    return f


def m_step_field(field: str, value: Any, agent: bool = False):
    def f(doc, r):
        steps = _agent_steps(doc) if agent else _steps(doc)
        if not steps:
            return None
        r.choice(steps)[field] = value
        return doc

    return f


def m_drop(where: str, key: str):
    def f(doc, r):
        places = {"root": [doc], "agent": [doc["agent"]], "step": _steps(doc), "tool_call": _calls(doc)}[where]
        places = [p for p in places if key in p]
        if not places:
            return None
        del r.choice(places)[key]
        return doc

    return f


def m_agent_field(field: str, value: Any):
    def f(doc, r):
        doc["agent"][field] = value
        return doc

    return f


def m_root_field(field: str, value: Any):
    def f(doc, r):
        doc[field] = value
        return doc

    return f


def m_message(value: Any):
    def f(doc, r):
        _any_step(doc, r)["message"] = copy.deepcopy(value)
        return doc

    return f


def m_child(field: str, value: Any):
    def f(doc, r):
        kids = doc.get("subagent_trajectories") or []
        if not kids:
            return None
        kid = r.choice(kids)
        if value is _DELETE:
            kid.pop(field, None)
        else:
            kid[field] = value
        return doc

    return f


def m_duplicate_child_ids(doc, r):
    kids = doc.get("subagent_trajectories") or []
    if len(kids) < 2:
        return None
    kids[1]["trajectory_id"] = kids[0]["trajectory_id"]
    return doc


def m_ref(value: Any):
    def f(doc, r):
        _any_step(doc, r)["observation"] = {"results": [{"subagent_trajectory_ref": [value]}]}
        return doc

    return f


def m_metric(field: str, value: Any):
    def f(doc, r):
        agents = [s for s in _agent_steps(doc) if s.get("llm_call_count") != 0]
        if not agents:
            return None
        s = r.choice(agents)
        s["metrics"] = {**(s.get("metrics") or {}), field: value}
        return doc

    return f


def m_final(field: str, value: Any):
    def f(doc, r):
        doc["final_metrics"] = {**(doc.get("final_metrics") or {}), field: value}
        return doc

    return f


def m_observation(value: Any):
    def f(doc, r):
        _any_step(doc, r)["observation"] = copy.deepcopy(value)
        return doc

    return f


_DELETE = object()
_AUDIO = {"type": "audio", "source": {"media_type": "audio/wav", "path": "a.wav"}}
_IMAGE = {"type": "image", "source": {"media_type": "image/png", "path": "a.png"}}

MUTATIONS: dict[str, Any] = {
    "source-assistant": m_source("assistant"),
    "source-tool": m_source("tool"),
    "source-environment": m_source("environment"),
    "source-Agent": m_source("Agent"),
    "source-empty": m_source(""),
    "source-null": m_source(None),
    "arguments-list": m_arguments([1, 2]),
    "arguments-string": m_arguments('{"a": 1}'),
    "arguments-null": m_arguments(None),
    "arguments-number": m_arguments(3),
    "arguments-empty-object": m_arguments({}),
    "steps-empty": m_steps_empty,
    "step-ids-from-2": m_step_ids_shifted,
    "step-ids-gap": m_step_ids_gap,
    "step-id-0": m_step_id(0),
    "step-id-negative": m_step_id(-1),
    "step-id-string": m_step_id("1"),
    "step-id-float": m_step_id(1.0),
    "step-id-float-half": m_step_id(1.5),
    "step-id-true": m_step_id(True),
    "step-id-null": m_step_id(None),
    "dangling-source-call-id": m_dangling_call,
    "source-call-id-of-another-step": m_call_elsewhere,
    "version-2.0": m_version("ATIF-v2.0"),
    "version-1.9": m_version("ATIF-v1.9"),
    "version-bare": m_version("1.7"),
    "version-null": m_version(None),
    **{f"version-1.{n}": m_version(f"ATIF-v1.{n}") for n in range(9)},
    "root-_storyline": m_extra_key("root", "_storyline", {"unknown_fields": {"version": 1, "by_trajectory": {}}}),
    "extra-_storyline": m_in_extra("_storyline", {"unknown_fields": {"version": 1, "by_trajectory": {}}}),
    "root-unknown": m_extra_key("root", "vendor"),
    "agent-unknown": m_extra_key("agent", "vendor"),
    "step-unknown": m_extra_key("step", "vendor"),
    "step-latency_ms": m_extra_key("step", "latency_ms", 5),
    "tool-call-result": m_extra_key("tool_call", "result", "ok"),
    "tool-call-unknown": m_extra_key("tool_call", "vendor"),
    "observation-unknown": m_extra_key("observation", "vendor"),
    "result-tool_use_id": m_extra_key("result", "tool_use_id", "t1"),
    "result-status": m_extra_key("result", "status", "ok"),
    "metrics-total_tokens": m_metric("total_tokens", 12),
    "metrics-latency_ms": m_metric("latency_ms", 12),
    "metrics-prompt-tokens-string": m_metric("prompt_tokens", "5"),
    "metrics-prompt-tokens-float": m_metric("prompt_tokens", 5.5),
    "metrics-cost-string": m_metric("cost_usd", "1.5"),
    "metrics-logprobs-bool": m_metric("logprobs", [True]),
    "metrics-token-ids-string": m_metric("prompt_token_ids", "1,2"),
    "final-metrics-fixture": m_final("fixture", "x"),
    "final-metrics-total-steps-negative": m_final("total_steps", -1),
    "final-metrics-total-steps-string": m_final("total_steps", "3"),
    "final-metrics-cost-null": m_final("total_cost_usd", None),
    "part-unknown": m_extra_key("part", "vendor"),
    "media-source-unknown": m_extra_key("source", "vendor"),
    "child-unknown": m_extra_key("child", "vendor"),
    "model-name-on-user": m_agent_only("model_name", "m"),
    "tool-calls-on-user": m_agent_only("tool_calls", []),
    "metrics-on-system": m_agent_only("metrics", {}),
    "reasoning-effort-on-user": m_agent_only("reasoning_effort", "low"),
    "reasoning-content-on-user": m_agent_only("reasoning_content", "r"),
    "null-model-name-on-user": m_agent_only("model_name", None),
    "llm-0-metrics": m_no_llm("metrics", {"prompt_tokens": 1}),
    "llm-0-reasoning": m_no_llm("reasoning_content", "why"),
    "llm-0-model-name": m_no_llm("model_name", "m"),
    "llm-negative": m_step_field("llm_call_count", -1),
    "llm-string": m_step_field("llm_call_count", "2"),
    "timestamp-bad-month": m_step_field("timestamp", "2026-13-01T00:00:00Z"),
    "timestamp-empty": m_step_field("timestamp", ""),
    "timestamp-word": m_step_field("timestamp", "yesterday"),
    "timestamp-number": m_step_field("timestamp", 0),
    "timestamp-no-zone": m_step_field("timestamp", "2026-01-01T00:00:00"),
    "timestamp-date-only": m_step_field("timestamp", "2026-01-01"),
    "timestamp-space": m_step_field("timestamp", "2026-01-01 10:00:00+02:00"),
    "timestamp-lowercase-z": m_step_field("timestamp", "2026-01-01t00:00:00z"),
    "timestamp-basic-format": m_step_field("timestamp", "20260101T000000Z"),
    "timestamp-null": m_step_field("timestamp", None),
    "copied-string": m_step_field("is_copied_context", "yes"),
    "copied-number": m_step_field("is_copied_context", 2),
    "reasoning-effort-number": m_step_field("reasoning_effort", 3, agent=True),
    "reasoning-effort-bool": m_step_field("reasoning_effort", True, agent=True),
    "reasoning-effort-object": m_step_field("reasoning_effort", {"x": 1}, agent=True),
    "step-extra-list": m_step_field("extra", [1]),
    "step-extra-null": m_step_field("extra", None),
    "no-step-id": m_drop("step", "step_id"),
    "no-source": m_drop("step", "source"),
    "no-message": m_drop("step", "message"),
    "no-tool-call-id": m_drop("tool_call", "tool_call_id"),
    "no-function-name": m_drop("tool_call", "function_name"),
    "no-arguments": m_drop("tool_call", "arguments"),
    "no-agent-version": m_drop("agent", "version"),
    "no-agent": m_drop("root", "agent"),
    "no-steps": m_drop("root", "steps"),
    "no-schema-version": m_drop("root", "schema_version"),
    "agent-name-number": m_agent_field("name", 7),
    "agent-name-empty": m_agent_field("name", ""),
    "agent-tools-object": m_agent_field("tool_definitions", {"a": 1}),
    "agent-tools-list-of-strings": m_agent_field("tool_definitions", ["x"]),
    "session-id-number": m_root_field("session_id", 7),
    "session-id-empty": m_root_field("session_id", ""),
    "notes-list": m_root_field("notes", ["n"]),
    "continued-ref-object": m_root_field("continued_trajectory_ref", {"path": "x"}),
    "root-extra-string": m_root_field("extra", "x"),
    "subagents-empty": m_root_field("subagent_trajectories", []),
    "message-null": m_message(None),
    "message-number": m_message(5),
    "message-object": m_message({"text": "x"}),
    "message-empty-list": m_message([]),
    "part-text-without-text": m_message([{"type": "text"}]),
    "part-text-with-source": m_message([{"type": "text", "text": "x", "source": _IMAGE["source"]}]),
    "part-image-url": m_message([{"type": "image_url", "image_url": {"url": "https://x/y.png"}}]),
    "part-image-no-source": m_message([{"type": "image"}]),
    "part-image-with-text": m_message([{**_IMAGE, "text": "x"}]),
    "part-image-audio-source": m_message([{"type": "image", "source": _AUDIO["source"]}]),
    "part-audio-image-source": m_message([{"type": "audio", "source": _IMAGE["source"]}]),
    "part-audio": m_message([_AUDIO]),
    "part-audio-mp3-alias": m_message([{"type": "audio", "source": {"media_type": "audio/mp3", "path": "a.mp3"}}]),
    "part-audio-upper": m_message([{"type": "audio", "source": {"media_type": " AUDIO/WAV ", "path": "a"}}]),
    "part-audio-duration": m_message([{"type": "audio", "source": {**_AUDIO["source"], "duration_sec": 2.5}}]),
    "part-audio-duration-negative": m_message([{"type": "audio", "source": {**_AUDIO["source"], "duration_sec": -1}}]),
    "part-audio-duration-string": m_message([{"type": "audio", "source": {**_AUDIO["source"], "duration_sec": "3"}}]),
    "part-audio-bad-type": m_message([{"type": "audio", "source": {"media_type": "audio/opus", "path": "a"}}]),
    "part-image-bad-type": m_message([{"type": "image", "source": {"media_type": "image/bmp", "path": "a"}}]),
    "part-image-duration": m_message([{"type": "image", "source": {**_IMAGE["source"], "duration_sec": 1}}]),
    "part-video": m_message([{"type": "video", "source": {"media_type": "video/mp4", "path": "v"}}]),
    "part-string": m_message(["plain"]),
    "part-text-null": m_message([{"type": "text", "text": None}]),
    "child-no-trajectory-id": m_child("trajectory_id", _DELETE),
    "child-null-trajectory-id": m_child("trajectory_id", None),
    "child-steps-empty": m_child("steps", []),
    "child-version-2": m_child("schema_version", "ATIF-v2.0"),
    "child-duplicate-ids": m_duplicate_child_ids,
    "ref-session-only": m_ref({"session_id": "s"}),
    "ref-path": m_ref({"trajectory_path": "p.json"}),
    "ref-unknown-key": m_ref({"trajectory_path": "p.json", "vendor": 1}),
    "ref-dangling-id": m_ref({"trajectory_id": "no-such-child"}),
    "observation-no-results": m_observation({}),
    "observation-results-null": m_observation({"results": None}),
    "observation-list": m_observation([]),
    "observation-results-empty": m_observation({"results": []}),
    "result-content-number": m_observation({"results": [{"content": 3}]}),
    "result-content-parts": m_observation({"results": [{"content": [_IMAGE, _AUDIO]}]}),
    "result-call-id-number": m_observation({"results": [{"source_call_id": 1}]}),
}


def mutations(valid: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    """Every mutation applied to several valid documents (the first few that it applies to)."""
    out = []
    for name, mutate in MUTATIONS.items():
        made = 0
        for i, doc in enumerate(valid):
            result = mutate(copy.deepcopy(doc), random.Random(f"{name}/{i}"))
            if result is None:
                continue
            out.append((f"mutation/{name}/{i}", result))
            made += 1
            if made == 3:
                break
    return out


# --- mapc's own outputs -------------------------------------------------------------------------


def mapc_outputs(drawn: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """mapc's ATIF for every shipped fixture of every format, and for drawn documents."""
    import orjson

    import mapc
    from mapc.engine.problems import MapcError

    out = []
    fixtures = ROOT / "tests" / "data" / "fixtures"
    for fmt in ("atif", "actf", "openai-msg"):
        for path in sorted((fixtures / fmt).glob("*.json")):
            doc = mapc.convert(fmt, "atif", path.read_bytes(), path=path.name)
            for n, one in enumerate(doc if type(doc) is list else [doc]):
                out.append((f"mapc/{fmt}/{path.name}/{n}", one))
    out += claude_code_outputs()
    out += codex_outputs()
    for name, doc in drawn:
        for target in ("actf", "openai-msg"):
            try:
                stories = mapc.into_storyline("atif", orjson.dumps(doc), path="d.json")
                hop = orjson.dumps(mapc.from_storyline(target, stories))
                back = mapc.from_storyline("atif", mapc.into_storyline(target, hop, path="d.json"))
            except MapcError:
                continue
            for n, one in enumerate(back if type(back) is list else [back]):
                out.append((f"mapc/via-{target}/{name}/{n}", one))
    return out


def claude_code_outputs() -> list[tuple[str, Any]]:
    """mapc's ATIF for the real Claude Code session (with its subagents) and for drawn sessions
    (issue 18); tests/formats/test_harbor.py checks mapc still writes exactly these."""
    import orjson
    from claude_strategies import sessions

    import mapc
    from mapc.engine import convert

    folder = ROOT / "tests" / "data" / "fixtures" / "claude-code"
    out = []
    for session in sorted(folder.glob("*.jsonl")):
        subagents = sorted((folder / session.stem / "subagents").glob("*.jsonl"))
        companions = [(p.relative_to(folder).as_posix(), p.read_bytes()) for p in subagents]
        stories = convert.into_storyline_with("claude-code", session.read_bytes(), companions, path=session.name)
        out.append((f"mapc/claude-code/{session.name}", mapc.from_storyline("atif", stories)))
    for i, records in enumerate(draw_many(sessions(), 20)):
        data = b"".join(orjson.dumps(r) + b"\n" for r in records)
        out.append((f"mapc/claude-code/drawn/{i}", mapc.convert("claude-code", "atif", data)))
    return out


def codex_outputs() -> list[tuple[str, Any]]:
    """mapc's ATIF for the Codex rollouts (issue 18) and for 40 generated rollouts (`--only mapc/codex`)."""
    from codex_strategies import jsonl, rollouts

    import mapc

    out = []
    for path in sorted((ROOT / "tests" / "data" / "fixtures" / "codex").glob("*.jsonl")):
        doc = mapc.convert("codex", "atif", path.read_bytes(), jsonl=True, path=path.name)
        out.append((f"mapc/codex/{path.name}/0", doc))
    for i, recs in enumerate(draw_many(rollouts(), 40)):
        out.append((f"mapc/codex-rollouts/{i}", mapc.convert("codex", "atif", jsonl(recs), jsonl=True)))
    return out


def corpus() -> list[tuple[str, Any]]:
    from atif_strategies import atif_documents
    from harbor_strategies import harbor_documents

    items: list[tuple[str, Any]] = []
    for path in sorted((ROOT / "tests" / "data" / "fixtures" / "atif").glob("*.json")):
        items.append((f"fixture/{path.name}", json.loads(path.read_text(encoding="utf-8"))))
    valid = draw_many(harbor_documents(), 160)
    items += [(f"harbor-documents/{i}", d) for i, d in enumerate(valid)]
    permissive = draw_many(atif_documents(), 40)
    items += [(f"atif-documents/{i}", d) for i, d in enumerate(permissive)]
    items += mutations(valid)
    items += mapc_outputs([(f"harbor-documents/{i}", d) for i, d in enumerate(valid[:30])])
    return items


def harbor_python(args: argparse.Namespace) -> Path:
    """Harbor's venv (made and filled on first use)."""
    venv = Path(args.venv)
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([args.python, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", HARBOR], check=True)
    return python


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--python", default="python3.12", help="a Python >= 3.12 for Harbor's venv")
    parser.add_argument("--venv", default=str(Path.home() / ".cache" / "mapc-harbor-venv"))
    parser.add_argument(
        "--only",
        metavar="PREFIX",
        help="record only the documents whose name starts with PREFIX (e.g. mapc/claude-code/), keeping the other rows",
    )
    args = parser.parse_args()
    items = (
        claude_code_outputs()
        if args.only == "mapc/claude-code/"
        else codex_outputs()
        if args.only == "mapc/codex"
        else corpus()
    )
    if args.only:
        items = [(n, d) for n, d in items if n.startswith(args.only)]
    seen: set[bytes] = set()
    unique = []
    for name, doc in items:
        key = json.dumps(doc, sort_keys=True).encode()
        if key not in seen:
            seen.add(key)
            unique.append((name, doc))
    python = harbor_python(args)
    lines = "".join(json.dumps({"name": n, "doc": d}) + "\n" for n, d in unique)
    done = subprocess.run(
        [str(python), str(HERE / "verdict.py"), "--schema", str(HERE / "trajectory.schema.json")],
        input=lines,
        capture_output=True,
        text=True,
        check=True,
    )
    verdicts = [json.loads(line) for line in done.stdout.splitlines()]
    kept = []
    if args.only:
        with open(HERE / "verdicts.jsonl", encoding="utf-8") as f:
            kept = [line for line in f if not json.loads(line)["name"].startswith(args.only)]
    with open(HERE / "verdicts.jsonl", "w", encoding="utf-8") as f:
        f.writelines(kept)
        for (name, doc), v in zip(unique, verdicts, strict=True):
            assert v["name"] == name
            f.write(json.dumps({"name": name, "doc": doc, **{k: v[k] for k in ("valid", "errors", "harbor")}}))
            f.write("\n")
    valid = sum(v["valid"] for v in verdicts)
    print(f"{len(verdicts)} documents, {valid} valid, {len(verdicts) - valid} invalid (Harbor {verdicts[0]['harbor']})")
    if kept:
        print(f"{len(kept)} other documents kept as recorded")


if __name__ == "__main__":
    main()
