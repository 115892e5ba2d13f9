"""The hand-written Claude Code baseline (bench/handwritten_claude.py) gives mapc's turns on the real
session, so the bench row compares the same work (mapc also keeps every other value and validates)."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson

import mapc

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))
import handwritten_claude  # noqa: E402

SESSION = Path(__file__).resolve().parents[1] / "data/fixtures/claude-code/258c7280-ae70-4798-800f-63464d01a85d.jsonl"


def test_the_handwritten_converter_gives_mapcs_turns() -> None:
    data = SESSION.read_bytes()
    (story,) = mapc.into_storyline("claude-code", data)
    mine = orjson.loads(handwritten_claude.forward_bytes(data))
    assert mine["session"] == story["session"]
    assert mine["turns"] == story["turns"]
