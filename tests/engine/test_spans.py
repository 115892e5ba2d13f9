"""engine/spans.py: span-tree specs are data — a made-up trace format with other key names, levels and
id sizes runs both ways through the same engine (nothing of OTLP or GenAI is built in).

The format: `{"batches": [{"host": …, "events": [...]}]}`, events with `tid`/`eid`/`up` ids (4 and 2
bytes), `t0`/`t1` times and `tags: [{k, v: {s|n: …}}]`; a `run` event per Storyline, a `say`
event per turn.  Its two functions are registered here.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

import mapc  # noqa: F401  (installs the shipped catalog: the function registry)
from mapc.engine import spans
from mapc.engine.functions import register
from mapc.engine.problems import MapcError

SPEC = {
    "name": "toy-trace",
    "document": {
        "spans": {
            "nest": ["batches", "events"],
            "envelope": [{"host": "h1"}],
            "ids": {"trace": "tid", "span": "eid", "parent": "up", "trace_bytes": 4, "span_bytes": 2},
            "times": {"start": "t0", "end": "t1"},
            "after": {"ok": True},
            "attributes": {
                "at": "tags",
                "key": "k",
                "value": "v",
                "read": {"n": "int"},
                "write": {"bool": "b", "int": "n", "string": "s", "other": "s"},
            },
            "kind": "op",
            "root": "run",
            "trace_id": ["t", "{root}"],
            "read": "toy_read",
            "write": "toy_write",
            "codes": {"invalid": "toy.invalid", "bad_id": "toy.bad_id", "no_root": "toy.no_run"},
            "indent": None,
        }
    },
}


@register("toy_write", 2)
def toy_write(story: dict[str, Any], ctx: spans.Context) -> list[dict[str, Any]]:
    turns = story["turns"]
    says = [
        {
            "id": ["say", story["session"], str(i)],
            "parent": 0,
            "fields": {"label": "say"},
            "start": 10 + i,
            "end": 10 + i,
            "attributes": [["op", "say"], ["who", t["src"]], ["text", t["msg"]], ["n", t["id"]]],
        }
        for i, t in enumerate(turns)
    ]
    root = {
        "id": ["run", story["session"]],
        "parent": None,
        "fields": {"label": "run"},
        "start": 1,
        "end": 99,
        "attributes": [["op", "run"], ["session", story["session"]], ["agent", story["agent"]]],
    }
    return [root, *says]


@register("toy_read", 5)
def toy_read(root: Any, own: list[spans.Span], roots: Any, ctx: spans.Context, key: str) -> tuple[dict, bool]:
    story = {
        "schema_version": "storyline/v1",
        "session": root.attrs["session"],
        "agent": ctx.json(root.attrs["agent"], root.at),
        "turns": [{"id": s.attrs["n"], "src": s.attrs["who"], "msg": s.attrs["text"]} for s in own],
    }
    return story, False


SPANS = spans.parse(SPEC, {})
STORY = {
    "schema_version": "storyline/v1",
    "session": "s1",
    "agent": {"id": "a"},
    "turns": [{"id": 1, "src": "user", "msg": "hi"}, {"id": 2, "src": "agent", "msg": "hello"}],
}


def test_a_made_up_trace_format_writes_by_its_spec() -> None:
    doc = json.loads(spans.encode(SPANS, [STORY]))
    ((batch,),) = [doc["batches"]]
    assert batch["host"] == "h1"
    run, first, second = batch["events"]
    assert len(run["tid"]) == 8 and len(run["eid"]) == 4 and "up" not in run
    assert first["up"] == second["up"] == run["eid"] and first["tid"] == run["tid"]
    assert run["eid"] == spans.hashed_id("run\0s1", 2) and run["tid"] == spans.hashed_id("t\0s1", 4)
    assert first["tags"][3] == {"k": "n", "v": {"n": "1"}}  # an integer as text, its type by the spec
    assert run["tags"][2] == {"k": "agent", "v": {"s": '{"id":"a"}'}}  # other values as JSON text
    assert (first["label"], first["t0"], first["ok"]) == ("say", "10", True)


def test_it_reads_back_and_keeps_what_the_writer_would_not_give() -> None:
    doc = json.loads(spans.encode(SPANS, [STORY]))
    event = doc["batches"][0]["events"][1]
    event["tags"].append({"k": "colour", "v": {"s": "blue"}})
    event["label"] = "shout"
    (story,) = spans.decode(SPANS, orjson.dumps(doc))
    assert story["turns"] == STORY["turns"]
    kept = story["unknown_fields"]["sources"]["toy-trace"]["fields"]
    assert kept["/batches/0/events/1/tags/4"] == {"k": "colour", "v": {"s": "blue"}}
    assert kept["/batches/0/events/1/label"] == "shout"
    assert kept["/batches/0/host"] == "h1"  # the envelope's own values
    assert "/batches/0/events/2/label" not in kept  # what the writer gives back is not kept
    assert story["unknown_key_counts"]["toy-trace"]["/batches/*/events/*/tags/*"] == 1


def test_its_ids_and_root_are_checked_with_its_codes() -> None:
    doc = json.loads(spans.encode(SPANS, [STORY]))
    doc["batches"][0]["events"][1]["eid"] = "xyz"
    with pytest.raises(MapcError) as bad:
        spans.decode(SPANS, orjson.dumps(doc))
    assert [(p.code, p.pointer) for p in bad.value.problems] == [("toy.bad_id", "/batches/0/events/1/eid")]
    doc["batches"][0]["events"] = doc["batches"][0]["events"][2:]
    with pytest.raises(MapcError) as none:
        spans.decode(SPANS, orjson.dumps(doc))
    assert none.value.problems[0].code == "toy.no_run"


def _without(data: Any, *path: str) -> Any:
    out = json.loads(json.dumps(data))
    node = out
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return out


@pytest.mark.parametrize(
    ("broken", "want"),
    [
        (_without(SPEC, "document", "spans", "ids", "trace"), [("spec.schema", "/document/spans/ids")]),
        (_without(SPEC, "document", "spans"), [("spec.schema", "/document")]),
        (
            {**SPEC, "document": {"spans": {**SPEC["document"]["spans"], "nest": "batches"}}},
            [("spec.schema", "/document/spans/nest")],
        ),
        (
            {
                **SPEC,
                "document": {
                    "spans": {
                        **SPEC["document"]["spans"],
                        "ids": {**SPEC["document"]["spans"]["ids"], "span_bytes": "2"},
                    }
                },
            },
            [("spec.schema", "/document/spans/ids/span_bytes")],
        ),
        (
            {**SPEC, "document": {"spans": {**SPEC["document"]["spans"], "read": "no_such_reader"}}},
            [("spec.unknown_function", "/document/spans/read")],
        ),
        ({**SPEC, "extra": 1}, [("spec.schema", "/extra")]),
        ("not a spec", [("spec.schema", "")]),
    ],
)
def test_a_malformed_spec_is_refused_at_its_pointer_never_a_key_error(broken: Any, want: list[Any]) -> None:
    with pytest.raises(MapcError) as bad:
        spans.parse(broken, {})
    assert [(p.code, p.pointer) for p in bad.value.problems] == want


def test_a_table_lists_each_attribute_and_its_storyline_pointers() -> None:
    table = {
        **SPEC["document"]["spans"],
        "table": {"op": "(the kind)", "who": "/turns/{t}/src", "text": "/turns/{t}/msg /x"},
    }
    text = spans.markdown(spans.parse({**SPEC, "document": {"spans": table}}, {}))
    assert "| `who` | `/turns/{t}/src` |" in text
    assert "| `text` | `/turns/{t}/msg`, `/x` |" in text
    assert "| `op` | (the kind) |" in text


def test_the_tables_are_checked_against_the_schema_the_spec_names() -> None:
    # what the functions read in `tables` is checked before they run (here the otel-genai tables'
    # schema, against tables that lack what otel_spans reads)
    named = {**SPEC, "document": {"spans": {**SPEC["document"]["spans"], "tables_schema": "otel-genai-tables"}}}
    with pytest.raises(MapcError) as bad:
        spans.parse({**named, "tables": {"ns": {}}}, {"ns": {}})
    found = {(p.code, p.pointer) for p in bad.value.problems}
    assert ("spec.schema", "/tables/ns") in found and ("spec.schema", "/tables") in found
    unknown = {**SPEC, "document": {"spans": {**SPEC["document"]["spans"], "tables_schema": "no-such-tables"}}}
    with pytest.raises(MapcError) as none:
        spans.parse(unknown, {})
    assert [(p.code, p.pointer) for p in none.value.problems] == [
        ("spec.unknown_schema", "/document/spans/tables_schema")
    ]
