"""One protocol for every format a catalog holds: the hub, spec formats and codecs.

A `Format` reads a file into Storylines (`decode`), writes Storylines as a document of its own
(`encode`), says how its residuals are counted (`count_tree`), whether a JSONL input of it maps
line by line and whether it writes each tree of Storylines as a document of its own (`streamable`
of a pair), and whether a file looks like one of its own (`detect`).  There are three kinds:

- the hub, Storyline itself (``storyline``): read and checked as it is;
- a spec format (``spec``): a YAML spec compiled by the engine (each mappings/*.yaml);
- a codec (``codec``): a format that is not JSON, read and written by code (engine/codecs.py).

`Catalog.format(name)` gives one; `decode`/`encode` run the whole job of engine/convert.py
(validation, limits, envelopes, provenance), so a caller holding a `Format` needs nothing else.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, Protocol

from mapc.engine.options import DEFAULT, Options

if TYPE_CHECKING:
    from mapc.engine.catalog import Catalog
    from mapc.engine.codecs import Codec
    from mapc.engine.compile import Program
    from mapc.engine.residual import Tree

HUB = "storyline"


class Format(Protocol):
    """What every format offers (see the module docstring)."""

    name: str
    kind: str

    def decode(
        self, data: bytes, *, path: str | None = None, jsonl: bool = False, options: Options = DEFAULT
    ) -> list[dict[str, Any]]:
        """Every Storyline in the file `data`, validated; MapcError on bad input."""
        ...

    def encode(self, stories: list[dict[str, Any]], *, carry: bool = True) -> Any:
        """The document (a JSON value; text for a codec) for `stories`; MapcError if it cannot be written."""
        ...

    @property
    def count_tree(self) -> Tree | None:
        """How the residuals of this format's source are counted (None: it writes none of its own)."""
        ...

    @property
    def lines_alone(self) -> bool:
        """A JSONL input of this format maps line by line (each line is a whole document)."""
        ...

    @property
    def trees_alone(self) -> bool:
        """This format writes each tree of Storylines as a document of its own."""
        ...

    def detect(self, path: str, data: bytes | None = None) -> bool:
        """Whether this format's own rules (path patterns, then content) take the file."""
        ...


def streamable(source: Format, target: Format) -> bool:
    """Whether a JSONL input converts line by line with the result of converting it whole."""
    return source.lines_alone and target.trees_alone


@dataclass(frozen=True)
class _Converted:
    """The part every kind shares: reading and writing through engine/convert.py by name."""

    name: str
    catalog: Catalog

    def decode(
        self, data: bytes, *, path: str | None = None, jsonl: bool = False, options: Options = DEFAULT
    ) -> list[dict[str, Any]]:
        """Every Storyline in the file `data`, validated; MapcError on bad input."""
        from mapc.engine import convert

        return convert.into_storyline(self.name, data, jsonl=jsonl, path=path, options=options)

    def encode(self, stories: list[dict[str, Any]], *, carry: bool = True) -> Any:
        """The document for `stories` (see engine/convert.py `from_storyline`)."""
        from mapc.engine import convert

        return convert.from_storyline(self.name, stories, carry=carry)

    def detect(self, path: str, data: bytes | None = None) -> bool:
        """Whether this format's own rules take the file (engine/detect.py's, for this format only)."""
        from mapc.engine import detect

        name = PurePath(path).name
        patterns = [p for p, fmt in detect.path_rules(self.catalog) if fmt == self.name]
        if any(fnmatch.fnmatchcase(name if "/" not in p else path, p) for p in patterns):
            return True
        if data is None:
            return False
        return detect.by_content(data, jsonl=path.endswith((".jsonl", ".ndjson")), catalog=self.catalog) == self.name


@dataclass(frozen=True)
class HubFormat(_Converted):
    """Storyline itself."""

    kind: str = "hub"

    @property
    def count_tree(self) -> Tree | None:
        """None: the hub carries the residuals of other sources, counted by their trees."""
        return None

    @property
    def lines_alone(self) -> bool:
        """Each line of a Storyline JSONL is a document."""
        return True

    @property
    def trees_alone(self) -> bool:
        """Each Storyline is written as it is."""
        return True


@dataclass(frozen=True)
class SpecFormat(_Converted):
    """A format described by a YAML spec."""

    program: Program | None = None
    kind: str = "spec"

    @property
    def count_tree(self) -> Tree | None:
        """The spec's count tree (from its declared arrays)."""
        assert self.program is not None
        return self.program.count_tree

    @property
    def lines_alone(self) -> bool:
        """Neither a row corpus, whose rows group across lines, nor an event stream (the whole file)."""
        assert self.program is not None
        return self.program.spec.rows is None and self.program.spec.stream is None

    @property
    def trees_alone(self) -> bool:
        """Neither members of one document (`document.each`) nor rows nor a stream."""
        assert self.program is not None
        return self.program.each is None and self.lines_alone


@dataclass(frozen=True)
class CodecFormat(_Converted):
    """A format that is not JSON, read and written by a codec."""

    codec: Codec | None = None
    kind: str = "codec"

    @property
    def count_tree(self) -> Tree | None:
        """The codec's own count tree."""
        assert self.codec is not None
        return self.codec.count_tree

    @property
    def lines_alone(self) -> bool:
        """A codec's file is read whole."""
        return False

    @property
    def trees_alone(self) -> bool:
        """A codec writes all its Storylines as one text."""
        return False


def format_of(catalog: Catalog, name: str) -> Format:
    """The format called `name` (or an alias) in `catalog`; MapcError (spec.not_found) for none."""
    if name == HUB:
        return HubFormat(HUB, catalog)
    codec = catalog.codec_table().get(name)
    if codec is not None:
        return CodecFormat(name, catalog, codec=codec)
    name = catalog.aliases().get(name, name)  # a spec path keeps its name: convert.py reads it by path
    return SpecFormat(name, catalog, program=catalog.program(name))


def every_format(catalog: Catalog) -> list[Format]:
    """Every format of `catalog`: the hub, its specs, its codecs."""
    return [format_of(catalog, name) for name in [HUB, *catalog.shipped_names(), *sorted(catalog.codec_table())]]
