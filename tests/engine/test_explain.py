"""engine/explain.py: where a source value went, and where a Storyline value came from."""

from __future__ import annotations

import importlib.resources
import json

import pytest
from conftest import FIXTURES

from mapc.engine import catalog, convert
from mapc.engine.explain import explain_source, explain_target
from mapc.engine.problems import MapcError

TICKET = json.loads((FIXTURES / "atif" / "support-ticket.json").read_text(encoding="utf-8"))
SPEC_TEXT = importlib.resources.files("mapc.mappings").joinpath("atif.yaml").read_text(encoding="utf-8")


def _line_of(fragment: str) -> int:
    """The 1-based line of the atif.yaml row holding `fragment`."""
    return next(i for i, line in enumerate(SPEC_TEXT.splitlines(), 1) if fragment in line)


def _program():
    return catalog.program("atif")


def test_a_copied_value_names_its_rule_line_and_storyline_pointer():
    findings = explain_source(_program(), TICKET, "/steps/1/tool_calls/0/arguments")
    read = [f for f in findings if f.kind == "read"]
    assert len(read) == 1 and read[0].fired
    assert read[0].targets == ("/0/turns/1/tool_calls/0/args",)
    assert read[0].rule.at.line == _line_of("/steps/{s}/tool_calls/{c}/arguments")
    assert "atif.yaml:" in read[0].message


def test_a_value_inside_a_whole_copy_and_a_promotion():
    doc = {**TICKET, "steps": [{**TICKET["steps"][0], "metrics": {"latency_ms": 12, "tokens": 3}}]}
    findings = explain_source(_program(), doc, "/steps/0/metrics/latency_ms")
    targets = {t for f in findings if f.fired for t in f.targets}
    assert targets == {"/0/turns/0/metrics/latency_ms", "/0/turns/0/latency_ms"}
    assert {f.kind for f in findings if f.fired} == {"inside", "read"}


def test_a_first_of_source_not_chosen_did_not_fire():
    doc = {**TICKET, "session_id": "s", "trajectory_id": "t"}
    [chain] = [f for f in explain_source(_program(), doc, "/trajectory_id") if "/session" in f.targets[0]]
    assert chain.fired is False and "first_of chose /session_id" in chain.message


def test_a_residual_and_a_nested_document():
    doc = {**TICKET, "steps": [{**TICKET["steps"][0], "vendor": 1}]}
    [found] = explain_source(_program(), doc, "/steps/0/vendor")
    assert found.kind == "residual" and found.targets == ("/0/unknown_fields/sources/atif/fields/~1steps~10~1vendor",)
    child = {
        "schema_version": "ATIF-v1.7",
        "trajectory_id": "c1",
        "agent": {"name": "h", "version": "1"},
        "steps": [],
    }
    found = explain_source(_program(), {**TICKET, "subagent_trajectories": [child]}, "/subagent_trajectories/0")
    assert found[0].kind == "document" and found[0].targets == ("/1",)


def test_an_array_element():
    findings = explain_source(_program(), TICKET, "/steps/2")
    assert findings[0].kind == "array" and findings[0].targets == ("/0/turns/2",)


def test_nothing_at_the_pointer():
    with pytest.raises(MapcError) as info:
        explain_source(_program(), TICKET, "/steps/9")
    assert info.value.problems[0].code == "explain.not_found"


def test_where_a_storyline_value_came_from():
    stories = convert.into_storyline("atif", json.dumps(TICKET).encode())
    [f] = explain_target(_program(), stories, 0, "/turns/1/tool_calls/0/args", TICKET)
    assert f.kind == "written" and f.source == "/steps/1/tool_calls/0/arguments" and f.fired
    assert f.rule.at.line == _line_of("/steps/{s}/tool_calls/{c}/arguments")
    [f] = explain_target(_program(), stories, 0, "/session", TICKET)
    assert "came from /session_id" in f.message
    [f] = explain_target(_program(), stories, 0, "/turns/1/kind")
    assert "atif_turn_kind" in f.message and "derived" in f.message


def test_where_a_residual_came_from():
    doc = {**TICKET, "vendor": 1}
    stories = convert.into_storyline("atif", json.dumps(doc).encode())
    [f] = explain_target(_program(), stories, 0, "/unknown_fields/sources/atif/fields/~1vendor")
    assert f.kind == "residual" and f.source == "/vendor" and "restored" in f.message


# --- ACTF: members as documents, enclosing scopes, fallback arrays, computed candidates ---------

ACTF_TEXT = importlib.resources.files("mapc.mappings").joinpath("actf.yaml").read_text(encoding="utf-8")
REPAIR = json.loads((FIXTURES / "actf" / "code-repair.actf.json").read_text(encoding="utf-8"))
STEP = "/attempts/{a}/trajectory/steps/{s}"


def _actf():
    return catalog.program("actf")


def _actf_line(fragment: str) -> int:
    return next(i for i, line in enumerate(ACTF_TEXT.splitlines(), 1) if fragment in line)


