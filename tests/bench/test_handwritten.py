"""bench/: the generators make valid documents, the hand-written ATIF converter round-trips, run.py runs."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from mapc.engine.values import json_equal

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
ATIF_FIXTURES = sorted((ROOT / "tests" / "data" / "fixtures" / "atif").glob("*.json"))
sys.path.append(str(BENCH))  # bench/ is not a package: its modules import by their own names

import generate  # noqa: E402
import handwritten_atif as hw  # noqa: E402
import harness  # noqa: E402

_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+\-]\d{2}:\d{2})")


def _load(path: Path) -> Any:
    return orjson.loads(path.read_bytes())


def _is_rfc3339(text: Any) -> bool:
    if type(text) is not str or not _RFC3339.fullmatch(text):
        return False
    datetime.fromisoformat(text.upper().replace(" ", "T"))  # raises on an impossible date
    return True


def atif_problems(doc: dict[str, Any]) -> list[str]:
    """The docs/formats.md (ATIF) reject rules, as a reader would check them (one message per broken rule)."""
    problems: list[str] = []
    if not (doc.get("session_id") or doc.get("trajectory_id")):
        problems.append("/: no non-empty session_id or trajectory_id")
    seen_trajectories = {doc["trajectory_id"]} if doc.get("trajectory_id") else set()

    def node(t: dict[str, Any], at: str) -> None:
        if type(t.get("schema_version")) is not str:
            problems.append(f"{at}/schema_version")
        agent = t.get("agent", {})
        for key in ("name", "version"):
            if type(agent.get(key)) is not str or not agent[key]:
                problems.append(f"{at}/agent/{key}: empty")
        step_ids: set[int] = set()
        call_ids: set[str] = set()
        for s, step in enumerate(t["steps"]):
            here = f"{at}/steps/{s}"
            sid = step.get("step_id")
            if type(sid) is not int or sid < 1 or sid in step_ids:
                problems.append(f"{here}/step_id: {sid!r}")
            step_ids.add(sid)
            if type(step.get("source")) is not str or "message" not in step:
                problems.append(f"{here}: source or message missing")
            if "timestamp" in step and step["timestamp"] is not None and not _is_rfc3339(step["timestamp"]):
                problems.append(f"{here}/timestamp: {step['timestamp']!r}")
            obs = step.get("observation")
            if obs is not None and (type(obs) is not dict or type(obs.get("results")) is not list):
                problems.append(f"{here}/observation")
            for c, call in enumerate(step.get("tool_calls") or ()):
                cid = call.get("tool_call_id")
                if type(cid) is not str or not cid or cid in call_ids:
                    problems.append(f"{here}/tool_calls/{c}/tool_call_id: {cid!r}")
                call_ids.add(cid)
                if type(call.get("function_name")) is not str or "arguments" not in call:
                    problems.append(f"{here}/tool_calls/{c}: function_name or arguments missing")
        for c, child in enumerate(t.get("subagent_trajectories") or ()):
            tid = child.get("trajectory_id")
            if type(tid) is not str or not tid or tid in seen_trajectories:
                problems.append(f"{at}/subagent_trajectories/{c}/trajectory_id: {tid!r}")
            seen_trajectories.add(tid)
            node(child, f"{at}/subagent_trajectories/{c}")

    node(doc, "")
    return problems


def storyline_problems(doc: dict[str, Any]) -> list[str]:
    """The Storyline rules (docs/storyline.md) the generator respects (identity, uniqueness, counts, prompts, times)."""
    problems: list[str] = []
    if doc.get("schema_version") != "storyline/v1" or not doc.get("session") or not doc["agent"].get("id"):
        problems.append("/: schema_version, session or agent.id")
    fields = doc["unknown_fields"]["sources"]["vendor"]["fields"]
    if doc["unknown_key_counts"] != {"vendor": dict.fromkeys(fields, 1)}:
        problems.append("/unknown_key_counts: an unknown source counts each pointer once, under itself")
    if any(p and (p[0] != "/" or re.search(r"~(?![01])", p)) for p in fields):
        problems.append("/unknown_fields: a key is not an RFC 6901 pointer")
    if type(doc["started_at"]) is str and not _is_rfc3339(doc["started_at"]):
        problems.append("/started_at")
    turn_ids: set[int] = set()
    tcids: set[str] = set()
    for t, turn in enumerate(doc["turns"]):
        if type(turn["id"]) is not int or turn["id"] in turn_ids or not turn.get("src") or "msg" not in turn:
            problems.append(f"/turns/{t}: id, src or msg")
        turn_ids.add(turn["id"])
        for key in ("ts", "finished_at"):
            value = turn.get(key)
            if value is not None and type(value) is not float and not _is_rfc3339(value):
                problems.append(f"/turns/{t}/{key}: {value!r}")
        prompt = turn.get("prompt")
        if prompt is not None and (turn.get("copied") or not (any(prompt.values()) or len(prompt) == 2)):
            problems.append(f"/turns/{t}/prompt")
        for latency in ("latency_ms", "ttft_ms"):
            if latency in turn and type(turn[latency]) is not int:
                problems.append(f"/turns/{t}/{latency}")
        for c, call in enumerate(turn.get("tool_calls", ())):
            if not call["tcid"] or call["tcid"] in tcids or not call["fn"] or "args" not in call:
                problems.append(f"/turns/{t}/tool_calls/{c}")
            tcids.add(call["tcid"])
            if call.get("response") == {}:
                problems.append(f"/turns/{t}/tool_calls/{c}/response")
    return problems


# -- generators ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_atif() -> dict[str, Any]:
    return generate.atif(250_000, seed=3)


def test_generated_atif_passes_the_reject_rules(small_atif):
    assert atif_problems(small_atif) == []


def test_generated_atif_exercises_the_mapping(small_atif):
    stories = hw.forward(small_atif)
    assert [s.get("trajectory") for s in stories] == ["traj-root", "traj-sub0", "traj-sub0-0", "traj-sub1"]
    counts = {key for s in stories for key in s.get("unknown_key_counts", {}).get("atif", {})}
    assert {"/vendor_root", "/harbor~1export~0v", "/agent/build~1flags~0x"} <= counts
    assert any(key.startswith("/steps/*/tool_calls/*/") for key in counts)
    assert any(key.startswith("/steps/*/observation/") for key in counts)
    assert "/subagent_trajectories/*/subagent_trajectories/*/vendor_child" in counts
    metrics = [step.get("metrics", {}) for step in small_atif["steps"]]
    for key in ("latency_ms", "elapsed_ms", "duration_ms", "ttft_ms"):
        assert any(key in m for m in metrics), key
    assert any(type(m.get("latency_ms")) is float for m in metrics)
    assert any(type(step["message"]) is list for step in small_atif["steps"])
    kinds = {turn.get("kind") for turn in stories[0]["turns"]}
    assert {None, "autonomous", "dialogue"} <= kinds


def test_generators_are_deterministic_and_sized():
    for kind in ("atif", "storyline"):
        first = generate.generate_bytes(kind, 0.2, seed=7)
        assert first == generate.generate_bytes(kind, 0.2, seed=7)
        assert first != generate.generate_bytes(kind, 0.2, seed=8)
        assert 0.95 * 200_000 < len(first) < 1.05 * 200_000


def test_generated_storyline_is_valid():
    doc = generate.storyline(250_000, seed=3)
    assert storyline_problems(doc) == []
    turns = doc["turns"]
    assert any(type(t.get("ts")) is float for t in turns) and any(type(t.get("ts")) is str for t in turns)
    assert any(t.get("prompt") == {"system": "", "user": ""} for t in turns)
    assert any("env" in t for t in turns) and any("response" in c for t in turns for c in t.get("tool_calls", ()))


# -- hand-written converter ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "digest"),
    [
        ("dialogue_10", "16cb43b9c826b5d4f570a46367aafa8287aa7e357d92cb284067c974cc3aec75"),
        ("multimodal_18", "e8caa910523e7ec15bef0435d950b9e0681b5f99a477d12d53c7bb523b067922"),
        ("sparse_13", "5a053caba630c022a9e60ac7c2e1cb49107d24c7d0d40f2dab34c9f8d1628515"),
        ("support-ticket", "e24d14fc0bc3d51f908b5114dfd44c92b5b391ea92a80167e5f570e84c32761c"),
    ],
)
def test_source_document_id_matches_the_reference(name, digest):
    path = ROOT / "tests" / "data" / "fixtures" / "atif" / f"{name}.json"
    assert hw.source_document_id(_load(path)) == digest


@pytest.mark.parametrize("path", ATIF_FIXTURES, ids=lambda p: p.stem)
def test_fixtures_round_trip(path):
    doc = _load(path)
    assert atif_problems(doc) == []
    stories = orjson.loads(hw.forward_bytes(path.read_bytes()))
    back = hw.reverse(stories if type(stories) is list else [stories])
    # The fixtures have no explicit nulls and no elapsed_ms/duration_ms, so nothing of the ATIF section's documented
    # differences applies: the round trip is exact at the JSON data-model level.
    assert json_equal(back, doc)


def test_forward_promotes_and_derives():
    dialogue = hw.forward(_load(ROOT / "tests/data/fixtures/atif/dialogue_10.json"))[0]
    agent_turn = dialogue["turns"][2]
    assert (agent_turn["latency_ms"], agent_turn["ttft_ms"], agent_turn["nllm"]) == (46, 12, 1)
    assert "kind" not in agent_turn and dialogue["agent"]["id"] == dialogue["agent"]["name"]
    parallel = hw.forward(_load(ROOT / "tests/data/fixtures/atif/parallel_tools_14.json"))[0]
    with_calls = next(t for t in parallel["turns"] if t.get("tool_calls"))
    assert with_calls["kind"] == "autonomous"
    call = with_calls["tool_calls"][0]
    assert call["duration_ms"] == call["extra"]["duration_ms"]
    assert "unknown_fields" not in parallel


@pytest.mark.parametrize(
    ("metrics", "latency"),
    [
        ({"latency_ms": 5, "elapsed_ms": 9}, 5),
        ({"latency_ms": 5.9}, 5),
        ({"latency_ms": -5.9}, -5),
        ({"elapsed_ms": 7, "duration_ms": 9}, 7),
        ({"duration_ms": 8}, 8),
        ({"latency_ms": "slow", "elapsed_ms": 7}, None),  # the first present key decides
        ({"latency_ms": None, "elapsed_ms": 7}, None),
        ({"latency_ms": True}, None),
        ({"prompt_tokens": 3}, None),
    ],
)
def test_latency_chain(metrics, latency):
    assert hw.latency_from(metrics) == latency


def _tiny(**step: Any) -> dict[str, Any]:
    base = {"step_id": 1, "source": "agent", "message": "hi"}
    agent = {"name": "a", "version": "1"}
    return {"schema_version": "ATIF-v1.7", "session_id": "s", "agent": agent, "steps": [base | step]}


def test_documented_round_trip_differences():
    nulls = _tiny(model_name=None, extra=None, tool_calls=None, metrics={"elapsed_ms": 5})
    back = hw.reverse(hw.forward(nulls))
    # Explicit nulls of known optional fields come back missing; metrics come back exactly (forward
    # derives latency_ms 5 from elapsed_ms again, so nothing is written back).
    assert back["steps"] == [{"step_id": 1, "source": "agent", "message": "hi", "metrics": {"elapsed_ms": 5}}]


def test_reverse_writes_back_latency_only_when_forward_would_not_derive_it():
    story = hw.forward(_tiny(metrics={"prompt_tokens": 3}))[0]
    story["turns"][0]["latency_ms"] = 12  # e.g. from ACTF llm_infer_ms
    assert hw.reverse([story])["steps"][0]["metrics"] == {"prompt_tokens": 3, "latency_ms": 12}
    del story["turns"][0]["metrics"]
    story["turns"][0]["ttft_ms"] = 4
    assert hw.reverse([story])["steps"][0]["metrics"] == {"latency_ms": 12, "ttft_ms": 4}


def test_unknown_keys_are_captured_and_restored():
    doc = _tiny(**{"vendor/x": 1, "a~b": None})
    doc["steps"][0]["tool_calls"] = [
        {"tool_call_id": "c1", "function_name": "f", "arguments": {}, "extra": {"duration_ms": 2.5}, "u": 1}
    ]
    doc["steps"][0]["observation"] = {"results": [], "o/k": "v"}
    doc["agent"]["0"] = "numeric key"
    child_step = {"step_id": 3, "source": "user", "message": None, "child~key": []}
    child = {"schema_version": "ATIF-v1.7", "session_id": "child", "trajectory_id": "t1"}
    doc["subagent_trajectories"] = [child | {"agent": {"name": "b", "version": "2"}, "steps": [child_step]}]
    root, child = hw.forward(doc)
    assert root["unknown_fields"]["sources"]["atif"]["fields"] == {
        "/agent/0": "numeric key",
        "/steps/0/vendor~1x": 1,
        "/steps/0/a~0b": None,
        "/steps/0/tool_calls/0/u": 1,
        "/steps/0/observation/o~1k": "v",
    }
    assert root["unknown_key_counts"]["atif"]["/steps/*/tool_calls/*/u"] == 1
    assert "duration_ms" not in root["turns"][0]["tool_calls"][0]  # a float is not promoted
    assert child["parent"] == {"psid": "s"} and root["children"] == ["t1"]
    assert child["unknown_key_counts"] == {"atif": {"/subagent_trajectories/*/steps/*/child~0key": 1}}
    digest = hw.source_document_id(doc)
    assert {s["unknown_fields"]["sources"]["atif"]["source_document_id"] for s in (root, child)} == {digest}
    assert json_equal(hw.reverse([root, child]), doc)


def test_generated_atif_round_trips(small_atif):
    back = hw.reverse(orjson.loads(hw.forward_bytes(orjson.dumps(small_atif))))
    # ATIF export always writes session_id (docs/formats.md): a subagent that had only a trajectory_id gains one.
    expected = orjson.loads(orjson.dumps(small_atif))
    sub0_0 = expected["subagent_trajectories"][0]["subagent_trajectories"][0]
    sub1 = expected["subagent_trajectories"][1]
    sub0_0["session_id"], sub1["session_id"] = sub0_0["trajectory_id"], sub1["trajectory_id"]
    assert json_equal(back, expected)


# -- the other baselines agree with the hand-written one ---------------------------------------------


def _without_document_id(value: Any) -> Any:
    for story in value if type(value) is list else [value]:
        if "unknown_fields" in story:
            story["unknown_fields"]["sources"]["atif"]["source_document_id"] = "-"
    return value


def _baseline_inputs(tmp_path: Path) -> list[Path]:
    generated = tmp_path / "generated.json"
    generated.write_bytes(generate.generate_bytes("atif", 0.1, seed=5))
    return [*ATIF_FIXTURES, generated]


def test_jq_matches_handwritten(tmp_path):
    jq = shutil.which("jq")
    if jq is None:
        pytest.skip("jq is not installed")
    for path in _baseline_inputs(tmp_path):
        out = subprocess.run([jq, "-c", "-f", str(BENCH / "atif.jq"), str(path)], check=True, capture_output=True)
        expected = _without_document_id(orjson.loads(hw.forward_bytes(path.read_bytes())))
        assert json_equal(_without_document_id(orjson.loads(out.stdout)), expected), path.name


def test_glom_matches_handwritten(tmp_path):
    pytest.importorskip("glom")
    import glom_atif

    for path in _baseline_inputs(tmp_path):
        expected = _without_document_id(orjson.loads(hw.forward_bytes(path.read_bytes())))
        got = _without_document_id(orjson.loads(glom_atif.forward_bytes(path.read_bytes())))
        assert json_equal(got, expected), path.name


# -- the harness --------------------------------------------------------------------------------------


def test_run_prints_a_table(tmp_path):
    row = "orjson.loads storyline"
    cmd = [sys.executable, str(BENCH / "run.py"), "--only", row, "--repeat", "1", "--mb", "1"]
    out = subprocess.run([*cmd, "--data-dir", str(tmp_path)], check=True, capture_output=True, text=True)
    lines = [line for line in out.stdout.splitlines() if line.startswith("|")]
    assert lines[0].startswith("| group | row | input MB |")
    assert len(lines) == 3 and lines[2].startswith(f"| validate | {row} | 1.0 |")
    assert list(tmp_path.glob("storyline-1mb-*.json"))


def test_selecting_a_row_brings_its_baseline():
    import rows_baseline  # noqa: F401  (registers the baseline rows; mapc's own rows are not needed here)

    names = [row.name for row in harness.select(["jq forward"])]
    assert names == ["handwritten forward", "jq forward"]
    with pytest.raises(KeyError):
        harness.select(["no such row"])
