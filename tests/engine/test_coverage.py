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


# --- ACTF: one Storyline per attempt, fallback tool lists, the task's own keys -----------------

ACTF_FILES = sorted((FIXTURES / "actf").glob("*.json"))


def _two_attempts() -> dict:
    """The code-repair task with a second attempt whose first step lists its tools only in
    assistant_content.tool_calls, an unknown step key, and an unknown key of the task."""
    doc = json.loads((FIXTURES / "actf" / "code-repair.actf.json").read_text(encoding="utf-8"))
    second = json.loads(json.dumps(doc["attempts"]["1"]))
    second["trajectory"]["steps"][0]["tools"] = []
    second["trajectory"]["steps"][0]["vendor"] = 1
    return {**doc, "attempts": {**doc["attempts"], "2": second}, "attempts_tried": 2, "k": 2, "region": "eu"}


def test_actf_fixtures():
    docs = [json.loads(f.read_bytes()) for f in ACTF_FILES]
    report = measure(catalog.program("actf"), [(f.name, f.read_bytes(), False) for f in ACTF_FILES])
    attempts = sum(len(d["attempts"]) for d in docs)
    assert (report.files, report.documents, report.storylines, report.failures) == (2, 2, attempts, [])
    steps = sum(len(a["trajectory"]["steps"]) for d in docs for a in d["attempts"].values())
    step_id = _by_source(report, "/attempts/{a}/trajectory/steps/{s}/step_id")
    assert (step_id.fired, step_id.tried, step_id.scope) == (steps, steps, "/attempts/{a}/trajectory/steps/{s}")
    member = _by_source(report, "{a}")  # the attempt key → /attempt_id
    assert (member.fired, member.tried) == (attempts, attempts)
    never = {str(r.rule.spec.sources[0]) for r in report.never_fired}
    assert "/retry_count" in never and "/task_id" not in never
    assert {k: (c.occurrences, c.documents) for k, c in report.residuals.items()} == {
        "/attempts/*/trajectory/steps/*/fixture_extension": (1, 1)
    }


def test_actf_members_fallback_tools_and_the_tasks_own_keys():
    report = measure(catalog.program("actf"), [("two.json", json.dumps(_two_attempts()).encode(), False)])
    assert (report.documents, report.storylines, report.failures) == (1, 2, [])
    run_row = _by_source(report, "/task_id")
    assert (run_row.fired, run_row.tried, run_row.scope) == (2, 2, "/attempts/{a}")  # once per attempt
    # the second attempt's tool comes from its fallback list: the tool rows ran on both
    name = next(r for r in report.rows if r.rule.spec.targets[0].text == "/turns/{t}/tool_calls/{c}/fn")
    assert (name.fired, name.tried, name.chosen) == (2, 2, [2, 0, 0])
    counts = {k: (c.occurrences, c.documents) for k, c in report.residuals.items()}
    assert counts["/region"] == (1, 1)  # kept with both Storylines, counted once
    assert counts["/attempts/*/trajectory/steps/*/vendor"] == (1, 1)
    text = markdown(report)
    assert "| `/region` | 1 | 1 |" in text and "| `/attempts/*/trajectory/steps/*/vendor` | 1 | 1 |" in text
