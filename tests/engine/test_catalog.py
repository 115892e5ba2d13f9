"""engine/catalog.py and engine/formats.py: a catalog passed down, and one protocol for every format."""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import orjson
import pytest

import mapc  # noqa: F401  (installs the shipped catalog, the default of callers that pass none)
from mapc.engine import catalog, codecs, convert, detect, formats, functions
from mapc.engine.compile import compile_spec
from mapc.engine.spec import load_spec

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "data" / "fixtures"
SHIPPED = dict(
    specs="mapc.mappings",
    functions=catalog.installed().functions,
    codecs=catalog.installed().codecs,
    traces=catalog.installed().traces,
)


def test_a_catalog_that_is_not_installed_can_be_passed_down():
    own = catalog.Catalog(**SHIPPED)
    assert own == catalog.installed() and own is not catalog.installed()
    program = own.program("atif")
    assert program is own.program("atif")  # compiled once per catalog
    assert program is not catalog.installed().program("atif")  # each catalog holds its own
    assert own.count_trees()["agenticmd"] == codecs.lookup("agenticmd", own).count_tree
    assert functions.lookup("actf_session", own) is not None
    assert detect.detect("run.actf.json", catalog=own) == "actf"


def test_the_shipped_catalog_names_every_codec_and_function_module_of_the_mappings():
    """The shipped catalog lists its codec and function modules, so that a run imports only those it
    needs; a module added to `mapc.mappings` that declares a codec or registers functions must be listed."""
    import importlib
    import pkgutil

    import mapc.mappings

    shipped = catalog.installed()
    modules = [f"mapc.mappings.{m.name}" for m in pkgutil.iter_modules(mapc.mappings.__path__)]
    declaring = [m for m in modules if isinstance(getattr(importlib.import_module(m), "CODEC", None), codecs.Codec)]
    assert sorted(declaring) == sorted(shipped.codecs)
    scanned = catalog.Catalog(shipped.specs, shipped.functions, "mapc.mappings", shipped.traces)  # every module
    assert codecs.names(scanned) == codecs.names(shipped)
    registering = {
        fn.fn.__module__ for fn in functions.REGISTRY.values() if fn.fn.__module__.startswith("mapc.mappings")
    }
    assert registering - {"mapc.mappings.atif_harbor"} <= set(shipped.functions)  # atif_harbor's: via functions.py


def test_a_lookup_imports_the_function_modules_only_until_one_has_the_name():
    import subprocess
    import sys

    script = (
        "import sys, mapc; from mapc.engine import functions; "
        "assert functions.lookup('atif_turn_kind') is not None; "
        "print(sorted(m for m in sys.modules if m.startswith('mapc.mappings.')))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['mapc.mappings.atif_harbor', 'mapc.mappings.functions']"
    unknown = "import sys, mapc; from mapc.engine import functions; print(functions.lookup('no such') is None)"
    assert subprocess.run([sys.executable, "-c", unknown], capture_output=True, text=True).stdout.strip() == "True"


def test_a_catalog_without_codecs_has_none():
    bare = catalog.Catalog("mapc.mappings", catalog.installed().functions, None)
    assert codecs.names(bare) == []
    assert "agenticmd" not in bare.count_trees()
    assert detect.detect("notes.md", b"# not json", catalog=bare) is None
    assert detect.detect("notes.md", b"# not json") == "agenticmd"  # the installed one has the codec


def test_a_spec_given_by_path_is_compiled_again_when_its_text_changes(tmp_path: Path):
    """A long-lived process (a server, a notebook) must not run a stale copy of an edited spec."""
    own = catalog.Catalog(**SHIPPED)
    path = tmp_path / "mine.yaml"
    shutil.copy(ROOT / "mappings" / "atif.yaml", path)
    first = own.program(str(path))
    assert own.program(str(path)) is first  # unchanged text: the same program
    path.write_text(path.read_text().replace("title: ", "title: Edited ", 1))
    second = own.program(str(path))
    assert second is not first and second.spec.title.startswith("Edited")


def test_compile_spec_takes_the_catalog_whose_functions_it_resolves():
    own = catalog.Catalog(**SHIPPED)
    spec = load_spec("actf.yaml", own.spec_text("actf"))
    assert compile_spec(spec, own).spec.name == "actf"


def _fixture_files() -> list[tuple[str, Path]]:
    # A script that recorded a fixture (otel-genai/make_openai_v2.py) is no fixture.
    return [
        (d.name, p)
        for d in sorted(FIXTURES.iterdir())
        if d.is_dir()
        for p in sorted(d.iterdir())
        if p.is_file() and p.suffix != ".py"
    ]


@pytest.mark.parametrize(("name", "path"), _fixture_files(), ids=lambda x: x.name if isinstance(x, Path) else x)
def test_every_fixture_is_detected_by_its_own_format(name: str, path: Path):
    data = path.read_bytes()
    found = detect.detect(str(path), data)
    fmt = catalog.installed().format(found)
    assert fmt.detect(str(path), data)
    assert fmt.name == found


def test_the_three_kinds():
    kinds = {f.name: f.kind for f in formats.every_format(catalog.installed())}
    assert kinds["storyline"] == "hub" and kinds["atif"] == "spec" and kinds["agenticmd"] == "codec"
    assert set(kinds) == set(convert.formats())


def test_streamable_is_the_one_convert_uses_for_every_pair():
    every = formats.every_format(catalog.installed())
    for a, b in itertools.product(every, every):
        assert formats.streamable(a, b) == convert.streamable(a.name, b.name), (a.name, b.name)


def test_count_trees_are_the_formats_own():
    own = catalog.installed()
    trees = own.count_trees()
    for fmt in formats.every_format(own):
        if fmt.kind == "spec":
            assert trees[fmt.program.spec.source] == fmt.count_tree  # type: ignore[attr-defined]
        elif fmt.kind == "codec":
            assert trees[fmt.codec.source] == fmt.count_tree  # type: ignore[attr-defined]
        else:
            assert fmt.count_tree is None


def test_decode_and_encode_through_the_protocol():
    actf = catalog.installed().format("actf")
    path = next((FIXTURES / "actf").glob("*.json"))
    data = path.read_bytes()
    stories = actf.decode(data)
    assert stories == convert.into_storyline("actf", data)
    back = actf.encode(stories)
    assert back == orjson.loads(orjson.dumps(convert.from_storyline("actf", stories)))
    hub = catalog.installed().format("storyline")
    assert hub.decode(orjson.dumps(stories[0])) == [stories[0]]
