"""Shared fixtures: paths to the shipped test data and a click runner."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

# The CLI's spec cache (engine/cache.py) goes to a directory of this test run, never the user's.
os.environ.setdefault("MAPC_CACHE_DIR", tempfile.mkdtemp(prefix="mapc-test-cache-"))

DATA = Path(__file__).parent / "data"
FIXTURES = DATA / "fixtures"


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


# One problem line of the CLI: FILE: [line N: ]POINTER: message [code] (spec place)
PROBLEM_LINE = re.compile(
    r"^(?P<file>.+?): (?:line (?P<line>\d+): )?(?P<pointer>/\S*): (?P<message>.+) \[(?P<code>[A-Za-z_.]+)\]"
    r"(?: \((?P<spec_at>.+)\))?$"
)


def problem_lines(stderr: str, file: str) -> list[tuple[str | None, str, str]]:
    """(line, pointer, code) of every stderr line; each must be a problem line about `file`."""
    out = []
    for text in stderr.splitlines():
        m = PROBLEM_LINE.match(text)
        assert m, f"not a problem line: {text!r}"
        assert m["file"] == file, text
        out.append((m["line"], m["pointer"], m["code"]))
    return out


def write(path: Path, value: Any) -> Path:
    """Write `value` (bytes, or JSON) to `path`."""
    path.write_bytes(value if isinstance(value, bytes) else orjson.dumps(value))
    return path
