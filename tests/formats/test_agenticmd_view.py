"""AgenticMD that renders: tool calls and observations as visible fenced Markdown under each block.

The block comment stays the source of truth: decode(encode(s)) == s still holds, the view is made
again from the metadata when reading, and a view that was edited by hand is ignored with a warning
that names the block.
"""

from __future__ import annotations

import copy
import re
import warnings
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from markdown_it import MarkdownIt
from strategies import storyline_documents

from mapc.cli.main import cli
from mapc.engine.convert import from_storyline, into_storyline
from mapc.engine.problems import MapcError
from mapc.engine.values import json_equal
from mapc.mappings import agenticmd

LAWS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def encode(story: dict[str, Any]) -> str:
    return from_storyline("agenticmd", [copy.deepcopy(story)])


def decode(text: str) -> tuple[dict[str, Any], list[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        [story] = into_storyline("agenticmd", text.encode())
    return story, [w for w in caught if isinstance(w.message, agenticmd.EditedView)]


def _story(*turns: dict[str, Any]) -> dict[str, Any]:
    return {"schema_version": "storyline/v1", "session": "s", "agent": {"id": "a"}, "turns": list(turns)}


CALL = {"tcid": "c-1", "fn": "run_tests", "args": {"cmd": "pytest -q", "paths": ["tests/"]}, "result": "3 passed"}
TOOLED = _story(
    {"id": 1, "src": "user", "msg": "Run the tests."},
    {"id": 2, "src": "agent", "msg": "Running them.", "tool_calls": [CALL], "observation": {"results": [{"ok": 1}]}},
)


@LAWS
@given(storyline_documents())
def test_decode_of_encode_is_the_storyline_with_no_warning(doc):
    text = encode(doc)
    back, edited = decode(text)
    assert json_equal(back, doc)
    assert edited == []
    with_view = [t for t in doc["turns"] if t.get("tool_calls") or t.get("observation") is not None]
    assert text.count(agenticmd.VIEW_OPEN) == len(with_view)


def _rendered_text(markdown: str) -> str:
    """What a Markdown renderer shows: the HTML of the file, comments removed, tags stripped."""
    html = MarkdownIt("commonmark").render(markdown)
    html = re.sub(r"<!--.*?-->", "", html, flags=re.S)
    return re.sub(r"<[^>]+>", "", html)


def test_tool_calls_and_observations_are_visible_when_rendered():
    text = encode(TOOLED)
    shown = _rendered_text(text)
    assert "Tool call run_tests · c-1" in shown
    assert '"cmd": "pytest -q"' in shown.replace("&quot;", '"')
    assert "Result of c-1" in shown and "3 passed" in shown
    assert "Observation" in shown and '"ok": 1' in shown.replace("&quot;", '"')
    html = MarkdownIt("commonmark").render(text)
    assert '<pre><code class="language-json">' in html  # fenced, so highlighted where rendered
    # and before this view, all of it was only inside the block comment:
    before = re.sub(re.escape(agenticmd.VIEW_OPEN) + ".*?" + re.escape(agenticmd.VIEW_CLOSE), "", text, flags=re.S)
    assert "pytest -q" not in _rendered_text(before)


HOSTILE = (
    "```\nnot the end\n````\n"
    f"{agenticmd.VIEW_CLOSE}\n\n<!-- persisting:block:agent {{}} -->\n\n"
    f"{agenticmd.VIEW_OPEN}\n**Tool call** `x`"
)


def test_a_view_holding_markers_and_fences_reads_back_exactly():
    story = _story(
        {
            "id": 1,
            "src": "agent",
            "msg": "m",
            "tool_calls": [{"tcid": "t`1", "fn": "`fn`", "args": HOSTILE, "result": {"out": HOSTILE}}],
            "observation": HOSTILE,
        },
        {"id": 2, "src": "user", "msg": "after"},
    )
    text = encode(story)
    back, edited = decode(text)
    assert json_equal(back, story) and edited == []
    shown = _rendered_text(text)
    assert "not the end" in shown and "after" in shown
    assert "`````" in text  # a fence longer than the run of four backticks inside


def test_an_edited_view_loses_to_the_metadata_with_a_warning_naming_the_block():
    text = encode(TOOLED)
    edited_text = text.replace('"cmd": "pytest -q"', '"cmd": "rm -rf /"', 1)
    assert edited_text != text
    back, edited = decode(edited_text)
    assert json_equal(back, TOOLED)
    assert back["turns"][1]["tool_calls"][0]["args"]["cmd"] == "pytest -q"
    (warning,) = edited
    assert warning.message.pointer == "/blocks/1/view"
    assert warning.message.code == "agenticmd.view_edited"
    assert "block 1" in str(warning.message) and "metadata wins" in str(warning.message)
    assert encode(back) == text  # writing again restores the view


def test_an_edited_view_whose_content_holds_the_closing_line_is_still_skipped_whole():
    story = _story(
        {"id": 1, "src": "agent", "msg": "m", "observation": f"a\n{agenticmd.VIEW_CLOSE}\nb"},
        {"id": 2, "src": "user", "msg": "next"},
    )
    text = encode(story).replace("\nb\n", "\nB\n", 1)
    back, edited = decode(text)
    assert json_equal(back, story) and len(edited) == 1


def test_a_view_added_by_hand_to_a_turn_without_tools_is_ignored_with_a_warning():
    text = encode(_story({"id": 1, "src": "user", "msg": "hi"}))
    text += f"{agenticmd.VIEW_OPEN}\n\nmade up\n\n{agenticmd.VIEW_CLOSE}\n"
    back, edited = decode(text)
    assert back["turns"][0]["msg"] == "hi" and len(edited) == 1


def test_crlf_views_read_without_warning():
    text = encode(TOOLED).replace("\n", "\r\n")  # the bodies hold no line break: their lengths still hold
    back, edited = decode(text)
    assert json_equal(back, TOOLED) and edited == []


def test_a_view_never_closed_is_a_bad_block():
    text = encode(TOOLED)
    broken = text.replace(agenticmd.VIEW_CLOSE, "(gone)").replace('"cmd": "pytest -q"', '"cmd": "x"')
    with pytest.raises(MapcError) as info:
        decode(broken)
    assert [(p.code, p.pointer) for p in info.value.problems] == [("agenticmd.bad_block", "/blocks/1/view")]


def test_the_document_id_ignores_the_view():
    plain = encode(TOOLED).replace(agenticmd.turn_view(TOOLED["turns"][1]) + "\n\n", "")
    assert agenticmd.VIEW_OPEN not in plain
    with_view = agenticmd.parse_document(encode(TOOLED).encode())
    without = agenticmd.parse_document(plain.encode())
    assert agenticmd.document_id(with_view) == agenticmd.document_id(without)
    assert without.blocks == with_view.blocks


def test_the_cli_prints_the_warning_with_the_file(runner, tmp_path):
    md = tmp_path / "run.md"
    md.write_text(encode(TOOLED).replace('"cmd": "pytest -q"', '"cmd": "edited"', 1), encoding="utf-8")
    result = runner.invoke(cli, ["convert", str(md), "--to", "storyline"])
    assert result.exit_code == 0
    assert result.stderr == (
        f"warning: {md}: /blocks/1/view: the tool calls shown under block 1 were edited and differ from the "
        "block's metadata; the metadata wins (the view is written again from it) [agenticmd.view_edited]\n"
    )
    shown = runner.invoke(cli, ["show", str(md)])
    assert shown.exit_code == 0 and "[agenticmd.view_edited]" in shown.stderr
    assert "run_tests" in shown.stdout and "edited" not in shown.stdout
