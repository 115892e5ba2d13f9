"""Generated code and the rule objects give the same results both ways (ISSUE 16 §1, one semantics).

Conversion runs the Python that codegen.py writes for each spec; `mapc explain` and `mapc spec
coverage` read the rule objects (program.Rule, whose value choice is its op's in ops.py).
`trace.traced` runs a whole forward and a whole reverse by those rule objects: over every
shipped spec that maps by rules, its fixtures and the hypothesis generators (formats and
Storylines from anywhere), both runs must give the same Storylines and the same rebuilt
documents, value for value and key for key (compared as serialized bytes), and the same errors.
tests/engine/test_differential_specs.py does the same over generated specs.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import orjson
import pytest
from actf_strategies import actf_documents
from atif_strategies import atif_documents
from hypothesis import HealthCheck, given, settings
from strategies import storyline_documents

from mapc.engine import catalog, run
from mapc.engine.prepare import prepare
from mapc.engine.problems import MapcError
from mapc.engine.trace import traced

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "data" / "fixtures"
RULE_SPECS = [n for n in catalog.shipped_names() if catalog.program(n).spec.rows is None]


def _run(program: Any, doc: Any) -> bytes:
    try:
        return orjson.dumps([(m.carrier, m.story) for m in run.forward(program, prepare(program.spec.prepare, doc))])
    except MapcError as exc:
        return orjson.dumps([p.as_dict() for p in exc.problems])


def _back(program: Any, stories: list[dict[str, Any]]) -> bytes:
    try:
        return orjson.dumps([(r.document, [m.carrier for m in r.stories]) for r in run.reverse(program, stories)])
    except MapcError as exc:
        return orjson.dumps([p.as_dict() for p in exc.problems])


def _agree(name: str, doc: Any) -> None:
    """Forward by both, then the reverse of the Storylines by both."""
    program = catalog.program(name)
    generated, by_rules = _run(program, doc), _run(traced(program), doc)
    assert generated == by_rules
    try:
        stories = [m.story for m in run.forward(program, prepare(program.spec.prepare, doc))]
    except MapcError:
        return
    _agree_back(name, stories)


def _agree_back(name: str, stories: list[dict[str, Any]]) -> None:
    program = catalog.program(name)
    assert _back(program, stories) == _back(traced(program), stories)


def test_the_rule_specs_are_the_shipped_specs_without_row_corpora():
    assert {"atif", "actf"} <= set(RULE_SPECS)


@pytest.mark.parametrize(
    ("name", "path"),
    [(n, p) for n in RULE_SPECS for p in sorted((FIXTURES / n).glob("*.json"))],
    ids=lambda x: x.name if isinstance(x, Path) else x,
)
def test_generated_and_traced_runs_agree_on_the_fixtures(name: str, path: Path):
    doc = orjson.loads(path.read_bytes())
    for member in doc if type(doc) is list else [doc]:
        _agree(name, member)


_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


@_SETTINGS
@given(atif_documents())
def test_generated_and_traced_runs_agree_on_generated_atif(doc: dict[str, Any]):
    _agree("atif", doc)


@_SETTINGS
@given(actf_documents())
def test_generated_and_traced_runs_agree_on_generated_actf(doc: dict[str, Any]):
    _agree("actf", doc)


@_SETTINGS
@given(storyline_documents())
def test_generated_and_traced_reverses_agree_on_storylines_from_anywhere(story: dict[str, Any]):
    for name in RULE_SPECS:
        _agree_back(name, [story])


def test_a_change_to_one_side_is_seen():
    """The comparison is not vacuous: a rule object that drops nulls it should keep differs."""
    program = catalog.program("atif")
    doc = orjson.loads((FIXTURES / "atif" / "sparse_13.json").read_bytes())
    doc["steps"][0]["message"] = None  # `message` is copied with keep_null
    by_rules = traced(program)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rule = next(r for r in program.root.children[0].rules if r.spec.keep_null)
    object.__setattr__(rule.spec, "keep_null", False)
    try:
        assert _run(program, doc) != _run(by_rules, doc)
    finally:
        object.__setattr__(rule.spec, "keep_null", True)


@pytest.mark.parametrize("name", RULE_SPECS)
def test_generated_code_names_the_yaml_row_of_every_rule(name: str):
    program = catalog.program(name)
    lines = program.source.splitlines()
    for rule in program.spec.rules:
        assert f"# {name}.yaml:{rule.at.line} {rule.label}" in (line.strip() for line in lines), rule.label


def test_a_change_to_one_reverse_is_seen():
    """The reverse comparison is not vacuous either: a default changed on the rule objects only."""
    program = catalog.program("actf")
    doc = orjson.loads(next((FIXTURES / "actf").glob("*.json")).read_bytes())
    stories = [m.story for m in run.forward(program, prepare(program.spec.prepare, doc))]
    for story in stories:
        story.get("task", {}).get("result", {}).pop("error", None)
    by_rules = traced(program)
    rule = next(r for r in program.spec.rules if r.sources and str(r.sources[0]).endswith("/error"))
    old = rule.reverse_default
    object.__setattr__(rule, "reverse_default", "changed")
    try:
        assert _back(program, stories) != _back(by_rules, stories)
    finally:
        object.__setattr__(rule, "reverse_default", old)
