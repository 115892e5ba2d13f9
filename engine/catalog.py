"""The catalog: which specs, functions and codecs the engine runs, named by the layer above it.

The engine knows no format.  A `Catalog` says where the shipped specs are (a package holding
``NAME.yaml`` files), which modules register spec functions (engine/functions.py) and which
package's modules declare codecs (engine/codecs.py); it is built at the top, by ``mapc``
(api/__init__.py) for the shipped formats, and installed here before the engine is used.  The
engine imports what the installed catalog names, and nothing of `mapc.mappings` by itself
(tests/test_layers.py).

Each spec is loaded and compiled once per process, and only when it is run: a small conversion
pays for its own spec, not for every format.  The count trees of the shipped specs and codecs tell
the Storyline validator how to normalize `unknown_key_counts` of each source (docs/envelope.md); they
are found source by source, as a document names them (`count_trees`), and aliases are read from the
specs' data without compiling them.  This module is imported by ``import mapc``: it imports nothing
heavy itself.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from mapc.engine.compile import Program
    from mapc.engine.residual import Tree


class Catalog(NamedTuple):
    """The formats the engine runs: `specs`, a package holding the shipped ``NAME.yaml`` specs;
    `functions`, modules whose import registers the functions specs may call; `codecs`, a
    package whose modules may each declare a ``CODEC`` (None: no codecs)."""

    specs: str
    functions: tuple[str, ...] = ()
    codecs: str | None = None

    def load_functions(self) -> None:
        """Import the function modules (each registers its functions on import)."""
        for module in self.functions:
            importlib.import_module(module)


_INSTALLED: list[Catalog] = []


def install(catalog: Catalog) -> None:
    """Make `catalog` the one the engine runs (before first use: compiled specs are cached)."""
    _INSTALLED[:] = [catalog]
    for cached in (program, _all_count_trees, aliases, _shipped, _declared_sources):
        cached.cache_clear()
    _TREES.clear()


def installed() -> Catalog:
    """The installed catalog (``import mapc`` installs the shipped one)."""
    if not _INSTALLED:
        raise RuntimeError("no catalog is installed: import mapc (or call mapc.engine.catalog.install) first")
    return _INSTALLED[0]


def shipped_names() -> list[str]:
    """Names of the built-in specs, one per YAML file in the catalog's spec package."""
    return list(_shipped())


@functools.cache
def _shipped() -> tuple[str, ...]:
    from mapc.engine import resources

    return tuple(sorted(n[: -len(".yaml")] for n in resources.names(installed().specs) if n.endswith(".yaml")))


def spec_text(name: str) -> str:
    """The YAML text of the built-in spec `name`."""
    from mapc.engine import resources

    return resources.read_text(installed().specs, f"{name}.yaml")


@functools.cache
def program(name_or_path: str) -> Program:
    """The compiled spec for a built-in name (or an alias a spec declares) or a path to a YAML spec."""
    from pathlib import Path

    from mapc.engine.compile import compile_spec
    from mapc.engine.problems import MapcError
    from mapc.engine.spec import load_spec

    if name_or_path not in shipped_names() and name_or_path in aliases():
        return program(aliases()[name_or_path])
    if name_or_path in shipped_names():
        return compile_spec(load_spec(f"{name_or_path}.yaml", spec_text(name_or_path)))
    path = Path(name_or_path)
    if not path.is_file():
        raise MapcError.single(
            "spec.not_found",
            "",
            f"no spec {name_or_path!r}: not a file, nor a built-in ({', '.join(shipped_names())})",
        )
    return compile_spec(load_spec(path))


_TREES: dict[str, Any] = {}  # source -> its count tree (None: no format declares it), found so far


class _CountTrees(Mapping[str, "Tree"]):
    """The count tree of each residual source, found when a document names the source (`_tree_of`);
    iterating makes the whole table."""

    def __getitem__(self, source: str) -> Tree:
        if source not in _TREES:
            _TREES[source] = _tree_of(source)
        tree = _TREES[source]
        if tree is None:
            raise KeyError(source)
        return tree  # type: ignore[no-any-return]

    def __iter__(self) -> Iterator[str]:
        return iter(_all_count_trees())

    def __len__(self) -> int:
        return len(_all_count_trees())


def _tree_of(source: str) -> Tree | None:
    """The tree of the shipped spec that declares `source` (compiled then, as running it would be),
    else of the codec that writes it, else None.  A source belongs to one format."""
    from mapc.engine import codecs

    name = _declared_sources().get(source)
    if name is not None:
        return program(name).count_tree
    return codecs.count_trees().get(source)


@functools.cache
def _declared_sources() -> dict[str, str]:
    """Residual source -> the shipped spec declaring it, read from the specs' data (as the spec reader
    reads `source`, whose default is the name) without compiling them."""
    from mapc.engine.spec import parse_yaml

    out: dict[str, str] = {}
    for name in _shipped():
        data, _ = parse_yaml(f"{name}.yaml", spec_text(name))
        if type(data) is dict:
            out.setdefault(str(data.get("source", data.get("name", name))), name)
    return out


def count_trees() -> Mapping[str, Tree]:
    """Unknown-key count normalization per source, from the shipped specs' declared arrays and the
    codecs' own trees; each tree is made when a document first names its source."""
    return _CountTrees()


@functools.cache
def _all_count_trees() -> dict[str, Tree]:
    from mapc.engine import codecs

    trees = {program(name).spec.source: program(name).count_tree for name in shipped_names()}
    trees.update(codecs.count_trees())
    return trees


@functools.cache
def aliases() -> dict[str, str]:
    """Other names of the shipped formats (a spec's `aliases:`), e.g. a long form of its name; read from
    each spec's data (parsed once, or taken from the spec cache), as the spec reader reads them."""
    from mapc.engine.spec import parse_yaml

    out: dict[str, str] = {}
    for name in shipped_names():
        data, _ = parse_yaml(f"{name}.yaml", spec_text(name))
        listed = data.get("aliases") if type(data) is dict else None
        for alias in listed or ():
            out[str(alias)] = name
    return out
