"""cli/convert.py: `mapc convert` and `mapc detect`, and the `mapc` library API."""

from __future__ import annotations

import orjson
from conftest import FIXTURES

import mapc
from mapc.cli.main import cli
from mapc.engine.values import json_equal

ACTF = FIXTURES / "actf" / "code-repair.actf.json"
ATIF = FIXTURES / "atif" / "support-ticket.json"


def test_convert_detects_the_input_and_goes_through_the_hub(runner, tmp_path):
    out = tmp_path / "out.json"
    result = runner.invoke(cli, ["convert", str(ACTF), "--to", "atif", "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    atif = orjson.loads(out.read_bytes())
    assert atif["schema_version"] == "ATIF-v1.7"
    assert atif["agent"] == {"name": "ACTF Agent", "version": "unknown"}
    expected = mapc.from_storyline("atif", mapc.into_storyline("actf", ACTF.read_bytes()))
    assert json_equal(atif, expected)


def test_convert_to_storyline_and_back(runner):
    result = runner.invoke(cli, ["convert", str(ATIF), "--to", "storyline"])
    assert result.exit_code == 0
    story = orjson.loads(result.stdout)
    assert story["origin"]["format"] == "atif"
    assert json_equal(mapc.from_storyline("atif", [story]), orjson.loads(ATIF.read_bytes()))


def test_convert_refuses_events_naming_the_lance_commands(runner):
    result = runner.invoke(cli, ["convert", str(ATIF), "--to", "events"])
    assert result.exit_code == 2  # a format name mapc does not convert to: a usage error, as for any --to
    assert "mapc events append" in result.stderr and "mapc events project" in result.stderr


def test_convert_of_an_unknown_format_is_a_usage_error(runner, tmp_path):
    odd = tmp_path / "odd.json"
    odd.write_text('{"hello": 1}')
    result = runner.invoke(cli, ["convert", str(odd), "--to", "atif"])
    assert result.exit_code == 2
    assert "--from" in result.stderr


def test_detect_prints_file_tab_format_and_fails_on_unknown(runner, tmp_path):
    odd = tmp_path / "odd.json"
    odd.write_text("[1]")
    result = runner.invoke(cli, ["detect", str(ATIF), str(ACTF), str(odd)])
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [f"{ATIF}\tatif", f"{ACTF}\tactf", f"{odd}\tunknown"]
    assert runner.invoke(cli, ["detect", str(ATIF)]).exit_code == 0


def test_library_convert_is_from_storyline_of_into_storyline():
    data = ACTF.read_bytes()
    assert json_equal(
        mapc.convert("actf", "atif", data), mapc.from_storyline("atif", mapc.into_storyline("actf", data))
    )
    assert mapc.check(mapc.into_storyline("actf", data)[0]) == []
    assert "atif" in mapc.formats() and "actf" in mapc.formats()
