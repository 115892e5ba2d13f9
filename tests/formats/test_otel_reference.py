"""The shipped `otel-genai` format against the codec as it stood before it was reworked
(tests/formats/otel_reference.py, frozen): byte for byte, both ways.

Over every fixture Storyline, Storylines from the hub generator and from the ATIF and chat
generators, the trace written must be the same text, and reading a trace mapc wrote must give the
same Storylines.  One change is on purpose (`fixed`): a time before 1970 is written as 0, not
negative.  Reading a trace of another instrumentation (no `storyline.*` attributes) is not
compared: it changed on purpose (usage, end times and unread attributes are now kept, see
test_otel_instrumented.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import otel_reference as reference
import pytest
from atif_strategies import atif_documents
from chat_strategies import conversations
from conftest import FIXTURES
from hypothesis import HealthCheck, given, settings
from strategies import storyline_documents

import mapc

FILES = sorted(p for fmt in ("atif", "actf", "openai-msg", "openai-chat") for p in (FIXTURES / fmt).glob("*.json*"))


def fixed(text: str) -> str:
    """The reference's output with its one bug fixed: a time before 1970 was written negative, which
    OTLP's unsigned fixed64 times cannot hold (receivers refuse the file); it is written as 0 now."""
    doc = json.loads(text)
    changed = False
    for span in (s for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]):
        for key in ("startTimeUnixNano", "endTimeUnixNano"):
            if span[key].startswith("-"):
                span[key], changed = "0", True
    return json.dumps(doc, ensure_ascii=False, indent=2) + "\n" if changed else text


def same_both_ways(stories: list[dict[str, Any]]) -> None:
    text = mapc.from_storyline("otel-genai", stories)
    assert text == fixed(reference.encode(stories))
    assert orjson.dumps(mapc.into_storyline("otel-genai", text.encode())) == orjson.dumps(
        reference.decode(text.encode())
    )


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_fixtures_write_and_read_as_before(path: Path) -> None:
    same_both_ways(mapc.into_storyline(path.parent.name, path.read_bytes(), jsonl=path.suffix == ".jsonl"))


def test_a_tree_of_subagents_writes_and_reads_as_before() -> None:
    stories = mapc.into_storyline("atif", (FIXTURES / "atif" / "claude-code-harbor.json").read_bytes())
    parent = stories[0]
    child = {**parent, "session": parent["session"] + "-sub", "parent": {"psid": parent["session"]}}
    same_both_ways([parent, child])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(storyline_documents())
def test_hub_storylines_write_and_read_as_before(doc: dict[str, Any]) -> None:
    same_both_ways([doc])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(atif_documents())
def test_generated_atif_writes_and_reads_as_before(doc: dict[str, Any]) -> None:
    same_both_ways(mapc.into_storyline("atif", orjson.dumps(doc)))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations())
def test_generated_chats_write_and_read_as_before(doc: dict[str, Any]) -> None:
    same_both_ways(mapc.into_storyline("openai-chat", orjson.dumps(doc)))


def test_a_time_before_1970_is_written_as_0_and_reads_back_exactly() -> None:
    from google.protobuf import json_format
    from opentelemetry.proto.trace.v1.trace_pb2 import Span

    story = {
        "schema_version": "storyline/v1",
        "session": "old",
        "agent": {"id": "a"},
        "turns": [{"id": 1, "src": "agent", "msg": "hi", "ts": "1969-07-20T20:17:00Z"}],
    }
    text = mapc.from_storyline("otel-genai", [story])
    assert '"startTimeUnixNano": "-' in reference.encode([story])  # what the codec wrote
    for span in json.loads(text)["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        assert span["startTimeUnixNano"] == "0"
        json_format.ParseDict({"startTimeUnixNano": span["startTimeUnixNano"]}, Span())  # a receiver's parse
    assert mapc.into_storyline("otel-genai", text.encode()) == [story]
