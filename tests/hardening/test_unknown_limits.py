"""Residual limits (docs/envelope.md): `mapc --max-unknown-fields N` / `--max-unknown-bytes N`."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from conftest import FIXTURES, problem_lines

from mapc.cli.main import cli
from mapc.engine.limits import Limits


def vendor_file(tmp_path: Path, n: int) -> Path:
    doc = json.loads((FIXTURES / "atif" / "sparse_13.json").read_bytes())
    doc.update({f"vendor_{i}": "x" * 10 for i in range(n)})
    path = tmp_path / "vendor.json"
    path.write_text(json.dumps(doc))
    return path


def test_limits_count_fields_and_bytes() -> None:
    story = {"unknown_fields": {"sources": {"atif": {"source_document_id": "ab", "fields": {"/x": 1, "/y": "zz"}}}}}
    assert Limits().problems(story) == []
    assert Limits(fields=2, bytes=2 + 2 + 1 + 2 + 4).problems(story) == []
    assert [p.code for p in Limits(fields=1).problems(story)] == ["unknown_fields.limit"]
    assert [p.pointer for p in Limits(bytes=10).problems(story)] == ["/unknown_fields"]


def test_the_cli_refuses_a_storyline_over_the_limits(runner: CliRunner, tmp_path: Path) -> None:
    path = vendor_file(tmp_path, 3)
    assert runner.invoke(cli, ["--max-unknown-fields", "3", "run", "atif", str(path)]).exit_code == 0
    result = runner.invoke(cli, ["--max-unknown-fields", "2", "run", "atif", str(path)])
    assert result.exit_code == 1
    assert problem_lines(result.stderr, str(path)) == [(None, "/", "unknown_fields.limit")]
    result = runner.invoke(cli, ["run", "atif", str(path)], env={"MAPC_MAX_UNKNOWN_BYTES": "20"})
    assert result.exit_code == 1 and "--max-unknown-bytes" in result.stderr
