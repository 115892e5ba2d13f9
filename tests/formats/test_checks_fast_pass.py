"""The fast pass of the declared checks (engine/checks.py `_FINE`) changes no verdict.

A check first asks its values alone whether it would find anything, and makes steps and pointers
only when one says yes.  Over the ATIF and ACTF generators' documents, with values replaced by
ones that break the checks (empty, blank, below the minimum, not a time, a repeated id, a
non-increasing step id), the problems must be the same, in the same order, with and without the
fast pass.
"""

from __future__ import annotations

from typing import Any

from actf_strategies import actf_documents
from atif_strategies import atif_documents
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mapc.engine import catalog, checks
from mapc.engine.prepare import prepare
from mapc.engine.schema import compiled_validator

TROUBLE = [None, "", " ", 0, -1, 1, 2, "not a time", "2024-01-02T03:04:05Z", "2024-13-01T00:00:00Z", {}, [], "x"]


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path] if path else []
    if type(value) is dict:
        for k, v in value.items():
            out += _paths(v, (*path, k))
    elif type(value) is list:
        for i, v in enumerate(value):
            out += _paths(v, (*path, i))
    return out


def _leaves(value: Any) -> list[Any]:
    if type(value) is dict:
        return [x for v in value.values() for x in _leaves(v)]
    if type(value) is list:
        return [x for v in value for x in _leaves(v)]
    return [value]


@st.composite
def broken(draw: st.DrawFn, documents: st.SearchStrategy[Any]) -> Any:
    doc = draw(documents)
    paths = _paths(doc)
    checked = ("step_id", "tool_call_id", "timestamp", "trajectory_id", "started_at", "finished_at", "id", "name")
    paths += [p for p in paths if p[-1] in checked] * 4  # what the checks read, more often
    leaves = [v for v in _leaves(doc) if v is not None]
    for _ in range(draw(st.integers(0, 3)) if paths else 0):
        path = draw(st.sampled_from(paths))
        node = doc
        try:
            for key in path[:-1]:
                node = node[key]
            old = node[path[-1]]
            # Mostly a value of the same type (the schema passes, the checks decide), some of any.
            alike = [v for v in TROUBLE + leaves[:40] if type(v) is type(old)]
            node[path[-1]] = draw(st.sampled_from(alike if alike and draw(st.integers(0, 4)) else TROUBLE))
        except (KeyError, IndexError, TypeError):
            continue  # an earlier replacement took the way there
    return doc


def _problems(name: str, doc: Any, fast: bool) -> list[dict[str, Any]]:
    program = catalog.program(name)
    doc = prepare(program.spec.prepare, doc)
    shape = [p.as_dict() for p in compiled_validator(program.spec.input_schema).iter_problems(doc)]
    if shape:  # checks run on documents of the format's shape only (convert.input_problems)
        return shape
    found = checks.iter_check_problems(program.spec.checks, doc, program.children, fast=fast)
    return [p.as_dict() for p in found]


def _agree(name: str, doc: Any) -> None:
    assert _problems(name, doc, fast=True) == _problems(name, doc, fast=False)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(broken(atif_documents()))
def test_atif_checks_give_the_same_problems_with_the_fast_pass(doc: Any):
    _agree("atif", doc)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(broken(actf_documents()))
def test_actf_checks_give_the_same_problems_with_the_fast_pass(doc: Any):
    _agree("actf", doc)


def test_a_repeated_step_id_is_still_found():
    """A valid document passes the fast pass; one repeated id makes the check run and say where."""
    program = catalog.program("atif")
    doc = {"steps": [{"step_id": 1}, {"step_id": 1}]}
    check = next(c for c in program.spec.checks if c.kind == "unique" and "step_id" in c.pointers[0].text)
    problems = list(checks.iter_check_problems((check,), doc, None))
    assert [p.pointer for p in problems] == ["/steps/1/step_id"]
