"""OpenAI chat / fine-tuning JSONL (`openai-chat`, aliases `openai-finetune`, `trl-messages`) and
ShareGPT (`sharegpt`): the laws and the readings of issue 17.

- A → Storyline → A gives every conversation back exactly (the real Azure fine-tuning sample and
  generated conversations over the whole format);
- A → B → A gives A's own round trip back for every other format B, what B cannot say riding in
  B's `_storyline` envelope (for openai-chat and ShareGPT as B: a `_storyline` key on each line);
- tool messages are observation results of the turn before them, and come back as tool messages.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from chat_strategies import conversations, sharegpt
from conftest import FIXTURES, kept_for_the_way_back
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hops import through, without_source

import mapc
from mapc.cli.main import cli
from mapc.engine import detect
from mapc.engine.problems import MapcError

SAMPLE = FIXTURES / "openai-chat" / "stock_toolcall_training.jsonl"
OTHERS = ["storyline", "atif", "actf", "openai-msg", "agenticmd", "sharegpt", "openai-chat"]


def lines(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def plain(value: Any) -> Any:
    return json.loads(orjson.dumps(value))


def round_trip(fmt: str, doc: Any) -> Any:
    return plain(mapc.from_storyline(fmt, mapc.into_storyline(fmt, orjson.dumps(doc))))


TOOL_TURN = {
    "messages": [
        {"role": "user", "content": "weather in Paris?"},
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Paris"}'}},
                {"id": "c2", "type": "function", "function": {"name": "time", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "tool", "tool_call_id": "c2", "content": "noon"},
        {"role": "assistant", "content": "Sunny at noon.", "weight": 1},
    ]
}


# --- the real sample --------------------------------------------------------------------------


def test_the_azure_sample_comes_back_line_for_line() -> None:
    stories = mapc.into_storyline("openai-chat", SAMPLE.read_bytes(), jsonl=True)
    assert len(stories) == len(lines(SAMPLE)) == 86
    assert plain(mapc.from_storyline("openai-chat", stories)) == lines(SAMPLE)
    first = stories[0]
    assert [t["src"] for t in first["turns"]] == ["system", "user", "agent"]
    call = first["turns"][2]["tool_calls"][0]
    assert (call["tcid"], call["fn"], call["args"]) == (
        "call_1",
        "get_last_nday_stock_price",
        {"symbol": "BAC", "period": "1mo"},
    )
    assert first["agent"]["tools"] == lines(SAMPLE)[0]["tools"]
    # The sample's arguments are spaced JSON text: the compact text the reverse writes is not it,
    # so the text is kept, at its pointer.
    fields = kept_for_the_way_back(first, "openai-chat")  # a key the format defines: origin.kept
    assert fields == {"/messages/2/tool_calls/0/function/arguments": '{"symbol": "BAC", "period": "1mo"}'}


@pytest.mark.parametrize("b", [f for f in OTHERS if f != "openai-chat"])
def test_the_azure_sample_survives_every_hop(b: str) -> None:
    for line in SAMPLE.read_bytes().splitlines()[:12]:
        try:
            direct, back, _, _ = through("openai-chat", b, line)
        except MapcError as exc:  # a conversation ending in a tool call has no OpenAI-Messages row
            assert b == "openai-msg" and {p.code for p in exc.problems} <= {"export.unrepresentable"}
            continue
        assert without_source(back, b) == direct == json.loads(line)


def test_detect_and_validate(runner: Any, tmp_path: Path) -> None:
    assert detect.detect(str(SAMPLE), SAMPLE.read_bytes()) == "openai-chat"
    path = tmp_path / "data.json"
    path.write_bytes(orjson.dumps([TOOL_TURN]))
    assert detect.detect(str(path), path.read_bytes()) == "openai-chat"
    share = tmp_path / "share.jsonl"
    share.write_bytes(orjson.dumps({"conversations": [{"from": "human", "value": "hi"}]}) + b"\n")
    assert detect.detect(str(share), share.read_bytes()) == "sharegpt"
    result = runner.invoke(cli, ["validate", "--format", "openai-chat", str(SAMPLE)])
    assert result.exit_code == 0, result.output
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(
        SAMPLE.read_bytes().splitlines()[0] + b"\n" + b'{"messages": [{"role": "robot", "content": "x"}]}\n'
    )
    result = runner.invoke(cli, ["validate", "--format", "openai-chat", str(bad)])
    assert result.exit_code == 1
    assert "line 2: /messages/0/role" in result.output + (result.stderr if result.stderr_bytes else "")


def test_the_wrong_format_names_the_line(runner: Any) -> None:
    result = runner.invoke(cli, ["convert", str(SAMPLE), "--from", "openai-msg", "--to", "atif"])
    assert result.exit_code == 1
    assert f"{SAMPLE}: line 1: /session_steps/0/session_id:" in result.output
    assert "its content reads as openai-chat (mapc detect); try --from openai-chat" in result.output


def test_spec_table_prints(runner: Any) -> None:
    result = runner.invoke(cli, ["spec", "table", "openai-chat"])
    assert result.exit_code == 0
    assert "| `/messages/{m}/tool_calls/{c}/function/arguments` | `/turns/{t}/tool_calls/{c}/args` |" in result.output
    assert "/observation/results" in result.output  # the fold is part of the table


# --- tool messages, roles, nulls ---------------------------------------------------------------


def test_tool_messages_are_observation_results_of_the_turn_before() -> None:
    (story,) = mapc.into_storyline("openai-chat", orjson.dumps(TOOL_TURN))
    assert [t["src"] for t in story["turns"]] == ["user", "agent", "agent"]
    assert story["turns"][1]["observation"] == {
        "results": [{"source_call_id": "c1", "content": "sunny"}, {"source_call_id": "c2", "content": "noon"}]
    }
    assert story["turns"][1]["msg"] is None
    assert [t["id"] for t in story["turns"]] == [1, 2, 5]  # message positions
    assert round_trip("openai-chat", TOOL_TURN) == TOOL_TURN
    # ATIF says the same: an agent step with its observation, and back.
    atif = plain(mapc.convert("openai-chat", "atif", orjson.dumps(TOOL_TURN)))
    assert atif["steps"][1]["observation"]["results"][0] == {"source_call_id": "c1", "content": "sunny"}
    assert "/messages/4/weight" in json.dumps(atif)  # the weight, which ATIF cannot say, rides in its envelope
    assert plain(mapc.convert("atif", "openai-chat", orjson.dumps(atif))) == TOOL_TURN


def test_a_tool_message_first_is_an_error_at_its_pointer() -> None:
    with pytest.raises(MapcError) as info:
        mapc.into_storyline("openai-chat", b'{"messages": [{"role": "tool", "tool_call_id": "c", "content": "x"}]}')
    (problem,) = info.value.problems
    assert (problem.code, problem.pointer) == ("fold.orphan", "/messages/0")


@pytest.mark.parametrize(
    ("message", "kept"),
    [
        ({"role": "developer", "content": "be brief"}, {"/messages/0/role": "developer"}),
        ({"role": "assistant", "content": None}, {"/messages/0/content": None}),
        (
            {"role": "assistant", "content": "x", "refusal": None, "weight": 0},
            {"/messages/0/refusal": None, "/messages/0/weight": 0},
        ),
    ],
)
def test_what_storyline_has_no_field_for_is_kept_at_its_pointer(message: dict[str, Any], kept: dict[str, Any]) -> None:
    doc = {"messages": [message], "parallel_tool_calls": False}
    (story,) = mapc.into_storyline("openai-chat", orjson.dumps(doc))
    assert kept_for_the_way_back(story, "openai-chat") == {**kept, "/parallel_tool_calls": False}
    assert round_trip("openai-chat", doc) == doc


def test_a_source_no_role_says_is_refused_on_export() -> None:
    story = mapc.into_storyline(
        "atif",
        orjson.dumps(
            {
                "schema_version": "ATIF-v1.7",
                "session_id": "s",
                "agent": {"name": "a", "version": "1"},
                "steps": [{"step_id": 1, "source": "environment", "message": "x"}],
            }
        ),
    )
    with pytest.raises(MapcError) as info:
        mapc.from_storyline("openai-chat", story)
    assert info.value.problems[0].pointer == "/messages/0/role"
    assert info.value.problems[0].code == "export.invalid"


def test_storylines_from_elsewhere_carry_a_storyline_key_per_line() -> None:
    atif = (FIXTURES / "atif" / "parallel_tools_14.json").read_bytes()
    stories = mapc.into_storyline("atif", atif) * 1
    out = plain(mapc.from_storyline("openai-chat", stories))
    line = out if isinstance(out, dict) else out[0]
    assert set(line) >= {"messages", "_storyline"}
    assert plain(mapc.convert("openai-chat", "atif", orjson.dumps(line))) == plain(mapc.from_storyline("atif", stories))


# --- generated conversations: the laws ---------------------------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations())
def test_generated_conversations_come_back_exactly(doc: dict[str, Any]) -> None:
    assert round_trip("openai-chat", doc) == doc


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations(), st.sampled_from([f for f in OTHERS if f != "openai-chat"]))
def test_generated_conversations_survive_every_hop(doc: dict[str, Any], b: str) -> None:
    try:
        direct, back, _, _ = through("openai-chat", b, orjson.dumps(doc))
    except MapcError as exc:  # what B cannot hold, said clearly (OpenAI Messages: user/agent pairs)
        assert b in ("openai-msg", "sharegpt"), exc
        assert {p.code for p in exc.problems} <= {"export.unrepresentable", "export.invalid"}
        return
    assert direct == doc
    if b == "agenticmd":  # AgenticMD writes objects with sorted keys, and the argument text follows
        back, direct = parsed_arguments(back), parsed_arguments(direct)
    assert without_source(back, b) == direct


def parsed_arguments(doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` with each tool call's `arguments` text read as JSON (where it holds JSON)."""
    out = json.loads(json.dumps(doc))
    for message in out["messages"]:
        for call in message.get("tool_calls") or []:
            with contextlib.suppress(ValueError):
                call["function"]["arguments"] = json.loads(call["function"]["arguments"])
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sharegpt(), st.sampled_from([f for f in OTHERS if f != "sharegpt"]))
def test_generated_sharegpt_comes_back_and_survives_every_hop(doc: dict[str, Any], b: str) -> None:
    assert round_trip("sharegpt", doc) == doc
    try:
        direct, back, _, _ = through("sharegpt", b, orjson.dumps(doc))
    except MapcError as exc:  # speakers a chat role cannot say (function_call, observation)
        assert b in ("openai-msg", "openai-chat"), exc
        assert {p.code for p in exc.problems} <= {"export.unrepresentable", "export.invalid"}
        return
    assert without_source(back, b) == direct == doc


