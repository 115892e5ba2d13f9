"""engine/stored.py: a shipped spec's compiled program kept in the spec cache converts as the compiled one."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import orjson
import pytest

import mapc  # noqa: F401  (installs the shipped catalog)
from mapc.engine import cache, catalog, convert, detect, stored
from mapc.engine.problems import MapcError
from mapc.engine.values import MISSING

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "fixtures"


def _fixtures() -> list[tuple[str, Path]]:
    shipped = set(catalog.installed().shipped_names())
    out = []
    for path in sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl")):
        fmt = detect.detect(str(path), path.read_bytes())
        if fmt in shipped:
            out.append((fmt, path))
    return out


def _results(fixtures: list[tuple[str, Path]]) -> list[Any]:
    """Each fixture forward, and its Storylines back to its format (or the problems either way)."""
    out: list[Any] = []
    for fmt, path in fixtures:
        try:
            stories = convert.into_storyline(fmt, path.read_bytes(), jsonl=path.suffix == ".jsonl")
            out.append(orjson.dumps([stories, convert.from_storyline(fmt, stories)], option=orjson.OPT_SORT_KEYS))
        except MapcError as exc:
            out.append([p.code for p in exc.problems])
    return out


@pytest.fixture
def fresh_catalog():
    """A new shipped catalog installed for the test (nothing compiled yet), the old one back after."""
    before = catalog.installed()

    def install() -> catalog.Catalog:
        own = dataclasses.replace(before, _held={})  # the same packages, nothing compiled or loaded yet
        catalog.install(own)
        return own

    yield install
    catalog.install(before)
    cache.use(None)


def test_a_kept_program_converts_every_fixture_as_the_compiled_one(tmp_path, fresh_catalog, monkeypatch):
    fixtures = _fixtures()
    assert {fmt for fmt, _ in fixtures} >= {"atif", "actf", "openai-msg", "claude-code", "codex"}
    fresh_catalog()
    compiled = _results(fixtures)  # no cache: compiled
    cache.use(tmp_path)
    own = fresh_catalog()
    for name in own.shipped_names():
        own.program(name)  # compiled, and kept unless a value of its program does not pickle (a closure)
    kept = len(list(tmp_path.glob("program-*")))
    assert kept >= len(own.shipped_names()) - 1, kept

    import mapc.engine.compile

    again: list[str] = []
    real = mapc.engine.compile.compile_spec

    def counted(spec: Any, *args: Any) -> Any:
        again.append(spec.name)
        return real(spec, *args)

    monkeypatch.setattr(mapc.engine.compile, "compile_spec", counted)
    own = fresh_catalog()
    loaded = _results(fixtures)
    assert loaded == compiled
    for name in own.shipped_names():
        own.program(name)
    assert len(again) == len(own.shipped_names()) - kept  # a kept program is loaded, never compiled again
    assert "atif" not in again
    assert own.program("atif").spec == dataclasses.replace(own, _held={}).program("atif").spec


def test_a_kept_program_holds_the_engines_own_singletons(tmp_path, fresh_catalog):
    cache.use(tmp_path)
    fresh_catalog().program("atif")
    program = fresh_catalog().program("atif")  # loaded
    assert program.forward_root.__globals__["MISSING"] is MISSING
    from mapc.engine.residual import ANY_INDEX

    def keys(tree: Any, seen: set[int]) -> set[Any]:  # the tree is cyclic (children hold the tree again)
        seen.add(id(tree))
        inner = [keys(v, seen) for v in tree.values() if isinstance(v, dict) and id(v) not in seen]
        return set(tree).union(*inner)

    assert ANY_INDEX in keys(program.count_tree, set())


def test_an_entry_that_does_not_load_is_compiled_again(tmp_path, fresh_catalog):
    cache.use(tmp_path)
    fresh_catalog().program("atif")
    [entry] = tmp_path.glob("program-*")
    entry.write_bytes(entry.read_bytes()[:-10])  # damaged: its keyed hash no longer matches
    assert fresh_catalog().program("atif").spec.name == "atif"


def test_an_edited_engine_module_is_another_key(tmp_path):
    engine = tmp_path / "engine"
    engine.mkdir()
    (engine / "a.py").write_text("x = 1\n")
    first = stored._key("spec", "scope", (str(engine),))
    stored._fingerprints.clear()
    (engine / "a.py").write_text("x = 22\n")
    assert stored._key("spec", "scope", (str(engine),)) != first
    stored._fingerprints.clear()
