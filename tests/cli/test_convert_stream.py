"""JSONL converted line by line (engine.convert.convert_lines, `mapc convert FILE.jsonl -o OUT`):
the same bytes as converting the file whole, one line in memory at a time, nothing written on error."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from conftest import FIXTURES, problem_lines

from mapc.cli.main import cli
from mapc.engine import convert

ATIF = sorted((FIXTURES / "atif").glob("*.json"))


def jsonl(tmp_path: Path, lines: list[bytes]) -> Path:
    path = tmp_path / "runs.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


@pytest.mark.parametrize("to", ["storyline", "atif", "actf", "openai-msg"])
def test_streamed_output_is_the_whole_conversion(runner: CliRunner, tmp_path: Path, to: str) -> None:
    lines = [
        orjson.dumps(orjson.loads(p.read_bytes())) for p in ATIF if p.name in ("sparse_13.json", "support-ticket.json")
    ]
    path = jsonl(tmp_path, lines)
    out = tmp_path / "out.json"
    streamed = runner.invoke(cli, ["convert", str(path), "--to", to, "-o", str(out)])
    whole = runner.invoke(cli, ["convert", str(path), "--to", to])
    assert streamed.exit_code == whole.exit_code == 0, streamed.stderr
    assert out.read_bytes() == whole.stdout_bytes


def test_one_line_gives_one_document(runner: CliRunner, tmp_path: Path) -> None:
    path = jsonl(tmp_path, [orjson.dumps(orjson.loads(ATIF[0].read_bytes()))])
    out = tmp_path / "out.json"
    assert runner.invoke(cli, ["convert", str(path), "--to", "atif", "-o", str(out)]).exit_code == 0
    assert isinstance(orjson.loads(out.read_bytes()), dict)


def test_bad_lines_are_all_reported_and_nothing_is_written(runner: CliRunner, tmp_path: Path) -> None:
    good = orjson.dumps(orjson.loads(ATIF[0].read_bytes()))
    path = jsonl(tmp_path, [good, b"{not json", good, b'{"schema_version": "ATIF-v1.7"}'])
    out = tmp_path / "out.json"
    result = runner.invoke(cli, ["convert", str(path), "--from", "atif", "--to", "storyline", "-o", str(out)])
    assert result.exit_code == 1
    lines = problem_lines(result.stderr, str(path))
    assert {line for line, _, _ in lines} == {"2", "4"}
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left either


def test_lines_are_read_lazily() -> None:
    seen: list[int] = []
    good = orjson.dumps(orjson.loads(ATIF[0].read_bytes()))

    def lines():
        for n in range(3):
            seen.append(n)
            yield good

    documents = convert.convert_lines("atif", "storyline", lines())
    next(documents)
    assert seen == [0]  # the first document comes before the second line is read


def test_row_corpora_and_grouping_targets_are_not_streamed() -> None:
    assert convert.streamable("atif", "storyline") and convert.streamable("storyline", "atif")
    assert not convert.streamable("openai-msg", "storyline")  # rows group across lines
    assert not convert.streamable("atif", "actf")  # attempts of one task group across lines
    assert not convert.streamable("atif", "agenticmd")
