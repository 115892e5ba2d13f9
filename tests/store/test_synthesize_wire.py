"""Storyline → wire events (`events.synthesize_wire`, the writers in mappings/wire/writers.py) → Storyline.

The bodies are checked against the protocols' own published types: the official ``anthropic`` and
``openai`` Python SDKs (request parameters are TypedDicts, validated with pydantic; responses are
the SDKs' pydantic models), installed for the tests only (the ``dev`` extra).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pydantic
import pytest
from anthropic.types import ErrorResponse, Message, RawMessageStreamEvent
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming, MessageCreateParamsStreaming
from google.genai import types as genai
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.chat.completion_create_params import (
    CompletionCreateParamsNonStreaming,
    CompletionCreateParamsStreaming,
)
from openai.types.responses import Response, ResponseStreamEvent
from openai.types.responses.response_create_params import (
    ResponseCreateParamsNonStreaming,
    ResponseCreateParamsStreaming,
)

from mapc.engine import storyline
from mapc.engine.problems import MapcError
from mapc.store import events, wire

DATA = Path(__file__).resolve().parents[1] / "data" / "events"
PROTOCOLS = ["anthropic-messages", "openai-chat-completions", "openai-responses", "gemini-generate-content"]
A = pydantic.TypeAdapter
STREAM_EVENT: dict[str, Any] = {  # one SSE data payload of a streamed response
    "anthropic-messages": A(RawMessageStreamEvent),
    "openai-chat-completions": A(ChatCompletionChunk),
    "openai-responses": A(ResponseStreamEvent),
}
SDK: dict[str, tuple[Any, Any, Any]] = {  # request (stream: false), request (stream: true), response
    "anthropic-messages": (A(MessageCreateParamsNonStreaming), A(MessageCreateParamsStreaming), Message),
    "openai-chat-completions": (
        A(CompletionCreateParamsNonStreaming),
        A(CompletionCreateParamsStreaming),
        ChatCompletion,
    ),
    "openai-responses": (A(ResponseCreateParamsNonStreaming), A(ResponseCreateParamsStreaming), Response),
}
# Gemini's REST request is checked part by part with google-genai's models (which forbid unknown keys):
# the SDK's own request type is private and takes the model and config apart from the body.
GEMINI_REQUEST = {
    "contents": lambda v: [genai.Content.model_validate(c) for c in v],
    "systemInstruction": genai.Content.model_validate,
    "tools": lambda v: [genai.Tool.model_validate(t) for t in v],
    "generationConfig": genai.GenerationConfig.model_validate,
}


def check_gemini(record: dict[str, Any]) -> None:
    http = record["payload"]["http"]
    if record["kind"] == "http.request":
        assert http["path"].startswith("/v1beta/models/") and http["path"].endswith(":generateContent")
        assert set(http["request_body"]) <= set(GEMINI_REQUEST), sorted(http["request_body"])
        for key, value in http["request_body"].items():
            GEMINI_REQUEST[key](value)
    else:
        genai.GenerateContentResponse.model_validate(http["response_body"])


def check_bodies(records: list[dict[str, Any]], protocol: str) -> int:
    """Every request and response body validates against the protocol's SDK types; returns how many."""
    n = 0
    for record in records:
        http = record["payload"].get("http") if type(record["payload"]) is dict else None
        if http is None:
            continue
        assert record["payload"]["degraded"] is True and record["payload"]["protocol"] == protocol
        n += 1
        if record["kind"] == "http.response" and http["status"] >= 400:  # the API's error object
            if protocol == "anthropic-messages":
                ErrorResponse.model_validate(http["response_body"])
            else:
                assert set(http["response_body"]) == {"error"}
            continue
        if protocol == "gemini-generate-content":
            check_gemini(record)
            continue
        plain, streamed, response_type = SDK[protocol]
        if record["kind"] == "http.request":
            body = http["request_body"]
            (streamed if body.get("stream") is True else plain).validate_python(body)
        elif http.get("body_encoding") == "sse":
            assert record["kind"] == "http.response.stream"
            for event in wire.sse_events(http["response_body"]):
                STREAM_EVENT[protocol].validate_python(event)
        else:
            response_type.model_validate(http["response_body"])
    return n


