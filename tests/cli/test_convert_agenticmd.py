"""`mapc convert`/`detect`/`validate` with AgenticMD, a format written as text (a codec)."""

from __future__ import annotations

import orjson
from conftest import FIXTURES, problem_lines

import mapc
from mapc.cli.main import cli
from mapc.engine.values import json_equal

ATIF = FIXTURES / "atif" / "support-ticket.json"
ACTF = FIXTURES / "actf" / "code-repair.actf.json"
LEGACY = FIXTURES / "agenticmd" / "legacy-demo-run-001.md"


def test_convert_to_agenticmd_writes_markdown_text(runner):
    result = runner.invoke(cli, ["convert", str(ATIF), "--to", "agenticmd"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("---\nformat: persisting\nstoryline:\n")
    assert "\nMy deployment is stuck in pending.\n" in result.stdout  # the message, verbatim
    assert result.stdout == mapc.from_storyline("agenticmd", mapc.into_storyline("atif", ATIF.read_bytes()))


def test_convert_from_agenticmd_detects_it_and_goes_through_the_hub(runner, tmp_path):
    md = tmp_path / "support.md"
    assert runner.invoke(cli, ["convert", str(ATIF), "--to", "agenticmd", "-o", str(md)]).exit_code == 0
    result = runner.invoke(cli, ["convert", str(md), "--to", "atif"])
    assert result.exit_code == 0, result.stderr
    assert json_equal(orjson.loads(result.stdout), orjson.loads(ATIF.read_bytes()))
    result = runner.invoke(cli, ["convert", str(md), "--to", "storyline"])
    assert json_equal(orjson.loads(result.stdout), mapc.into_storyline("atif", ATIF.read_bytes())[0])


def test_actf_to_agenticmd_to_actf(runner, tmp_path):
    md = tmp_path / "repair.md"
    assert runner.invoke(cli, ["convert", str(ACTF), "--to", "agenticmd", "-o", str(md)]).exit_code == 0
    back = tmp_path / "repair.actf.json"
    result = runner.invoke(cli, ["convert", str(md), "--from", "agenticmd", "--to", "actf", "-o", str(back)])
    assert result.exit_code == 0, result.stderr
    assert json_equal(orjson.loads(back.read_bytes()), mapc.convert("actf", "actf", ACTF.read_bytes()))


def test_detect_names_markdown_files(runner, tmp_path):
    text = tmp_path / "notes.txt"
    text.write_bytes(b"---\nformat: persisting\n---\n")
    result = runner.invoke(cli, ["detect", str(LEGACY), str(text)])
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [f"{LEGACY}\tagenticmd", f"{text}\tagenticmd"]


def test_the_legacy_file_is_invalid_data_not_a_crash(runner):
    result = runner.invoke(cli, ["convert", str(LEGACY), "--to", "atif"])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert problem_lines(result.stderr, str(LEGACY)) == [(None, "/frontmatter", "agenticmd.no_storyline")]
    assert "Traceback" not in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)  # exit 1, not a crash


def test_validate_reads_agenticmd(runner, tmp_path):
    md = tmp_path / "s.md"
    md.write_text(mapc.from_storyline("agenticmd", mapc.into_storyline("atif", ATIF.read_bytes())))
    assert runner.invoke(cli, ["validate", "--format", "agenticmd", str(md)]).exit_code == 0
    result = runner.invoke(cli, ["validate", "--format", "agenticmd", str(LEGACY)])
    assert result.exit_code == 1 and "[agenticmd.no_storyline]" in result.stderr


def test_several_storylines_cannot_become_one_file(runner, tmp_path):
    stories = tmp_path / "two.storyline.json"
    one = mapc.into_storyline("atif", ATIF.read_bytes())[0]
    stories.write_bytes(orjson.dumps([one, {**one, "session": "other", "trajectory": "other"}]))
    result = runner.invoke(cli, ["convert", str(stories), "--to", "agenticmd"])
    assert result.exit_code == 1
    assert problem_lines(result.stderr, str(stories)) == [(None, "/", "agenticmd.several_storylines")]
