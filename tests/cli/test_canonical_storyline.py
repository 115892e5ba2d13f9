"""`mapc convert --from storyline --to storyline` writes canonical Storyline: empty prompt strings go."""

from __future__ import annotations

import orjson
from conftest import FIXTURES, write

import mapc
from mapc.cli.main import cli


def _story() -> dict:
    story = mapc.into_storyline("atif", (FIXTURES / "atif" / "support-ticket.json").read_bytes())[0]
    story["prompt"] = {"system": "s", "user": ""}
    story["turns"][1]["prompt"] = {"system": "", "user": "u"}
    story["turns"][2]["prompt"] = {"system": "", "user": ""}  # the explicit clear: stays whole
    return story


def test_empty_prompt_strings_are_dropped_on_storyline_to_storyline(runner, tmp_path):
    path = write(tmp_path / "s.storyline.json", _story())
    result = runner.invoke(cli, ["convert", str(path), "--to", "storyline"])
    assert result.exit_code == 0, result.stderr
    out = orjson.loads(result.stdout)
    assert out["prompt"] == {"system": "s"}
    assert out["turns"][1]["prompt"] == {"user": "u"}
    assert out["turns"][2]["prompt"] == {"system": "", "user": ""}
    assert mapc.check(out) == []
    again = runner.invoke(cli, ["convert", "-", "--from", "storyline", "--to", "storyline"], input=result.stdout)
    assert orjson.loads(again.stdout) == out  # canonical form is a fixed point
