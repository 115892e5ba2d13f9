"""`mapc run openai-msg INPUT [--reverse]`, `mapc validate --format openai-msg` and detection, end to end."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from conftest import FIXTURES, problem_lines, write

from mapc.cli.main import cli
from mapc.engine.convert import into_storyline

OPENAI = sorted((FIXTURES / "openai-msg").glob("*.json"))


@pytest.mark.parametrize("path", OPENAI, ids=lambda p: p.name)
def test_run_and_reverse(runner: CliRunner, path: Path, tmp_path: Path) -> None:
    story = tmp_path / "story.json"
    result = runner.invoke(cli, ["run", "openai-msg", str(path), "-o", str(story)])
    assert result.exit_code == 0, result.stderr
    stories = orjson.loads(story.read_bytes())
    stories = stories if isinstance(stories, list) else [stories]
    assert stories == into_storyline("openai-msg", path.read_bytes(), path=stories[0]["origin"]["document_id"])
    back = runner.invoke(cli, ["run", "openai-messages", str(story), "--reverse"])
    assert back.exit_code == 0, back.stderr
    rows = orjson.loads(back.stdout)["session_steps"]
    assert [r["session_id"] for r in rows] == [r["session_id"] for r in orjson.loads(path.read_bytes())]


def test_the_document_id_is_the_path_relative_to_the_working_directory(runner: CliRunner) -> None:
    path = OPENAI[0].relative_to(Path.cwd()) if OPENAI[0].is_relative_to(Path.cwd()) else OPENAI[0]
    result = runner.invoke(cli, ["run", "openai-msg", str(path)])
    story = orjson.loads(result.stdout)
    story = story[0] if isinstance(story, list) else story
    assert story["origin"]["document_id"] in (path.as_posix(), path.name)


def test_validate_reports_every_bad_row_with_its_pointer(runner: CliRunner, tmp_path: Path) -> None:
    rows = [
        {"session_id": "a", "step_id": 1, "messages": [{"role": "user", "content": "q"}], "response": {"content": "a"}},
        {"session_id": "a", "step_id": "2"},
        {"step_id": 1},
    ]
    bad = write(tmp_path / "session_steps.json", {"session_steps": rows})
    result = runner.invoke(cli, ["validate", "--format", "openai-msg", str(bad)])
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert problem_lines(result.stderr, str(bad)) == [
        (None, "/session_steps/1/step_id", "rows.order_key"),
        (None, "/session_steps/2/session_id", "rows.group_key"),
    ]


def test_detect_names_openai_files(runner: CliRunner, tmp_path: Path) -> None:
    row = {"session_id": "a", "step_id": 1, "response": {"content": "a"}}
    files = [
        write(tmp_path / "session_steps.json", {}),
        write(tmp_path / "rows.json", [row]),
        write(tmp_path / "x.json", row),
    ]
    result = runner.invoke(cli, ["detect", *map(str, files)])
    assert result.exit_code == 0
    assert [line.split("\t")[1] for line in result.stdout.splitlines()] == ["openai-msg"] * 3
