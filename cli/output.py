"""What every command shares: JSON output bytes and the MapcError → exit 1 boundary."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson

from mapc.cli.render import report
from mapc.engine.problems import MapcError


def dump_json(value: Any) -> bytes:
    """Pretty JSON (2-space indent) with a trailing newline."""
    return orjson.dumps(value, option=orjson.OPT_INDENT_2) + b"\n"


@contextmanager
def fail_on(file: str, *, as_json: bool = False) -> Iterator[None]:
    """Report a MapcError raised inside as problems of `file` and exit 1 (invalid data)."""
    try:
        yield
    except MapcError as exc:
        report(exc.source or file, exc.problems, as_json=as_json)
        sys.exit(1)
