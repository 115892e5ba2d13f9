"""A repeated key is refused by default, in every format (issue 14 §7; mapc's decision, stricter
than the reference): JSON inputs, AgenticMD headers, bodies and frontmatter; a string holding JSON
with a repeated key is kept as the string.  The cheap check (engine/duplicates.py: colons counted,
no second parse) must say what a parse with every object's pairs says, for any JSON text."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import json_values

from mapc.engine import duplicates
from mapc.engine.convert import into_storyline
from mapc.engine.problems import MapcError
from mapc.mappings import openai_chat

LAW = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def json_texts(draw: st.DrawFn) -> str:
    """JSON text of a random value, written by hand: keys sometimes repeated (with another value),
    colons in strings sometimes escaped as \\u003a, whitespace around the separators."""

    def text(value: Any) -> str:
        if isinstance(value, dict):
            items = []
            for key, item in value.items():
                items.append(pair(key, item))
                if draw(st.integers(0, 7)) == 0:  # the same key again
                    items.append(pair(key, draw(json_values(max_leaves=3))))
            return "{" + ",".join(items) + "}"
        if isinstance(value, list):
            return "[" + ", ".join(text(v) for v in value) + "]"
        if isinstance(value, str):
            return string(value)
        return json.dumps(value)

    def pair(key: str, item: Any) -> str:
        return (
            string(key) + draw(st.sampled_from(["", " ", "\n "])) + ":" + draw(st.sampled_from(["", " "])) + text(item)
        )

    def string(value: str) -> str:
        out = json.dumps(value)
        return out.replace(":", "\\u003a") if draw(st.booleans()) else out

    return text(draw(json_values(max_leaves=12)))


@LAW
@given(json_texts())
def test_the_cheap_check_agrees_with_a_second_parse(text: str) -> None:
    doc = orjson.loads(text)
    assert duplicates.problems_of(text, doc) == duplicates.problems(text)


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1, "a": 2}',
        '{"a:": 1, "a:": 1}',  # a colon in the repeated key
        '{"x": "\\u003a", "a": 1, "a": 2}',  # an escaped colon elsewhere balances one dropped key
        '{"a": {"b": [1, {"c": 1, "c": ":"}]}}',
        '[{"k": 1}, {"k": 2, "k": 3}]',
    ],
)
def test_repeated_keys_are_found(text: str) -> None:
    found = duplicates.problems_of(text, orjson.loads(text))
    assert found and found == duplicates.problems(text)


STORY = '{"schema_version":"storyline/v1","session":"s","agent":{"id":"a"},"turns":[{"id":1,"src":"user","msg":"hi"}]}'
HEAD = "---\nformat: persisting\nstoryline:\n  schema_version: storyline/v1\n  session: s\n  agent:\n    id: a\n---\n\n"


def _block(header: str, body: str) -> str:
    return f"<!-- persisting:block:user {header} -->\n\n{body}\n"


@pytest.mark.parametrize(
    ("text", "code", "at"),
    [
        (
            HEAD
            + _block(
                '{"type":"text","length":2,"source":"user","source":"agent","storyline":{"id":1,"src":"user"}}', "hi"
            ),
            "agenticmd.duplicate_key",
            "/blocks/0/header/source",
        ),
        (
            HEAD + _block('{"type":"text","length":2,"storyline":{"id":1,"id":2,"src":"user"}}', "hi"),
            "agenticmd.duplicate_key",
            "/blocks/0/header/storyline/id",
        ),
        (
            HEAD
            + _block(
                '{"type":"json","length":16,"message_encoding":"json","storyline":{"id":1,"src":"user"}}',
                '{"a": 1, "a": 2}',
            ),
            "agenticmd.duplicate_key",
            "/blocks/0/body/a",
        ),
        (
            HEAD.replace("  session: s\n", "  session: s\n  session: t\n")
            + _block('{"type":"text","length":2,"storyline":{"id":1,"src":"user"}}', "hi"),
            "agenticmd.duplicate_key",
            "/frontmatter/storyline/session",
        ),
    ],
    ids=["header key", "key of the header's storyline", "JSON body", "frontmatter"],
)
def test_agenticmd_refuses_a_repeated_key_anywhere(text: str, code: str, at: str, monkeypatch) -> None:
    with pytest.raises(MapcError) as info:
        into_storyline("agenticmd", text.encode())
    assert [(p.code, p.pointer) for p in info.value.problems] == [(code, at)]
    monkeypatch.setenv(duplicates.ENV, "1")  # --allow-duplicate-keys: the last value, as before
    assert into_storyline("agenticmd", text.encode())


def test_storyline_json_refuses_a_repeated_key(monkeypatch) -> None:
    text = STORY.replace('"session":"s"', '"session":"s","session":"t"').encode()
    with pytest.raises(MapcError) as info:
        into_storyline("storyline", text)
    assert [(p.code, p.pointer) for p in info.value.problems] == [("json.duplicate_key", "/session")]
    monkeypatch.setenv(duplicates.ENV, "1")
    [story] = into_storyline("storyline", text)
    assert story["session"] == "t"


def test_a_string_holding_json_with_a_repeated_key_stays_a_string(monkeypatch) -> None:
    text = '{"path": "a", "path": "b"}'
    assert openai_chat.json_text_value(text) == text  # decoding it would lose "a"
    assert openai_chat.json_text_value('{"path": "a"}') == {"path": "a"}
    monkeypatch.setenv(duplicates.ENV, "1")
    assert openai_chat.json_text_value(text) == {"path": "b"}


def test_a_repeated_key_deeper_than_orjson_writes_is_found() -> None:
    """Past 254 levels the check parses again; past the stdlib's recursion limit too (not a pass)."""
    text = "[" * 1000 + '{"a": 1, "a": 2}' + "]" * 1000
    [problem] = duplicates.problems_of(text, orjson.loads(text))
    assert problem.pointer == "/0" * 1000 + "/a"
