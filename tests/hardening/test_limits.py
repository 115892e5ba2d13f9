"""Input limits: `mapc --max-input-bytes N` (or MAPC_MAX_INPUT_BYTES) refuses larger inputs clearly."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from conftest import FIXTURES, problem_lines

from mapc.cli.main import cli

SUPPORT = FIXTURES / "atif" / "support-ticket.json"


def test_a_file_over_the_limit_is_refused_before_it_is_read(runner: CliRunner) -> None:
    size = SUPPORT.stat().st_size
    result = runner.invoke(cli, ["--max-input-bytes", str(size - 1), "validate", "--format", "atif", str(SUPPORT)])
    assert result.exit_code == 1
    assert problem_lines(result.stderr, str(SUPPORT)) == [(None, "/", "input.too_large")]
    assert f"{size} bytes" in result.stderr
    ok = runner.invoke(cli, ["--max-input-bytes", str(size), "validate", "--format", "atif", str(SUPPORT)])
    assert ok.exit_code == 0, ok.stderr


def test_stdin_over_the_limit_is_refused(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["run", "atif", "-"], input=SUPPORT.read_bytes(), env={"MAPC_MAX_INPUT_BYTES": "10"})
    assert result.exit_code == 1
    assert problem_lines(result.stderr, "-") == [(None, "/", "input.too_large")]
    assert result.stdout == ""


def test_a_corpus_job_fails_only_the_files_over_the_limit(runner: CliRunner, tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    small = src / "small.json"
    small.write_bytes(SUPPORT.read_bytes())
    big = src / "big.json"
    big.write_bytes((FIXTURES / "atif" / "multimodal_18.json").read_bytes())
    limit = SUPPORT.stat().st_size
    args = ["--max-input-bytes", str(limit), "convert", str(src), "--to", "storyline", "-o", str(tmp_path / "out")]
    result = runner.invoke(cli, [*args, "--workers", "1"])
    assert result.exit_code == 1
    assert "input.too_large" in result.stderr and str(big) in result.stderr
    assert (tmp_path / "out" / "small.storyline.json").is_file()
    assert not list((tmp_path / "out").glob("big*"))


def test_the_limit_must_be_positive(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["--max-input-bytes", "0", "validate", str(SUPPORT)])
    assert result.exit_code == 2


def test_duplicate_keys_are_refused_by_default(runner: CliRunner, tmp_path: Path) -> None:
    """mapc's decision, stricter than the reference: a repeated key is refused (issue 14 §7)."""
    path = tmp_path / "dup.json"
    path.write_bytes(
        b'{"schema_version":"storyline/v1","session":"a","session":"b","agent":{"id":"x","id":"y"},"turns":[]}'
    )
    expected = [(None, "/session", "json.duplicate_key"), (None, "/agent/id", "json.duplicate_key")]
    for flags in ([], ["--reject-duplicate-keys"]):  # the old flag is still accepted: it is the default now
        result = runner.invoke(cli, [*flags, "validate", str(path)])
        assert result.exit_code == 1
        assert problem_lines(result.stderr, str(path)) == expected
    # Knowingly: the last value wins, as in JSON readers.
    assert runner.invoke(cli, ["--allow-duplicate-keys", "validate", str(path)]).exit_code == 0
    lines = tmp_path / "dup.jsonl"
    lines.write_bytes(b'{"a": 1}\n' + path.read_bytes() + b"\n")
    result = runner.invoke(cli, ["validate", str(lines)])
    assert ("2", "/session", "json.duplicate_key") in problem_lines(result.stderr, str(lines))


def test_a_converted_format_refuses_a_repeated_key_too(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "dup.json"
    data = SUPPORT.read_bytes()
    path.write_bytes(data.replace(b'"session_id":', b'"session_id": "other", "session_id":', 1))
    result = runner.invoke(cli, ["convert", str(path), "--from", "atif", "--to", "storyline"])
    assert result.exit_code == 1
    assert problem_lines(result.stderr, str(path)) == [(None, "/session_id", "json.duplicate_key")]
    result = runner.invoke(cli, ["--allow-duplicate-keys", "convert", str(path), "--from", "atif", "--to", "storyline"])
    assert result.exit_code == 0, result.output
