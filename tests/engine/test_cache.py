"""engine/cache.py: the spec cache gives the same results, and never runs what it did not write itself."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import FIXTURES

from mapc.cli.main import cli
from mapc.engine import cache
from mapc.engine.spec import load_spec

SUPPORT = FIXTURES / "atif" / "support-ticket.json"
SPEC = Path(__file__).parents[2] / "mappings" / "atif.yaml"


@pytest.fixture
def cached(tmp_path):
    cache.use(tmp_path / "c")
    yield tmp_path / "c"
    cache.use(None)


def test_off_by_default_for_the_library(tmp_path):
    assert cache.directory() is None
    code = cache.compiled("x = 1\n", "<t>")
    namespace: dict = {}
    exec(code, namespace)
    assert namespace["x"] == 1


def test_a_cached_spec_reads_as_the_yaml_does(cached):
    text = SPEC.read_text(encoding="utf-8")
    first = load_spec("atif.yaml", text)
    assert any(p.name.startswith("spec-") for p in cached.iterdir())
    again = load_spec("atif.yaml", text)
    assert again == first


def test_cached_code_runs_as_compiled(cached):
    source = "def f():\n    return 41 + 1\n"
    cache.compiled(source, "<t>")
    (entry,) = [p for p in cached.iterdir() if p.name.startswith("code-")]
    namespace: dict = {}
    exec(cache.compiled(source, "<t>"), namespace)
    assert namespace["f"]() == 42
    assert entry.stat().st_mode & 0o077 == 0
    assert (cached / "secret").stat().st_mode & 0o077 == 0
    assert cached.stat().st_mode & 0o077 == 0


def _plant(entry: Path, source: str) -> None:
    """Replace the entry's bytecode with that of `source`, keeping its (now wrong) keyed hash."""
    import marshal

    blob = entry.read_bytes()
    entry.write_bytes(blob[:32] + marshal.dumps(compile(source, "<evil>", "exec")))


def test_a_planted_entry_is_not_run(cached):
    source = "x = 'mapc'\n"
    cache.compiled(source, "<t>")
    (entry,) = [p for p in cached.iterdir() if p.name.startswith("code-")]
    _plant(entry, "x = 'planted'\n")
    namespace: dict = {}
    exec(cache.compiled(source, "<t>"), namespace)
    assert namespace["x"] == "mapc"  # the keyed hash did not match: compiled again


def test_an_entry_from_another_cache_is_not_run(cached, tmp_path):
    source = "x = 'mine'\n"
    cache.compiled(source, "<t>")
    (entry,) = [p for p in cached.iterdir() if p.name.startswith("code-")]
    other = tmp_path / "other"
    cache.use(other)
    cache.compiled("y = 1\n", "<t2>")  # makes the other cache, with its own secret
    os.replace(entry, other / entry.name)  # a valid entry of the first cache, planted in the second
    _plant(other / entry.name, "x = 'copied'\n")
    namespace: dict = {}
    exec(cache.compiled(source, "<t>"), namespace)
    assert namespace["x"] == "mine"


def test_a_directory_others_may_write_is_not_used(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    cache.use(shared)
    try:
        cache.compiled("x = 1\n", "<t>")
        assert list(shared.iterdir()) == []  # nothing written, nothing read
    finally:
        cache.use(None)


def test_the_cli_uses_the_cache_and_no_cache_turns_it_off(runner, tmp_path):
    from mapc.engine import catalog

    catalog.install(catalog.installed())  # this process compiled the specs already: have the command load them
    where = tmp_path / "cli-cache"
    first = runner.invoke(cli, ["run", "atif", str(SUPPORT)], env={"MAPC_CACHE_DIR": str(where)})
    assert first.exit_code == 0, first.stderr
    assert any(p.name.startswith("spec-") for p in where.iterdir())
    again = runner.invoke(cli, ["run", "atif", str(SUPPORT)], env={"MAPC_CACHE_DIR": str(where)})
    assert again.stdout == first.stdout
    off = tmp_path / "off"
    result = runner.invoke(cli, ["run", "atif", str(SUPPORT), "--no-cache"], env={"MAPC_CACHE_DIR": str(off)})
    assert result.stdout == first.stdout
    assert not off.exists()
    assert cache.directory() is None  # put back when the command ended


def _compile_shipped(name: str):
    """`compiled_validator` itself, not its per-process memo (the module's validators stay as they are)."""
    from mapc.engine.schema import compiled_validator

    return compiled_validator.__wrapped__(name)


@pytest.mark.parametrize("name", ["storyline-v1", "atif-v1.7", "mapping-spec"])
def test_a_shipped_schema_is_generated_once_and_checks_as_before(cached, name):
    from mapc.engine.schema import compile_schema, load_schema

    fresh = compile_schema(load_schema(name), name)
    first = _compile_shipped(name)
    entries = [p for p in cached.iterdir() if p.name.startswith("schema-")]
    assert len(entries) == 1
    again = _compile_shipped(name)  # from the entry: the same code, with the same constants
    assert again.source == first.source == fresh.source
    for doc in ({}, {"schema_version": 3}, {"schema_version": "storyline/v1", "turns": [{"id": "x"}]}, []):
        assert list(again.iter_problems(doc)) == list(fresh.iter_problems(doc))
    entries[0].write_bytes(entries[0].read_bytes()[:-5] + b"xxxxx")  # damaged: not used, made again
    assert _compile_shipped(name).source == fresh.source


def test_a_schema_entry_names_the_compiler_that_wrote_it(cached, monkeypatch):
    from mapc.engine import schema

    _compile_shipped("storyline-v1")
    monkeypatch.setattr(schema, "__file__", str(Path(schema.__file__).with_name("resources.py")))
    _compile_shipped("storyline-v1")  # another compiler source: another key, a second entry
    assert len([p for p in cached.iterdir() if p.name.startswith("schema-")]) == 2
