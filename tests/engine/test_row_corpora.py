"""Row corpora (engine/rows.py), each construct on its own, with a toy spec that is not OpenAI.

The toy format: a list of `{"chat": ..., "n": ..., "text": ...}` rows; one Storyline per chat,
one agent turn per row (id = n).  Its two map functions are registered here.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from mapc.engine import run
from mapc.engine.compile import compile_spec
from mapc.engine.functions import register
from mapc.engine.problems import MapcError
from mapc.engine.rows import Group, relative_path
from mapc.engine.spec import load_spec

SPEC = """
name: toy-rows
source: toy
document:
  rows: /rows
  group_by: /chat
  order_by: /n
  map: {call: toy_rows_story, reverse_call: toy_rows_back}
decode_json: ["/rows/{r}/meta"]
objects:
  "": [rows]
  "/rows/{r}": [chat, n, text, meta]
  "/rows/{r}/meta": ["*"]
consume:
  /rows/{r}/echo: {equals: "/rows/{r}/text"}
  /rows/{r}/chat_copy: {equals: {story: /session}}
  /rows/{r}/blank: {when: empty}
  /rows/{r}/label: {when: text}
  /rows/{r}/kind: {equals: {const: toy}}
  /rows/{r}/meta/secret: {equals: {const: 42}}
tables: {speaker: agent}
"""


@register("toy_rows_story", 1)
def _story(group: Group) -> tuple[dict[str, Any], dict[str, Any]]:
    turns = [{"id": row["n"], "src": group.tables["speaker"], "msg": row.get("text")} for _, row in group.rows]
    story = {"schema_version": "storyline/v1", "session": group.rows[0][1]["chat"], "agent": {"id": "toy"}}
    return {**story, "turns": turns}, {}


@register("toy_rows_back", 3)
def _back(stories: list[dict[str, Any]], tables: Any, source: str) -> list[list[dict[str, Any]]]:
    return [[{"chat": s["session"], "n": t["id"], "text": t["msg"]} for t in s["turns"]] for s in stories]


PROGRAM = compile_spec(load_spec("toy-rows.yaml", SPEC))


def forward(doc: Any) -> list[dict[str, Any]]:
    return [m.story for m in run.forward(PROGRAM, doc, path="toy.json")]


def fields(story: dict[str, Any]) -> dict[str, Any]:
    return story.get("unknown_fields", {}).get("sources", {}).get("toy", {}).get("fields", {})


def back(stories: list[dict[str, Any]]) -> Any:
    (rebuilt,) = run.reverse(PROGRAM, stories)
    return rebuilt.document


def r(chat: str, n: Any, text: str = "t", **extra: Any) -> dict[str, Any]:
    return {"chat": chat, "n": n, "text": text, **extra}


def test_group_by_first_appearance_and_order_by_a_stable_sort():
    stories = forward([r("b", 2, "b2"), r("a", 9, "a9"), r("b", 1, "b1"), r("a", 3, "a3")])
    assert [(s["session"], [t["msg"] for t in s["turns"]]) for s in stories] == [
        ("b", ["b1", "b2"]),
        ("a", ["a3", "a9"]),
    ]


def test_a_bare_array_and_the_object_form_are_the_same_rows():
    rows = [r("a", 1), r("a", 2)]
    assert forward(rows) == forward({"rows": rows})


def test_row_checks_point_at_the_index_in_the_file():
    with pytest.raises(MapcError) as info:
        forward([r("a", 1), "x", r("", 1), r("a", 0), r("a", 1)])
    assert [(p.code, p.pointer) for p in info.value.problems] == [
        ("rows.not_object", "/rows/1"),
        ("rows.group_key", "/rows/2/chat"),
        ("rows.order_key", "/rows/3/n"),
        ("rows.duplicate_order_key", "/rows/4/n"),
    ]


def test_decode_json_reads_strings_that_hold_json_and_keeps_others():
    (story,) = forward([r("a", 1, meta=orjson.dumps({"secret": 7, "x": 1}).decode()), r("a", 2, meta="{oops")])
    assert fields(story) == {"/rows/0/meta/secret": 7, "/rows/1/meta": "{oops"}


def test_consume_conditions():
    rows = [
        r("a", 1, "same", echo="same", chat_copy="a", blank=[], label="L", kind="toy", meta={"secret": 42}),
        r("a", 2, "text", echo="other", chat_copy="b", blank=[0], label="", kind="else", meta={"secret": 1}),
    ]
    (story,) = forward(rows)
    assert fields(story) == {
        "/rows/1/echo": "other",
        "/rows/1/chat_copy": "b",
        "/rows/1/blank": [0],
        "/rows/1/label": "",
        "/rows/1/kind": "else",
        "/rows/1/meta/secret": 1,
    }


def test_unknown_keys_are_kept_with_counts_and_the_documents_own_keys_go_with_every_story():
    (a, b) = forward({"rows": [r("a", 1, x=1), r("b", 1, x=2)], "top": True})
    assert fields(a) == {"/top": True, "/rows/0/x": 1}
    assert fields(b) == {"/top": True, "/rows/1/x": 2}
    assert a["unknown_fields"]["sources"]["toy"]["source_document_id"] == "toy.json"


def test_reverse_writes_rows_story_by_story_with_residuals_back_in_place():
    doc = {"rows": [r("a", 1, x=1), r("a", 2), r("b", 5, y=[1])], "top": 0}
    assert back(forward(doc)) == doc


def test_a_moved_row_keeps_its_order_key_so_its_residuals_find_it():
    doc = {"rows": [r("b", 2, x="b2"), r("a", 1, x="a1"), r("b", 1)]}
    stories = forward(doc)
    assert fields(stories[0]) == {"/rows/0/x": "b2", "/rows/0/n": 2}  # row 0 comes back at index 1
    assert back(stories) == {"rows": [r("b", 1), r("b", 2, x="b2"), r("a", 1, x="a1")]}


def test_a_kept_rows_array_replaces_the_rebuilt_rows():
    (story,) = forward([r("a", 1)])
    story["unknown_fields"] = {"sources": {"toy": {"source_document_id": "toy.json", "fields": {"/rows": [{"z": 1}]}}}}
    assert back([story]) == {"rows": [{"z": 1}]}


@pytest.mark.parametrize("path", ["/abs.json", "../up.json", "a/./b.json", ""])
def test_the_identity_path_must_be_relative_and_inside(path):
    with pytest.raises(MapcError) as info:
        relative_path(path)
    assert info.value.problems[0].code == "input.bad_path"


def test_the_count_tree_wildcards_every_object_variable():
    (story,) = forward([r("a", 1, x=1), r("a", 2, x=2)])
    assert story.get("unknown_key_counts") is None or story["unknown_key_counts"]["toy"] == {"/rows/*/x": 2}
    assert PROGRAM.count_tree
