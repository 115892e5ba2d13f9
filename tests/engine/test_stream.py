"""The event-stream document kind (`document.stream`, engine/stream.py, thread.py, pairing.py) with a
spec of no real format: dispatch by a type key, threading by a parent id, pairing by id, residuals
by construction, drift, and located spec errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from mapc.engine import convert, stream
from mapc.engine.problems import MapcError

SPEC = """
name: toy-stream
source: toy-stream
document:
  stream:
    type: /kind
    versions: {at: /v, checked: ["1"]}
    thread: {id: /id, parent: /up}
    pair: {calls: /tool_calls, call_id: /tcid, results: /observation/results, result_id: /source_call_id,
           record: "/answers/{a}/to"}
    story:
      - {const: storyline/v1, to: /schema_version}
      - {from: /sid, to: /session, every: true}
      - {const: toy, to: /agent/id}
    records:
      - type: say
        turn: true
        keys: [kind, id, up, sid, v, who, text, call, at]
        back_when: {/src: user}
        rules:
          - {const: user, to: /src}
          - {from: /text, to: /msg}
      - type: act
        turn: true
        keys: [kind, id, up, sid, v, text, call]
        back_when: {/src: agent}
        rules:
          - {const: agent, to: /src}
          - {from: /text, to: /msg}
          - {from: /call/id, to: /tool_calls/0/tcid}
          - {from: /call/fn, to: /tool_calls/0/fn}
          - {from: /call/args, to: /tool_calls/0/args}
      - type: got
        turn: true
        paired: true
        keys: [kind, id, up, sid, v, answers]
        rules:
          - {const: user, to: /src}
          - {const: "", to: /msg}
          - {from: /answers/0/to, to: /observation/results/0/source_call_id}
          - {from: /answers/0/out, to: /observation/results/0/content}
      - {type: note, keys: [kind, id, up, sid, v, body]}
"""


def toy(tmp_path: Path) -> str:
    path = tmp_path / "toy-stream.yaml"
    path.write_text(SPEC)
    return str(path)


def lines(recs: list[Any]) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in recs)


STREAM = [
    {"kind": "say", "id": "1", "up": None, "sid": "s", "v": "1", "text": "hi"},
    {
        "kind": "act",
        "id": "2",
        "up": "1",
        "sid": "s",
        "v": "1",
        "text": "old",
        "call": {"id": "c0", "fn": "f", "args": {}},
    },
    {"kind": "say", "id": "3", "up": "1", "sid": "s", "v": "1", "text": "edited"},  # a new branch from 1
    {
        "kind": "act",
        "id": "4",
        "up": "3",
        "sid": "s",
        "v": "1",
        "text": "",
        "call": {"id": "c1", "fn": "ls", "args": {"p": "."}},
    },
    {"kind": "note", "id": "5", "up": "4", "sid": "s", "v": "1", "body": "progress"},
    {
        "kind": "act",
        "id": "6",
        "up": "4",
        "sid": "s",
        "v": "1",
        "text": "",
        "call": {"id": "c2", "fn": "cat", "args": {}},
    },
    {"kind": "got", "id": "7", "up": "4", "sid": "s", "v": "1", "answers": [{"to": "c1", "out": "a b"}]},
    {"kind": "got", "id": "8", "up": "6", "sid": "s", "v": "1", "answers": [{"to": "c2", "out": "text"}]},
    {"kind": "future", "id": "9", "up": "8", "sid": "s", "v": "2", "x": [1]},
    {"kind": "act", "id": "10", "up": "8", "sid": "s", "v": "2", "text": "done", "new": True},
]


def test_dispatch_thread_pair_and_residuals(tmp_path: Path) -> None:
    (story,) = convert.into_storyline(toy(tmp_path), lines(STREAM))
    turns = story["turns"]
    assert [(t["src"], t["msg"]) for t in turns] == [
        ("user", "hi"),
        ("user", "edited"),
        ("agent", ""),
        ("agent", ""),
        ("agent", "done"),
    ]
    # the parallel calls' results joined the turns that made them, out of file order
    assert turns[2]["observation"] == {"results": [{"source_call_id": "c1", "content": "a b"}]}
    assert turns[3]["observation"] == {"results": [{"source_call_id": "c2", "content": "text"}]}
    fields = story["unknown_fields"]["sources"]["toy-stream"]["fields"]
    assert fields["/1"] == STREAM[1]  # the abandoned branch, whole
    assert fields["/4"] == STREAM[4] and fields["/8"] == STREAM[8]  # a kept kind, an unknown kind
    assert fields["/9/new"] is True and fields["/6/answers/0/to"] == "c1"  # an unknown key; a place mark
    assert story["session"] == "s"
    back = convert.from_storyline(toy(tmp_path), [story])
    assert json.loads(orjson.dumps(back)) == STREAM


def test_drift_counts_what_the_spec_does_not_know(tmp_path: Path) -> None:
    spec = convert.program_for(toy(tmp_path)).spec.stream
    found = stream.drift(spec, STREAM)
    assert dict(found.unknown_types) == {"future": 1}
    assert dict(found.unknown_keys) == {"act/new": 1}
    assert dict(found.versions) == {"2": 2}
    assert found.messages(spec.checked)[0].startswith(
        "unknown record types from a newer version, kept whole: future ×1"
    )


def test_a_storyline_from_elsewhere_is_written_turn_by_turn_and_threaded(tmp_path: Path) -> None:
    story = {
        "schema_version": "storyline/v1",
        "session": "z",
        "agent": {"id": "other"},
        "turns": [
            {"id": 1, "src": "user", "msg": "q"},
            {
                "id": 2,
                "src": "agent",
                "msg": "",
                "tool_calls": [{"tcid": "k", "fn": "g", "args": 1}],
                "observation": {"results": [{"source_call_id": "k", "content": "r"}]},
            },
        ],
    }
    recs = json.loads(orjson.dumps(convert.from_storyline(toy(tmp_path), [story])))
    assert [r["kind"] for r in recs] == ["say", "act", "got"]
    assert [r["up"] for r in recs] == [None, recs[0]["id"], recs[1]["id"]]
    assert recs[2]["answers"] == [{"to": "k", "out": "r"}] and all(r["sid"] == "z" for r in recs)
    (again,) = convert.into_storyline(toy(tmp_path), lines(recs))
    assert [t.get("observation") for t in again["turns"]] == [None, story["turns"][1]["observation"]]


def test_a_turn_no_kind_writes_is_refused_clearly(tmp_path: Path) -> None:
    story = {
        "schema_version": "storyline/v1",
        "session": "z",
        "agent": {"id": "o"},
        "turns": [{"id": 1, "src": "system", "msg": "x"}],
    }
    with pytest.raises(MapcError) as info:
        convert.from_storyline(toy(tmp_path), [story])
    assert info.value.problems[0].code == "export.unrepresentable"


def test_spec_errors_are_located(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        SPEC.replace("keys: [kind, id, up, sid, v, body]", "keyz: [kind]").replace("type: /kind", "type: kind")
    )
    with pytest.raises(MapcError) as info:
        convert.program_for(str(bad))
    text = "\n".join(str(p) for p in info.value.problems)
    assert "/document/stream/type" in text and "'kind' is not a JSON Pointer" in text
    assert "/document/stream/records/3/keyz" in text
