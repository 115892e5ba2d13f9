"""The Claude Code session rows (`--only claude`): the orjson floor, a hand-written converter
(handwritten_claude.py: the same turns, nothing else kept), and mapc's claude-code spec forward
(with residuals, validation) and reverse.

Data set `claude`: the real session of tests/data/fixtures/claude-code (1,863 records, 2.8 MB),
whatever `--mb` says (one session is one file; a session is not tiled).
"""

from __future__ import annotations

from pathlib import Path

import handwritten_claude
import orjson
from harness import Sample, Work, bench, dataset, load

from mapc.engine import convert, storyline

FIXTURE = (
    Path(__file__).resolve().parents[1] / "tests/data/fixtures/claude-code/258c7280-ae70-4798-800f-63464d01a85d.jsonl"
)


@dataset("claude")
def _claude(mb: float, data_dir: Path) -> bytes:
    return FIXTURE.read_bytes()


@dataset("claude-storyline")
def _claude_storyline(mb: float, data_dir: Path) -> bytes:
    return orjson.dumps(convert.into_storyline("claude-code", load("claude", mb, data_dir).data))


@bench("orjson loads+dumps claude (floor)", group="claude", data="claude", baseline="handwritten claude forward")
def _floor(sample: Sample) -> Work:
    return lambda: b"".join(orjson.dumps(orjson.loads(line)) for line in sample.data.splitlines())


@bench("handwritten claude forward", group="claude", data="claude", baseline="handwritten claude forward")
def _handwritten(sample: Sample) -> Work:
    return lambda: handwritten_claude.forward_bytes(sample.data)


@bench("mapc claude forward", group="claude", data="claude", baseline="handwritten claude forward")
def _mapc_forward(sample: Sample) -> Work:
    return lambda: orjson.dumps(convert.into_storyline("claude-code", sample.data))


@bench("mapc claude reverse", group="claude", data="claude-storyline", baseline="handwritten claude forward")
def _mapc_reverse(sample: Sample) -> Work:
    def work() -> bytes:
        records = convert.from_storyline("claude-code", storyline.documents(orjson.loads(sample.data)))
        return b"".join(orjson.dumps(r) + b"\n" for r in records)

    return work


@bench("mapc claude → atif", group="claude", data="claude", baseline="handwritten claude forward")
def _mapc_atif(sample: Sample) -> Work:
    return lambda: orjson.dumps(convert.convert("claude-code", "atif", sample.data))
