"""engine/coverage.py: rows fired per element, first_of choices, residual keys, failures."""

from __future__ import annotations

import json

from conftest import FIXTURES

from mapc.engine import catalog
from mapc.engine.coverage import as_json, markdown, measure

ATIF = {
    "schema_version": "ATIF-v1.7",
    "session_id": "s1",
    "agent": {"name": "bot", "version": "1"},
    "steps": [],
}


def _rows(report):
    return {r.rule.spec.label: r for r in report.rows}


def _by_source(report, source: str):
    return next(r for r in report.rows if [str(s) for s in r.rule.spec.sources] == [source])


def test_fixtures():
    files = sorted((FIXTURES / "atif").glob("*.json"))
    report = measure(catalog.program("atif"), [(f.name, f.read_bytes(), False) for f in files])
    docs = [json.loads(f.read_bytes()) for f in files]
    steps = sum(len(d["steps"]) for d in docs)
    assert (report.files, report.documents, report.storylines, report.failures) == (
        len(files),
        len(files),
        len(files),
        [],
    )
    step_id = _by_source(report, "/steps/{s}/step_id")
    assert (step_id.fired, step_id.tried) == (steps, steps)
    notes = _by_source(report, "/notes")
    assert (notes.fired, notes.tried) == (sum("notes" in d for d in docs), len(docs))
    never = {str(r.rule.spec.sources[0]) for r in report.never_fired}
    assert "/continued_trajectory_ref" in never  # no fixture has one
    assert all(r.fired == 0 for r in report.never_fired)


def test_residual_keys_are_counted_by_normalized_key():
    doc = {
        **ATIF,
        "vendor": 1,
        "steps": [{"step_id": i, "source": "user", "message": "m", "x/y": i} for i in (1, 2)],
    }
    other = {**ATIF, "vendor": 2}
    report = measure(
        catalog.program("atif"),
        [("a.json", json.dumps(doc).encode(), False), ("b.json", json.dumps(other).encode(), False)],
    )
    counts = {k: (c.occurrences, c.documents) for k, c in report.residuals.items()}
    assert counts == {"/steps/*/x~1y": (2, 1), "/vendor": (2, 2)}
    assert [c.occurrences for c in report.residuals.values()] == [2, 2]  # most frequent first


def test_first_of_choices_and_failures():
    docs = [
        {**ATIF},
        {**{k: v for k, v in ATIF.items() if k != "session_id"}, "trajectory_id": "t1"},
        {**ATIF, "agent": {"name": "", "version": "1"}},
    ]
    data = json.dumps(docs).encode()
    report = measure(catalog.program("atif"), [("all.json", data, False)])
    assert report.documents == 2
    assert [(f, p.code, p.pointer) for f, p in report.failures] == [("all.json", "check.nonempty", "/2/agent/name")]
    session = next(r for r in report.rows if r.rule.spec.targets[0].text == "/session")
    assert session.chosen[:2] == [1, 1] and session.fired == 2


def test_reports():
    report = measure(
        catalog.program("atif"),
        [("a.json", json.dumps({**ATIF, "vendor": 1}).encode(), False), ("bad.json", b"{", False)],
    )
    text = markdown(report)
    assert "## Rows" in text and "| `/vendor` | 1 | 1 |" in text and "## Rows that never fired" in text
    assert "bad.json" in text and "json.invalid" in text
    data = as_json(report)
    assert data["unknown_fields"] == {"/vendor": {"occurrences": 1, "documents": 1}}
    assert data["failures"][0]["code"] == "json.invalid"
    assert json.dumps(data)
