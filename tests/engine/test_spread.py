"""Spread values (`spread:`, engine/spread.py), each construct on its own, with a toy spec that is
not OpenAI: rows `{"chat", "n", "text"}` with flat env and metric keys; one Storyline per chat, one
agent turn per row.  The toy functions call the engine's spread both ways."""

from __future__ import annotations

from typing import Any

import pytest

from mapc.engine import run, spread
from mapc.engine.compile import compile_spec
from mapc.engine.functions import register
from mapc.engine.problems import MapcError
from mapc.engine.rows import Back, Group
from mapc.engine.spec import load_spec

SPEC = """
name: toy-spread
source: toy-spread
document:
  rows: /rows
  group_by: /chat
  order_by: /n
  map: {call: toy_spread_story, reverse_call: toy_spread_back}
objects:
  "": [rows]
  "/rows/{r}": [chat, n, text, region, host, trace, stats, score]
  "/rows/{r}/stats": ["*"]
spread:
  - {to: /metrics, open: /stats, except: [host], keys: [score]}
  - {to: /env, first_to: /task/env, when: text, keys: {region: /region, net/host: /stats/host}}
  - {to: /env, when: text, keys: {trace: /trace}}
"""


@register("toy_spread_story", 1)
def _story(g: Group) -> tuple[dict[str, Any], dict[str, Any]]:
    story: dict[str, Any] = {"schema_version": "storyline/v1", "session": g.rows[0][1]["chat"], "agent": {"id": "t"}}
    turns = []
    for _, row in g.rows:
        turn = {"id": row["n"], "src": "agent", "msg": row["text"]}
        spread.forward(g.spread, row, turn, story, "/metrics")
        spread.forward(g.spread, row, turn, story, "/env")
        turns.append(turn)
    return {**story, "turns": turns}, {}


@register("toy_spread_back", 3)
def _back(stories: list[dict[str, Any]], back: Back, source: str) -> list[list[dict[str, Any]]]:
    out = []
    for s in stories:
        rows = []
        for t in s["turns"]:
            row = {"chat": s["session"], "n": t["id"], "text": t["msg"]}
            spread.reverse(back.spread, row, t, s, "/env")
            spread.reverse(back.spread, row, t, s, "/metrics")
            rows.append(row)
        out.append(rows)
    return out


PROGRAM = compile_spec(load_spec("toy-spread.yaml", SPEC))


def forward(rows: list[dict[str, Any]]) -> dict[str, Any]:
    (m,) = run.forward(PROGRAM, {"rows": rows}, path="toy.json")
    return m.story


def back(story: dict[str, Any]) -> list[dict[str, Any]]:
    (rebuilt,) = run.reverse(PROGRAM, [story])
    return rebuilt.document["rows"]


def row(n: int, **extra: Any) -> dict[str, Any]:
    return {"chat": "c", "n": n, "text": f"t{n}", **extra}


def test_open_collects_the_object_but_except_then_the_row_keys_which_win():
    story = forward([row(1, stats={"tokens": 5, "host": "h", "score": 1}, score=9)])
    assert story["turns"][0]["metrics"] == {"tokens": 5, "score": 9}
    assert story["task"] == {"env": {"net": {"host": "h"}}}  # `host` is the env's, not a metric
    assert back(story)[0] == {"chat": "c", "n": 1, "text": "t1", "score": 9, "stats": {"host": "h", "tokens": 5}}


def test_first_to_takes_the_first_value_and_a_turn_only_a_later_different_one():
    story = forward([row(1, region="eu", trace="a"), row(2, region="eu"), row(3, region="us", trace="")])
    assert story["task"] == {"env": {"region": "eu"}}
    assert [t.get("env") for t in story["turns"]] == [{"trace": "a"}, None, {"region": "us"}]
    rows = back(story)
    assert [(r.get("region"), r.get("trace")) for r in rows] == [("eu", "a"), ("eu", None), ("us", None)]


def test_a_key_path_writes_inside_an_object_and_when_filters_values():
    story = forward([row(1, region="", stats={"host": "h1"})])
    assert story["task"] == {"env": {"net": {"host": "h1"}}}  # "" is not text: no region
    assert back(story)[0]["stats"] == {"host": "h1"}


def test_the_turn_object_wins_whole_over_the_first_values_on_the_way_back():
    story = {
        "schema_version": "storyline/v1",
        "session": "c",
        "agent": {"id": "t"},
        "task": {"env": {"region": "eu", "net": {"host": "h"}}},
        "turns": [{"id": 1, "src": "agent", "msg": "m", "env": {"net": {"other": 1}}}],
    }
    assert back(story)[0] == {"chat": "c", "n": 1, "text": "m", "region": "eu"}  # env.net replaced task's net


@pytest.mark.parametrize(
    ("entries", "at"),
    [
        ({"to": "/x"}, "/spread"),
        ([{"keys": {"a": "/a"}}], "/spread/0"),
        ([{"to": "/x", "keys": {"a": "/a"}, "when": "sunny"}], "/spread/0/when"),
        ([{"to": "/x", "open": "/o", "keys": [1]}], "/spread/0"),
        ([{"to": "/x", "keys": {"a": "no-slash"}}], "/spread/0"),
    ],
)
def test_entries_of_the_wrong_shape_are_located_spec_errors(entries: Any, at: str):
    with pytest.raises(MapcError) as info:
        spread.parse(entries)
    assert info.value.problems[0].pointer == at


def test_the_mapping_table_lists_keyed_and_open_values():
    from mapc.engine import table

    text = table.markdown(load_spec("toy-spread.yaml", SPEC))
    assert "| `/rows/{r}/region` | `/task/env/region` `/turns/{t}/env/region` |" in text
    assert "| `/rows/{r}/trace` | `/turns/{t}/env/trace` |" in text
    assert "| `/rows/{r}/stats/{key}` | `/turns/{t}/metrics/{key}` |" in text
    assert "| `/rows/{r}/score` | `/turns/{t}/metrics/score` |" in text