def test_aliases_name_the_same_format() -> None:
    one = mapc.into_storyline("openai-chat", orjson.dumps(TOOL_TURN))
    assert mapc.into_storyline("trl-messages", orjson.dumps(TOOL_TURN)) == one
    assert mapc.into_storyline("openai-finetune", orjson.dumps(TOOL_TURN)) == one


def test_an_output_named_jsonl_is_one_conversation_a_line(runner: Any, tmp_path: Path) -> None:
    out = tmp_path / "train.jsonl"
    result = runner.invoke(cli, ["convert", str(SAMPLE), "--to", "openai-chat", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert [json.loads(line) for line in out.read_bytes().splitlines()] == lines(SAMPLE)
    atif = tmp_path / "from-atif.jsonl"
    source = FIXTURES / "atif" / "support-ticket.json"
    result = runner.invoke(cli, ["convert", str(source), "--to", "openai-chat", "-o", str(atif)])
    assert result.exit_code == 0, result.output
    (line,) = atif.read_bytes().splitlines()
    assert "_storyline" in json.loads(line)  # what ATIF said and the chat format cannot
    back = runner.invoke(cli, ["convert", str(atif), "--to", "atif"])
    assert json.loads(back.output) == mapc.from_storyline("atif", mapc.into_storyline("atif", source.read_bytes()))
