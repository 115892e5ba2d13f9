"""The hop law through the session-log formats over generated foreign documents (issue 18):
X → claude-code → X and X → codex → X give X's own round trip, for ATIF, ACTF and OpenAI rows
drawn in every shape — what the session log cannot say rides in its envelope (the first record's
`_storyline`).  The one refusal: a Storyline without turns → claude-code (a session file is one
record at least, and Claude Code has no record for an empty session), said clearly.
"""

from __future__ import annotations

from typing import Any

import orjson
from actf_strategies import actf_documents
from atif_strategies import atif_documents
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai_strategies import corpora
from test_hops import through, without_source

import mapc
from mapc.engine.problems import MapcError

LOGS = st.sampled_from(["claude-code", "codex"])
SLOW = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def hop_law(a: str, doc: Any, b: str) -> None:
    """A → B → A gives A → A (B's own residuals and the hub's tree links aside), or B refuses,
    only a Storyline without turns, only claude-code."""
    data = orjson.dumps(doc)
    try:
        direct, back, _, _ = through(a, b, data)
    except MapcError as exc:
        stories = mapc.into_storyline(a, data)
        empty = [f"/{n}/turns" for n, s in enumerate(stories) if not s["turns"]]
        assert b == "claude-code" and empty, exc.problems
        assert [(p.code, p.pointer) for p in exc.problems] == [("export.unrepresentable", empty[0])]
        assert "a Storyline without turns" in exc.problems[0].message
        return
    assert without_source(without_source(back, b), "storyline") == direct


@SLOW
@given(atif_documents(max_depth=1), LOGS)
def test_generated_atif_survives_a_hop_through_a_session_log(doc: Any, b: str) -> None:
    hop_law("atif", doc, b)


@SLOW
@given(actf_documents(max_attempts=2, max_steps=3), LOGS)
def test_generated_actf_survives_a_hop_through_a_session_log(doc: Any, b: str) -> None:
    hop_law("actf", doc, b)


@SLOW
@given(corpora(), LOGS)
def test_generated_openai_rows_survive_a_hop_through_a_session_log(pair: Any, b: str) -> None:
    canonical, _ = pair
    hop_law("openai-msg", canonical, b)


def test_a_turn_of_a_source_claude_code_has_no_record_for_is_written_as_user_text() -> None:
    story = {
        "schema_version": "storyline/v1",
        "session": "s",
        "agent": {"id": "a"},
        "turns": [{"id": 1, "src": "environment", "msg": "the tests pass"}],
    }
    (record,) = mapc.from_storyline("claude-code", [story])
    assert (record["type"], record["message"]) == ("user", {"role": "user", "content": "the tests pass"})


def test_a_message_part_without_a_type_becomes_a_codex_text_item() -> None:
    story = {
        "schema_version": "storyline/v1",
        "session": "s",
        "agent": {"id": "a"},
        "turns": [{"id": 1, "src": "user", "msg": None}, {"id": 2, "src": "agent", "msg": [{"a": 1}, 7, "x"]}],
    }
    records = mapc.from_storyline("codex", [story])
    contents = [r["payload"]["content"] for r in records if r["type"] == "response_item"]
    assert contents == [
        [{"type": "input_text", "text": ""}],
        [
            {"type": "output_text", "text": '{"a":1}'},
            {"type": "output_text", "text": "7"},
            {"type": "output_text", "text": "x"},
        ],
    ]
