"""The hand-written OpenAI baseline gives what mapc gives on the bench corpus, both ways (a fair race)."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson

from mapc.engine import convert

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.append(str(BENCH))  # bench/ is not a package: its modules import by their own names

import handwritten_openai as hw  # noqa: E402
import rows_openai  # noqa: E402


def test_the_baseline_matches_mapc_on_the_bench_corpus(tmp_path: Path) -> None:
    data = rows_openai._openai(0.3, tmp_path)
    stories = convert.into_storyline("openai-msg", data)
    assert orjson.loads(hw.forward_bytes(data)) == stories
    back = convert.from_storyline("openai-msg", stories)
    assert orjson.loads(hw.reverse_bytes(orjson.dumps(stories))) == back == orjson.loads(data)
