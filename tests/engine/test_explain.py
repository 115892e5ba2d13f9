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
