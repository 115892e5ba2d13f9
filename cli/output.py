"""What every command shares: JSON output bytes, and naming the file a MapcError is about."""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click
import orjson

from mapc.cli.boundary import file_context, the_catalog
from mapc.cli.render import warning_line

if TYPE_CHECKING:
    from mapc.engine.compile import Program


def dump_json(value: Any) -> bytes:
    """Pretty JSON (2-space indent) with a trailing newline."""
    return _pretty(value, newline=True)


def _pretty(value: Any, *, newline: bool = False) -> bytes:
    # The newline is orjson's option, not `+ b"\n"`: an export's output is hundreds of MB, copied once more.
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2 | (orjson.OPT_APPEND_NEWLINE if newline else 0))
    except orjson.JSONEncodeError:
        # orjson writes 254 levels of nesting but reads 1,024: what mapc read, it writes, with the
        # standard library (the same layout) and room for the depth JSON parsing allows.
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 5_000))
        try:
            text = json.dumps(value, indent=2, ensure_ascii=False) + ("\n" if newline else "")
            return text.encode("utf-8", "surrogatepass")
        finally:
            sys.setrecursionlimit(limit)


def json_chunks(documents: Iterator[Any]) -> Iterator[bytes]:
    """`dump_json` of the documents, made as they come: one document alone, several as an array
    (byte for byte what `dump_json` writes for the list)."""
    first = next(documents, _NONE)
    if first is _NONE:
        yield b"[]\n"
        return
    second = next(documents, _NONE)
    if second is _NONE:
        yield dump_json(first)
        return
    yield b"[\n" + _item(first)
    yield b",\n" + _item(second)
    for document in documents:
        yield b",\n" + _item(document)
    yield b"\n]\n"


_NONE = object()


def _item(document: Any) -> bytes:
    return b"  " + _pretty(document).replace(b"\n", b"\n  ")


def jsonl_chunks(documents: Iterator[Any]) -> Iterator[bytes]:
    """JSONL: one compact JSON document a line (a list of documents is one line per element), for
    an output named `.jsonl`/`.ndjson` (a fine-tuning file is one conversation a line)."""
    for document in documents:
        for item in document if type(document) is list else [document]:
            yield orjson.dumps(item) + b"\n"


def redact_options(fn: Any) -> Any:
    """`--redact` and `--redact-pattern REGEX` (engine/redact.py) for commands that export."""
    fn = click.option(
        "--redact-pattern",
        "redact_patterns",
        multiple=True,
        metavar="REGEX",
        help="Also redact matches of this regular expression (repeatable; implies --redact).",
    )(fn)
    return click.option(
        "--redact",
        is_flag=True,
        help="Replace API keys, bearer tokens and auth headers in message and tool text by [REDACTED:kind].",
    )(fn)


def redactor_of(redact: bool, patterns: tuple[str, ...]) -> Any:
    """The Redactor the options ask for, or None; a bad pattern is a usage error."""
    from mapc.engine.redact import Redactor

    if not redact and not patterns:
        return None
    try:
        return Redactor.of(patterns)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--redact-pattern") from None


def output_bytes(path: str | None, document: Any) -> bytes:
    """`document_bytes`, or JSONL (`jsonl_chunks`) when the output `path` is named `.jsonl`/`.ndjson`."""
    if path is not None and path.endswith((".jsonl", ".ndjson")) and type(document) is not str:
        return b"".join(jsonl_chunks(iter([document])))
    return document_bytes(document)


def document_bytes(document: Any) -> bytes:
    """A converted document as file bytes: a text format's ``str`` as UTF-8 (AgenticMD, from a
    codec), ``bytes`` as they are, any JSON value through `dump_json`."""
    if type(document) is str:
        return document.encode("utf-8")
    if type(document) is bytes:
        return document
    return dump_json(document)


@contextmanager
def fail_on(file: str, *, as_json: bool = False) -> Iterator[None]:
    """A MapcError raised inside is about `file` (unless it names its own source): the error boundary
    (cli/boundary.py) reports its problems (as JSON with `as_json`) and exits 1.

    A warning raised inside that names its place (``pointer``, ``code``: a codec's notice, such as
    an edited AgenticMD view) is printed as ``warning: FILE: POINTER: message [code]``.
    """
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught, file_context(file, as_json=as_json):
            yield
    finally:
        show_warnings(file, caught)


def show_warnings(file: str, caught: list[warnings.WarningMessage]) -> None:
    """Print recorded warnings: located ones as warning lines of `file`, others as Python would."""
    for w in caught:
        if isinstance(getattr(w.message, "pointer", None), str) and isinstance(getattr(w.message, "code", None), str):
            click.echo(warning_line(file, w.message), err=True)
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)


def spec_program(spec: str) -> Program:
    """The compiled spec named on the command line (already resolved: cli/params.py `resolve_spec`).

    A spec file with mistakes is reported with its file, line and column (exit 1)."""
    with fail_on(spec):
        return the_catalog().program(spec)