def _two_attempts() -> dict:
    """code-repair with a second attempt whose first step lists its tool only in
    assistant_content.tool_calls, and whose tool has a command instead of an input."""
    second = json.loads(json.dumps(REPAIR["attempts"]["1"]))
    step = second["trajectory"]["steps"][0]
    step["tools"] = []
    del step["assistant_content"]["tool_calls"][0]["input"]
    step["assistant_content"]["tool_calls"][0]["command"] = "make test"
    return {**REPAIR, "attempts": {**REPAIR["attempts"], "2": second}, "attempts_tried": 2, "k": 2}


def test_actf_a_value_of_the_task_reaches_every_attempt():
    findings = explain_source(_actf(), _two_attempts(), "/task_id")
    [run] = [f for f in findings if f.rule is not None and f.rule.at.line == _actf_line("{from: /task_id, to: /run")]
    assert run.kind == "read" and run.fired and run.targets == ("/0/run", "/1/run")
    [session] = [f for f in findings if "actf_session" in f.message]
    assert session.targets == ("/0/session", "/1/session") and "derived" in session.message
    assert any(f.kind == "document" and "source_document_id" in f.message for f in findings)


def test_actf_a_member_becomes_a_storyline_and_its_key_the_attempt_id():
    findings = explain_source(_actf(), _two_attempts(), "/attempts/2")
    assert findings[0].kind == "document" and findings[0].targets == ("/1",)
    [key] = [f for f in findings if f.kind == "key" and f.rule.op == "copy"]
    assert key.targets == ("/1/attempt_id",) and "'2'" in key.message and key.fired
    [whole] = explain_source(_actf(), _two_attempts(), "/attempts")[:1]
    assert whole.kind == "document" and whole.targets == ("/0", "/1")


def test_actf_a_value_read_by_a_scope_below_it():
    # a tool call's tcid is made from its step's step_id (a row of the tool scope reads its step)
    findings = explain_source(_actf(), REPAIR, "/attempts/1/trajectory/steps/0/step_id")
    targets = {t for f in findings if f.fired for t in f.targets}
    assert targets == {"/0/turns/0/id", "/0/turns/0/tool_calls/0/tcid", "/0/prompt"}  # prompt: steps read whole
    [tcid] = [f for f in findings if "actf_tool_id" in f.message]
    assert tcid.rule.at.line == _actf_line("call: actf_tool_id")


def test_actf_a_fallback_tool_list_and_a_computed_candidate():
    doc = _two_attempts()
    calls = "/attempts/2/trajectory/steps/0/assistant_content/tool_calls"
    [array] = [f for f in explain_source(_actf(), doc, calls) if f.kind == "array"]
    assert array.targets == ("/1/turns/0/tool_calls",) and "fallback" in array.message
    [name] = [f for f in explain_source(_actf(), doc, calls + "/0/name") if f.kind == "read"]
    assert name.fired and name.targets == ("/1/turns/0/tool_calls/0/fn",)
    [command] = [f for f in explain_source(_actf(), doc, calls + "/0/command") if f.kind == "read"]
    assert "object_of (first_of candidate 3 of 5)" in command.message
    assert command.targets == ("/1/turns/0/tool_calls/0/args",)
    # in the first attempt `tools` is not empty: assistant_content.tool_calls is not read
    unused = explain_source(_actf(), doc, "/attempts/1/trajectory/steps/0/assistant_content/tool_calls/0/name")
    assert unused[0].kind == "array" and "read only when" in unused[0].message
    assert not any(f.kind == "read" for f in unused)


def test_actf_where_storyline_values_came_from():
    doc = _two_attempts()
    stories = convert.into_storyline("actf", json.dumps(doc).encode())
    [f] = explain_target(_actf(), stories, 0, "/turns/0/tool_calls/0/tcid", doc)
    assert f.source == "/attempts/1/trajectory/steps/0/tools/0/id" and f.fired
    assert "/attempts/1/trajectory/steps/0/step_id" in f.message and "actf_tool_id_back" in f.message
    [f] = explain_target(_actf(), stories, 1, "/session", doc)
    assert "actf_session(/task_id, the key or position {a} ('2'), /attempts)" in f.message
    [f] = explain_target(_actf(), stories, 1, "/turns/0/tool_calls/0/args", doc)
    assert "here it came from object_of('command', /attempts/2/trajectory/steps/0/tools/0/command)" in f.message
    found = explain_target(_actf(), stories, 1, "/turns/0/tool_calls", doc)
    assert [f.kind for f in found] == ["array"] and "/attempts/2/trajectory/steps/0/tools" in found[0].message
    # without the document, the member is found by rebuilding the document from the Storylines
    stories = convert.into_storyline("actf", json.dumps(REPAIR).encode())
    [f] = explain_target(_actf(), stories, 0, "/attempt_id")
    assert f.kind == "written" and "{a} ('1')" in f.message and f.fired is None
