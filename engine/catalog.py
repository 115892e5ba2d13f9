"""The shipped mapping specs (package data in `mapc.mappings`), found by name or by path.

Each spec is loaded and compiled once per process.  The count trees of all shipped specs and
codecs (engine/codecs.py) tell the Storyline validator how to normalize `unknown_key_counts` of
each source (REFERENCE.md §3).
"""

from __future__ import annotations

import functools
import importlib.resources
from pathlib import Path

from mapc.engine import codecs
from mapc.engine.compile import Program, compile_spec
from mapc.engine.problems import MapcError
from mapc.engine.residual import Tree
from mapc.engine.spec import load_spec


def shipped_names() -> list[str]:
    """Names of the built-in specs, one per YAML file in `mapc.mappings`."""
    files = importlib.resources.files("mapc.mappings")
    return sorted(p.name[: -len(".yaml")] for p in files.iterdir() if p.name.endswith(".yaml"))


@functools.cache
def program(name_or_path: str) -> Program:
    """The compiled spec for a built-in name (or an alias a spec declares) or a path to a YAML spec."""
    if name_or_path not in shipped_names() and name_or_path in aliases():
        return program(aliases()[name_or_path])
    if name_or_path in shipped_names():
        resource = importlib.resources.files("mapc.mappings").joinpath(f"{name_or_path}.yaml")
        return compile_spec(load_spec(f"{name_or_path}.yaml", resource.read_text(encoding="utf-8")))
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
