"""engine/views.py: effective kind, env and prompt of a turn; the document id."""

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mapc.engine.views import document_id, effective_env, effective_kind, effective_prompt, merge_env

CALL = {"tcid": "c", "fn": "f", "args": None, "kind": "autonomous"}


@pytest.mark.parametrize(
    ("turn", "kind"),
    [
        pytest.param({"src": "user"}, "dialogue", id="user"),
        pytest.param({"src": "system"}, "internal", id="system"),
        pytest.param({"src": "agent", "tool_calls": [CALL]}, "autonomous", id="agent with tools"),
        pytest.param({"src": "agent"}, "dialogue", id="agent without tools"),
        pytest.param({"src": "agent", "tool_calls": []}, "dialogue", id="agent with tool_calls []"),
        pytest.param({"src": "agent", "tool_calls": None}, "dialogue", id="agent with tool_calls null"),
        pytest.param({"src": "tool"}, "dialogue", id="src tool"),
        pytest.param({"src": "environment", "tool_calls": [CALL]}, "dialogue", id="src environment with tools"),
        pytest.param({"src": "user", "tool_calls": [CALL]}, "dialogue", id="user with tools"),
        pytest.param({"src": "user", "kind": "llm.request"}, "llm.request", id="explicit kind wins"),
        pytest.param({"src": "agent", "kind": "dialogue", "tool_calls": [CALL]}, "dialogue", id="explicit over tools"),
        pytest.param({"src": "system", "kind": None}, "internal", id="null kind is absent"),
        pytest.param(
            {"src": "agent", "tool_calls": [{"tcid": "c", "fn": "f", "args": 1, "kind": "x"}], "kind": "k"},
            "k",
            id="tool kind never consulted",
        ),
    ],
)
def test_effective_kind(turn, kind):
    assert effective_kind(turn) == kind


def story(task_env: Any = None, prompt: Any = None, *turns: dict[str, Any]) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "schema_version": "storyline/v1",
        "session": "s",
        "agent": {"id": "a"},
        "turns": list(turns),
    }
    if task_env is not None:
        doc["task"] = {"env": task_env}
    if prompt is not None:
        doc["prompt"] = prompt
    return doc


@pytest.mark.parametrize(
    ("task_env", "turn_env", "expected"),
    [
        pytest.param(None, None, None, id="neither"),
        pytest.param({"name": "n", "state": {"a": 1}}, None, {"name": "n", "state": {"a": 1}}, id="task only"),
        pytest.param(None, {"id": "r1"}, {"id": "r1"}, id="turn only"),
        pytest.param(
            {"name": "n", "endpoint": "e1"},
            {"endpoint": "e2", "request_id": "q"},
            {"name": "n", "endpoint": "e2", "request_id": "q"},
            id="overlay strings win",
        ),
        pytest.param({"name": "n"}, {"name": None}, {"name": "n"}, id="null overlay is absent"),
        pytest.param(
            {"state": {"a": 1, "b": {"x": 1}}},
            {"state": {"b": {"y": 2}, "c": 3}},
            {"state": {"a": 1, "b": {"y": 2}, "c": 3}},
            id="state merged key by key, shallow",
        ),
        pytest.param({"state": {"a": 1}}, {"state": {"a": None}}, {"state": {"a": None}}, id="state null value kept"),
        pytest.param({"state": {}}, {}, None, id="empty state left out"),
        pytest.param(
            {"name": "n", "event_type": "e", "id": "i"},
            {"event_type": "f"},
            {"name": "n", "id": "i", "event_type": "f"},
            id="all five keys in written order",
        ),
    ],
)
def test_effective_env(task_env, turn_env, expected):
    turn = {"id": 1, "src": "agent", "msg": None}
    if turn_env is not None:
        turn["env"] = turn_env
    doc = story(task_env, None, turn)
    assert effective_env(doc, 0) == expected
    if expected is not None:
        assert list(effective_env(doc, 0)) == [
            k for k in ("name", "endpoint", "id", "event_type", "request_id", "state") if k in expected
        ]


