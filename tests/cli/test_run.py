"""`mapc run SPEC INPUT [-o OUT] [--reverse]` with the ATIF spec: output, files, errors, exit codes."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from conftest import FIXTURES, problem_lines, write

from mapc.cli.main import cli
from mapc.engine.convert import into_storyline
from mapc.engine.values import json_equal

REPO = Path(__file__).resolve().parents[2]
ATIF_SPEC = REPO / "mappings" / "atif.yaml"
ATIF = FIXTURES / "atif"
SUPPORT = ATIF / "support-ticket.json"


# One problem line: FILE: [line N: ]POINTER: message [code] (spec place)
def minimal_atif(**fields: Any) -> dict[str, Any]:
    doc = {
        "schema_version": "ATIF-v1.7",
        "session_id": "s",
        "agent": {"name": "a", "version": "1"},
        "steps": [{"step_id": 1, "source": "user", "message": "hi"}],
    }
    doc.update(fields)
    return doc


# --- forward --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["support-ticket", "dialogue_10", "claude-code-harbor"])
def test_run_prints_the_storyline(runner: CliRunner, name: str) -> None:
    path = ATIF / f"{name}.json"
    result = runner.invoke(cli, ["run", "atif", str(path)])
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    (expected,) = into_storyline("atif", path.read_bytes())
    assert json_equal(orjson.loads(result.stdout), expected)
    assert result.stdout.endswith("}\n")


def test_run_prints_an_array_for_several_storylines(runner: CliRunner, tmp_path: Path) -> None:
    sub = minimal_atif(subagent_trajectories=[minimal_atif(session_id=None, trajectory_id="c")])
    del sub["subagent_trajectories"][0]["session_id"]
    result = runner.invoke(cli, ["run", "atif", str(write(tmp_path / "t.json", sub))])
    assert result.exit_code == 0, result.stderr
    out = orjson.loads(result.stdout)
    assert [s["session"] for s in out] == ["s", "c"]


def test_run_with_a_spec_path_is_the_same_as_the_name(runner: CliRunner) -> None:
    by_name = runner.invoke(cli, ["run", "atif", str(SUPPORT)])
    by_path = runner.invoke(cli, ["run", str(ATIF_SPEC), str(SUPPORT)])
    assert by_path.exit_code == 0, by_path.stderr
    assert by_path.stdout == by_name.stdout


def test_run_reads_jsonl_by_extension(runner: CliRunner, tmp_path: Path) -> None:
    data = orjson.dumps(minimal_atif(session_id="a")) + b"\n\n" + orjson.dumps(minimal_atif(session_id="b")) + b"\n"
    result = runner.invoke(cli, ["run", "atif", str(write(tmp_path / "t.jsonl", data))])
    assert result.exit_code == 0, result.stderr
    assert [s["session"] for s in orjson.loads(result.stdout)] == ["a", "b"]


# --- -o OUT ---------------------------------------------------------------------------------


def test_output_file_is_written_without_leftovers(runner: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "story.json"
    result = runner.invoke(cli, ["run", "atif", str(SUPPORT), "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["story.json"]  # no temp file left
    (expected,) = into_storyline("atif", SUPPORT.read_bytes())
    assert json_equal(orjson.loads(out.read_bytes()), expected)


def test_output_file_replaces_an_existing_file(runner: CliRunner, tmp_path: Path) -> None:
    out = write(tmp_path / "story.json", b"old")
    result = runner.invoke(cli, ["run", "atif", str(SUPPORT), "--output", str(out)])
    assert result.exit_code == 0, result.stderr
    assert orjson.loads(out.read_bytes())["session"] == "support-001"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["story.json"]


def test_output_file_has_the_usual_permissions(runner: CliRunner, tmp_path: Path) -> None:
    # A file written by `-o` is readable like any file the user creates (umask applies), not
    # left with the 0600 mode of a private temporary file.
    umask = os.umask(0)
    os.umask(umask)
    out = tmp_path / "story.json"
    runner.invoke(cli, ["run", "atif", str(SUPPORT), "-o", str(out)])
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~umask


def test_no_output_file_when_the_input_is_bad(runner: CliRunner, tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.json", minimal_atif(steps=[{"step_id": 0, "source": "u", "message": 1}]))
    out = tmp_path / "out.json"
    result = runner.invoke(cli, ["run", "atif", str(bad), "-o", str(out)])
    assert result.exit_code == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.json"]


# --- --reverse --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["support-ticket", "parallel_tools_14", "claude-code-harbor"])
def test_reverse_round_trip(runner: CliRunner, tmp_path: Path, name: str) -> None:
    source = ATIF / f"{name}.json"
    story = tmp_path / "story.json"
    back = tmp_path / "back.json"
    assert runner.invoke(cli, ["run", "atif", str(source), "-o", str(story)]).exit_code == 0
    result = runner.invoke(cli, ["run", "atif", str(story), "--reverse", "-o", str(back)])
    assert result.exit_code == 0, result.stderr
    assert json_equal(orjson.loads(back.read_bytes()), orjson.loads(source.read_bytes()))


def test_reverse_of_several_roots_prints_an_array(runner: CliRunner, tmp_path: Path) -> None:
    stories = [{"schema_version": "storyline/v1", "session": s, "agent": {"id": "a"}, "turns": []} for s in ("x", "y")]
    result = runner.invoke(cli, ["run", "atif", str(write(tmp_path / "s.json", stories)), "--reverse"])
    assert result.exit_code == 0, result.stderr
    assert [d["session_id"] for d in orjson.loads(result.stdout)] == ["x", "y"]


def test_reverse_of_an_invalid_storyline(runner: CliRunner, tmp_path: Path) -> None:
    path = write(
        tmp_path / "s.json",
        {"schema_version": "storyline/v1", "session": "", "agent": {"id": "a"}, "turns": []},
    )
    result = runner.invoke(cli, ["run", "atif", str(path), "--reverse"])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert problem_lines(result.stderr, str(path)) == [(None, "/session", "schema.minLength")]


# --- errors -----------------------------------------------------------------------------------


def test_bad_input_reports_every_problem(runner: CliRunner, tmp_path: Path) -> None:
    doc = minimal_atif(
        agent={"name": "", "version": "1"},
        steps=[{"step_id": 0, "source": "user", "message": 1, "timestamp": "yesterday"}],
    )
    path = write(tmp_path / "bad.json", doc)
    result = runner.invoke(cli, ["run", "atif", str(path)])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert sorted(problem_lines(result.stderr, str(path))) == [
        (None, "/agent/name", "check.nonempty"),
        (None, "/steps/0/step_id", "check.minimum"),
        (None, "/steps/0/timestamp", "check.timestamp"),
    ]


def test_problem_at_the_document_root_is_shown_as_slash(runner: CliRunner, tmp_path: Path) -> None:
    path = write(tmp_path / "bad.json", {"agent": {"name": "a", "version": "1"}, "steps": []})
    result = runner.invoke(cli, ["run", "atif", str(path)])
    assert result.exit_code == 1
    assert problem_lines(result.stderr, str(path)) == [(None, "/", "schema.required")]


def test_bad_jsonl_names_the_line(runner: CliRunner, tmp_path: Path) -> None:
    data = orjson.dumps(minimal_atif()) + b"\n\n" + orjson.dumps(minimal_atif(agent={"name": "a", "version": ""}))
    path = write(tmp_path / "t.ndjson", data)
    result = runner.invoke(cli, ["run", "atif", str(path)])
    assert result.exit_code == 1
    assert problem_lines(result.stderr, str(path)) == [("3", "/agent/version", "check.nonempty")]


def test_not_json_is_exit_1(runner: CliRunner, tmp_path: Path) -> None:
    path = write(tmp_path / "t.json", b"{nope")
    result = runner.invoke(cli, ["run", "atif", str(path)])
    assert result.exit_code == 1
    assert problem_lines(result.stderr, str(path)) == [(None, "/", "json.invalid")]


@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_unreadable_input_is_exit_2(runner: CliRunner, tmp_path: Path, kind: str) -> None:
    path = tmp_path / "nope.json" if kind == "missing" else tmp_path
    result = runner.invoke(cli, ["run", "atif", str(path)])
    assert result.exit_code == 2
    assert f"cannot read {path}" in result.stderr
    assert result.stdout == ""


def test_unknown_spec_name(runner: CliRunner) -> None:
    # A usage error (exit 2), with a message naming the spec and the built-in specs.
    result = runner.invoke(cli, ["run", "no-such-format", str(SUPPORT)])
    assert result.exit_code == 2
    assert "no spec 'no-such-format'" in result.stderr
    assert "atif" in result.stderr
    assert result.stdout == ""


def _spec(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "broken.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_spec_with_an_unknown_function_names_the_yaml_file_and_line(runner: CliRunner, tmp_path: Path) -> None:
    spec = _spec(
        tmp_path,
        "name: broken\nsource: broken\nrules:\n  - {const: storyline/v1, to: /schema_version}\n"
        "  - {from: /a, call: no_such_fn, to: /b}\n",
    )
    result = runner.invoke(cli, ["run", str(spec), str(SUPPORT)])
    assert result.exit_code == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"{spec}: ")
    assert "no_such_fn" in line and "[spec.unknown_function]" in line
    assert "(broken.yaml:5:5 rules[1])" in line


def test_spec_with_bad_yaml_names_the_yaml_file_and_line(runner: CliRunner, tmp_path: Path) -> None:
    spec = _spec(tmp_path, "name: broken\nrules: [\n  - {from: /a\n")
    result = runner.invoke(cli, ["run", str(spec), str(SUPPORT)])
    assert result.exit_code == 1
    (first, *_) = result.stderr.splitlines()
    assert "[spec.yaml]" in result.stderr
    assert re.search(r"\(broken\.yaml:\d+:\d+\)", result.stderr)
    # The problem is in the spec, so the line is about the spec file, not the input.
    assert first.startswith(f"{spec}: "), first


def test_spec_with_an_unknown_rule_key_names_the_line(runner: CliRunner, tmp_path: Path) -> None:
    spec = _spec(tmp_path, "name: broken\nrules:\n  - {from: /a, to: /b, frm: /c}\n")
    result = runner.invoke(cli, ["run", str(spec), str(SUPPORT)])
    assert result.exit_code == 1
    assert "unknown rule key 'frm'" in result.stderr
    assert "broken.yaml:3:" in result.stderr


# --- the installed console script ------------------------------------------------------------


def test_installed_console_script(tmp_path: Path) -> None:
    mapc = Path(sys.executable).parent / "mapc"
    assert mapc.exists()
    done = subprocess.run(
        [str(mapc), "run", "atif", str(SUPPORT)], capture_output=True, check=False, timeout=60, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    (expected,) = into_storyline("atif", SUPPORT.read_bytes())
    assert json_equal(orjson.loads(done.stdout), expected)
    bad = write(tmp_path / "bad.json", b"[]")
    done = subprocess.run([str(mapc), "run", "atif", str(bad)], capture_output=True, check=False, timeout=60)
    assert done.returncode == 1
    assert done.stderr.decode() == f"{bad}: /: the array cannot be empty [input.empty]\n"


def test_an_output_that_cannot_be_written_is_a_usage_error(runner, tmp_path):
    target = tmp_path / "missing" / "out.json"
    result = runner.invoke(cli, ["run", "atif", str(FIXTURES / "atif" / "sparse_13.json"), "-o", str(target)])
    assert result.exit_code == 2
    assert "cannot write" in result.stderr and "Traceback" not in result.output
