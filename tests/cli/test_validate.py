"""`mapc validate FILE... [--format FMT] [--json]`: Storyline and ATIF files, text and JSON reports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from conftest import FIXTURES, problem_lines

from mapc.cli.main import cli
from mapc.engine.convert import into_storyline

ATIF = FIXTURES / "atif"
ATIF_FIXTURES = sorted(ATIF.glob("*.json"))

# Four problems at once: R-A, R-S, R-SRC (schema) and R-TID (semantic); listed sorted, as the
# tests compare sorted reports (the order within one element is not part of the contract).
INVALID = {
    "schema_version": "storyline/v1",
    "session": "",
    "agent": {"id": ""},
    "turns": [{"id": 1, "src": "", "msg": None}, {"id": 1, "src": "x", "msg": None}],
}
INVALID_PROBLEMS = [
    ("/agent/id", "schema.minLength"),
    ("/session", "schema.minLength"),
    ("/turns/0/src", "schema.minLength"),
    ("/turns/1/id", "storyline.duplicate_turn_id"),
]


def write(path: Path, value: Any) -> str:
    path.write_bytes(value if isinstance(value, bytes) else orjson.dumps(value))
    return str(path)


def valid_storyline() -> dict[str, Any]:
    (story,) = into_storyline("atif", (ATIF / "support-ticket.json").read_bytes())
    return story


def reported(stderr: str) -> list[tuple[str, str, str]]:
    """(file, pointer, code) of every ``FILE: POINTER: message [code]`` line."""
    out = []
    for line in stderr.splitlines():
        file, pointer, _ = line.split(": ", 2)
        out.append((file, pointer, line.rsplit("[", 1)[1].rstrip("]")))
    return out


def test_valid_storyline_is_exit_0(runner: CliRunner, tmp_path: Path) -> None:
    path = write(tmp_path / "s.json", valid_storyline())
    result = runner.invoke(cli, ["validate", path])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "" and result.stderr == ""


def test_valid_storyline_array_and_jsonl(runner: CliRunner, tmp_path: Path) -> None:
    stories = into_storyline("atif", orjson.dumps(orjson.loads((ATIF / "support-ticket.json").read_bytes())))
    array = write(tmp_path / "a.json", [*stories, {**stories[0], "session": "other", "trajectory": "t2"}])
    jsonl = write(tmp_path / "a.jsonl", b"\n".join(orjson.dumps(s) for s in stories) + b"\n\n")
    result = runner.invoke(cli, ["validate", array, jsonl])
    assert result.exit_code == 0, result.stderr


def test_invalid_storyline_reports_every_problem(runner: CliRunner, tmp_path: Path) -> None:
    path = write(tmp_path / "bad.json", INVALID)
    result = runner.invoke(cli, ["validate", path])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert sorted(reported(result.stderr)) == [(path, p, c) for p, c in INVALID_PROBLEMS]


def test_only_invalid_files_are_reported(runner: CliRunner, tmp_path: Path) -> None:
    good = write(tmp_path / "good.json", valid_storyline())
    bad = write(tmp_path / "bad.json", INVALID)
    result = runner.invoke(cli, ["validate", good, bad, good])
    assert result.exit_code == 1
    assert {f for f, _, _ in reported(result.stderr)} == {bad}


def test_array_problems_are_prefixed_with_the_index(runner: CliRunner, tmp_path: Path) -> None:
    path = write(tmp_path / "bad.json", [valid_storyline(), INVALID])
    result = runner.invoke(cli, ["validate", path])
    assert result.exit_code == 1
    assert sorted(reported(result.stderr)) == [(path, "/1" + p, c) for p, c in INVALID_PROBLEMS]


def test_json_report(runner: CliRunner, tmp_path: Path) -> None:
    good = write(tmp_path / "good.json", valid_storyline())
    bad = write(tmp_path / "bad.json", INVALID)
    result = runner.invoke(cli, ["validate", "--json", good, bad])
    assert result.exit_code == 1
    rows = orjson.loads(result.stdout)
    assert sorted((r["file"], r["pointer"], r["code"]) for r in rows) == [(bad, p, c) for p, c in INVALID_PROBLEMS]
    assert all(isinstance(r["message"], str) and r["message"] for r in rows)


def test_json_report_of_valid_files_is_an_empty_array(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(cli, ["validate", "--json", write(tmp_path / "s.json", valid_storyline())])
    assert result.exit_code == 0
    assert orjson.loads(result.stdout) == []


@pytest.mark.parametrize(
    ("data", "name", "code"),
    [
        (b"[]", "empty.json", "input.empty"),
        (b"\n\n", "empty.jsonl", "input.empty"),
        (b"{", "broken.json", "json.invalid"),
        (b'{"schema_version": "storyline/v2"}', "v2.json", "storyline.unsupported_version"),
    ],
    ids=["empty array", "empty jsonl", "not json", "other version"],
)
def test_unusable_storyline_files(runner: CliRunner, tmp_path: Path, data: bytes, name: str, code: str) -> None:
    path = write(tmp_path / name, data)
    result = runner.invoke(cli, ["validate", path])
    assert result.exit_code == 1
    assert [c for _, _, c in reported(result.stderr)] == [code]


@pytest.mark.parametrize("path", ATIF_FIXTURES, ids=[p.stem for p in ATIF_FIXTURES])
def test_validate_atif_fixtures(runner: CliRunner, path: Path) -> None:
    result = runner.invoke(cli, ["validate", "--format", "atif", str(path)])
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""


def test_validate_atif_reports_problems(runner: CliRunner, tmp_path: Path) -> None:
    doc = {
        "schema_version": "ATIF-v1.7",
        "agent": {"name": "a", "version": ""},
        "steps": [{"step_id": 1, "source": "user", "message": None, "timestamp": ""}],
    }
    path = write(tmp_path / "t.json", doc)
    result = runner.invoke(cli, ["validate", "--format", "atif", "--json", path])
    assert result.exit_code == 1
    rows = orjson.loads(result.stdout)
    assert sorted((r["pointer"], r["code"]) for r in rows) == [
        ("", "check.nonempty_any"),
        ("/agent/version", "check.nonempty"),
        ("/steps/0/timestamp", "check.timestamp"),
    ]


def test_validate_atif_jsonl_names_the_line(runner: CliRunner, tmp_path: Path) -> None:
    ok = (ATIF / "support-ticket.json").read_bytes()
    bad = orjson.dumps({"schema_version": "ATIF-v1.7", "session_id": "s", "agent": {"name": "a"}, "steps": []})
    path = write(tmp_path / "t.jsonl", orjson.dumps(orjson.loads(ok)) + b"\n" + bad + b"\n")
    result = runner.invoke(cli, ["validate", "--format", "atif", "--json", path])
    assert result.exit_code == 1
    assert [(r["line"], r["pointer"], r["code"]) for r in orjson.loads(result.stdout)] == [
        (2, "/agent", "schema.required")
    ]


def test_storyline_is_not_valid_atif(runner: CliRunner, tmp_path: Path) -> None:
    path = write(tmp_path / "s.json", valid_storyline())
    result = runner.invoke(cli, ["validate", "--format", "atif", path])
    assert result.exit_code == 1
    assert ("/", "schema.required") in {(p, c) for _, p, c in reported(result.stderr)}


def test_atif_is_not_a_valid_storyline(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["validate", "--format", "storyline", str(ATIF / "support-ticket.json")])
    assert result.exit_code == 1
    assert ("/schema_version", "storyline.unsupported_version") in {(p, c) for _, p, c in reported(result.stderr)}


def test_validate_detects_the_format_and_says_which(runner: CliRunner) -> None:
    path = str(ATIF / "support-ticket.json")
    result = runner.invoke(cli, ["validate", path])
    assert result.exit_code == 0, result.stderr
    assert result.stderr == f"note: {path}: checked as atif (detected; say another with --format)\n"


def test_unknown_format_is_a_usage_error(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(cli, ["validate", "--format", "nope", write(tmp_path / "s.json", valid_storyline())])
    assert result.exit_code == 2
    assert "nope" in result.stderr and "atif" in result.stderr


def test_unreadable_file_is_a_usage_error_before_any_report(runner: CliRunner, tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.json", INVALID)
    result = runner.invoke(cli, ["validate", bad, str(tmp_path / "missing.json")])
    assert result.exit_code == 2
    assert "cannot read" in result.stderr
    assert bad not in result.stderr


def test_no_file_is_a_usage_error(runner: CliRunner) -> None:
    assert runner.invoke(cli, ["validate"]).exit_code == 2


# --- issue 15: --strict is Harbor's rules; the default level warns of an unknown ATIF version ----


def test_validate_strict_is_harbors_rules(runner, tmp_path) -> None:
    from mapc.cli.main import cli

    ok = FIXTURES / "atif" / "claude-code-harbor.json"
    extended = FIXTURES / "atif" / "support-ticket.json"  # tool_calls[].result: kept by mapc, forbidden by Harbor
    assert runner.invoke(cli, ["validate", "--format", "atif", str(extended)]).exit_code == 0
    result = runner.invoke(cli, ["validate", "--format", "atif", "--strict", str(ok), str(extended)])
    assert result.exit_code == 1
    assert problem_lines(result.stderr, str(extended)) == [
        (None, "/steps/1/tool_calls/0/result", "harbor.extra_forbidden")
    ]


def test_unknown_atif_version_is_a_warning_by_default_and_an_error_under_strict(runner, tmp_path) -> None:
    import orjson

    from mapc.cli.main import cli

    doc = orjson.loads((FIXTURES / "atif" / "claude-code-harbor.json").read_bytes())
    doc["schema_version"] = "ATIF-v2.0"
    path = tmp_path / "t.json"
    path.write_bytes(orjson.dumps(doc))
    result = runner.invoke(cli, ["validate", "--format", "atif", str(path)])
    assert result.exit_code == 0
    assert "atif.unknown_version" in result.stderr and result.stderr.startswith(f"warning: {path}: /schema_version")
    strict = runner.invoke(cli, ["validate", "--format", "atif", "--strict", str(path)])
    assert strict.exit_code == 1
    assert problem_lines(strict.stderr, str(path)) == [(None, "/schema_version", "harbor.literal")]
