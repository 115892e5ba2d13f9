"""A catalog passed down (issue 16 §4): a format only a caller's own `Catalog` knows is read, written and
converted through the API and by a corpus job's worker processes, and the installed catalog is never
asked for (here it is taken away while the API runs: any fallback to it would raise)."""

from __future__ import annotations

import dataclasses
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

import mapc
from mapc.cli import corpus
from mapc.engine import catalog as catalogs

TOY_SPEC = """\
name: toychat
title: A toy chat format no shipped catalog knows
source: toychat
document:
  id: {call: blake3_document_id}
arrays:
  "/lines/{m}": "/turns/{t}"
objects:
  "": [lines]
  "/lines/{m}": [who, text]
rules:
  - {const: storyline/v1, to: /schema_version}
  - {const: toychat, to: /origin/format}
  - call: blake3_document_id
    args: [""]
    to: /session
    back: none
  - {const: toychat, to: /agent/id}
  - call: toy_turn_id
    args: [{var: m}]
    to: "/turns/{t}/id"
    back: none
  - {from: "/lines/{m}/who", to: "/turns/{t}/src"}
  - {from: "/lines/{m}/text", to: "/turns/{t}/msg", keep_null: true}
"""

# The toy format's one function, registered by a module of the toy catalog (not of mapc.mappings).
TOY_FUNCTIONS = """\
from mapc.engine.functions import register


@register("toy_turn_id", 1)
def toy_turn_id(position):
    return position + 1
"""

DOCUMENT = {"lines": [{"who": "user", "text": "hi"}, {"who": "agent", "text": "hello"}, {"who": "user", "text": None}]}


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[catalogs.Catalog]:
    """A catalog of one toy spec, in a package of its own on sys.path (spawned workers inherit the path)."""
    package = f"toycatalog_{uuid.uuid4().hex[:8]}"
    root = tmp_path / "packages" / package
    root.mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "toychat.yaml").write_text(TOY_SPEC)
    (root / "toy_functions.py").write_text(TOY_FUNCTIONS)
    monkeypatch.syspath_prepend(str(tmp_path / "packages"))
    yield catalogs.Catalog(specs=package, functions=(f"{package}.toy_functions",))
    for name in [m for m in sys.modules if m.startswith(package)]:
        del sys.modules[name]


@pytest.fixture
def nothing_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    """No installed catalog while the test runs: a function that falls back to it raises RuntimeError."""
    monkeypatch.setattr(catalogs, "_INSTALLED", [])


def test_the_toy_format_is_unknown_to_the_installed_catalog(toy: catalogs.Catalog):
    assert "toychat" not in mapc.formats()
    assert "toychat" in mapc.formats(catalog=toy)
    with pytest.raises(mapc.MapcError):
        mapc.into_storyline("toychat", DOCUMENT)


def test_the_api_runs_a_catalog_passed_to_it_without_the_installed_one(toy: catalogs.Catalog, nothing_installed: None):
    with pytest.raises(RuntimeError):
        catalogs.installed()  # the fallback really is gone
    stories = mapc.into_storyline("toychat", DOCUMENT, catalog=toy)
    assert [t["id"] for t in stories[0]["turns"]] == [1, 2, 3]
    assert [t["msg"] for t in stories[0]["turns"]] == ["hi", "hello", None]
    assert mapc.check(stories[0], catalog=toy) == []
    assert mapc.from_storyline("toychat", stories, catalog=toy) == DOCUMENT
    assert mapc.convert("toychat", "toychat", DOCUMENT, catalog=toy) == DOCUMENT
    out, report = mapc.convert_reported("toychat", "storyline", DOCUMENT, catalog=toy)
    assert out == stories[0] and report.exact
    assert mapc.detect("a.json", orjson.dumps(DOCUMENT), catalog=toy) is None  # the toy spec declares no detection


def test_a_catalog_pickles_as_its_description(toy: catalogs.Catalog):
    import pickle

    toy.program("toychat")  # what it compiled is not part of the pickle
    again = pickle.loads(pickle.dumps(toy))
    assert again == toy and again.compiled() == []
    assert again.program("toychat").spec.name == "toychat"


def test_a_worker_pool_runs_the_jobs_catalog(toy: catalogs.Catalog, tmp_path: Path):
    source = tmp_path / "in"
    source.mkdir()
    for n in range(3):
        lines = [*DOCUMENT["lines"], {"who": "agent", "text": f"answer {n}"}]
        (source / f"chat-{n}.json").write_bytes(orjson.dumps({"lines": lines}))
    (tmp_path / "out").mkdir()
    plan = corpus.plan(str(source), str(tmp_path / "out"), "storyline", "toychat", catalog=toy)
    assert len(plan.jobs) == 3 and all(job.catalog == toy for job in plan.jobs)
    # Spawned workers import mapc afresh (installing the shipped catalog, which has no toychat): only
    # the catalog each job carries can read these files.
    results = list(corpus.run(plan.jobs, workers=2))
    assert sorted(r.status for r in results) == [corpus.CONVERTED] * 3, [r.problem for r in results]
    for n in range(3):
        story = orjson.loads((tmp_path / "out" / f"chat-{n}.storyline.json").read_bytes())
        assert story["origin"]["format"] == "toychat" and story["turns"][-1]["msg"] == f"answer {n}"


def test_without_its_catalog_a_job_of_the_toy_format_fails(toy: catalogs.Catalog, tmp_path: Path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "chat.json").write_bytes(orjson.dumps(DOCUMENT))
    (tmp_path / "out").mkdir()
    plan = corpus.plan(str(tmp_path / "in"), str(tmp_path / "out"), "storyline", "toychat", catalog=toy)
    bare = [dataclasses.replace(job, catalog=None) for job in plan.jobs]
    (result,) = corpus.run(bare, workers=1)
    assert result.status == corpus.FAILED  # the installed catalog does not know the format


def test_the_command_line_passes_its_one_catalog_down(
    toy: catalogs.Catalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The root command takes the catalog `mapc` built (here: the toy one) and every step of a
    conversion uses it, with no catalog installed."""
    from click.testing import CliRunner

    from mapc.cli import main

    monkeypatch.setattr(main, "shipped_catalog", lambda: toy)
    monkeypatch.setattr(catalogs, "_INSTALLED", [])
    source = tmp_path / "chat.json"
    source.write_bytes(orjson.dumps(DOCUMENT))
    out = tmp_path / "chat.storyline.json"
    done = CliRunner().invoke(
        main.cli, ["convert", str(source), "--from", "toychat", "--to", "storyline", "-o", str(out)]
    )
    assert done.exit_code == 0, done.output
    assert orjson.loads(out.read_bytes())["origin"]["format"] == "toychat"
    for argv in (["run", "toychat", str(source)], ["validate", "--format", "toychat", str(source)]):
        again = CliRunner().invoke(main.cli, argv)
        assert again.exit_code == 0, (argv, again.output)
