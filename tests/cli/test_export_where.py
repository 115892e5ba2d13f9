"""`mapc export --where "SQL predicate"`: the corpus → training-set path in one command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mapc.cli.main import cli
from mapc.engine import convert

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "fixtures"


@pytest.fixture
def root(tmp_path, runner) -> Path:
    root = tmp_path / "ds"
    result = runner.invoke(cli, ["store", str(FIXTURES / "atif"), str(FIXTURES / "actf"), "--to", str(root)])
    assert result.exit_code == 0, result.output
    return root


def sessions(runner, root: Path, *args: str) -> list[str]:
    result = runner.invoke(cli, ["export", str(root), "--to", "storyline", *args])
    assert result.exit_code == 0, result.output
    value = json.loads(result.stdout)
    return [d["session"] for d in (value if isinstance(value, list) else [value])]


def test_where_over_runs_and_its_convenience_columns(root, runner):
    assert sessions(runner, root, "--where", "correct") == ["example-code-repair"]
    assert sessions(runner, root, "--where", "score >= 0.5 or total_prompt_tokens > 100000") == [
        "a3b10bae-3ebd-4b8e-8779-3d21ce098521",
        "example-code-repair",
    ]
    errors = "document_id in (select document_id from tool_calls where is_error)"
    assert sessions(runner, root, "--where", f"not ({errors})")[-1] == "make-doom-for-mips-trimmed"
    assert "example-code-repair" not in sessions(runner, root, "--where", f"not ({errors})")


def test_where_in_another_format_is_the_same_as_converting_the_kept_documents(root, runner):
    source = (FIXTURES / "actf" / "code-repair.actf.json").read_bytes()
    expected = convert.from_storyline("actf", convert.into_storyline("actf", source))
    result = runner.invoke(
        cli, ["export", str(root), "--to", "actf", "--where", "result_status = 'completed' and correct"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == json.loads(json.dumps(expected))


def test_where_with_session_and_nothing_matching(root, runner):
    result = runner.invoke(cli, ["export", str(root), "--to", "atif", "--where", "correct", "--session", "other"])
    assert result.exit_code == 1
    assert 'no document matches session "other" and --where correct [store.not_found]' in result.stderr


def test_bad_where_is_a_usage_error(root, runner):
    result = runner.invoke(cli, ["export", str(root), "--to", "atif", "--where", "nope > 1"])
    assert result.exit_code == 2
    assert "--where" in result.stderr and "nope" in result.stderr and "Traceback" not in result.output
