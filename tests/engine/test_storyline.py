"""engine/storyline.py: the hub check (schema + rules) and the Storyline file round trip."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from strategies import storyline_documents

from mapc.engine import convert, serialize, storyline
from mapc.engine.problems import MapcError
from mapc.engine.schema import reference_validator
from mapc.engine.values import json_equal

VALID = {"schema_version": "storyline/v1", "session": "s", "agent": {"id": "a"}, "turns": []}


@settings(max_examples=150, deadline=None)
@given(storyline_documents())
def test_valid_documents_survive_serialize_then_parse(doc):
    assert storyline.check(doc) == []
    text = serialize.dumps(doc)
    again = orjson.loads(text)
    assert json_equal(again, serialize.canonical_storyline(doc))
    assert storyline.check(again) == []
    (read,) = convert.into_storyline("storyline", text)
    assert serialize.dumps(read) == text


@settings(max_examples=100, deadline=None)
@given(storyline_documents())
def test_compiled_and_reference_schema_agree_on_generated_documents(doc):
    assert list(reference_validator("storyline-v1").iter_problems(doc)) == []
    assert storyline.check(doc) == []


def test_all_problems_of_a_document_in_document_order():
    doc = {
        "schema_version": "storyline/v1",
        "session": "",
        "agent": {"id": "a", "nick": 1},
        "turns": [
            {"id": 1, "src": "user", "msg": None, "ts": "yesterday"},
            {"id": 1, "src": "agent", "msg": "x", "tool_calls": [{"tcid": "c", "fn": "f", "args": 1}]},
            {"id": 2, "src": "agent", "msg": "y", "tool_calls": [{"tcid": "c", "fn": "", "args": 1}]},
        ],
    }
    found = [(p.code, p.pointer) for p in storyline.check(doc)]
    assert found == [
        ("schema.minLength", "/session"),
        ("schema.additionalProperties", "/agent/nick"),
        ("storyline.bad_timestamp", "/turns/0/ts"),
        ("storyline.duplicate_turn_id", "/turns/1/id"),
        ("schema.minLength", "/turns/2/tool_calls/0/fn"),
        ("storyline.duplicate_tcid", "/turns/2/tool_calls/0/tcid"),
    ]


def test_unsupported_version_fails_closed_with_one_problem():
    (p,) = storyline.check({**VALID, "schema_version": "storyline/v2"})
    assert (p.code, p.pointer) == ("storyline.unsupported_version", "/schema_version")


def test_a_storyline_file_is_an_object_or_a_non_empty_array():
    one = orjson.dumps(VALID)
    assert convert.into_storyline("storyline", one) == [VALID]
    assert len(convert.into_storyline("storyline", orjson.dumps([VALID, {**VALID, "session": "t"}]))) == 2
    with pytest.raises(MapcError) as info:
        convert.into_storyline("storyline", b"[]")
    assert info.value.problems[0].code == "input.empty"


def test_problems_in_an_array_file_are_prefixed_with_the_index():
    with pytest.raises(MapcError) as info:
        convert.into_storyline("storyline", orjson.dumps([VALID, {**VALID, "session": ""}]))
    assert [(p.code, p.pointer) for p in info.value.problems] == [("schema.minLength", "/1/session")]
