"""Option and argument types every command shares: sizes with units, format names, spec names.

Each type turns what a person types into the value the command needs, or fails as a usage error
(exit 2) that says what is accepted.  Format names are case-insensitive and take every alias a spec
declares (``openai-messages`` for ``openai-msg``), the same in every command.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import click

# The engine is imported inside the functions: `mapc --help` and the types themselves stay cheap.

EVENTS_HINT = (
    "events live only in Lance: append JSONL records with `mapc events append`, "
    "and turn events.lance into Storylines with `mapc events project` (docs/store.md)"
)

# Decimal units are powers of 1,000 (as disks and networks count), binary ones of 1,024.
_UNITS = {
    "": 1,
    "b": 1,
    "k": 10**3,
    "kb": 10**3,
    "m": 10**6,
    "mb": 10**6,
    "g": 10**9,
    "gb": 10**9,
    "t": 10**12,
    "tb": 10**12,
    "ki": 2**10,
    "kib": 2**10,
    "mi": 2**20,
    "mib": 2**20,
    "gi": 2**30,
    "gib": 2**30,
    "ti": 2**40,
    "tib": 2**40,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")


def parse_size(text: str) -> int:
    """Bytes of a size such as ``100``, ``1k`` (1,000), ``1KiB`` (1,024), ``10MB`` or ``1.5G``.

    Units are case-insensitive; ValueError when `text` is not a whole, positive number of bytes."""
    m = _SIZE.match(text)
    unit = m and _UNITS.get(m[2].lower())
    if not m or unit is None:
        raise ValueError(f"{text!r} is not a size: say a number of bytes, or one with a unit (10k, 10MB, 1MiB)")
    number = float(m[1]) * unit if "." in m[1] else int(m[1]) * unit
    if number != int(number):
        raise ValueError(f"{text!r} is not a whole number of bytes")
    if number < 1:
        raise ValueError(f"{text!r} is not a positive size")
    return int(number)


class Size(click.ParamType):
    """A positive number of bytes, with an optional unit (see `parse_size`)."""

    name = "size"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            if value < 1:
                self.fail(f"{value} is not a positive size", param, ctx)
            return value
        try:
            return parse_size(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


class Count(click.ParamType):
    """A positive whole number; a thousand may be written ``1k`` (the same units as sizes)."""

    name = "count"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        return Size().convert(value, param, ctx)


SIZE = Size()
COUNT = Count()


def format_names() -> str:
    """Every format name, each alias after its format: ``storyline, atif, …, openai-msg (openai-messages), …``."""
    from mapc.cli.boundary import the_catalog
    from mapc.engine import convert

    by_format: dict[str, list[str]] = {}
    for alias, name in the_catalog().aliases().items():
        by_format.setdefault(name, []).append(alias)
    return ", ".join(
        f"{f} ({', '.join(by_format[f])})" if f in by_format else f for f in convert.formats(catalog=the_catalog())
    )


def canonical_format(value: str) -> str | None:
    """The format `value` names (any case, or an alias), or None."""
    from mapc.cli.boundary import the_catalog
    from mapc.engine import convert

    folded = value.strip().lower()
    if folded in the_catalog().shipped_names() or folded == convert.STORYLINE:  # a spec's name imports no codec
        return folded
    alias = the_catalog().aliases().get(folded)
    if alias is not None:
        return alias
    return (
        folded if folded in convert.formats(catalog=the_catalog()) else None
    )  # a codec's name: the codecs are imported


class FormatName(click.ParamType):
    """A format name (any case, or an alias), turned into its canonical name.

    With `specs`, the path of a YAML spec file is taken too (as the path), for the commands that run a
    format written by its author (``convert --to ./my-atif.yaml``)."""

    name = "format"

    def __init__(self, *, specs: bool = False) -> None:
        self.specs = specs

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        if not isinstance(value, str):
            return value  # type: ignore[no-any-return]
        fmt = canonical_format(value)
        if fmt is not None:
            return fmt
        if value.strip().lower() == "events":
            self.fail(EVENTS_HINT, param, ctx)
        if self.specs and Path(value).is_file():
            return value
        spec = "; or the path of a YAML spec" if self.specs else ""
        self.fail(f"{value!r} is not a format mapc knows; the formats are {format_names()}{spec}", param, ctx)

    def shell_complete(self, ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
        from click.shell_completion import CompletionItem

        from mapc.cli.boundary import the_catalog
        from mapc.engine import convert

        names = [*convert.formats(catalog=the_catalog()), *the_catalog().aliases()]
        return [CompletionItem(n) for n in names if n.startswith(incomplete.lower())]


FORMAT = FormatName()
FORMAT_OR_SPEC = FormatName(specs=True)


def resolve_spec(value: str, *, note: bool = True) -> str:
    """The spec `value` names on the command line: an existing file's path as given, else a built-in
    name (any case, or an alias).  A name ending in ``.yaml`` that is no file here, but is a built-in's
    file name (``atif.yaml``), is that built-in, said on stderr when `note`.  Anything else, or a format
    that has no spec (Storyline, a codec), is a usage error naming what there is."""
    from mapc.cli.boundary import the_catalog
    from mapc.engine import convert

    if Path(value).is_file():
        return value
    fmt = canonical_format(value)
    if fmt is None and value.lower().endswith((".yaml", ".yml")):
        fmt = canonical_format(Path(value).name.rsplit(".", 1)[0])
        if fmt is not None and fmt in the_catalog().shipped_names():
            if note:
                click.echo(
                    f"mapc: no file {value} here; using the built-in spec {fmt} (`mapc spec path {fmt}` shows it)",
                    err=True,
                )
            return fmt
    if fmt is not None and fmt in the_catalog().shipped_names():
        return fmt
    known = ", ".join(the_catalog().shipped_names())
    if fmt == convert.STORYLINE:
        message = "storyline is the hub format itself: it has no mapping spec"
    elif fmt is not None and the_catalog().trace_spec_text(fmt) is not None:
        message = (
            f"{fmt} is a span-tree spec (mappings/traces/{fmt}.yaml, run as a codec): `mapc spec show {fmt}` "
            "prints it; the other spec commands read mapping specs only"
        )
    elif fmt is not None and _is_codec(fmt):
        message = f"{fmt} is a codec (a format read and written in Python), not a mapping spec: it has no YAML"
    else:
        message = f"no spec {value!r}: not a file, nor a built-in"
    raise click.BadParameter(f"{message} (built-in specs: {known})", param_hint="SPEC")


def _is_codec(fmt: str) -> bool:
    from mapc.cli.boundary import the_catalog
    from mapc.engine import codecs

    return codecs.lookup(fmt, catalog=the_catalog()) is not None
