"""`mapc run actf INPUT [--reverse]` and `mapc validate --format actf`: output, round trips, exit codes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from conftest import FIXTURES, problem_lines, write

from mapc.cli.main import cli
from mapc.engine.convert import into_storyline
from mapc.engine.values import json_equal

ACTF = FIXTURES / "actf"
ACTF_FIXTURES = sorted(ACTF.glob("*.json"))
FIXTURE_IDS = [p.name.removesuffix(".actf.json") for p in ACTF_FIXTURES]
CODE_REPAIR = ACTF / "code-repair.actf.json"


# One problem line: FILE: [line N: ]POINTER: message [code] (spec place)
def two_attempts() -> dict[str, Any]:
    """The code-repair fixture with its attempt under "10" and "2" (file order, several Storylines)."""
    doc = orjson.loads(CODE_REPAIR.read_bytes())
    (only,) = doc["attempts"].values()
    return {**doc, "k": 2, "attempts_tried": 2, "attempts": {"10": only, "2": only}}


# --- forward --------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ACTF_FIXTURES, ids=FIXTURE_IDS)
def test_run_prints_the_storyline(runner: CliRunner, path: Path) -> None:
    result = runner.invoke(cli, ["run", "actf", str(path)])
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    (expected,) = into_storyline("actf", path.read_bytes())
    assert json_equal(orjson.loads(result.stdout), expected)
    assert result.stdout.endswith("}\n")


def test_run_prints_an_array_for_several_attempts(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(cli, ["run", "actf", str(write(tmp_path / "t.json", two_attempts()))])
    assert result.exit_code == 0, result.stderr
    out = orjson.loads(result.stdout)
    assert [(s["session"], s["attempt_id"]) for s in out] == [
        ("example-code-repair#attempt-10", "10"),
        ("example-code-repair#attempt-2", "2"),
    ]


def test_run_with_the_spec_path_is_the_same_as_the_name(runner: CliRunner) -> None:
    spec = Path(__file__).resolve().parents[2] / "mappings" / "actf.yaml"
    by_name = runner.invoke(cli, ["run", "actf", str(CODE_REPAIR)])
    by_path = runner.invoke(cli, ["run", str(spec), str(CODE_REPAIR)])
    assert by_path.exit_code == 0, by_path.stderr
    assert by_path.stdout == by_name.stdout


def test_run_writes_the_output_file(runner: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "story.json"
    result = runner.invoke(cli, ["run", "actf", str(CODE_REPAIR), "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    (expected,) = into_storyline("actf", CODE_REPAIR.read_bytes())
    assert json_equal(orjson.loads(out.read_bytes()), expected)


# --- --reverse --------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ACTF_FIXTURES, ids=FIXTURE_IDS)
def test_reverse_round_trip(runner: CliRunner, tmp_path: Path, path: Path) -> None:
    story = tmp_path / "story.json"
    back = tmp_path / "back.json"
    assert runner.invoke(cli, ["run", "actf", str(path), "-o", str(story)]).exit_code == 0
    result = runner.invoke(cli, ["run", "actf", str(story), "--reverse", "-o", str(back)])
    assert result.exit_code == 0, result.stderr
    assert json_equal(orjson.loads(back.read_bytes()), orjson.loads(path.read_bytes()))


def test_reverse_of_several_attempts_is_one_document(runner: CliRunner, tmp_path: Path) -> None:
    source = write(tmp_path / "t.json", two_attempts())
    story = tmp_path / "s.json"
    assert runner.invoke(cli, ["run", "actf", str(source), "-o", str(story)]).exit_code == 0
    result = runner.invoke(cli, ["run", "actf", str(story), "--reverse"])
    assert result.exit_code == 0, result.stderr
    doc = orjson.loads(result.stdout)
    assert list(doc["attempts"]) == ["10", "2"]
    assert json_equal(doc, two_attempts())


def test_reverse_of_a_plain_storyline_is_a_synthesized_document(runner: CliRunner, tmp_path: Path) -> None:
    story = {"schema_version": "storyline/v1", "session": "s", "agent": {"id": "a"}, "turns": []}
    result = runner.invoke(cli, ["run", "actf", str(write(tmp_path / "s.json", story)), "--reverse"])
    # An ACTF trajectory needs steps or events (rule 9): a Storyline without turns cannot be one.
    assert result.exit_code == 1
    story["turns"] = [{"id": 1, "src": "agent", "msg": "m"}]
    result = runner.invoke(cli, ["run", "actf", str(write(tmp_path / "s.json", story)), "--reverse"])
    assert result.exit_code == 0, result.stderr
    doc = orjson.loads(result.stdout)
    assert (doc["task_id"], doc["category"], list(doc["attempts"])) == ("s", "unknown", ["1"])


def test_reverse_of_storylines_of_two_tasks_prints_an_array(runner: CliRunner, tmp_path: Path) -> None:
    stories = [
        {"schema_version": "storyline/v1", "session": s, "run": r, "agent": {"id": "a"}, "turns": [turn]}
        for s, r, turn in (
            ("a", "R", {"id": 1, "src": "agent", "msg": "x"}),
            ("b", "Q", {"id": 1, "src": "agent", "msg": "y"}),
        )
    ]
    result = runner.invoke(cli, ["run", "actf", str(write(tmp_path / "s.json", stories)), "--reverse"])
    assert result.exit_code == 0, result.stderr
    assert [d["task_id"] for d in orjson.loads(result.stdout)] == ["R", "Q"]


def test_reverse_of_attempts_without_ids_is_exit_1(runner: CliRunner, tmp_path: Path) -> None:
    stories = [
        {"schema_version": "storyline/v1", "session": s, "run": "R", "agent": {"id": "a"}, "turns": []}
        for s in ("a", "b")
    ]
    path = write(tmp_path / "s.json", stories)
    result = runner.invoke(cli, ["run", "actf", str(path), "--reverse"])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert problem_lines(result.stderr, str(path)) == [
        (None, "/0", "tree.no_member_key"),
        (None, "/1", "tree.no_member_key"),
    ]


# --- errors -----------------------------------------------------------------------------------


def test_bad_input_reports_every_problem(runner: CliRunner, tmp_path: Path) -> None:
    doc = orjson.loads(CODE_REPAIR.read_bytes())
    doc["task_id"] = " "
    doc["attempts"]["1"]["trajectory"]["steps"][1]["step_id"] = 1
    doc["attempts"]["1"]["trajectory"]["started_at"] = "yesterday"
    path = write(tmp_path / "bad.json", doc)
    result = runner.invoke(cli, ["run", "actf", str(path)])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert sorted(problem_lines(result.stderr, str(path))) == [
        (None, "/attempts/1/trajectory/started_at", "check.timestamp"),
        (None, "/attempts/1/trajectory/steps/1/step_id", "check.increasing"),
        (None, "/task_id", "check.nonblank"),
    ]


def test_no_output_file_when_the_input_is_bad(runner: CliRunner, tmp_path: Path) -> None:
    doc = {**orjson.loads(CODE_REPAIR.read_bytes()), "k": 0}
    bad = write(tmp_path / "bad.json", doc)
    result = runner.invoke(cli, ["run", "actf", str(bad), "-o", str(tmp_path / "out.json")])
    assert result.exit_code == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.json"]


# --- validate --format actf -------------------------------------------------------------------


@pytest.mark.parametrize("path", ACTF_FIXTURES, ids=FIXTURE_IDS)
def test_validate_actf_fixtures(runner: CliRunner, path: Path) -> None:
    result = runner.invoke(cli, ["validate", "--format", "actf", str(path)])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "" and result.stderr == ""


def test_validate_actf_reports_problems_as_json(runner: CliRunner, tmp_path: Path) -> None:
    doc = two_attempts()
    doc["attempts_tried"] = 3
    doc["attempts"]["2"] = {**doc["attempts"]["2"], "trajectory": {**doc["attempts"]["2"]["trajectory"], "steps": []}}
    path = write(tmp_path / "t.json", doc)
    result = runner.invoke(cli, ["validate", "--format", "actf", "--json", str(path)])
    assert result.exit_code == 1
    rows = orjson.loads(result.stdout)
    assert sorted((r["pointer"], r["code"]) for r in rows) == [
        ("/attempts/2", "check.nonempty_any"),
        ("/attempts_tried", "check.at_most"),
        ("/attempts_tried", "check.size_of"),
    ]
    assert all(r["file"] == str(path) and r["message"] for r in rows)


def test_validate_actf_only_reports_the_invalid_file(runner: CliRunner, tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.json", {**orjson.loads(CODE_REPAIR.read_bytes()), "category": ""})
    result = runner.invoke(cli, ["validate", "--format", "actf", str(CODE_REPAIR), str(bad)])
    assert result.exit_code == 1
    assert problem_lines(result.stderr, str(bad)) == [(None, "/category", "check.nonblank")]


def test_validate_actf_jsonl_names_the_line(runner: CliRunner, tmp_path: Path) -> None:
    good = orjson.dumps(orjson.loads(CODE_REPAIR.read_bytes()))
    bad = orjson.dumps({**orjson.loads(CODE_REPAIR.read_bytes()), "solved_at": 5})
    path = write(tmp_path / "t.jsonl", good + b"\n" + bad + b"\n")
    result = runner.invoke(cli, ["validate", "--format", "actf", "--json", str(path)])
    assert result.exit_code == 1
    assert [(r["line"], r["pointer"], r["code"]) for r in orjson.loads(result.stdout)] == [
        (2, "/solved_at", "schema.type")
    ]


def test_atif_is_not_valid_actf(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["validate", "--format", "actf", str(FIXTURES / "atif" / "support-ticket.json")])
    assert result.exit_code == 1
    assert "[schema.required]" in result.stderr


def test_actf_is_not_a_valid_storyline(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["validate", "--format", "storyline", str(CODE_REPAIR)])
    assert result.exit_code == 1
    assert "missing required key 'schema_version'" in result.stderr
    detected = runner.invoke(cli, ["validate", str(CODE_REPAIR)])
    assert detected.exit_code == 0 and "checked as actf (detected" in detected.stderr


def test_unreadable_actf_file_is_exit_2(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(cli, ["validate", "--format", "actf", str(tmp_path / "missing.json")])
    assert result.exit_code == 2
    assert "cannot read" in result.stderr
