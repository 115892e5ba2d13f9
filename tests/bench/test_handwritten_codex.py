"""The hand-written Codex rollout baseline gives what mapc gives on the bench corpus, both ways (a fair race)."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson

from mapc.engine import convert

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.append(str(BENCH))  # bench/ is not a package: its modules import by their own names

import handwritten_codex as hw  # noqa: E402
import rows_codex  # noqa: E402


def test_the_baseline_matches_mapc_on_the_bench_corpus(tmp_path: Path) -> None:
    data = rows_codex._codex(0.2, tmp_path)
    stories = convert.into_storyline("codex", data, jsonl=True)
    assert orjson.loads(hw.forward_bytes(data)) == stories
    back = convert.from_storyline("codex", stories)
    records = [orjson.loads(line) for line in data.splitlines()]
    assert [orjson.loads(line) for line in hw.reverse_bytes(orjson.dumps(stories)).splitlines()] == back == records
