"""The spec author's loop (docs/cli.md): show and locate a built-in, copy it, edit it, lint, run, conformance."""

from __future__ import annotations

from pathlib import Path

from conftest import FIXTURES

from mapc.cli.main import cli

SUPPORT = FIXTURES / "atif" / "support-ticket.json"
SHIPPED = Path(__file__).parents[2] / "mappings" / "atif.yaml"


def test_spec_show_and_path_give_the_shipped_yaml(runner):
    shown = runner.invoke(cli, ["spec", "show", "ATIF"])
    assert shown.exit_code == 0
    assert shown.stdout == SHIPPED.read_text(encoding="utf-8")
    where = runner.invoke(cli, ["spec", "path", "atif"])
    assert where.exit_code == 0
    assert Path(where.stdout.strip()).read_text(encoding="utf-8") == shown.stdout


def test_a_yaml_name_that_is_no_file_runs_the_built_in_and_says_so(runner, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # outside the checkout: no atif.yaml here
    result = runner.invoke(cli, ["run", "atif.yaml", str(SUPPORT)])
    assert result.exit_code == 0, result.stderr
    assert (
        result.stderr == "mapc: no file atif.yaml here; using the built-in spec atif (`mapc spec path atif` shows it)\n"
    )
    assert result.stdout == runner.invoke(cli, ["run", "atif", str(SUPPORT)]).stdout


def test_a_codec_has_no_spec_to_lint(runner):
    result = runner.invoke(cli, ["spec", "lint", "agenticmd"])
    assert result.exit_code == 2
    assert "agenticmd is a codec" in result.stderr and "No such file" not in result.stderr
    storyline = runner.invoke(cli, ["spec", "show", "storyline"])
    assert storyline.exit_code == 2 and "hub format itself" in storyline.stderr


def test_an_edited_copy_runs_lints_and_meets_the_conformance_suite(runner, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    mine = tmp_path / "my-atif.yaml"
    mine.write_text(runner.invoke(cli, ["spec", "show", "atif"]).stdout, encoding="utf-8")
    assert runner.invoke(cli, ["spec", "lint", str(mine)]).exit_code == 0
    same = runner.invoke(cli, ["conformance", "run", "--spec", str(mine)])
    assert same.exit_code == 0, same.stdout[-2000:]
    assert f"against mapc with {mine} for atif" in same.stdout

    text = mine.read_text(encoding="utf-8")
    edited = text.replace('to: "/turns/{t}/msg"', 'to: "/turns/{t}/meta/message"', 1)  # a mistake
    assert edited != text
    mine = tmp_path / "my-edited-atif.yaml"  # a new name: one process keeps a compiled spec per path
    mine.write_text(edited, encoding="utf-8")
    ran = runner.invoke(cli, ["run", str(mine), str(SUPPORT)])
    assert ran.exit_code == 1
    assert "invalid at /turns/0: missing required key 'msg'" in ran.stderr
    broken = runner.invoke(cli, ["conformance", "run", "--spec", str(mine)])
    assert broken.exit_code == 1
    assert "FAIL" in broken.stdout
