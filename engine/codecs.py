"""Codecs: formats that are not JSON documents, so that no mapping spec can describe them.

A spec maps one JSON document onto Storyline with pointer rules.  A format whose files are text of
another shape (Markdown with a YAML frontmatter, say) is instead a *codec*: a pair of functions,
``decode(data, path, options) -> [Storyline, …]`` and ``encode([Storyline, …]) -> text``, declared with the
path patterns and content test that detect its files and the count tree of its residual source.

The engine names no codec.  The installed catalog (engine/catalog.py) names a package whose
modules may each declare one by defining a module-level ``CODEC = Codec(...)``; the registry
imports every module of that package the first time it is asked, and registers each ``CODEC`` it
finds.  `register` adds one by hand (before first use: the
Storyline validator caches the count trees it reads from here).
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mapc.engine.options import Options
from mapc.engine.residual import Tree

Decode = Callable[[bytes, "str | None", Options], list[dict[str, Any]]]
Encode = Callable[[list[dict[str, Any]]], "str | bytes"]


@dataclass(frozen=True, slots=True)
class Codec:
    """A format read and written by code rather than by a mapping spec.

    `decode` turns a file's bytes (and its path, when known) into Storylines, raising `MapcError`
    with pointers into the file's logical document; it is given the job's `Options`
    (engine/options.py), the settings it must honour (``allow_duplicate_keys``: a key repeated in one
    object keeps its last value instead of being refused), and reads no other setting.  `encode`
    turns Storylines (already valid) into the file's text (a ``str``; ``bytes`` for a binary
    format).  `source` is the residual source name the codec writes into ``unknown_fields``,
    normalized for counting by `count_tree`.
    `path_patterns` are shell patterns on the file name; `content_test` is asked about input that
    is not JSON (JSON inputs belong to the specs' content rules).
    """

    name: str
    source: str
    decode: Decode
    encode: Encode
    path_patterns: tuple[str, ...] = ()
    content_test: Callable[[bytes], bool] | None = None
    count_tree: Tree = field(default_factory=dict)
    description: str = ""


_REGISTRY: dict[str, Codec] = {}


def register(codec: Codec) -> Codec:
    """Add `codec` to the registry; a second, different codec with the same name is an error."""
    known = _REGISTRY.get(codec.name)
    if known is not None and known is not codec:
        raise ValueError(f"codec {codec.name!r} is already registered")
    _REGISTRY[codec.name] = codec
    return codec


@functools.cache
def _load() -> None:
    """Import the modules of the catalog's codec package once and register every ``CODEC`` they define."""
    from mapc.engine import catalog

    name = catalog.installed().codecs
    if name is None:
        return
    package = importlib.import_module(name)
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{name}.{info.name}")
        codec = getattr(module, "CODEC", None)
        if isinstance(codec, Codec):
            register(codec)


def lookup(name: str) -> Codec | None:
    """The codec called `name`, if any."""
    _load()
    return _REGISTRY.get(name)


def names() -> list[str]:
    """The names of every registered codec, sorted."""
    _load()
    return sorted(_REGISTRY)


def codecs() -> list[Codec]:
    """Every registered codec, by name."""
    _load()
    return [_REGISTRY[name] for name in sorted(_REGISTRY)]


def count_trees() -> Mapping[str, Tree]:
    """The count tree of each codec's residual source."""
    return {codec.source: codec.count_tree for codec in codecs()}
