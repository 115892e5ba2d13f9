"""Group values (`group:`, engine/group.py), each construct on its own, with a toy row spec that is
not OpenAI: rows `{"chat", "n", "text"}` plus identity keys; one Storyline per chat."""

from __future__ import annotations

from typing import Any

import pytest

from mapc.engine import group, run
from mapc.engine.compile import compile_spec
from mapc.engine.functions import register
from mapc.engine.problems import MapcError
from mapc.engine.rows import Group
from mapc.engine.spec import load_spec

SPEC = """
name: toy-group
source: toy-group
document:
  rows: /rows
  group_by: /chat
  order_by: /n
  map: {call: toy_group_story, reverse_call: toy_group_back}
objects:
  "": [rows]
  "/rows/{r}": [chat, n, text, owner, team, bot, project]
group:
  - {to: /session, first_of: [/chat]}
  - {to: /run, first_of: [[/project]], when: text, conflict: toy.conflicting_project, back: /project}
  - {to: [/agent/id, /agent/name], first_of: [[/owner, /team], [/bot], {const: nobody}], when: text, back: /owner}
  - {to: /agent/model, first_of: [{story: /agent/id}]}
"""


@register("toy_group_story", 1)
def _story(g: Group) -> tuple[dict[str, Any], dict[str, Any]]:
    if g.problems:
        raise MapcError(list(g.problems))
    turns = [{"id": row["n"], "src": "agent", "msg": row["text"]} for _, row in g.rows]
    return {"schema_version": "storyline/v1", **g.values, "turns": turns}, {}


@register("toy_group_back", 3)
def _back(stories: list[dict[str, Any]], tables: Any, source: str) -> list[list[dict[str, Any]]]:
    return [[{"chat": s["session"], "n": t["id"], "text": t["msg"]} for t in s["turns"]] for s in stories]


PROGRAM = compile_spec(load_spec("toy-group.yaml", SPEC))


def forward(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m.story for m in run.forward(PROGRAM, {"rows": rows}, path="toy.json")]


def back(stories: list[dict[str, Any]]) -> list[dict[str, Any]]:
    (rebuilt,) = run.reverse(PROGRAM, stories)
    return rebuilt.document["rows"]


def test_the_first_row_of_the_group_gives_a_value():
    (story,) = forward([{"chat": "c", "n": 2, "text": "b"}, {"chat": "c", "n": 1, "text": "a"}])
    assert story["session"] == "c"


def test_a_chain_is_searched_row_by_row_and_a_later_candidate_only_when_no_row_gives_one():
    rows = [
        {"chat": "c", "n": 1, "text": "a", "team": "t1", "bot": "b1"},
        {"chat": "c", "n": 2, "text": "b", "owner": "o2"},
    ]
    (story,) = forward(rows)
    assert story["agent"] == {"id": "t1", "name": "t1", "model": "t1"}  # row 1's /team before row 2's /owner
    (story,) = forward(
        [{"chat": "c", "n": 1, "text": "a", "owner": ""}, {"chat": "c", "n": 2, "text": "b", "bot": "b"}]
    )
    assert story["agent"]["id"] == "b"  # "" does not pass `when: text`: the next candidate, /bot
    (story,) = forward([{"chat": "c", "n": 1, "text": "a"}])
    assert story["agent"] == {"id": "nobody", "name": "nobody", "model": "nobody"}  # const; {story} reads it
    assert "run" not in story


def test_conflict_names_every_later_row_that_disagrees():
    rows = [{"chat": "c", "n": k, "text": "t", "project": p} for k, p in ((1, "p"), (2, "p"), (3, "q"), (4, ""))]
    with pytest.raises(MapcError) as info:
        forward(rows)
    assert [(p.code, p.pointer) for p in info.value.problems] == [("toy.conflicting_project", "/rows/2/project")]


def test_back_writes_every_row_after_its_keys_unless_the_rows_give_the_value_back():
    story = {
        "schema_version": "storyline/v1",
        "session": "c",
        "run": "p",
        "agent": {"id": "nobody"},
        "turns": [{"id": 1, "src": "agent", "msg": "a"}, {"id": 2, "src": "agent", "msg": "b"}],
    }
    rows = back([story])
    assert [list(r) for r in rows] == [["chat", "n", "project", "text"]] * 2  # /owner: derived ("nobody")
    assert {r["project"] for r in rows} == {"p"}
    rows = back([{**story, "agent": {"id": "me"}}])
    assert [list(r) for r in rows] == [["chat", "n", "project", "owner", "text"]] * 2
    assert forward(rows)[0]["agent"]["id"] == "me"


@pytest.mark.parametrize(
    ("entries", "at"),
    [
        ("nope", "/group"),
        ([{"to": "/x"}], "/group/0"),
        ([{"to": "/x", "first_of": [], "when": "text"}], "/group/0/first_of"),
        ([{"to": "/x", "first_of": ["/a"], "when": "sunny"}], "/group/0/when"),
        ([{"to": "/x", "first_of": [{"call": "f"}]}], "/group/0/first_of/0"),
        ([{"to": "/x", "first_of": ["/a"], "conflict": 3}], "/group/0/conflict"),
    ],
)
def test_entries_of_the_wrong_shape_are_located_spec_errors(entries: Any, at: str):
    with pytest.raises(MapcError) as info:
        group.parse(entries)
    assert info.value.problems[0].pointer == at


def test_the_mapping_table_lists_every_candidate_pointer_and_the_constants():
    from mapc.engine import table

    text = table.markdown(load_spec("toy-group.yaml", SPEC))
    assert "| `/rows/{r}/project` | `/run` |" in text
    assert "| `/rows/{r}/team` | `/agent/id` `/agent/name` |" in text
    assert '- `/agent/id` = `"nobody"`' in text


def test_turn_ids_from_the_order_key_and_back():
    ids = group.parse_ids({"ask": {"times": 2, "plus": -1}, "say": {"times": 2}})
    assert [ids["ask"].of(1, 3), ids["say"].of(1, 3)] == [6, 7]
    assert [ids["say"].order(1, t) for t in (7, 6, 1, "7")] == [3, None, None, None]  # odd, 0 and text: none
    with pytest.raises(MapcError) as info:
        group.parse_ids({"a/b": {"times": 0}})
    assert info.value.problems[0].pointer == "/ids/a~1b"
