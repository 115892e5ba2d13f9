"""JSON Lines both ways (issue 15 §8): `-o out.jsonl` writes one document (or row) a line for every
JSON target, `-` reads JSONL from stdin (seen from the content, or said with --jsonl), and mapc
reads back everything it writes."""

from __future__ import annotations

import orjson
import pytest
from conftest import FIXTURES

import mapc
from mapc.cli.main import cli
from mapc.engine.values import json_equal

TARGETS = ("storyline", "atif", "actf", "openai-msg", "openai-chat")
INPUTS = [FIXTURES / "atif" / "sparse_13.json", FIXTURES / "actf" / "code-repair.actf.json"]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("source", INPUTS, ids=lambda p: p.name)
def test_jsonl_output_reads_back_as_the_json_output_does(runner, tmp_path, source, target):
    as_json, as_lines = tmp_path / "o.json", tmp_path / "o.jsonl"
    for out in (as_json, as_lines):
        result = runner.invoke(cli, ["convert", str(source), "--to", target, "-o", str(out)])
        assert result.exit_code == 0, result.stderr
    lines = as_lines.read_bytes().splitlines()
    items = [orjson.loads(line) for line in lines]  # every line one JSON value
    whole = orjson.loads(as_json.read_bytes())
    if target == "openai-msg":
        assert items[0]["_storyline"] == whole["_storyline"]  # the envelope rides in the first row
        assert [{k: v for k, v in r.items() if k != "_storyline"} for r in items] == whole["session_steps"]
    else:
        assert items == (whole if type(whole) is list else [whole])
    again = mapc.into_storyline(target, as_lines, path="o")  # the same relative path: the same ids
    assert json_equal(again, mapc.into_storyline(target, as_json, path="o"))
    fmt = source.parent.name
    back = runner.invoke(cli, ["convert", str(as_lines), "--from", target, "--to", fmt])
    assert back.exit_code == 0, back.stderr
    if target != "openai-chat":  # chat has no envelope place: what it drops is reported, not carried
        assert json_equal(orjson.loads(back.stdout), orjson.loads(source.read_bytes()))


def test_stdin_jsonl_is_seen_from_its_content_or_said_with_jsonl(runner, tmp_path):
    out = tmp_path / "rows.jsonl"
    source = FIXTURES / "atif" / "sparse_13.json"
    assert runner.invoke(cli, ["convert", str(source), "--to", "openai-msg", "-o", str(out)]).exit_code == 0
    data = out.read_bytes()
    assert len(data.splitlines()) > 1
    for args in (["--from", "openai-msg"], [], ["--jsonl"]):
        result = runner.invoke(cli, ["convert", "-", *args, "--to", "atif"], input=data)
        assert result.exit_code == 0, result.stderr
        assert json_equal(orjson.loads(result.stdout), orjson.loads(source.read_bytes()))


def test_jsonl_named_json_is_read_as_lines_with_jsonl(runner, tmp_path):
    lines = tmp_path / "two.json"
    line = orjson.dumps(orjson.loads((FIXTURES / "atif" / "support-ticket.json").read_bytes()))
    lines.write_bytes(line + b"\n" + line + b"\n")
    plain = runner.invoke(cli, ["convert", str(lines), "--from", "atif", "--to", "storyline"])
    assert plain.exit_code == 1 and "json.invalid" in plain.stderr
    result = runner.invoke(cli, ["convert", str(lines), "--jsonl", "--from", "atif", "--to", "storyline"])
    assert result.exit_code == 0, result.stderr
    assert len(orjson.loads(result.stdout)) == 2


def test_a_pretty_printed_document_on_stdin_is_not_taken_for_lines(runner):
    data = (FIXTURES / "atif" / "support-ticket.json").read_bytes()
    assert b"\n" in data.strip()
    result = runner.invoke(cli, ["convert", "-", "--to", "atif"], input=data)
    assert result.exit_code == 0, result.stderr
    assert json_equal(orjson.loads(result.stdout), orjson.loads(data))
