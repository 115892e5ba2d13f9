"""Codecs: formats that are not JSON documents, so that no mapping spec can describe them.

A spec maps one JSON document onto Storyline with pointer rules.  A format whose files are text of
another shape (Markdown with a YAML frontmatter, say) is instead a *codec*: a pair of functions,
``decode(data, path, options) -> [Storyline, …]`` and ``encode([Storyline, …]) -> text``, declared with the
path patterns and content test that detect its files and the count tree of its residual source.

The engine names no codec.  A catalog (engine/catalog.py) names a package whose modules may each
declare one by defining a module-level ``CODEC = Codec(...)``; the catalog imports every module of
that package the first time it is asked, and holds each ``CODEC`` it finds.  Each function here
takes the catalog to ask (None: the installed one).  `register` adds one by hand (before first
use: the catalog keeps the count trees it reads from here).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mapc.engine.options import Options
from mapc.engine.residual import Tree

if TYPE_CHECKING:
    from mapc.engine.catalog import Catalog

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


def register(codec: Codec, catalog: Catalog | None = None) -> Codec:
    """Add `codec` to `catalog`'s codecs (None: the installed catalog's); a second, different
    codec with the same name is an error."""
    table = _table(catalog)
    known = table.get(codec.name)
    if known is not None and known is not codec:
        raise ValueError(f"codec {codec.name!r} is already registered")
    table[codec.name] = codec
    return codec


def _table(catalog: Catalog | None) -> dict[str, Codec]:
    from mapc.engine import catalog as catalogs

    return (catalog or catalogs.installed()).codec_table()


def lookup(name: str, catalog: Catalog | None = None) -> Codec | None:
    """The codec called `name`, if any."""
    return _table(catalog).get(name)


def names(catalog: Catalog | None = None) -> list[str]:
    """The names of every codec, sorted."""
    return sorted(_table(catalog))


def codecs(catalog: Catalog | None = None) -> list[Codec]:
    """Every codec, by name."""
    table = _table(catalog)
    return [table[name] for name in sorted(table)]


def count_trees(catalog: Catalog | None = None) -> Mapping[str, Tree]:
    """The count tree of each codec's residual source."""
    return {codec.source: codec.count_tree for codec in codecs(catalog)}
