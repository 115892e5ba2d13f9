"""The ACTF v1.0 mapping (mappings/actf.yaml) against docs/formats.md (ACTF), docs/envelope.md and issue 4.

1. laws over the fixtures and generated documents: GetPut, PutGet, valid output;
2. one test per mapping rule (docs/formats.md, ACTF);
3. the reverse: fan-in of attempts, the synthesized export of a Storyline that never was ACTF;
4. every reject rule of docs/formats.md (ACTF: what reading refuses), with code and pointer;
5. containers and the ``_storyline`` envelope (carriers ``/attempts/{a}``);
6. edges the laws found, kept as minimal regression tests;
7. gaps: minimal tests of what mapc loses or rejects against the reference's rules (docs/formats.md
   "ACTF"; they fail until fixed).

Attempt order: issue 4 asks for the order the file lists the attempts; the reference sorts the keys as
strings (``"10"`` < ``"2"``).  mapc follows the issue (docs/formats.md, ACTF), and so do these tests.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
import pytest
from actf_strategies import actf_containers, actf_documents, normalized
from conftest import FIXTURES
from hypothesis import HealthCheck, given, settings
from through_hub import Format, at

from mapc.engine import pointer, storyline
from mapc.engine.convert import from_storyline, into_storyline
from mapc.engine.problems import MapcError
from mapc.engine.values import MISSING, json_equal

ACTF_FIXTURES = sorted((FIXTURES / "actf").glob("*.json"))
FIXTURE_IDS = [p.name.removesuffix(".actf.json") for p in ACTF_FIXTURES]
LAWS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CONTAINER_LAWS = settings(LAWS, max_examples=40)
EPOCH_TEXT = "1970-01-01 00:00:00+00:00"
T0 = "2026-08-01 10:00:00+00:00"
T1 = "2026-08-01 10:00:01+00:00"
T2 = "2026-08-01 10:00:02+00:00"


# --- helpers -------------------------------------------------------------------------------


_FORMAT = Format("actf")
forward, reverse, roundtrip = _FORMAT.forward, _FORMAT.reverse, _FORMAT.roundtrip
problems, reverse_problems = _FORMAT.problems, _FORMAT.reverse_problems


def step(step_id: int = 1, **fields: Any) -> dict[str, Any]:
    """A step with every key ACTF writes; keyword fields replace or add keys (None is a value)."""
    out: dict[str, Any] = {
        "step_id": step_id,
        "assistant_content": {"content": "c", "reasoning_content": "", "tool_calls": []},
        "metric": {
            "prompt_tokens_len": 1,
            "completion_tokens_len": 2,
            "llm_infer_ms": 3,
            "env_action_ms": None,
            "stop_reason": None,
        },
        "system_prompt": "",
        "user_content": "",
        "tools": [],
        "observation": [],
        "started_at": T0,
        "finished_at": T1,
    }
    out.update(fields)
    return out


def attempt(*steps: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """An attempt with every key ACTF writes (docs/formats.md, ACTF "Defaults"), so it round-trips exactly."""
    out: dict[str, Any] = {
        "correct": False,
        "final_answer": None,
        "ground_truth": "",
        "trajectory": {
            "schema_version": "ACTF_v1.0",
            "steps": list(steps) or [step()],
            "started_at": T0,
            "finished_at": T2,
        },
        "status": "completed",
        "score": None,
        "error": "",
        "artifacts": {},
        "extra": {},
        "analysis_result": None,
        "meta": {},
    }
    out.update(fields)
    return out


def actf(attempts: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    """A valid ACTF document (one attempt "1" by default); keyword fields replace or add root keys."""
    attempts = attempts if attempts is not None else {"1": attempt()}
    doc: dict[str, Any] = {
        "task_id": "task-1",
        "category": "software-engineering",
        "k": max(1, len(attempts)),
        "correct": False,
        "attempts_tried": len(attempts),
        "solved_at": None,
        "attempts": attempts,
    }
    doc.update(fields)
    return doc


def one_step(st: dict[str, Any]) -> dict[str, Any]:
    """A one-attempt, one-step document of `st`."""
    return actf({"1": attempt(st)})


def one_turn(st: dict[str, Any]) -> dict[str, Any]:
    """The Storyline turn a one-step document makes of `st`."""
    (story,) = forward(one_step(st))
    return story["turns"][0]


def tool_use(tool_id: str = "call-1", **fields: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": "ls"}, **fields}


def command(tool_id: str = "cmd-1", **fields: Any) -> dict[str, Any]:
    return {
        "type": "command_execution",
        "id": tool_id,
        "command": "cargo test",
        "aggregated_output": "ok",
        "exit_code": 0,
        "status": "completed",
        **fields,
    }


def with_tools(tools: list[dict[str, Any]], place: str = "tools", **fields: Any) -> dict[str, Any]:
    """A step whose tools are in `tools`, in `assistant_content.tool_calls`, or equal in both."""
    assistant = {"content": "", "reasoning_content": "", "tool_calls": []}
    st = step(assistant_content=assistant, **fields)
    if place in ("tools", "both"):
        st["tools"] = copy.deepcopy(tools)
    if place in ("tool_calls", "both"):
        assistant["tool_calls"] = copy.deepcopy(tools)
    return st


def storyline_doc(**fields: Any) -> dict[str, Any]:
    """A minimal valid Storyline that never was ACTF; keyword fields replace or add keys."""
    doc: dict[str, Any] = {
        "schema_version": "storyline/v1",
        "session": "s",
        "agent": {"id": "ag"},
        "turns": [{"id": 1, "src": "agent", "msg": "m"}],
    }
    doc.update(fields)
    return doc


def turn(**fields: Any) -> dict[str, Any]:
    return {"id": 1, "src": "agent", "msg": "m", **fields}


def fixture(name: str) -> dict[str, Any]:
    return orjson.loads((FIXTURES / "actf" / f"{name}.actf.json").read_bytes())


def assert_round_trip(doc: dict[str, Any]) -> None:
    """GetPut within the fidelity boundary (see `normalized`)."""
    assert json_equal(normalized(roundtrip(doc)), normalized(doc))


def fields_of(story: dict[str, Any]) -> dict[str, Any]:
    return story["unknown_fields"]["sources"]["actf"]["fields"]


def kept_of(story: dict[str, Any]) -> dict[str, Any]:
    """The values of keys ACTF defines that no Storyline field says: provenance, not unknown (engine/known.py)."""
    return story["origin"]["kept"]["fields"]


# === 1. Laws =================================================================================


@pytest.mark.parametrize("path", ACTF_FIXTURES, ids=FIXTURE_IDS)
def test_fixture_forward_output_is_valid_storyline(path: Path) -> None:
    stories = into_storyline("actf", path.read_bytes())
    assert len(stories) == len(orjson.loads(path.read_bytes())["attempts"])
    for story in stories:
        assert storyline.check(story) == []


@pytest.mark.parametrize("path", ACTF_FIXTURES, ids=FIXTURE_IDS)
def test_fixture_get_put(path: Path) -> None:
    # The fixtures write every key, so the round trip is exact, not only within the boundary.
    source = orjson.loads(path.read_bytes())
    assert json_equal(from_storyline("actf", into_storyline("actf", path.read_bytes())), source)


@pytest.mark.parametrize("path", ACTF_FIXTURES, ids=FIXTURE_IDS)
def test_fixture_put_get(path: Path) -> None:
    stories = into_storyline("actf", path.read_bytes())
    again = forward(from_storyline("actf", copy.deepcopy(stories)))
    assert json_equal(again, stories)


@pytest.mark.parametrize("path", ACTF_FIXTURES, ids=FIXTURE_IDS)
def test_fixture_as_several_attempts_round_trips(path: Path) -> None:
    # The fixture's attempt three times under keys "10", "2" and "a/b": file order, escaped carriers.
    source = orjson.loads(path.read_bytes())
    (only,) = source["attempts"].values()
    doc = {**source, "k": 4, "attempts_tried": 3, "attempts": {"10": only, "2": only, "a/b": only}}
    stories = forward(doc)
    assert [s["attempt_id"] for s in stories] == ["10", "2", "a/b"]
    assert all(storyline.check(s) == [] for s in stories)
    assert json_equal(reverse(stories), doc)
    assert json_equal(forward(reverse(stories)), stories)


def test_make_doom_fixture_keeps_its_unknown_step_key() -> None:
    (story,) = into_storyline("actf", (FIXTURES / "actf" / "make-doom-for-mips_trimmed.actf.json").read_bytes())
    assert fields_of(story) == {"/attempts/1/trajectory/steps/1/fixture_extension": {"preserve": True}}
    assert story["unknown_key_counts"] == {"actf": {"/attempts/1/trajectory/steps/*/fixture_extension": 1}}
    assert story["unknown_fields"]["sources"]["actf"]["source_document_id"] == "make-doom-for-mips-trimmed"


def test_code_repair_fixture_single_tool_duration() -> None:
    (story,) = into_storyline("actf", (FIXTURES / "actf" / "code-repair.actf.json").read_bytes())
    first = story["turns"][0]
    assert first["tool_calls"][0]["duration_ms"] == 25  # env_action_ms 25.0, one tool
    assert first["latency_ms"] == 10
    assert "unknown_fields" not in story


# Generated documents may hold known keys that are null, missing, or the ACTF model's default
# ("" / []); the fidelity boundary (docs/formats.md, ACTF "Fidelity") lets those come back in another of
# these spellings, so GetPut compares `normalized` values: at every level, a known key that is null
# or holds the model's default is dropped on both sides, a missing metric key is null; unknown keys
# (their nulls too) and every other value are compared exactly.  PutGet is exact.


@LAWS
@given(actf_documents())
def test_generated_forward_output_is_valid_storyline(doc: dict[str, Any]) -> None:
    stories = forward(doc)
    assert [s["attempt_id"] for s in stories] == list(doc["attempts"])  # file order
    for story in stories:
        assert storyline.check(story) == []


@LAWS
@given(actf_documents())
def test_generated_get_put(doc: dict[str, Any]) -> None:
    back = roundtrip(doc)
    assert list(back["attempts"]) == list(doc["attempts"])
    assert json_equal(normalized(back), normalized(doc))


@LAWS
@given(actf_documents())
def test_generated_put_get(doc: dict[str, Any]) -> None:
    stories = forward(doc)
    assert json_equal(forward(reverse(stories)), stories)


@CONTAINER_LAWS
@given(actf_containers())
def test_generated_arrays_and_jsonl_round_trip(docs: list[dict[str, Any]]) -> None:
    from_array = into_storyline("actf", orjson.dumps(docs))
    from_jsonl = into_storyline("actf", b"\n".join(orjson.dumps(d) for d in docs) + b"\n", jsonl=True)
    assert json_equal(from_array, from_jsonl)
    back = reverse(from_array)  # Storylines of different tasks (`run`) export as one document each
    expected = [normalized(d) for d in docs]
    got = [normalized(d) for d in back] if isinstance(back, list) else [normalized(back)]
    assert json_equal(got, expected)


def test_normalized_only_forgives_null_missing_and_model_defaults() -> None:
    # The comparison itself: known nulls and model defaults are one value; unknowns are exact.
    doc = actf({"1": attempt(status=None, vendor=None)}, retry_count=None)
    assert normalized(doc) == normalized(actf({"1": attempt(status="", vendor=None)}))
    assert normalized(doc) != normalized(actf({"1": attempt(status="")}))  # unknown null kept
    assert normalized(actf({"1": attempt(ground_truth=None)})) != normalized(actf({"1": attempt(ground_truth="")}))


# === 2. The mapping table, row by row ========================================================

TU = tool_use()
ROWS: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    # (id, ACTF document, {pointer into the first Storyline: expected value, MISSING for absent})
    ("session: one attempt is the task id", actf(task_id="T"), {"/session": "T"}),
    ("run is the task id", actf(task_id="T"), {"/run": "T"}),
    ("attempt_id is the attempt key", actf({"7": attempt()}), {"/attempt_id": "7", "/session": "task-1"}),
    ("trajectory is absent", actf(), {"/trajectory": MISSING}),
    (
        "origin",
        actf(),
        {
            "/schema_version": "storyline/v1",
            "/origin": {"format": "actf", "schema_version": "ACTF_v1.0"},
            "/origin/document_id": MISSING,
        },
    ),
    ("agent constants", actf(), {"/agent": {"id": "actf-agent", "name": "ACTF Agent"}}),
    ("src and nllm constants", actf(), {"/turns/0/src": "agent", "/turns/0/nllm": 1}),
    ("step_id is the turn id", one_step(step(42)), {"/turns/0/id": 42}),
    ("kind: autonomous with tools", one_step(with_tools([TU])), {"/turns/0/kind": "autonomous"}),
    (
        "kind: autonomous with tool_calls only",
        one_step(with_tools([TU], "tool_calls")),
        {"/turns/0/kind": "autonomous"},
    ),
    ("kind: absent without tools", one_step(step()), {"/turns/0/kind": MISSING}),
    ("msg: content", one_step(step(assistant_content={"content": "hi"})), {"/turns/0/msg": "hi"}),
    (
        "msg: empty content is an empty string",
        one_step(step(assistant_content={"content": ""})),
        {"/turns/0/msg": ""},
    ),
    ("msg: missing content is an empty string", one_step(step(assistant_content={})), {"/turns/0/msg": ""}),
    ("msg: null content is an empty string", one_step(step(assistant_content={"content": None})), {"/turns/0/msg": ""}),
    (
        "msg: structured content becomes its JSON text",
        one_step(step(assistant_content={"content": [{"type": "text", "text": "x"}]})),
        {"/turns/0/msg": '[{"type":"text","text":"x"}]'},
    ),
    (
        "reason: reasoning_content",
        one_step(step(assistant_content={"content": "", "reasoning_content": "why"})),
        {"/turns/0/reason": "why"},
    ),
    (
        "reason: absent when empty",
        one_step(step(assistant_content={"content": "", "reasoning_content": ""})),
        {"/turns/0/reason": MISSING},
    ),
    (
        "ts and finished_at are the step's, verbatim",
        one_step(step(started_at="2026-08-01t10:00:00.5z", finished_at="2026-08-01 12:00:01+02:00")),
        {"/turns/0/ts": "2026-08-01t10:00:00.5z", "/turns/0/finished_at": "2026-08-01 12:00:01+02:00"},
    ),
    (
        "metrics: the whole metric, five keys filled",
        one_step(step(metric={"llm_infer_ms": 5, "vendor": [1]})),
        {
            "/turns/0/metrics": {
                "prompt_tokens_len": None,
                "completion_tokens_len": None,
                "llm_infer_ms": 5,
                "env_action_ms": None,
                "stop_reason": None,
                "vendor": [1],
            }
        },
    ),
    ("latency_ms: llm_infer_ms", one_step(step(metric={"llm_infer_ms": 12})), {"/turns/0/latency_ms": 12}),
    ("latency_ms: float truncated", one_step(step(metric={"llm_infer_ms": 12.9})), {"/turns/0/latency_ms": 12}),
    (
        "latency_ms: negative float truncated toward zero",
        one_step(step(metric={"llm_infer_ms": -3.9})),
        {"/turns/0/latency_ms": -3},
    ),
    (
        "latency_ms: huge float saturates",
        one_step(step(metric={"llm_infer_ms": 1e300})),
        {"/turns/0/latency_ms": 2**63 - 1},
    ),
    ("latency_ms: null gives none", one_step(step(metric={"llm_infer_ms": None})), {"/turns/0/latency_ms": MISSING}),
    ("latency_ms: missing gives none", one_step(step(metric={})), {"/turns/0/latency_ms": MISSING}),
    ("tool_calls: absent without tools", one_step(step()), {"/turns/0/tool_calls": MISSING}),
    (
        "tool_calls: from tools",
        one_step(with_tools([tool_use("a"), tool_use("b")])),
        {"/turns/0/tool_calls/0/tcid": "a", "/turns/0/tool_calls/1/tcid": "b"},
    ),
    (
        "tool_calls: from assistant_content.tool_calls when tools is empty",
        one_step(with_tools([tool_use("a")], "tool_calls")),
        {"/turns/0/tool_calls/0/tcid": "a", "/turns/0/tool_calls/1": MISSING},
    ),
    (
        "tool_calls: equal in both lists is one call per tool",
        one_step(with_tools([tool_use("a")], "both")),
        {"/turns/0/tool_calls/0/tcid": "a", "/turns/0/tool_calls/1": MISSING},
    ),
    (
        "tcid: blank ids are synthesized step-{step_id}-tool-{i}",
        one_step(with_tools([tool_use(""), tool_use("x"), tool_use("  ")], step_id=4)),
        {
            "/turns/0/tool_calls/0/tcid": "step-4-tool-0",
            "/turns/0/tool_calls/1/tcid": "x",
            "/turns/0/tool_calls/2/tcid": "step-4-tool-2",
        },
    ),
    (
        "tcid: missing and null ids are synthesized",
        one_step(with_tools([{"type": "tool_use", "name": "a", "input": 1}, tool_use(None)], step_id=2)),
        {"/turns/0/tool_calls/0/tcid": "step-2-tool-0", "/turns/0/tool_calls/1/tcid": "step-2-tool-1"},
    ),
    ("fn: name", one_step(with_tools([tool_use(name="Grep")])), {"/turns/0/tool_calls/0/fn": "Grep"}),
    (
        "fn: function.name when name is empty",
        one_step(with_tools([{"type": "function", "id": "f", "name": "", "function": {"name": "lookup"}}])),
        {"/turns/0/tool_calls/0/fn": "lookup"},
    ),
    (
        "fn: function.name when there is no name",
        one_step(with_tools([{"type": "function", "id": "f", "function": {"name": "lookup", "arguments": "{}"}}])),
        {"/turns/0/tool_calls/0/fn": "lookup"},
    ),
    (
        "fn: type when neither",
        one_step(with_tools([command()])),
        {"/turns/0/tool_calls/0/fn": "command_execution"},
    ),
    (
        "args: input first",
        one_step(with_tools([tool_use(input={"q": 1}, arguments={"no": 1})])),
        {"/turns/0/tool_calls/0/args": {"q": 1}},
    ),
    (
        "args: arguments second",
        one_step(with_tools([{"type": "mcp", "id": "m", "arguments": {"q": 2}, "function": {"arguments": "no"}}])),
        {"/turns/0/tool_calls/0/args": {"q": 2}},
    ),
    (
        "args: {command} third",
        one_step(with_tools([command()])),
        {"/turns/0/tool_calls/0/args": {"command": "cargo test"}},
    ),
    (
        "args: command before function.arguments (decision 3)",
        one_step(
            with_tools([{"type": "command_execution", "id": "f", "command": "ls", "function": {"arguments": "{}"}}])
        ),
        {"/turns/0/tool_calls/0/args": {"command": "ls"}},
    ),
    (
        "args: function.arguments fourth",
        one_step(with_tools([{"type": "function", "id": "f", "function": {"name": "g", "arguments": '{"a":1}'}}])),
        {"/turns/0/tool_calls/0/args": '{"a":1}'},
    ),
    (
        "args: the remaining fields last",
        one_step(with_tools([{"type": "custom", "id": "f", "path": "/x", "n": [1]}])),
        {"/turns/0/tool_calls/0/args": {"path": "/x", "n": [1]}},
    ),
    (
        "result: aggregated_output",
        one_step(with_tools([command(aggregated_output={"out": [1]})])),
        {"/turns/0/tool_calls/0/result": {"out": [1]}},
    ),
    ("result: absent without aggregated_output", one_step(with_tools([TU])), {"/turns/0/tool_calls/0/result": MISSING}),
    ("tool kind: type", one_step(with_tools([TU])), {"/turns/0/tool_calls/0/kind": "tool_use"}),
    (
        "response: status and exit_code",
        one_step(with_tools([command(status="failed", exit_code=2)])),
        {"/turns/0/tool_calls/0/response": {"status": "failed", "exit_code": 2}},
    ),
    (
        "response: exit_code alone",
        one_step(with_tools([command(status="", exit_code=-1)])),
        {"/turns/0/tool_calls/0/response": {"exit_code": -1}},
    ),
    (
        "response: status alone",
        one_step(with_tools([tool_use(status="ok")])),
        {"/turns/0/tool_calls/0/response": {"status": "ok"}},
    ),
    (
        "response: absent for empty status and a float exit_code",
        one_step(with_tools([command(status="", exit_code=1.0)])),
        {"/turns/0/tool_calls/0/response": MISSING},
    ),
    (
        "duration_ms: env_action_ms truncated for a single tool",
        one_step(with_tools([TU], metric={"env_action_ms": 25.9})),
        {"/turns/0/tool_calls/0/duration_ms": 25},
    ),
    (
        "duration_ms: none for two tools",
        one_step(with_tools([tool_use("a"), tool_use("b")], metric={"env_action_ms": 25})),
        {"/turns/0/tool_calls/0/duration_ms": MISSING, "/turns/0/tool_calls/1/duration_ms": MISSING},
    ),
    (
        "duration_ms: none for a null env_action_ms",
        one_step(with_tools([TU], metric={"env_action_ms": None})),
        {"/turns/0/tool_calls/0/duration_ms": MISSING},
    ),
    (
        "observation: absent when empty",
        one_step(step(observation=[])),
        {"/turns/0/observation": MISSING},
    ),
    (
        "observation: results with source_call_id from tool_use_id",
        one_step(with_tools([TU], observation=[{"tool_use_id": "call-1", "type": "tool_result", "content": "x"}])),
        {
            "/turns/0/observation": {
                "results": [
                    {"tool_use_id": "call-1", "type": "tool_result", "content": "x", "source_call_id": "call-1"}
                ]
            }
        },
    ),
    (
        "observation: source_call_id from id",
        one_step(with_tools([command()], observation=[{"id": "cmd-1", "type": "command_execution"}])),
        {"/turns/0/observation/results/0/source_call_id": "cmd-1"},
    ),
    (
        "observation: content from aggregated_output",
        one_step(with_tools([command()], observation=[{"id": "cmd-1", "aggregated_output": "out", "content": "old"}])),
        {"/turns/0/observation/results/0/content": "out", "/turns/0/observation/results/0/aggregated_output": "out"},
    ),
    (
        "observation: without a reference, copied whole",
        one_step(step(observation=[{"type": "note", "content": "x", "v": None}])),
        {"/turns/0/observation/results": [{"type": "note", "content": "x", "v": None}]},
    ),
    ("task.llm.k", actf(k=3), {"/task/llm/k": 3}),
    (
        "task.result: typed keys and ACTF extras",
        actf(
            {
                "1": attempt(
                    correct=True,
                    final_answer="42",
                    ground_truth="42",
                    status="completed",
                    score=1.0,
                    error="boom",
                    artifacts={"patch": "p"},
                    max_score=2,
                )
            },
            correct=True,
            k=2,
            solved_at="1",
            retry_count=1,
            retry_counts={"1": 1},
        ),
        {
            "/task/result": {
                "task_correct": True,
                "correct": True,
                "final_answer": "42",
                "ground_truth": "42",
                "status": "completed",
                "score": 1.0,
                "error": "boom",
                "artifacts": {"patch": "p"},
                "category": "software-engineering",
                "attempts_tried": 1,
                "solved_at": "1",
                "retry_count": 1,
                "retry_counts": {"1": 1},
                "max_score": 2,
            }
        },
    ),
    (
        "task.result: empty values omitted, three keys always",
        actf(
            {
                "1": attempt(
                    final_answer="",
                    ground_truth="",
                    status="",
                    score=None,
                    error="",
                    artifacts=[],
                    max_score={},
                )
            }
        ),
        {
            "/task/result": {
                "task_correct": False,
                "correct": False,
                "category": "software-engineering",
                "attempts_tried": 1,
            }
        },
    ),
    (
        "final_metrics: always written",
        actf({"1": attempt(status="", score=None, analysis_result=None)}),
        {
            "/final_metrics": {
                "analysis_result": None,
                "correct": False,
                "score": None,
                "status": "",
                "task_correct": False,
            }
        },
    ),
    (
        "final_metrics: values and max_score",
        actf(
            {"1": attempt(correct=True, status="done", score=0.5, analysis_result={"a": 1}, max_score=1)},
            correct=True,
        ),
        {
            "/final_metrics": {
                "analysis_result": {"a": 1},
                "correct": True,
                "score": 0.5,
                "status": "done",
                "task_correct": True,
                "max_score": 1,
            }
        },
    ),
    (
        "extra and meta",
        actf({"1": attempt(extra={"e": [1]}, meta={"m": None})}),
        {"/extra": {"e": [1]}, "/meta": {"m": None}},
    ),
    ("extra and meta: empty omitted", actf({"1": attempt(extra={}, meta="")}), {"/extra": MISSING, "/meta": MISSING}),
    (
        "started_at and finished_at: the trajectory's",
        actf(),
        {"/started_at": T0, "/finished_at": T2},
    ),
]


@pytest.mark.parametrize(("doc", "expected"), [pytest.param(d, e, id=i) for i, d, e in ROWS])
def test_mapping_row(doc: dict[str, Any], expected: dict[str, Any]) -> None:
    story = forward(doc)[0]
    for ptr, value in expected.items():
        got = at(story, ptr)
        if value is MISSING:
            assert got is MISSING, (ptr, got)
        else:
            assert json_equal(got, value), (ptr, got)
    assert_round_trip(doc)


def test_several_attempts_sessions_and_file_order() -> None:
    # Issue 4: attempts in the order the file lists them ("10" before "2"), not string order.
    doc = actf({"10": attempt(), "2": attempt(), "a/b": attempt()}, task_id="T", k=3)
    stories = forward(doc)
    assert [s["attempt_id"] for s in stories] == ["10", "2", "a/b"]
    assert [s["session"] for s in stories] == ["T#attempt-10", "T#attempt-2", "T#attempt-a/b"]
    assert {s["run"] for s in stories} == {"T"}
    assert list(reverse(stories)["attempts"]) == ["10", "2", "a/b"]


def test_attempts_keep_their_own_values() -> None:
    doc = actf({"1": attempt(correct=True, score=1), "2": attempt(correct=False, score=0)}, correct=True)
    first, second = forward(doc)
    assert (first["task"]["result"]["correct"], second["task"]["result"]["correct"]) == (True, False)
    assert (first["final_metrics"]["score"], second["final_metrics"]["score"]) == (1, 0)
    assert first["task"]["result"]["task_correct"] is second["task"]["result"]["task_correct"] is True
    assert_round_trip(doc)


def test_category_empty_values_are_rejected_not_omitted() -> None:
    # task.result.category omits empty values, but an empty category is reject rule 2, so it never is.
    assert problems(actf(category="")) == [("check.nonblank", "/category")]


# --- prompts ---------------------------------------------------------------------------------


def _prompts(*pairs: tuple[Any, Any]) -> tuple[Any, list[Any], dict[str, Any]]:
    steps = [step(i + 1, system_prompt=s, user_content=u) for i, (s, u) in enumerate(pairs)]
    doc = actf({"1": attempt(*steps)})
    (story,) = forward(doc)
    return story.get("prompt", MISSING), [t.get("prompt", MISSING) for t in story["turns"]], doc


CLEAR = {"system": "", "user": ""}
PROMPTS = [
    (
        "baseline from the first step, equal steps get none",
        [("S", "U"), ("S", "U")],
        {"system": "S", "user": "U"},
        [MISSING, MISSING],
    ),
    ("empty keys omitted from the baseline", [("S", ""), ("S", "")], {"system": "S"}, [MISSING, MISSING]),
    (
        "a changed pair is the whole overlay",
        [("S", "U"), ("S", "V"), ("", "U")],
        {"system": "S", "user": "U"},
        [MISSING, {"system": "S", "user": "V"}, {"user": "U"}],
    ),
    (
        "both empty after the baseline is the explicit clear",
        [("S", "U"), ("", "")],
        {"system": "S", "user": "U"},
        [MISSING, CLEAR],
    ),
    ("both empty before the baseline is the explicit clear", [("", ""), ("", "U")], {"user": "U"}, [CLEAR, MISSING]),
    ("no baseline, no prompt anywhere", [("", ""), ("", "")], MISSING, [MISSING, MISSING]),
    ("null and missing read as empty", [(None, "U"), ("", None)], {"user": "U"}, [MISSING, CLEAR]),
]


@pytest.mark.parametrize(("pairs", "document", "turns"), [pytest.param(p, d, t, id=i) for i, p, d, t in PROMPTS])
def test_prompt_baseline_and_overlays(pairs: list[tuple[Any, Any]], document: Any, turns: list[Any]) -> None:
    got_document, got_turns, doc = _prompts(*pairs)
    assert json_equal(got_document, document) if document is not MISSING else got_document is MISSING
    assert len(got_turns) == len(turns)
    for got, want in zip(got_turns, turns, strict=True):
        assert got is MISSING if want is MISSING else json_equal(got, want)
    assert_round_trip(doc)


def test_prompt_exact_reversal() -> None:
    # The reverse gives back each step's pair exactly: baseline, overlay, clear, baseline again.
    pairs = [("", ""), ("S", ""), ("S", "U"), ("", ""), ("S", ""), ("X", "Y")]
    *_, doc = _prompts(*pairs)
    steps = roundtrip(doc)["attempts"]["1"]["trajectory"]["steps"]
    assert [(s["system_prompt"], s["user_content"]) for s in steps] == pairs


# --- unknown fields ----------------------------------------------------------------------------


def _with_unknown(where: str, key: str, value: Any) -> dict[str, Any]:
    doc = actf({"1": attempt(with_tools([tool_use("a")], "both", observation=[{"tool_use_id": "a", "content": "x"}]))})
    for target in (where, where.replace("/tools/", "/assistant_content/tool_calls/")):
        at(doc, target)[key] = value  # a tool's unknown key is in both equal lists
    return doc


UNKNOWNS = [
    # (id, object pointer, key, value, stored P, normalized count key)
    ("root", "", "vendor/root", 1, "/vendor~1root", "/vendor~1root"),
    ("root tilde", "", "a~b", None, "/a~0b", "/a~0b"),
    ("attempt", "/attempts/1", "0", [1], "/attempts/1/0", "/attempts/1/0"),
    ("trajectory", "/attempts/1/trajectory", "~01", {}, "/attempts/1/trajectory/~001", "/attempts/1/trajectory/~001"),
    (
        "step",
        "/attempts/1/trajectory/steps/0",
        "vendor",
        2.5,
        "/attempts/1/trajectory/steps/0/vendor",
        "/attempts/1/trajectory/steps/*/vendor",
    ),
    (
        "assistant_content",
        "/attempts/1/trajectory/steps/0/assistant_content",
        "x/y",
        "v",
        "/attempts/1/trajectory/steps/0/assistant_content/x~1y",
        "/attempts/1/trajectory/steps/*/assistant_content/x~1y",
    ),
]


@pytest.mark.parametrize(
    ("where", "key", "value", "stored", "counted"),
    [pytest.param(w, k, v, p, c, id=i) for i, w, k, v, p, c in UNKNOWNS],
)
def test_unknown_key_is_stored_under_its_escaped_source_pointer(
    where: str, key: str, value: Any, stored: str, counted: str
) -> None:
    doc = _with_unknown(where, key, value)
    (story,) = forward(doc)
    assert fields_of(story) == {stored: value}
    assert story["unknown_fields"]["sources"]["actf"]["source_document_id"] == "task-1"
    assert story["unknown_key_counts"] == {"actf": {counted: 1}}
    assert json_equal(at(story, "/unknown_fields/sources/actf/fields/" + pointer.escape(stored)), value)
    assert json_equal(roundtrip(doc), doc)


@pytest.mark.parametrize("place", ["tools", "tool_calls", "both"])
def test_tool_unknown_keys_in_either_list(place: str) -> None:
    doc = one_step(with_tools([tool_use("a", **{"v~": None}), tool_use("b", w=1)], place))
    (story,) = forward(doc)
    homes = {"tools": ["tools"], "tool_calls": ["assistant_content/tool_calls"]}
    homes["both"] = homes["tools"] + homes["tool_calls"]
    expected = {}
    counts = {}
    for home in homes[place]:
        expected[f"/attempts/1/trajectory/steps/0/{home}/0/v~0"] = None
        expected[f"/attempts/1/trajectory/steps/0/{home}/1/w"] = 1
        counts[f"/attempts/1/trajectory/steps/*/{home}/*/v~0"] = 1
        counts[f"/attempts/1/trajectory/steps/*/{home}/*/w"] = 1
    if place != "both":  # the explicitly empty other list (the reverse would write a copy): a known key, kept
        (other,) = set(homes["both"]) - set(homes[place])
        assert kept_of(story) == {f"/attempts/1/trajectory/steps/0/{other}": []}
    assert fields_of(story) == expected
    assert story["unknown_key_counts"] == {"actf": counts}
    assert json_equal(roundtrip(doc), doc)


def test_observation_keys_are_never_unknown() -> None:
    # Observations are copied whole into /observation/results, so they produce no unknown fields.
    doc = one_step(with_tools([TU], "both", observation=[{"tool_use_id": "call-1", "vendor/x": {"a": None}, "0": 1}]))
    (story,) = forward(doc)
    assert "unknown_fields" not in story
    assert story["turns"][0]["observation"]["results"][0]["vendor/x"] == {"a": None}
    assert json_equal(roundtrip(doc), doc)


def test_counts_wildcard_steps_but_keep_the_attempt_key_literal() -> None:
    # docs/envelope.md: /attempts/7/trajectory/steps/*/vendor — the attempt key is not an array index.
    steps = [step(1, vendor=1), with_tools([tool_use("a", v=1), tool_use("b", v=2)], "both", step_id=2, vendor=2)]
    doc = actf({"7": attempt(*steps), "8": attempt(step(1, vendor=3))}, k=2)
    seven, eight = forward(doc)
    assert seven["unknown_key_counts"] == {
        "actf": {
            "/attempts/7/trajectory/steps/*/vendor": 2,
            "/attempts/7/trajectory/steps/*/tools/*/v": 2,
            "/attempts/7/trajectory/steps/*/assistant_content/tool_calls/*/v": 2,
        }
    }
    assert eight["unknown_key_counts"] == {"actf": {"/attempts/8/trajectory/steps/*/vendor": 1}}
    assert fields_of(seven)["/attempts/7/trajectory/steps/1/tools/1/v"] == 2
    assert json_equal(roundtrip(doc), doc)


def test_root_unknowns_are_copied_into_every_attempt() -> None:
    doc = actf({"1": attempt(), "2": attempt(own=True)}, k=2, vendor={"a": [1]}, **{"x/y": None})
    first, second = forward(doc)
    assert fields_of(first) == {"/vendor": {"a": [1]}, "/x~1y": None}
    assert fields_of(second) == {"/vendor": {"a": [1]}, "/x~1y": None, "/attempts/2/own": True}
    assert {s["unknown_fields"]["sources"]["actf"]["source_document_id"] for s in (first, second)} == {"task-1"}
    assert json_equal(roundtrip(doc), doc)


def test_attempt_key_is_escaped_in_pointers() -> None:
    doc = actf({"a/b~c": attempt(step(1, v=1))})
    (story,) = forward(doc)
    assert fields_of(story) == {"/attempts/a~1b~0c/trajectory/steps/0/v": 1}
    assert story["unknown_key_counts"] == {"actf": {"/attempts/a~1b~0c/trajectory/steps/*/v": 1}}
    assert json_equal(roundtrip(doc), doc)


def test_events_beside_steps_come_back() -> None:
    doc = actf({"1": attempt()})
    doc["attempts"]["1"]["trajectory"]["events"] = [{"type": "x"}]
    assert json_equal(roundtrip(doc), doc)


# === 3. Reverse ==============================================================================


def test_fan_in_attempts_from_attempt_id() -> None:
    stories = [
        storyline_doc(session="a", run="R", attempt_id="x"),
        storyline_doc(session="b", run="R", attempt_id="10"),
        storyline_doc(session="c", run="R", attempt_id="2"),
    ]
    doc = reverse(stories)
    assert doc["task_id"] == "R"
    assert list(doc["attempts"]) == ["x", "10", "2"]  # the order of the Storylines
    assert doc["k"] == doc["attempts_tried"] == 3


def test_single_storyline_without_attempt_id_is_attempt_1() -> None:
    assert list(reverse([storyline_doc()])["attempts"]) == ["1"]


REVERSE_ERRORS = [
    (
        "several Storylines without attempt_id",
        [storyline_doc(session="a", run="R"), storyline_doc(session="b", run="R")],
        [("tree.no_member_key", "/0"), ("tree.no_member_key", "/1")],
    ),
    (
        "one of two without attempt_id",
        [storyline_doc(session="a", run="R", attempt_id="1"), storyline_doc(session="b", run="R")],
        [("tree.no_member_key", "/1")],
    ),
    (
        "duplicate attempt ids",
        [
            storyline_doc(session="a", run="R", attempt_id="1"),
            storyline_doc(session="b", run="R", attempt_id="1"),
        ],
        [("tree.duplicate_member", "/1")],
    ),
]


@pytest.mark.parametrize(("stories", "expected"), [pytest.param(s, e, id=i) for i, s, e in REVERSE_ERRORS])
def test_fan_in_errors(stories: list[dict[str, Any]], expected: list[tuple[str, str]]) -> None:
    assert reverse_problems(stories) == expected


def test_mixed_provenance_is_rejected() -> None:
    # One task's Storylines all came from ACTF (origin actf, or actf residuals) or none did.
    (from_actf,) = forward(actf({"1": attempt(own=1)}))
    plain = storyline_doc(session="other", run="task-1", attempt_id="2")
    assert reverse_problems([from_actf, plain]) == [("residual.mixed_provenance", "")]


def test_attempts_with_and_without_residuals_are_one_provenance() -> None:
    # the reference read literally ("a mix of stories with and without actf residuals → error")
    # would refuse to export this valid document's own Storylines; every one has origin actf.
    doc = actf({"1": attempt(own=1), "2": attempt()}, k=2)
    stories = forward(doc)
    assert [bool(s.get("unknown_fields")) for s in stories] == [True, False]
    assert json_equal(reverse(stories), doc)


def test_root_unknowns_that_differ_between_attempts_conflict() -> None:
    stories = forward(actf({"1": attempt(), "2": attempt()}, k=2, vendor=1))
    fields_of(stories[1])["/vendor"] = 2
    assert [code for code, _ in reverse_problems(stories)] == ["residual.conflict"]


def test_residuals_of_two_task_ids_are_rejected() -> None:
    stories = forward(actf({"1": attempt(own=1), "2": attempt(own=2)}, k=2))
    stories[1]["unknown_fields"]["sources"]["actf"]["source_document_id"] = "other"
    assert [code for code, _ in reverse_problems(stories)] == ["residual.mixed_documents"]


def test_storylines_of_different_runs_export_as_an_array() -> None:
    stories = [
        storyline_doc(session="a", run="R", attempt_id="x"),
        storyline_doc(session="b", run="Q"),
        storyline_doc(session="c", run="R", attempt_id="y"),
    ]
    out = reverse(stories)
    assert isinstance(out, list)
    assert [(d["task_id"], list(d["attempts"])) for d in out] == [("R", ["x", "y"]), ("Q", ["1"])]


def test_storylines_without_run_group_by_session() -> None:
    out = reverse([storyline_doc(session="a"), storyline_doc(session="b")])
    assert [(d["task_id"], list(d["attempts"])) for d in out] == [("a", ["1"]), ("b", ["1"])]


# --- the synthesized export (docs/formats.md, ACTF "Export") -----------------------------------------


def _export(**fields: Any) -> dict[str, Any]:
    doc = reverse([storyline_doc(**fields)])
    forward(doc)  # the export is valid ACTF (convert checks it too; this re-reads it)
    return doc


def _exported_step(t: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return _export(turns=[t], **fields)["attempts"]["1"]["trajectory"]["steps"][0]


def test_export_defaults_of_a_plain_storyline() -> None:
    doc = _export()
    assert doc == {
        "task_id": "s",
        "category": "unknown",
        "k": 1,
        "correct": False,
        "attempts_tried": 1,
        "solved_at": None,
        "attempts": {
            "1": {
                "correct": False,
                "final_answer": None,
                "ground_truth": "",
                "status": "completed",
                "score": None,
                "error": "",
                "artifacts": {},
                "extra": {},
                "analysis_result": {},
                "meta": {},
                "trajectory": {
                    "schema_version": "ACTF_v1.0",
                    "started_at": EPOCH_TEXT,
                    "finished_at": EPOCH_TEXT,
                    "steps": [
                        {
                            "step_id": 1,
                            "started_at": EPOCH_TEXT,
                            "finished_at": EPOCH_TEXT,
                            "assistant_content": {"content": "m", "reasoning_content": "", "tool_calls": []},
                            "metric": {
                                "prompt_tokens_len": 0,
                                "completion_tokens_len": 0,
                                "llm_infer_ms": None,
                                "env_action_ms": None,
                                "stop_reason": None,
                            },
                            "system_prompt": "",
                            "user_content": "",
                            "tools": [],
                            "observation": [],
                        }
                    ],
                },
            }
        },
    }


def test_export_root_from_the_first_storyline() -> None:
    task = {
        "llm": {"k": 5},
        "result": {
            "task_correct": True,
            "category": "cat",
            "attempts_tried": 2,
            "solved_at": "2",
            "retry_count": 3,
            "retry_counts": [1, 2],
        },
    }
    doc = reverse(
        [storyline_doc(run="R", attempt_id="1", task=task), storyline_doc(session="t", run="R", attempt_id="2")]
    )
    root = {k: v for k, v in doc.items() if k != "attempts"}
    assert root == {
        "task_id": "R",
        "category": "cat",
        "k": 5,
        "correct": True,
        "attempts_tried": 2,
        "solved_at": "2",
        "retry_count": 3,
        "retry_counts": [1, 2],
    }


def test_export_correct_falls_back_to_final_metrics() -> None:
    doc = _export(final_metrics={"task_correct": True, "correct": True, "score": 0.5, "status": "failed"})
    assert doc["correct"] is True
    first = doc["attempts"]["1"]
    assert (first["correct"], first["score"], first["status"]) == (True, 0.5, "failed")


def test_export_attempt_from_task_result_before_final_metrics() -> None:
    result = {
        "correct": True,
        "final_answer": "fa",
        "ground_truth": "gt",
        "status": "ok",
        "score": 2,
        "error": "e",
        "artifacts": [1],
        "max_score": 9,
    }
    doc = _export(
        task={"result": result},
        final_metrics={"correct": False, "score": 0.5, "status": "failed"},
        extra={"e": 1},
        meta={"m": 2},
    )
    first = {k: v for k, v in doc["attempts"]["1"].items() if k != "trajectory"}
    assert first == {
        **result,
        "analysis_result": {},
        "extra": {"e": 1},
        "meta": {"m": 2},
    }


def test_export_max_score_is_omitted_when_null() -> None:
    assert "max_score" not in _export()["attempts"]["1"]


@pytest.mark.parametrize(
    ("metrics", "latency_ms", "metric"),
    [
        (MISSING, MISSING, {"prompt_tokens_len": 0, "completion_tokens_len": 0, "llm_infer_ms": None}),
        (
            {"prompt_tokens": 5, "completion_tokens": 6, "finish_reason": "stop"},
            7,
            {
                "prompt_tokens": 5,
                "completion_tokens": 6,
                "finish_reason": "stop",
                "prompt_tokens_len": 5,
                "completion_tokens_len": 6,
                "llm_infer_ms": 7,
                "stop_reason": "stop",
            },
        ),
        ({"total_latency_ms": 9}, 7, {"total_latency_ms": 9, "llm_infer_ms": 9}),
        ({"prompt_tokens_len": 3, "llm_infer_ms": 1.5}, 7, {"prompt_tokens_len": 3, "llm_infer_ms": 1.5}),
    ],
    ids=["defaults", "from OpenAI-style keys", "total_latency_ms first", "present keys kept"],
)
def test_export_step_metric_defaults(metrics: Any, latency_ms: Any, metric: dict[str, Any]) -> None:
    fields = {k: v for k, v in (("metrics", metrics), ("latency_ms", latency_ms)) if v is not MISSING}
    got = _exported_step(turn(**fields))["metric"]
    defaults = {
        "prompt_tokens_len": 0,
        "completion_tokens_len": 0,
        "llm_infer_ms": None,
        "env_action_ms": None,
        "stop_reason": None,
    }
    assert got == {**defaults, **metric}


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1785578400, "2026-08-01 10:00:00+00:00"),
        (1785578400.25, "2026-08-01 10:00:00.250+00:00"),
        (-1.25, "1969-12-31 23:59:58.750+00:00"),
        (0, EPOCH_TEXT),
        ("2026-01-01T00:00:00.123456789Z", "2026-01-01T00:00:00.123456789Z"),
    ],
    ids=["epoch seconds", "fraction", "negative", "zero", "string kept verbatim"],
)
def test_export_timestamps(value: Any, text: str) -> None:
    doc = _export(started_at=value, finished_at=value, turns=[turn(ts=value, finished_at=value)])
    trajectory = doc["attempts"]["1"]["trajectory"]
    assert trajectory["started_at"] == trajectory["finished_at"] == text
    assert trajectory["steps"][0]["started_at"] == trajectory["steps"][0]["finished_at"] == text


def test_export_prompt_is_the_effective_pair() -> None:
    turns = [turn(id=1), turn(id=2, prompt={"system": "", "user": ""}), turn(id=3, prompt={"user": "V"})]
    doc = _export(prompt={"system": "S", "user": "U"}, turns=turns)
    steps = doc["attempts"]["1"]["trajectory"]["steps"]
    assert [(s["system_prompt"], s["user_content"]) for s in steps] == [("S", "U"), ("", ""), ("", "V")]


def test_export_content_and_reason() -> None:
    got = _exported_step(turn(msg=None, reason="why"))["assistant_content"]
    assert got == {"content": "", "reasoning_content": "why", "tool_calls": []}


@pytest.mark.parametrize(
    ("call", "tool"),
    [
        (
            {
                "tcid": "c1",
                "fn": "command_execution",
                "args": {"command": "ls"},
                "result": "out",
                "response": {"status": "ok", "exit_code": 0},
            },
            {
                "id": "c1",
                "type": "command_execution",
                "command": "ls",
                "aggregated_output": "out",
                "status": "ok",
                "exit_code": 0,
            },
        ),
        (
            {"tcid": "c2", "fn": "grep", "args": {"q": 1}, "kind": "search", "response": {"exit_code": 2}},
            {"id": "c2", "type": "search", "name": "grep", "input": {"q": 1}, "exit_code": 2},
        ),
        (
            {"tcid": "c3", "fn": "Read", "args": {"path": "/x"}, "response": {"status": "done"}},
            {"id": "c3", "type": "tool_use", "name": "Read", "input": {"path": "/x"}, "status": "done"},
        ),
    ],
    ids=["command_execution", "kind as type", "tool_use default"],
)
def test_export_tool_synthesis(call: dict[str, Any], tool: dict[str, Any]) -> None:
    got = _exported_step(turn(tool_calls=[call]))
    assert got["tools"] == [tool]
    assert got["assistant_content"]["tool_calls"] == [tool]


@pytest.mark.parametrize(
    ("result", "observation"),
    [
        ({"source_call_id": "c1", "content": "o"}, {"tool_use_id": "c1", "type": "tool_result", "content": "o"}),
        (
            {"source_call_id": "c1", "type": "command_execution", "content": "o"},
            {"tool_use_id": "c1", "type": "command_execution", "aggregated_output": "o"},
        ),
        ({"id": "c1", "source_call_id": "c1", "content": "o"}, {"id": "c1", "content": "o"}),
        ({"content": "free"}, {"content": "free"}),
    ],
    ids=["tool_use_id and tool_result", "command_execution content", "id kept", "no reference"],
)
def test_export_observation_back_mapping(result: dict[str, Any], observation: dict[str, Any]) -> None:
    call = {"tcid": "c1", "fn": "f", "args": 1}
    got = _exported_step(turn(tool_calls=[call], observation={"results": [result]}))
    assert got["observation"] == [observation]


def test_export_observation_referring_to_no_tool_is_invalid_actf() -> None:
    story = storyline_doc(turns=[turn(observation={"results": [{"source_call_id": "nope"}]})])
    assert reverse_problems([story]) == [("export.invalid", "/attempts/1/trajectory/steps/0/observation/0/tool_use_id")]


def test_foreign_residuals_travel_in_the_envelope_with_attempt_carriers() -> None:
    vendor = {"sources": {"vendor": {"source_document_id": "v", "fields": {"/x": 1}}}}
    stories = [
        storyline_doc(
            session="a", run="R", attempt_id="a/b", unknown_fields=vendor, unknown_key_counts={"vendor": {"/x": 1}}
        ),
        storyline_doc(session="b", run="R", attempt_id="2"),
    ]
    doc = reverse(stories)
    assert doc["_storyline"] == {"unknown_fields": {"version": 1, "by_trajectory": {"/attempts/a~1b": vendor}}}
    again = forward(doc)
    assert again[0]["unknown_fields"] == vendor
    assert "unknown_fields" not in again[1]


# === 4. Reject rules =========================================================================


def _doc(mutate: Any) -> dict[str, Any]:
    doc = actf({"1": attempt(step(1), step(2))})
    mutate(doc)
    return doc


def _traj(doc: dict[str, Any]) -> dict[str, Any]:
    return doc["attempts"]["1"]["trajectory"]


def _step0(doc: dict[str, Any]) -> dict[str, Any]:
    return _traj(doc)["steps"][0]


S0 = "/attempts/1/trajectory/steps/0"
REJECTS: list[tuple[str, Any, list[tuple[str, str]]]] = [
    # 1. task_id blank
    ("1 task_id empty", _doc(lambda d: d.update(task_id="")), [("check.nonblank", "/task_id")]),
    ("1 task_id blank", _doc(lambda d: d.update(task_id=" \t")), [("check.nonblank", "/task_id")]),
    # 2. category blank
    ("2 category empty", _doc(lambda d: d.update(category="")), [("check.nonblank", "/category")]),
    ("2 category blank", _doc(lambda d: d.update(category="  ")), [("check.nonblank", "/category")]),
    # 3. solved_at neither null nor string
    ("3 solved_at a number", _doc(lambda d: d.update(solved_at=1)), [("schema.type", "/solved_at")]),
    ("3 solved_at an object", _doc(lambda d: d.update(solved_at={})), [("schema.type", "/solved_at")]),
    # 4. k == 0
    ("4 k zero", _doc(lambda d: d.update(k=0, attempts_tried=0)), [("schema.minimum", "/k")]),
    # 5. attempts empty
    (
        "5 attempts empty",
        _doc(lambda d: d.update(attempts={}, attempts_tried=0)),
        [("schema.minProperties", "/attempts")],
    ),
    # 6. attempts_tried != len(attempts)
    (
        "6 attempts_tried too large",
        _doc(lambda d: d.update(k=3, attempts_tried=2)),
        [("check.size_of", "/attempts_tried")],
    ),
    ("6 attempts_tried zero", _doc(lambda d: d.update(attempts_tried=0)), [("check.size_of", "/attempts_tried")]),
    # 7. attempts_tried > k
    (
        "7 attempts_tried above k",
        actf({"1": attempt(), "2": attempt()}, k=1),
        [("check.at_most", "/attempts_tried")],
    ),
    # 8. blank attempt key
    ("8 empty attempt key", actf({"": attempt()}), [("check.nonblank_key", "/attempts/")]),
    ("8 blank attempt key", actf({" ": attempt()}), [("check.nonblank_key", "/attempts/ ")]),
    # 9. trajectory
    (
        "9 schema_version",
        _doc(lambda d: _traj(d).update(schema_version="ACTF_v1.1")),
        [("schema.const", "/attempts/1/trajectory/schema_version")],
    ),
    (
        "9 started_at blank",
        _doc(lambda d: _traj(d).update(started_at=" ")),
        [("check.timestamp", "/attempts/1/trajectory/started_at")],
    ),
    (
        "9 finished_at empty",
        _doc(lambda d: _traj(d).update(finished_at="")),
        [("check.timestamp", "/attempts/1/trajectory/finished_at")],
    ),
    ("9 steps and events empty", _doc(lambda d: _traj(d).update(steps=[])), [("check.nonempty_any", "/attempts/1")]),
    (
        "9 steps empty, events empty",
        _doc(lambda d: _traj(d).update(steps=[], events=[])),
        [("check.nonempty_any", "/attempts/1")],
    ),
    # 10. steps
    ("10 step_id zero", actf({"1": attempt(step(0))}), [("check.minimum", f"{S0}/step_id")]),
    ("10 step_id negative", actf({"1": attempt(step(-2))}), [("check.minimum", f"{S0}/step_id")]),
    (
        "10 step_id repeated",
        actf({"1": attempt(step(2), step(2))}),
        [("check.increasing", "/attempts/1/trajectory/steps/1/step_id")],
    ),
    (
        "10 step_id decreasing",
        actf({"1": attempt(step(3), step(5), step(4))}),
        [("check.increasing", "/attempts/1/trajectory/steps/2/step_id")],
    ),
    (
        "10 step started_at blank",
        _doc(lambda d: _step0(d).update(started_at=" ")),
        [("check.timestamp", f"{S0}/started_at")],
    ),
    (
        "10 step finished_at empty",
        _doc(lambda d: _step0(d).update(finished_at="")),
        [("check.timestamp", f"{S0}/finished_at")],
    ),
    (
        "10 tools and tool_calls differ",
        one_step(step(tools=[tool_use("a")], assistant_content={"content": "", "tool_calls": [tool_use("b")]})),
        [("check.same_if_both", f"{S0}/assistant_content/tool_calls")],
    ),
    (
        "10 metric token count a string",
        one_step(step(metric={"prompt_tokens_len": "1"})),
        [("schema.type", f"{S0}/metric/prompt_tokens_len")],
    ),
    (
        "10 metric completion tokens an object",
        one_step(step(metric={"completion_tokens_len": {}})),
        [("schema.type", f"{S0}/metric/completion_tokens_len")],
    ),
    (
        "10 metric llm_infer_ms a bool",
        one_step(step(metric={"llm_infer_ms": True})),
        [("schema.type", f"{S0}/metric/llm_infer_ms")],
    ),
    (
        "10 metric env_action_ms an array",
        one_step(step(metric={"env_action_ms": [1]})),
        [("schema.type", f"{S0}/metric/env_action_ms")],
    ),
    # 11. effective tool ids unique in a step
    (
        "11 duplicate ids in tools",
        one_step(with_tools([tool_use("a"), tool_use("a")])),
        [("check.duplicate_tool_id", f"{S0}/tools/1/id")],
    ),
    (
        "11 duplicate ids in tool_calls",
        one_step(with_tools([tool_use("a"), tool_use("a")], "tool_calls")),
        [("check.duplicate_tool_id", f"{S0}/assistant_content/tool_calls/1/id")],
    ),
    (
        "11 an id equal to a synthesized one",
        one_step(with_tools([tool_use(""), tool_use("step-1-tool-0")])),
        [("check.duplicate_tool_id", f"{S0}/tools/1/id")],
    ),
    # 12. observation references
    (
        "12 tool_use_id of no tool",
        one_step(with_tools([tool_use("a")], observation=[{"tool_use_id": "b"}])),
        [("check.unknown_tool_reference", f"{S0}/observation/0/tool_use_id")],
    ),
    (
        "12 id of no tool",
        one_step(with_tools([tool_use("a")], observation=[{"id": "b"}])),
        [("check.unknown_tool_reference", f"{S0}/observation/0/id")],
    ),
    (
        "12 reference without tools",
        one_step(step(observation=[{"tool_use_id": "a"}])),
        [("check.unknown_tool_reference", f"{S0}/observation/0/tool_use_id")],
    ),
    (
        "12 reference to a tool of another step",
        actf({"1": attempt(with_tools([tool_use("a")]), step(2, observation=[{"id": "a"}]))}),
        [("check.unknown_tool_reference", "/attempts/1/trajectory/steps/1/observation/0/id")],
    ),
    # 14. timestamps are RFC 3339 (docs/storyline.md, R-TS) at conversion
    (
        "14 trajectory started_at without offset",
        _doc(lambda d: _traj(d).update(started_at="2026-08-01 10:00:00")),
        [("check.timestamp", "/attempts/1/trajectory/started_at")],
    ),
    (
        "14 trajectory finished_at hour 24",
        _doc(lambda d: _traj(d).update(finished_at="2026-08-01 24:00:00+00:00")),
        [("check.timestamp", "/attempts/1/trajectory/finished_at")],
    ),
    (
        "14 step started_at with slashes",
        _doc(lambda d: _step0(d).update(started_at="2026/08/01 10:00:00+00:00")),
        [("check.timestamp", f"{S0}/started_at")],
    ),
    (
        "14 step finished_at offset without colon",
        _doc(lambda d: _step0(d).update(finished_at="2026-08-01 10:00:00+0000")),
        [("check.timestamp", f"{S0}/finished_at")],
    ),
    # shapes the rules assume
    ("missing task_id", _doc(lambda d: d.pop("task_id")), [("schema.required", "")]),
    ("missing attempts", _doc(lambda d: d.pop("attempts")), [("schema.required", "")]),
    (
        "attempt without trajectory",
        _doc(lambda d: d["attempts"]["1"].pop("trajectory")),
        [("schema.required", "/attempts/1")],
    ),
    ("step without metric", _doc(lambda d: _step0(d).pop("metric")), [("schema.required", S0)]),
    ("float step_id", actf({"1": attempt(step(1.0))}), [("schema.type", f"{S0}/step_id")]),
    ("document not an object", "task", [("schema.type", "")]),
]


@pytest.mark.parametrize(("doc", "expected"), [pytest.param(d, e, id=i) for i, d, e in REJECTS])
def test_reject_rule(doc: Any, expected: list[tuple[str, str]]) -> None:
    assert problems(doc) == expected


def test_every_problem_is_reported_at_once() -> None:
    doc = actf({"1": attempt(step(0), step(0, started_at="")), " ": attempt()}, task_id="", k=2)
    assert set(problems(doc)) == {
        ("check.nonblank", "/task_id"),
        ("check.nonblank_key", "/attempts/ "),
        ("check.minimum", "/attempts/1/trajectory/steps/0/step_id"),
        ("check.minimum", "/attempts/1/trajectory/steps/1/step_id"),
        ("check.increasing", "/attempts/1/trajectory/steps/1/step_id"),
        ("check.timestamp", "/attempts/1/trajectory/steps/1/started_at"),
    }


ACCEPTED = [
    ("13 empty attempt status", actf({"1": attempt(status="")})),
    ("13 null attempt status", actf({"1": attempt(status=None)})),
    ("13 root correct not cross-checked", actf({"1": attempt(correct=False)}, correct=True, solved_at="1")),
    ("9 no steps but events", _doc(lambda d: _traj(d).update(steps=[], events=[{"e": 1}]))),
    ("step ids with gaps", actf({"1": attempt(step(2), step(9))})),
    ("space separator, lowercase t and z", one_step(step(started_at="2026-08-01t10:00:00z", finished_at=T1))),
    ("leap second", one_step(step(started_at="2016-12-31 23:59:60+00:00"))),
    ("stop_reason of any type", one_step(step(metric={"stop_reason": {"why": 1}}))),
    (
        "observation tool_use_id wins over a stale id",
        one_step(with_tools([TU], observation=[{"tool_use_id": "call-1", "id": "x"}])),
    ),
    ("k above attempts_tried", actf(k=9)),
    ("same tool id in two attempts", actf({"1": attempt(with_tools([TU])), "2": attempt(with_tools([TU]))}, k=2)),
]


@pytest.mark.parametrize("doc", [pytest.param(d, id=i) for i, d in ACCEPTED])
def test_accepted(doc: dict[str, Any]) -> None:
    stories = forward(doc)
    assert all(storyline.check(s) == [] for s in stories)
    assert_round_trip(doc)


def test_same_tool_id_in_two_steps_makes_an_invalid_storyline() -> None:
    # ACTF asks unique ids per step only; Storyline asks them unique per document (R-TC1), so the
    # attempt's Storyline is invalid and the input is rejected at its carrier.
    doc = actf({"1": attempt(with_tools([TU]), with_tools([TU], step_id=2))})
    assert problems(doc) == [("storyline.duplicate_tcid", "/attempts/1")]


def test_tool_without_any_fn_candidate_makes_an_invalid_storyline() -> None:
    # fn = name → function.name → type; all empty fails Storyline validation (docs/formats.md, ACTF "Fields").
    doc = one_step(with_tools([{"type": "", "id": "a", "input": 1}]))
    assert [code for code, _ in problems(doc)] in (["schema.required"], ["schema.minLength"])


# === 5. Containers ===========================================================================


def test_array_of_documents_gives_every_attempt_in_order() -> None:
    docs = [actf({"2": attempt(), "1": attempt()}, task_id="a", k=2), actf(task_id="b")]
    stories = into_storyline("actf", orjson.dumps(docs))
    assert [(s["run"], s["attempt_id"]) for s in stories] == [("a", "2"), ("a", "1"), ("b", "1")]
    assert json_equal(reverse(stories), docs)


def test_array_element_errors_are_prefixed_with_the_index() -> None:
    docs = [actf(), actf(task_id=""), actf({"1": attempt(step(0))})]
    assert problems(docs) == [("check.nonblank", "/1/task_id"), ("check.minimum", f"/2{S0}/step_id")]


def test_jsonl_errors_name_the_line() -> None:
    data = orjson.dumps(actf()) + b"\n\n" + orjson.dumps(actf(category="")) + b"\n"
    with pytest.raises(MapcError) as info:
        into_storyline("actf", data, jsonl=True)
    assert [(p.code, p.pointer, p.line) for p in info.value.problems] == [("check.nonblank", "/category", 3)]


def test_envelope_carrier_must_be_an_attempt() -> None:
    doc = actf()
    entry = {"sources": {"vendor": {"source_document_id": "v", "fields": {"/x": 1}}}}
    doc["_storyline"] = {"unknown_fields": {"version": 1, "by_trajectory": {"/attempts/9": entry}}}
    assert problems(doc) == [("envelope.carrier_unbound", "/_storyline/unknown_fields/by_trajectory/~1attempts~19")]
    doc["_storyline"]["unknown_fields"]["by_trajectory"] = {"/attempts/1": entry}
    (story,) = forward(doc)
    assert story["unknown_fields"] == entry
    assert story["unknown_key_counts"] == {"vendor": {"/x": 1}}


def test_envelope_must_not_carry_actf() -> None:
    doc = actf()
    entry = {"sources": {"actf": {"source_document_id": "task-1", "fields": {"/x": 1}}}}
    doc["_storyline"] = {"unknown_fields": {"version": 1, "by_trajectory": {"/attempts/1": entry}}}
    assert problems(doc) == [
        ("envelope.own_source", "/_storyline/unknown_fields/by_trajectory/~1attempts~11/sources/actf")
    ]


# === 6. Edges the laws found (each was lost or rejected once; minimal regression tests) =======


def test_empty_solved_at_comes_back() -> None:
    # docs/formats.md (ACTF): solved_at is any string (only a non-string is refused), "" included.
    doc = actf(solved_at="")
    assert roundtrip(doc)["solved_at"] == ""


@pytest.mark.parametrize("value", ["", {}, []], ids=["empty string", "empty object", "empty array"])
@pytest.mark.parametrize("key", ["retry_count", "retry_counts"])
def test_empty_retry_counts_come_back(key: str, value: Any) -> None:
    # Root extras are values, empty or not; task.result omits them, so the reverse must keep them.
    doc = actf(**{key: value})
    assert roundtrip(doc).get(key, MISSING) == value


@pytest.mark.parametrize(
    "tool",
    [
        {"type": "tool_use", "id": "a", "name": "Bash", "command": "ls"},
        {"type": "x", "id": "a", "command": "ls", "function": {"arguments": "{}"}},
    ],
    ids=["command of a tool_use", "command before function.arguments"],
)
def test_tool_command_comes_back_where_it_was(tool: dict[str, Any]) -> None:
    # args = {"command": command} here (decision 3); written back as `input` for a tool that is
    # not a command_execution, `command: "ls"` would become `input: {"command": "ls"}`.
    back = roundtrip(one_step(with_tools([tool])))["attempts"]["1"]["trajectory"]["steps"][0]["tools"][0]
    assert back.get("command") == "ls", back
    assert "input" not in back, back


@pytest.mark.parametrize(
    "tool",
    [
        {"type": "command_execution", "id": "a", "input": {"x": 1}, "command": "ls"},
        {"type": "mcp", "id": "a", "arguments": {"x": 1}, "command": "ls"},
        {"type": "x", "id": "a", "input": None, "command": "ls"},
    ],
    ids=["beside input", "beside arguments", "beside a null input"],
)
def test_command_beside_other_arguments_comes_back(tool: dict[str, Any]) -> None:
    # `command` is read only through the args chain; when args comes from input or arguments, the
    # tool's own command must still come back.
    back = roundtrip(one_step(with_tools([tool])))["attempts"]["1"]["trajectory"]["steps"][0]["tools"][0]
    assert back.get("command") == "ls", back


@pytest.mark.parametrize(
    ("tool", "fn", "response"),
    [
        ({"type": "x", "id": "a", "input": 1, "status": 3}, "x", MISSING),
        ({"type": "x", "id": "a", "input": 1, "name": 5}, "x", MISSING),
        ({"type": "x", "id": "a", "input": 1, "function": {"name": ["f"]}}, "x", MISSING),
    ],
    ids=["non-string status", "non-string name", "non-string function.name"],
)
def test_non_string_tool_fields_do_not_reject(tool: dict[str, Any], fn: str, response: Any) -> None:
    # Tool keys other than type/id are opaque (docs/formats.md, ACTF); response.status takes a non-empty *string*
    # status, fn a non-empty *string* name / function.name.
    doc = one_step(with_tools([tool]))
    call = one_turn(with_tools([tool]))["tool_calls"][0]
    assert call["fn"] == fn
    assert call.get("response", MISSING) == response
    assert json_equal(roundtrip(doc), doc)


def test_source_call_id_falls_back_to_id_when_tool_use_id_is_not_a_string() -> None:
    # docs/formats.md (ACTF "Tool ids"): source_call_id = tool_use_id (or id) when it is a string.
    st = with_tools([TU], observation=[{"tool_use_id": 5, "id": "call-1"}])
    assert one_turn(st)["observation"]["results"][0].get("source_call_id") == "call-1"
    assert_round_trip(one_step(st))


def test_synthesized_tool_with_null_args_keeps_them() -> None:
    # docs/formats.md (ACTF "Export"): a tool that is not a command_execution gets name and input; with args null,
    # `input: null`, or re-import would read args {"name": "f"}.
    story = storyline_doc(turns=[turn(tool_calls=[{"tcid": "c", "fn": "f", "args": None}])])
    (again,) = forward(reverse([story]))
    assert again["turns"][0]["tool_calls"][0]["args"] is None


@pytest.mark.parametrize(
    "tool",
    [tool_use(status=""), tool_use(" "), command(exit_code=1.0), {"type": "mcp", "id": "m", "arguments": {"q": 1}}],
    ids=["empty status", "id of spaces", "float exit_code", "arguments"],
)
def test_tool_in_both_lists_keeps_its_kept_values_in_both(tool: dict[str, Any]) -> None:
    # A value kept as a residual below the effective list (/tools/0/status) must be kept below
    # the copy too, or the rebuilt lists differ and the export is invalid ACTF (rule 10).
    doc = one_step(with_tools([tool], "both"))
    assert json_equal(roundtrip(doc), doc)


def test_empty_tools_beside_missing_tool_calls_is_not_a_residual() -> None:
    # `tools: []` with no `assistant_content.tool_calls`: both read as [] (docs/formats.md, ACTF), so nothing is
    # kept (a residual would count a known key as unknown, and vanish on a second import).
    doc = one_step(step(tools=[], assistant_content={"content": "c"}))
    stories = forward(doc)
    assert "unknown_fields" not in stories[0]
    assert json_equal(forward(reverse(stories)), stories)


def test_null_input_comes_back() -> None:
    # args = input → …: a present null input is the args (null); unless it is written back, the
    # re-imported args are the remaining fields {"name": "Bash"}.
    stories = forward(one_step(with_tools([tool_use(input=None)])))
    assert stories[0]["turns"][0]["tool_calls"][0]["args"] is None
    assert json_equal(forward(reverse(stories)), stories)


def test_openclaw_event_array_trajectory_is_accepted() -> None:
    # docs/formats.md (ACTF): a trajectory may be a bare array of OpenClaw events; started_at/finished_at
    # are the first and last event timestamps.  Lossy: the events themselves are not kept.
    events = [
        {"type": "message", "timestamp": "2026-08-01T10:00:00Z", "message": {"role": "user", "content": "hi"}},
        {"type": "message", "timestamp": "2026-08-01T10:00:05Z", "message": {"role": "assistant", "content": "yo"}},
    ]
    (story,) = forward(actf({"1": attempt(trajectory=events)}))
    assert (story["started_at"], story["finished_at"]) == ("2026-08-01T10:00:00Z", "2026-08-01T10:00:05Z")
    assert story["turns"][-1]["msg"] == "yo"
    assert storyline.check(story) == []


@pytest.mark.parametrize(
    "observation",
    [[1], {"x": 1}, {"results": 5}, {"results": [5, "a"]}, {"results": [{"content": "z"}], "other": 1}],
    ids=["array", "no results", "results not an array", "results not objects", "key beside results"],
)
def test_observation_actf_cannot_hold_is_not_silently_dropped(observation: Any) -> None:
    # ACTF observations are an array of objects.  A Storyline observation of another shape must be
    # refused (as ATIF export refuses it) or kept, never dropped or emptied without a word.
    story = storyline_doc(turns=[turn(observation=observation)])
    try:
        doc = reverse([story])
    except MapcError:
        return
    (again,) = forward(doc)
    assert json_equal(again["turns"][0].get("observation"), observation)


def test_reverse_residual_problems_name_the_storyline() -> None:
    # conformance/README.md: a reverse pointer is into the Storyline input, "/1/…" for the second.
    stories = forward(actf({"1": attempt(), "2": attempt()}, k=2, vendor=1))
    fields_of(stories[1])["/vendor"] = 2
    assert reverse_problems(stories) == [("residual.conflict", "/1/unknown_fields/sources/actf/fields/~1vendor")]


# === 7. Gaps found against the reference's rules: fixed, or decided (each test says which) =================
#
# Each test is minimal: one document with one feature, and the rule (docs/formats.md "ACTF") it concerns.


EXPORT_DEFAULTS = {"ground_truth": "", "artifacts": {}, "extra": {}, "meta": {}}


@pytest.mark.parametrize("value", ["missing", None], ids=["missing", "null"])
@pytest.mark.parametrize("key", sorted(EXPORT_DEFAULTS))
def test_a_missing_attempt_field_comes_back_as_its_export_default(key: str, value: Any) -> None:
    # Decided: a missing or null ground_truth/artifacts/extra/meta comes back as the ACTF export (docs/formats.md)
    # default ("" or {}), inside the fidelity boundary (the missing/null distinction of known
    # fields is not kept).  The other way (keeping "" or {} as residuals so that missing could
    # come back missing) would put known keys into unknown_fields for nearly every ACTF file.
    doc = actf({"1": attempt()})
    if value == "missing":
        del doc["attempts"]["1"][key]
    else:
        doc["attempts"]["1"][key] = None
    (story,) = forward(doc)
    assert "unknown_fields" not in story
    assert roundtrip(doc)["attempts"]["1"][key] == EXPORT_DEFAULTS[key]


@pytest.mark.parametrize("absent", ["missing", None], ids=["missing", "null"])
@pytest.mark.parametrize("filled", ["tools", "tool_calls"])
def test_a_missing_tool_list_comes_back_as_a_copy_of_the_other(filled: str, absent: Any) -> None:
    # Decided: ACTF keeps the tools twice (tools and assistant_content.tool_calls); a missing or
    # null list reads as [] (docs/formats.md, ACTF "Defaults") and the export writes both lists, so it comes back as a
    # copy of the filled one (missing/null of a known field: inside the fidelity boundary).
    st = with_tools([TU], filled)
    other = ("assistant_content", "tool_calls") if filled == "tools" else ("tools",)
    holder = st["assistant_content"] if filled == "tools" else st
    if absent == "missing":
        del holder[other[-1]]
    else:
        holder[other[-1]] = None
    back = roundtrip(one_step(st))["attempts"]["1"]["trajectory"]["steps"][0]
    got = back.get("assistant_content", {}).get("tool_calls") if filled == "tools" else back.get("tools")
    assert got == [TU]


@pytest.mark.parametrize("type_", ["missing", None], ids=["missing", "null"])
def test_gap_tool_without_type_gets_no_type(type_: Any) -> None:
    # docs/formats.md (ACTF "Defaults"): a tool's type reads null → "".  Fixed: the reverse invented "tool_use",
    # and the re-imported Storyline gained kind "tool_use" (its conformance case is enabled again).
    tool = {"id": "a", "name": "f", "input": 1}
    if type_ is None:
        tool["type"] = None
    doc = one_step(with_tools([tool]))
    back = roundtrip(doc)["attempts"]["1"]["trajectory"]["steps"][0]["tools"][0]
    assert back.get("type") in (None, ""), back


def test_openclaw_user_messages_become_the_next_steps_user_content() -> None:
    # Decided (docs/formats.md, ACTF, calls this path lossy): the event log is rewritten into canonical
    # ACTF steps, which are agent steps, so a user message is the next step's user_content (the
    # Storyline prompt), not a turn of its own.
    events = [
        {"type": "message", "timestamp": "2026-08-01T10:00:00Z", "message": {"role": "user", "content": "hi"}},
        {"type": "message", "timestamp": "2026-08-01T10:00:05Z", "message": {"role": "assistant", "content": "yo"}},
    ]
    (story,) = forward(actf({"1": attempt(trajectory=events)}))
    assert [t["msg"] for t in story["turns"]] == ["yo"]
    assert story["prompt"] == {"user": "hi"}


def test_gap_a_residual_is_not_stored_inside_another() -> None:
    # A tool's `function` is kept whole (/…/tools/0/function), and its `name` and `arguments` are
    # kept again below it (/…/function/name, /…/function/arguments): the same values twice, and
    # unknown_key_counts (docs/envelope.md) count three keys where the format knows `function` (none).
    # (`function` is a key ACTF defines: it is kept in origin.kept, and is no unknown field.)
    tool = {"type": "function", "id": "a", "function": {"name": "f", "arguments": "{}"}}
    (story,) = forward(one_step(with_tools([tool], "both")))
    assert "unknown_fields" not in story
    stored = sorted(kept_of(story))
    nested = [(p, q) for p in stored for q in stored if q.startswith(p + "/")]
    assert nested == [], nested


def test_a_metric_with_missing_known_keys_is_kept_whole_and_comes_back_exactly() -> None:
    # Decided: the Storyline metrics hold all five keys (missing ones null, docs/formats.md ACTF); the reverse
    # would give them back as nulls, so the partial `metric` is kept as a residual and the round
    # trip returns it exactly.  `metric` is a key ACTF defines: kept in origin.kept, not counted as unknown.
    doc = one_step(step(metric={"llm_infer_ms": 3}))
    (story,) = forward(doc)
    assert "unknown_key_counts" not in story
    assert kept_of(story) == {"/attempts/1/trajectory/steps/0/metric": {"llm_infer_ms": 3}}
    assert roundtrip(doc)["attempts"]["1"]["trajectory"]["steps"][0]["metric"] == {"llm_infer_ms": 3}