def test_effective_env_merges_against_the_task_never_the_previous_turn():
    doc = story(
        {"name": "base", "state": {"a": 1}},
        None,
        {"id": 1, "src": "agent", "msg": None, "env": {"name": "first", "state": {"b": 2}}},
        {"id": 2, "src": "agent", "msg": None, "env": {"state": {"c": 3}}},
        {"id": 3, "src": "agent", "msg": None},
    )
    assert effective_env(doc, 0) == {"name": "first", "state": {"a": 1, "b": 2}}
    assert effective_env(doc, 1) == {"name": "base", "state": {"a": 1, "c": 3}}
    assert effective_env(doc, 2) == {"name": "base", "state": {"a": 1}}


def test_effective_env_leaves_the_document_unmerged():
    doc = story({"state": {"a": 1}}, None, {"id": 1, "src": "agent", "msg": None, "env": {"state": {"b": 2}}})
    effective_env(doc, 0)["state"]["z"] = 0
    assert doc["task"]["env"] == {"state": {"a": 1}}
    assert doc["turns"][0]["env"] == {"state": {"b": 2}}


envs = st.fixed_dictionaries(
    {},
    optional={
        "name": st.sampled_from(["n1", "n2"]),
        "id": st.sampled_from(["i1", "i2"]),
        "state": st.dictionaries(st.sampled_from("abc"), st.integers(0, 2), max_size=3),
    },
)


@given(envs, envs)
def test_merge_env_is_overlay_wins(base, overlay):
    merged = merge_env(base, overlay) or {}
    for key in ("name", "id"):
        assert merged.get(key) == overlay.get(key, base.get(key))
    assert merged.get("state", {}) == {**base.get("state", {}), **overlay.get("state", {})}
    assert merge_env(base, None) == merge_env(base, {})
    assert merge_env(merged or None, overlay) == (merged or None)  # applying the overlay again changes nothing


@pytest.mark.parametrize(
    ("doc_prompt", "turn_prompt", "expected"),
    [
        pytest.param(None, None, None, id="neither"),
        pytest.param({"system": "s"}, None, {"system": "s", "user": ""}, id="document prompt"),
        pytest.param(
            {"system": "s", "user": "u"}, {"user": "v"}, {"system": "", "user": "v"}, id="turn replaces whole"
        ),
        pytest.param({"system": "s"}, {"system": "", "user": ""}, {"system": "", "user": ""}, id="explicit clear"),
        pytest.param(None, {"system": "t"}, {"system": "t", "user": ""}, id="turn without document"),
        pytest.param({"user": "u"}, {"system": None, "user": "w"}, {"system": "", "user": "w"}, id="null is absent"),
    ],
)
def test_effective_prompt(doc_prompt, turn_prompt, expected):
    turn: dict[str, Any] = {"id": 1, "src": "user", "msg": "m"}
    if turn_prompt is not None:
        turn["prompt"] = turn_prompt
    assert effective_prompt(story(None, doc_prompt, turn), 0) == expected


def test_effective_prompt_per_turn():
    doc = story(
        None,
        {"system": "base"},
        {"id": 1, "src": "user", "msg": "a", "prompt": {"user": "one"}},
        {"id": 2, "src": "user", "msg": "b"},
    )
    assert effective_prompt(doc, 0) == {"system": "", "user": "one"}
    assert effective_prompt(doc, 1) == {"system": "base", "user": ""}  # not inherited from turn 0


@pytest.mark.parametrize(
    ("ids", "expected"),
    [
        pytest.param({"trajectory": "t", "session": "s"}, "t", id="trajectory"),
        pytest.param({"trajectory": "", "session": "s"}, "s", id="empty trajectory"),
        pytest.param({"trajectory": None, "session": "s"}, "s", id="null trajectory"),
        pytest.param({"session": "s"}, "s", id="no trajectory"),
    ],
)
def test_document_id(ids, expected):
    assert document_id(ids) == expected
