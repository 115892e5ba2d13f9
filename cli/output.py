"""What every command shares: JSON output bytes, and naming the file a MapcError is about."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson

from mapc.cli.boundary import file_context
from mapc.engine import catalog
from mapc.engine.compile import Program


def dump_json(value: Any) -> bytes:
    """Pretty JSON (2-space indent) with a trailing newline."""
    return _pretty(value) + b"\n"


def _pretty(value: Any) -> bytes:
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2)
    except orjson.JSONEncodeError:
        # orjson writes 254 levels of nesting but reads 1,024: what mapc read, it writes, with the
        # standard library (the same layout) and room for the depth JSON parsing allows.
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 5_000))
        try:
            return json.dumps(value, indent=2, ensure_ascii=False).encode("utf-8", "surrogatepass")
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
    (cli/boundary.py) reports its problems (as JSON with `as_json`) and exits 1."""
    with file_context(file, as_json=as_json):
        yield


def spec_program(spec: str) -> Program:
    """The compiled spec named on the command line (already resolved: cli/params.py `resolve_spec`).

    A spec file with mistakes is reported with its file, line and column (exit 1)."""
    with fail_on(spec):
        return catalog.program(spec)
