"""`mapc show`: the terminal summary of every shipped fixture, checked against expected text.

The expected outputs are `tests/data/show/<fixture>.txt` (plain text: the runner is not a terminal,
so there must be no colour codes).  After a deliberate change of the layout, rewrite them with
``MAPC_REGENERATE=1 .venv/bin/pytest tests/cli/test_show.py`` and read the diff.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import orjson
import pytest
from conftest import FIXTURES

from mapc.cli.main import cli
from mapc.cli.show import print_summary, safe
from mapc.cli.trajectory import Loaded, summary

ROOT = Path(__file__).resolve().parents[2]
EXPECTED = ROOT / "tests" / "data" / "show"
SUBAGENTS = ROOT / "tests" / "data" / "viewer" / "subagents.atif.json"
RENDERED_MD = ROOT / "tests" / "data" / "viewer" / "code-repair.md"  # mapc convert … --to agenticmd of the ACTF
# (a .py beside a fixture is the script that wrote it)
SHIPPED = sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.name != "README.md" and p.suffix != ".py")
CASES = [*SHIPPED, SUBAGENTS, RENDERED_MD]


def _name(path: Path) -> str:
    return f"{path.parent.name}--{path.name}"


def test_every_shipped_fixture_has_an_expected_text():
    assert len(SHIPPED) >= 11
    missing = [
        p for p in CASES if not (EXPECTED / f"{_name(p)}.txt").exists() and not os.environ.get("MAPC_REGENERATE")
    ]
    assert not missing


@pytest.mark.parametrize("path", CASES, ids=_name)
def test_show_prints_the_expected_text(runner, monkeypatch, path):
    monkeypatch.chdir(ROOT)
    result = runner.invoke(cli, ["show", path.relative_to(ROOT).as_posix()])
    text = f"exit {result.exit_code}\n--- stdout\n{result.stdout}--- stderr\n{result.stderr}"
    expected = EXPECTED / f"{_name(path)}.txt"
    if os.environ.get("MAPC_REGENERATE"):
        expected.write_text(text, encoding="utf-8")
    assert "\x1b" not in text  # not a terminal: no colours, no cursor codes
    assert text == expected.read_text(encoding="utf-8")


def test_the_legacy_agenticmd_file_is_refused_with_the_reason():
    text = (EXPECTED / f"{_name(FIXTURES / 'agenticmd' / 'legacy-demo-run-001.md')}.txt").read_text()
    assert text.startswith("exit 1\n")
    assert "[agenticmd.no_storyline]" in text


def test_colours_on_a_terminal_only():
    loaded = Loaded("t.json", "storyline", [_story("hello")])

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty, plain = Terminal(), io.StringIO()
    print_summary(summary(loaded), file=tty)
    print_summary(summary(loaded), file=plain)
    assert "\x1b[" in tty.getvalue()
    assert "\x1b" not in plain.getvalue()
    assert "hello" in plain.getvalue()


def _story(msg, **turn):
    return {
        "schema_version": "storyline/v1",
        "session": "s",
        "agent": {"id": "a"},
        "turns": [{"id": 1, "src": "agent", "msg": msg, **turn}],
    }


def test_message_text_is_never_markup_nor_terminal_control(tmp_path, runner):
    story = _story("[bold red]not markup[/] \x1b]0;owned\x07 \u202eevil")
    path = tmp_path / "s.storyline.json"
    path.write_bytes(orjson.dumps(story))
    result = runner.invoke(cli, ["show", str(path)])
    assert result.exit_code == 0, result.stderr
    assert "[bold red]not markup[/]" in result.stdout
    assert "\x1b" not in result.stdout and "\u202e" not in result.stdout
    assert "\\x1b]0;owned\\x07" in result.stdout and "\\u202e" in result.stdout
    assert safe("a\tb\nc") == "a\tb\nc"


def test_json_full_and_turn(runner, monkeypatch):
    monkeypatch.chdir(ROOT)
    fixture = "tests/data/fixtures/actf/code-repair.actf.json"
    data = orjson.loads(runner.invoke(cli, ["show", fixture, "--json"]).stdout)
    assert data["format"] == "actf"
    (story,) = data["storylines"]
    assert story["session"] == "example-code-repair"
    assert (story["turns"], story["tool_calls"]) == (2, 1)
    assert story["tokens"] == {"prompt": 48, "completion": 20, "total": 68}
    assert story["duration_s"] == 2.0
    assert story["result"]["status"] == "completed"
    assert story["lines"][0]["tool_calls"][0] == {
        "tcid": "call-test-001",
        "fn": "Bash",
        "args": {"command": "cargo test focused_test"},
        "status": "error",
    }
    one = runner.invoke(cli, ["show", fixture, "--turn", "2"])
    assert one.exit_code == 0
    assert "#2" in one.stdout and "#1 " not in one.stdout
    assert "The assertion now uses the expected value." in one.stdout
    missing = runner.invoke(cli, ["show", fixture, "--turn", "99"])
    assert missing.exit_code == 2 and "no turn with id 99" in missing.stderr
    long = "tests/data/fixtures/atif/claude-code-harbor.json"
    short, full = (runner.invoke(cli, ["show", long, *flags]).stdout for flags in ([], ["--full"]))
    assert "…" in short and len(full) > 2 * len(short)


def test_subagents_follow_their_parent_indented(runner, monkeypatch):
    monkeypatch.chdir(ROOT)
    data = orjson.loads(runner.invoke(cli, ["show", str(SUBAGENTS), "--json"]).stdout)
    assert [(s["session"], s["depth"]) for s in data["storylines"]] == [("review-main", 0), ("review-sub-1", 1)]
    text = runner.invoke(cli, ["show", str(SUBAGENTS)]).stdout
    assert "\n    ↳ subagent review-sub-1" in text


def test_redact_in_show(tmp_path, runner):
    path = tmp_path / "s.storyline.json"
    path.write_bytes(orjson.dumps(_story("use sk-abcdefghijklmnopqrstuvwx now")))
    assert "sk-abcdefghijklmnopqrstuvwx" in runner.invoke(cli, ["show", str(path)]).stdout
    result = runner.invoke(cli, ["show", str(path), "--redact"])
    assert "sk-abcdefghijklmnopqrstuvwx" not in result.stdout and "[REDACTED:api_key]" in result.stdout
    result = runner.invoke(cli, ["show", str(path), "--redact-pattern", "(now"])
    assert result.exit_code == 2 and "--redact-pattern" in result.stderr


def test_unreadable_and_unknown_inputs_are_usage_errors(tmp_path, runner):
    assert runner.invoke(cli, ["show", str(tmp_path / "missing.json")]).exit_code == 2
    odd = tmp_path / "odd.json"
    odd.write_bytes(b'{"what": 1}')
    result = runner.invoke(cli, ["show", str(odd)])
    assert result.exit_code == 2 and "--format" in result.stderr


def test_the_readme_example_is_what_show_prints(runner, monkeypatch):
    readme = (ROOT / "README.md").read_text(encoding="utf-8").split("## Looking at trajectories", 1)[1]
    command = readme.split("```sh\n", 1)[1].split("\n", 1)[0]
    shown = readme.split("```text\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(ROOT)
    result = runner.invoke(cli, command.split()[1:])
    assert result.exit_code == 0
    assert result.stdout == shown


def test_a_subagent_is_printed_under_the_turn_that_spawned_it(tmp_path, runner):
    parent = {
        "schema_version": "storyline/v1",
        "session": "lead",
        "agent": {"id": "a"},
        "children": ["helper"],
        "turns": [
            {"id": 1, "src": "user", "msg": "go"},
            {"id": 2, "src": "agent", "msg": "spawning", "tool_calls": [{"tcid": "t1", "fn": "Task", "args": {}}]},
            {"id": 3, "src": "agent", "msg": "done"},
        ],
    }
    child = {
        "schema_version": "storyline/v1",
        "session": "helper",
        "agent": {"id": "b"},
        "parent": {"psid": "lead", "ptid": 2, "scid": "t1"},
        "turns": [{"id": 1, "src": "agent", "msg": "helping"}],
    }
    path = tmp_path / "tree.storyline.json"
    path.write_bytes(orjson.dumps([parent, child]))
    result = runner.invoke(cli, ["show", str(path)])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    spawn = next(i for i, line in enumerate(lines) if "spawning" in line)
    assert lines[spawn + 1].strip().startswith("→ Task")
    assert lines[spawn + 2].startswith("    ↳ subagent helper") and "(from turn 2)" in lines[spawn + 2]
    assert lines[spawn + 5].startswith("      #1 ") and "helping" in lines[spawn + 5]
    assert "done" in lines[spawn + 6] and lines[spawn + 6].startswith("  #3")
