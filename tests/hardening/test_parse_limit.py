"""Values nested up to the parse limit (orjson reads 1,024 levels) convert and hop back exactly;
one level past it is refused as invalid JSON, with a code, never a RecursionError.

Below the limit mapc's own walks (the canonical encoder of the document id, the hop's comparison and
diff, the loss report's sizes) ran out of Python frames at about 990 levels: `input.too_deep` for a
value the parser had just read."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import FIXTURES

PARSE_LIMIT = 1_024  # orjson.loads' depth limit: the deepest document mapc reads


def _deep_document(levels: int) -> bytes:
    """The first shipped ATIF fixture with a key whose value makes the document `levels` deep."""
    doc = orjson.loads(sorted((FIXTURES / "atif").glob("*.json"))[0].read_bytes())
    inner = levels - 1  # the document's root object is the first level
    return orjson.dumps({**doc, "zz_deep": "@MARK@"}).replace(b'"@MARK@"', b"[" * inner + b"]" * inner)


def _same(a: Any, b: Any) -> bool:
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))  # Python's == walks as deep as the values
    try:
        return bool(a == b)
    finally:
        sys.setrecursionlimit(limit)


def _run(runner: Any, args: list[str]) -> Any:
    from mapc.cli.main import cli

    result = runner.invoke(cli, args)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # a traceback is the bug this file is about
    return result


def test_the_parse_limit_is_what_the_generators_reach():
    """The limit this file tests is the parser's: a document at it parses, one past it does not."""
    orjson.loads(_deep_document(PARSE_LIMIT))
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(_deep_document(PARSE_LIMIT + 1))


@pytest.mark.parametrize("levels", [995, 1_000])
def test_a_value_near_the_parse_limit_hops_back_exactly(runner, tmp_path: Path, levels: int):
    """ATIF → ACTF → ATIF of a document `levels` deep: no `input.too_deep`, and A comes back."""
    source = tmp_path / "deep.json"
    source.write_bytes(_deep_document(levels))
    there, back = tmp_path / "deep.actf.json", tmp_path / "back.json"
    first = _run(runner, ["convert", str(source), "--from", "atif", "--to", "actf", "-o", str(there)])
    assert first.exit_code == 0, first.output
    second = _run(runner, ["convert", str(there), "--from", "actf", "--to", "atif", "-o", str(back)])
    assert second.exit_code == 0, second.output
    assert _same(orjson.loads(back.read_bytes()), orjson.loads(source.read_bytes()))


def test_a_document_at_the_parse_limit_converts(runner, tmp_path: Path):
    source = tmp_path / "deep.json"
    source.write_bytes(_deep_document(PARSE_LIMIT))
    out = tmp_path / "s.json"
    result = _run(runner, ["convert", str(source), "--from", "atif", "--to", "storyline", "-o", str(out)])
    assert result.exit_code == 0, result.output


def test_a_document_past_the_parse_limit_is_refused_clearly(runner, tmp_path: Path):
    source = tmp_path / "deep.json"
    source.write_bytes(_deep_document(PARSE_LIMIT + 1))
    result = _run(runner, ["convert", str(source), "--from", "atif", "--to", "actf", "-o", str(tmp_path / "o.json")])
    assert result.exit_code == 1
    assert "json.invalid" in result.output and "depth limit exceeded" in result.output
    assert "deep.json" in result.output
    assert not (tmp_path / "o.json").exists()
