"""`mapc find`: full-text search over messages and tool results, with the indexes `mapc index` creates."""

from __future__ import annotations

import json
from pathlib import Path

from mapc.cli.main import cli
from mapc.store.find import snippet

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "fixtures"


def stored(tmp_path, runner) -> Path:
    root = tmp_path / "ds"
    result = runner.invoke(cli, ["store", str(FIXTURES / "atif"), str(FIXTURES / "actf"), "--to", str(root)])
    assert result.exit_code == 0, result.output
    return root


def find(runner, root: Path, *args: str) -> list[dict]:
    result = runner.invoke(cli, ["find", str(root), *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_find_needs_an_index(tmp_path, runner):
    root = stored(tmp_path, runner)
    result = runner.invoke(cli, ["find", str(root), "assertion"])
    assert result.exit_code == 1
    assert "has no full-text index yet: run `mapc index" in result.stderr and "[store.no_text_index]" in result.stderr


def test_find_messages_and_tool_results(tmp_path, runner):
    root = stored(tmp_path, runner)
    assert runner.invoke(cli, ["index", str(root)]).exit_code == 0
    hits = find(runner, root, "assertion")
    where = {(h["document_id"], h["step_id"], h["table"], h["column"]) for h in hits}
    # the failing test's output (a tool result in the observation) and the agent's message about it
    assert ("example-code-repair", 1, "steps", "observation_json") in where
    assert ("example-code-repair", 2, "steps", "message_json") in where
    assert all("assertion" in h["snippet"].lower() for h in hits)
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    assert find(runner, root, "xylophonic") == []
    assert len(find(runner, root, "file")) > 3 and len(find(runner, root, "file", "--limit", "3")) == 3
    text = runner.invoke(cli, ["find", str(root), "assertion"]).stdout
    assert text.splitlines()[0].split() == ["score", "document_id", "step_id", "where", "snippet"]


def test_rows_stored_after_the_index_are_found(tmp_path, runner):
    root = stored(tmp_path, runner)
    assert runner.invoke(cli, ["index", str(root)]).exit_code == 0
    doc = {
        "schema_version": "storyline/v1",
        "session": "late",
        "agent": {"id": "a"},
        "turns": [{"id": 1, "src": "user", "msg": "the quokka escaped"}],
    }
    (tmp_path / "late.json").write_text(json.dumps(doc))
    assert runner.invoke(cli, ["store", str(tmp_path / "late.json"), "--to", str(root)]).exit_code == 0
    hits = find(runner, root, "quokka")
    assert [(h["document_id"], h["column"], h["snippet"]) for h in hits] == [
        ("late", "message_json", '"the quokka escaped"')
    ]


def test_snippet_is_one_line_around_the_first_word():
    text = "x " * 100 + "needle\nin the\thay " + "y " * 100
    cut = snippet(text, ["needle"], width=40)
    assert "needle in the hay" in cut and cut.startswith("…") and cut.endswith("…") and "\n" not in cut
