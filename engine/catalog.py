"""The catalog: which specs, functions and codecs the engine runs, named by the layer above it.

The engine knows no format.  A `Catalog` says where the shipped specs are (a package holding
``NAME.yaml`` files), which modules register spec functions (engine/functions.py) and which
package's modules declare codecs (engine/codecs.py); it is built at the top, by ``mapc``
(api/__init__.py) for the shipped formats, and installed here before the engine is used.  The
engine imports what the installed catalog names, and nothing of `mapc.mappings` by itself
(tests/test_layers.py).

Each spec is loaded and compiled once per process.  The count trees of all shipped specs and
codecs tell the Storyline validator how to normalize `unknown_key_counts` of each source
(REFERENCE.md §3).  This module is imported by ``import mapc``: it imports nothing heavy itself.
"""

from __future__ import annotations

import functools
import importlib
from typing import TYPE_CHECKING, NamedTuple

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
    for cached in (program, count_trees, aliases):
        cached.cache_clear()


def installed() -> Catalog:
    """The installed catalog (``import mapc`` installs the shipped one)."""
    if not _INSTALLED:
        raise RuntimeError("no catalog is installed: import mapc (or call mapc.engine.catalog.install) first")
    return _INSTALLED[0]


def shipped_names() -> list[str]:
    """Names of the built-in specs, one per YAML file in the catalog's spec package."""
    import importlib.resources

    files = importlib.resources.files(installed().specs)
    return sorted(p.name[: -len(".yaml")] for p in files.iterdir() if p.name.endswith(".yaml"))


def spec_text(name: str) -> str:
    """The YAML text of the built-in spec `name`."""
    import importlib.resources

    return importlib.resources.files(installed().specs).joinpath(f"{name}.yaml").read_text(encoding="utf-8")


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


@functools.cache
def count_trees() -> dict[str, Tree]:
    """Unknown-key count normalization per source, from the shipped specs' declared arrays and the
    codecs' own trees."""
    from mapc.engine import codecs

    trees = {program(name).spec.source: program(name).count_tree for name in shipped_names()}
    trees.update(codecs.count_trees())
    return trees


@functools.cache
def aliases() -> dict[str, str]:
    """Other names of the shipped formats (a spec's `aliases:`), e.g. a long form of its name."""
    out: dict[str, str] = {}
    for name in shipped_names():
        for alias in program(name).spec.aliases:
            out[alias] = name
    return out