def recorded(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.storyline.json").read_text())


def without_pointers(story: dict[str, Any], pointers: list[str]) -> dict[str, Any]:
    out = copy.deepcopy(story)
    for where in pointers:
        *path, last = where.strip("/").split("/")
        node: Any = out
        for token in path:
            node = node[int(token)] if type(node) is list else node[token]
        del node[last]
    return out


@pytest.mark.parametrize(
    "name",
    [
        "anthropic-tool-use",
        "anthropic-stream-frames",
        "openai-chat-parallel-tools",
        "openai-responses-parallel-tools",
        "gemini-parallel-tools",
    ],
)
def test_a_recorded_storyline_synthesizes_to_sdk_valid_bodies_and_projects_back(name):
    story = recorded(name)
    protocol = events.wire_protocol(story)
    notes: list[Any] = []
    records = events.synthesize_wire(story, protocol, notes=notes)
    assert check_bodies(records, protocol) == len(records)
    back = events.project_records(records)
    # what the synthesis said it could not carry: the keys a row did not read (their place is lost)
    assert {n.code for n in notes} <= {"events.not_carried"}
    assert all(n.pointer.endswith("/extra/unmapped") for n in notes)
    assert back == without_pointers(story, [n.pointer for n in notes])


def test_a_continued_responses_storyline_comes_back_but_for_where_its_messages_stood():
    """Synthesis resends the whole history (no previous_response_id), so message_index counts from 0."""
    story = recorded("openai-responses-continued")
    notes: list[Any] = []
    records = events.synthesize_wire(story, "openai-responses", notes=notes)
    check_bodies(records, "openai-responses")
    back = events.project_records(records)
    expected = without_pointers(story, [n.pointer for n in notes])
    for turns in (back["turns"], expected["turns"]):
        for turn in turns:
            turn["extra"].pop("message_index", None)
    assert back == expected
    assert back["turns"][4]["extra"]["refusal"].startswith("I'm sorry")
    assert back["turns"][6]["extra"]["status"] == 429


def test_the_made_up_values_are_listed_and_not_read_back():
    story = recorded("anthropic-tool-use")
    for turn in story["turns"]:
        turn.pop("model", None)
        turn["extra"].pop("status", None)
    records = events.synthesize_wire(story, "anthropic-messages")
    response = next(r for r in records if r["kind"] == "http.response")
    assert "/http/response_body/content/0/signature" in response["payload"]["synthesized"]  # thinking needs one
    assert "/http/response_body/model" in response["payload"]["synthesized"]
    assert "/http/status" in response["payload"]["synthesized"]
    assert "/http/request_body/model" in records[0]["payload"]["synthesized"]
    back = events.project_records(records)
    assert all("model" not in t and "status" not in t["extra"] for t in back["turns"])


def test_what_a_protocol_cannot_carry_is_an_error_at_its_pointer():
    story = recorded("openai-chat-parallel-tools")
    with pytest.raises(MapcError) as caught:
        events.synthesize_wire(story, "anthropic-messages")  # a developer (system) turn
    assert [(p.code, p.pointer) for p in caught.value.problems] == [("events.unrepresentable", "/turns/0/src")]
    story["turns"][1]["msg"] = {"not": "text"}
    with pytest.raises(MapcError) as caught:
        events.synthesize_wire(story, "openai-chat-completions")
    assert [(p.code, p.pointer) for p in caught.value.problems] == [("events.unrepresentable", "/turns/1/msg")]
    with pytest.raises(MapcError) as caught:
        events.synthesize_wire(story, "gemini-generate-content")  # a developer turn: no system message
    assert [(p.code, p.pointer) for p in caught.value.problems] == [("events.unrepresentable", "/turns/0/src")]
    with pytest.raises(MapcError) as caught:
        events.synthesize_wire(story, "no-such-protocol")
    assert caught.value.problems[0].code == "events.unknown_protocol"


# --- the law: Storyline → synthesize → project gives the conversation back, and a fixed point ----------

texts = st.text(alphabet="ab yz\n", min_size=1, max_size=6)
json_args = st.dictionaries(st.sampled_from(["q", "n", "path"]), st.integers(0, 9) | texts, max_size=2)


# per protocol: stop reasons its SDK accepts, a usage key beside the mapped ones, whether it has a
# system message, and whether it carries a refusal / an is_error on tool results
STOPS = {
    "anthropic-messages": ["end_turn", "tool_use", "max_tokens"],
    "openai-chat-completions": ["stop", "tool_calls", "length"],
    "openai-responses": ["completed", "incomplete"],
    "gemini-generate-content": ["STOP", "MAX_TOKENS"],
}
USAGE_EXTRA = {
    "anthropic-messages": "service_tier",
    "openai-chat-completions": "total_tokens",
    "openai-responses": "total_tokens",
    "gemini-generate-content": "totalTokenCount",
}


@st.composite
def conversations(draw: st.DrawFn, protocol: str) -> dict[str, Any]:
    """A Storyline of user, system (not for Anthropic or Gemini: developer too) and agent turns:
    texts and text parts, reasoning, parallel tool calls with or without results (is_error for
    Anthropic), refusals (OpenAI), usage with a protocol key beside the mapped ones, models, stop
    reasons and response ids, failed calls (HTTP 429 with an error body) and their retries;
    trailing user turns; consecutive agents; streamed or not (``params.stream``, not for Gemini,
    whose stream is another path)."""
    turns: list[dict[str, Any]] = []
    calls = 0
    gemini = protocol == "gemini-generate-content"
    openai = protocol.startswith("openai")
    kinds = ["user", "agent"] + (["system"] if openai else [])
    for n in range(draw(st.integers(1, 7))):
        src = draw(st.sampled_from(kinds))
        turn: dict[str, Any] = {"id": n + 1, "src": src}
        if src != "agent":
            turn["msg"] = draw(texts | st.lists(texts, min_size=2, max_size=3).map(_parts))
            if src == "system" and draw(st.booleans()):
                turn["extra"] = {"role": "developer"}
            turns.append(turn)
            continue
        if draw(st.integers(0, 5)) == 0:  # a failed call: the client got no message
            turn["msg"] = ""
            turn["extra"] = {"status": 429, "error": {"type": "rate_limit_error", "message": draw(texts)}}
            turns.append(turn)
            continue
        turn["msg"] = draw(st.just("") | texts)
        if draw(st.booleans()):
            turn["reason"] = draw(texts)
        tool_calls = []
        for _ in range(draw(st.integers(0, 2))):
            calls += 1
            tool_calls.append(
                {"tcid": f"call_{calls}", "fn": draw(st.sampled_from(["read", "run"])), "args": draw(json_args)}
            )
        if tool_calls:
            turn["tool_calls"] = tool_calls
            if draw(st.booleans()):
                results = []
                for c in tool_calls:
                    result = {"source_call_id": c["tcid"], "content": draw(json_args if gemini else texts)}
                    if protocol == "anthropic-messages" and draw(st.booleans()):
                        result["is_error"] = draw(st.booleans())
                    results.append(result)
                turn["observation"] = {"results": results}
        extra: dict[str, Any] = {}
        if draw(st.booleans()):
            extra["stop_reason"] = draw(st.sampled_from(STOPS[protocol]))
        if draw(st.booleans()):
            extra["id"] = f"resp_{n}"
        if openai and draw(st.integers(0, 3)) == 0:
            extra["refusal"] = draw(texts)
        if extra:
            turn["extra"] = extra
        if draw(st.booleans()):
            turn["model"] = draw(st.sampled_from(["m-1", "m-2"]))
        if draw(st.booleans()):
            turn["metrics"] = {"input_tokens": draw(st.integers(0, 99)), "output_tokens": draw(st.integers(0, 99))}
            if draw(st.booleans()):
                key = USAGE_EXTRA[protocol]
                turn["metrics"]["extra"] = {key: "standard" if key == "service_tier" else draw(st.integers(0, 199))}
        turns.append(turn)
    if not gemini and draw(st.booleans()):  # streamed calls: the responses are written as SSE
        turns[0].setdefault("extra", {})["params"] = {"stream": True}
    return {
        "schema_version": "storyline/v1",
        "session": "law",
        "agent": {"id": "a", "name": "a"},
        "turns": turns,
    }


def _parts(items: list[str]) -> list[dict[str, str]]:
    return [{"type": "text", "text": t} for t in items]


def content(story: dict[str, Any]) -> list[tuple[Any, ...]]:
    keys = ("src", "msg", "reason", "tool_calls", "observation", "metrics", "model")
    carried = ("stop_reason", "id", "refusal", "status", "error", "role")
    return [
        (*(turn.get(k) for k in keys), {k: v for k, v in turn.get("extra", {}).items() if k in carried})
        for turn in story["turns"]
    ]


@settings(deadline=None, max_examples=60)
@given(st.sampled_from(PROTOCOLS).flatmap(lambda p: st.tuples(st.just(p), conversations(p))))
def test_law_storyline_synthesize_project_gives_the_conversation_back(case):
    protocol, story = case
    assert storyline.check(story) == []
    notes: list[Any] = []
    records = events.synthesize_wire(story, protocol, notes=notes)
    assert notes == []
    check_bodies(records, protocol)
    back = events.project_records(records)
    assert content(back) == content(story)
    streamed = story["turns"][0].get("extra", {}).get("params", {}).get("stream") is True
    for record in records:  # an error body is JSON even when the request asked for a stream
        if record["kind"].startswith("http.response"):
            sse = streamed and "error" not in record["payload"]["http"]["response_body"]
            assert record["kind"] == ("http.response.stream" if sse else "http.response")
    again = events.project_records(events.synthesize_wire(back, protocol))
    assert again == back  # a projected Storyline is a fixed point: every extra it has is written back


def test_the_cli_synthesizes_a_projected_storyline_in_its_protocol_and_projects_it_back(tmp_path, runner):
    from mapc.cli.main import cli

    source = tmp_path / "story.json"
    story = recorded("openai-chat-parallel-tools")
    source.write_text(json.dumps(story))
    table = tmp_path / "events.lance"
    result = runner.invoke(cli, ["events", "synthesize", str(source), "--to", str(table)])
    assert result.exit_code == 0, result.output
    assert "appended 4 events" in result.stdout  # two calls, a request and a response each
    assert "/turns/2/extra/unmapped" in result.stderr and "warning" in result.stderr  # said, not silently lost
    result = runner.invoke(cli, ["events", "project", str(table)])
    assert result.exit_code == 0, result.output
    back = json.loads(result.stdout)
    assert back == without_pointers(story, ["/turns/2/extra/unmapped"])
    result = runner.invoke(
        cli, ["events", "synthesize", str(source), "--protocol", "anthropic-messages", "--to", str(table)]
    )
    assert result.exit_code == 1 and "/turns/0/src" in result.output
