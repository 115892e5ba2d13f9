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
# A chat conversation with a secret in every place redaction looks (tests of engine/redact.py and --redact).
SECRET_CHAT = {
    "messages": [
        {"role": "system", "content": "Use the key sk-proj-abcdefghijklmnopqrstuvwx for the API."},
        {"role": "user", "content": [{"type": "text", "text": "AWS id AKIAABCDEFGHIJKLMNOP please"}]},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "curl", "arguments": '{"header": "Authorization: Bearer abc.def.ghi12345"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "x-api-key: hunter2hunter2 ok"},
        {"role": "assistant", "content": "Done; nothing secret here."},
    ]
}


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
