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

import orjson
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
    assert notes == []  # the keys no rule read (extra.unmapped) are written back where they stood
    assert back == story


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
    recorded_signature = copy.deepcopy(story)
    story["turns"][1]["extra"].pop("unmapped")  # the recorded thinking signature
    records = events.synthesize_wire(story, "anthropic-messages")
    response = next(r for r in records if r["kind"] == "http.response")
    assert "/http/response_body/content/0/signature" in response["payload"]["synthesized"]  # thinking needs one
    again = next(r for r in events.synthesize_wire(recorded_signature, "anthropic-messages") if r["seq"] == 2)
    assert again["payload"]["http"]["response_body"]["content"][0]["signature"].startswith("EqQB")  # the recorded one
    assert "/http/response_body/content/0/signature" not in again["payload"]["synthesized"]
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
    assert "warning" not in result.stderr  # the message's unread keys (annotations) are written back
    result = runner.invoke(cli, ["events", "project", str(table)])
    assert result.exit_code == 0, result.output
    back = json.loads(result.stdout)
    assert back == story
    result = runner.invoke(
        cli, ["events", "synthesize", str(source), "--protocol", "anthropic-messages", "--to", str(table)]
    )
    assert result.exit_code == 1 and "/turns/0/src" in result.output


# --- the law the other way: events → Storyline → events, exact -------------------------------------------

kept_values = st.integers(0, 9) | texts | st.dictionaries(st.sampled_from(["k", "v"]), texts, min_size=1, max_size=2)


def _dicts(value: Any) -> list[dict[str, Any]]:
    """Every object in `value`, outermost first."""
    out: list[dict[str, Any]] = []
    todo = [value]
    while todo:
        node = todo.pop(0)
        if type(node) is dict:
            out.append(node)
            todo += list(node.values())
        elif type(node) is list:
            todo += node
    return out


def _new_messages(body: dict[str, Any], protocol: str) -> list[Any]:
    """The request's messages a client writes itself (not the model's, resent as history)."""
    messages = body.get("contents" if protocol == "gemini-generate-content" else "input")
    messages = body.get("messages") if messages is None else messages
    model_roles = ("assistant", "model")
    return [
        m
        for m in messages or []
        if type(m) is dict and m.get("role") not in model_roles and m.get("type") not in ("function_call",)
    ]


@st.composite
def recorded_events(draw: st.DrawFn, protocol: str) -> list[dict[str, Any]]:
    """Events as a recorder stores them: a conversation's calls (written once from a Storyline and
    once more from its projection, so in the form projection reads back), with blocks of types no
    rule reads inserted in the messages a client writes, and keys no rule reads added anywhere in
    the responses' JSON bodies and in those messages and their blocks (user, system and
    tool-result messages, tool_result blocks, function responses)."""
    story = draw(conversations(protocol))
    story["started_at"] = "2026-01-01T00:00:00.000Z"
    records = events.synthesize_wire(events.project_records(events.synthesize_wire(story, protocol)), protocol)
    for record in records:
        http = record["payload"]["http"]
        if record["kind"] == "http.request":
            for message in _new_messages(http["request_body"], protocol):
                blocks = message.get("parts" if protocol == "gemini-generate-content" else "content")
                if type(blocks) is list and blocks and draw(st.integers(0, 3)) == 0:  # a block no rule reads
                    unknown = {"inlineData": {"data": draw(texts)}} if protocol.startswith("gemini") else None
                    unknown = unknown or {"type": "x_image", "data": draw(texts)}
                    blocks.insert(draw(st.integers(0, len(blocks))), unknown)
            places = [d for m in _new_messages(http["request_body"], protocol) for d in _dicts(m)]
        elif type(http["response_body"]) is dict:  # an SSE text is the stream's own serialization
            places = _dicts(http["response_body"])  # a reasoning item's summary parts too
        else:
            continue
        for place in places:  # a message resent in later requests is the same object: changed in all
            if draw(st.integers(0, 3)) == 0:
                place[draw(st.sampled_from(["x_kept", "cache_control"]))] = draw(kept_values)
    return records


@settings(deadline=None, max_examples=200)
@given(st.sampled_from(PROTOCOLS).flatmap(lambda p: st.tuples(st.just(p), recorded_events(p))))
def test_law_events_project_synthesize_gives_the_events_back(case):
    protocol, records = case
    notes: list[Any] = []
    story = events.project_records(copy.deepcopy(records), notes=notes)
    assert notes == []
    again = events.synthesize_wire(story, protocol, notes=notes)
    assert notes == []  # every key no rule read was written back where it stood
    for want, got in zip(records, again, strict=True):
        assert got == want, (want["kind"], _first_difference(want, got))


def _conversation_key(protocol: str) -> str:
    return {"gemini-generate-content": "contents", "openai-responses": "input"}.get(protocol, "messages")


@settings(deadline=None, max_examples=100)
@given(st.sampled_from(PROTOCOLS).flatmap(lambda p: st.tuples(st.just(p), recorded_events(p))), st.data())
def test_law_a_value_only_a_later_copy_of_a_history_message_carries_is_reported_not_lost(case, data):
    protocol, records = case
    requests = [r for r in records if r["kind"] == "http.request"]
    seen: set[int] = set()
    resent: list[tuple[list[Any], int]] = []  # (a request's conversation, index) of a message an earlier one sent
    for record in requests:
        messages = record["payload"]["http"]["request_body"].get(_conversation_key(protocol))
        if type(messages) is not list:
            continue
        client = {id(m) for m in _new_messages(record["payload"]["http"]["request_body"], protocol)}
        resent += [(messages, n) for n, m in enumerate(messages) if id(m) in seen and id(m) in client]
        seen |= {id(m) for m in messages}
    if not resent:
        return
    messages, n = data.draw(st.sampled_from(resent))
    value = data.draw(kept_values)
    messages[n] = {**copy.deepcopy(messages[n]), "x_later": value}  # this copy only, not the first
    notes: list[Any] = []
    events.project_records(copy.deepcopy(records), notes=notes)
    changed = [p for p in notes if p.code == "events.history_changed"]
    assert len(changed) == 1
    where = f"/{_conversation_key(protocol)}/{n}/x_later"
    assert changed[0].pointer.endswith(where) or f"{where}/" in changed[0].pointer
    for leaf in value.values() if type(value) is dict else [value]:  # the values said, not only the place
        assert orjson.dumps(leaf).decode() in changed[0].message
    assert notes == changed


def test_a_later_copy_that_leaves_out_what_the_first_kept_is_no_change():
    """Clients drop what they do not resend (a cache_control moved on, an id): only what a later
    copy adds or changes is reported."""
    records = events.parse_jsonl((DATA / "anthropic-tool-use.events.jsonl").read_bytes())
    first = next(r for r in records if r["kind"] == "http.request")["payload"]["http"]["request_body"]
    first["messages"][0] = {**first["messages"][0], "x_first": 1}
    notes: list[Any] = []
    story = events.project_records(copy.deepcopy(records), notes=notes)
    assert notes == []
    assert story["turns"][0]["extra"]["unmapped"] == {"": {"x_first": 1}}


def _reasoning_story(msg: str, reason: str) -> dict[str, Any]:
    """A user turn and an agent turn with a message and its reasoning."""
    return {
        "schema_version": "storyline/v1",
        "session": "s",
        "agent": {"id": "a", "name": "a"},
        "started_at": "2026-01-01T00:00:00.000Z",
        "turns": [{"id": 1, "src": "user", "msg": "hi"}, {"id": 2, "src": "agent", "msg": msg, "reason": reason}],
    }


def test_the_unread_keys_of_reasoning_summary_parts_are_kept_and_written_back_streamed_or_not():
    story = _reasoning_story("hello", "think")
    for stream in (False, True):
        story["turns"][0]["extra"] = {"params": {"stream": True}} if stream else {}
        records = events.synthesize_wire(
            events.project_records(events.synthesize_wire(story, "openai-responses")), "openai-responses"
        )
        response = next(r for r in records if r["kind"].startswith("http.response"))["payload"]["http"]
        if stream:
            response["response_body"] = response["response_body"].replace('"summary_text"', '"summary_text","x_part":7')
        else:
            response["response_body"]["output"][0]["summary"][0]["x_part"] = 7
        story_back = events.project_records(copy.deepcopy(records))
        agent = story_back["turns"][-1]
        assert agent["reason"] == "think"
        assert agent["extra"]["unmapped"]["/0/summary/0"] == {"type": "summary_text", "x_part": 7}
        again = events.synthesize_wire(story_back, "openai-responses")
        if stream:  # the stream is the writer's own serialization: the part's key is in it, and reads back
            assert (
                '"x_part":7'
                in next(r for r in again if r["kind"] == "http.response.stream")["payload"]["http"]["response_body"]
            )
            assert events.project_records(again) == story_back
        else:
            assert again == records


def test_a_reasoning_summary_of_several_parts_is_kept_whole_beside_its_joined_reason():
    story = _reasoning_story("ok", "x")
    parts = [{"type": "summary_text", "text": "a\n\nb"}, {"type": "summary_text", "text": "c"}]
    records = events.synthesize_wire(
        events.project_records(events.synthesize_wire(story, "openai-responses")), "openai-responses"
    )
    http = next(r for r in records if r["kind"] == "http.response")["payload"]["http"]
    http["response_body"]["output"][0]["summary"] = copy.deepcopy(parts)
    projected = events.project_records(copy.deepcopy(records))
    agent = projected["turns"][-1]
    assert agent["reason"] == "a\n\nb\n\nc"
    assert agent["extra"]["unmapped"]["/0"]["summary"] == parts  # the split, which the joined text lost
    assert events.synthesize_wire(projected, "openai-responses") == records
    # streamed: the writer streams both parts (their own part and text events), read back the same
    projected["turns"][0]["extra"]["params"] = {"stream": True}
    streamed = events.synthesize_wire(projected, "openai-responses")
    sse = next(r for r in streamed if r["kind"] == "http.response.stream")["payload"]["http"]["response_body"]
    added = [e for e in wire.sse_events(sse) if e.get("type") == "response.reasoning_summary_part.added"]
    assert [e["summary_index"] for e in added] == [0, 1]
    assert events.project_records(streamed) == projected


SUMMARIES = [
    [{"type": "summary_text", "text": "a"}, {"type": "summary_text", "text": "b"}],
    "one text where parts belong",
    ["plain", {"text": "t"}],
    7,
    None,
    {"text": "x"},
]


@pytest.mark.parametrize("summary", SUMMARIES, ids=["two parts", "a text", "a plain part", "7", "null", "an object"])
def test_a_reasoning_item_with_its_id_and_any_summary_comes_back_as_it_was(summary):
    """A recorded reasoning item (its own id, as the API gives one) whose summary the joined reason
    cannot give back: several parts, or not the documented list of parts.  The summary is kept
    beside the item's other unread keys (the id), not overwritten by them, and written back as it was."""
    story = _reasoning_story("ok", "x")
    records = events.synthesize_wire(story, "openai-responses")
    for record in records:  # as a proxy records them: no synthesis notes, no made-up values
        record["payload"] = {k: v for k, v in record["payload"].items() if k in ("protocol", "http")}
    item = next(r for r in records if r["kind"] == "http.response")["payload"]["http"]["response_body"]["output"][0]
    item.update(id="rs_0123", summary=copy.deepcopy(summary))
    projected = events.project_records(copy.deepcopy(records))
    again = events.synthesize_wire(projected, "openai-responses")
    response = next(r for r in again if r["kind"] == "http.response")["payload"]["http"]["response_body"]
    assert response["output"][0] == item


def _first_difference(a: Any, b: Any, at: str = "") -> str:
    if type(a) is dict and type(b) is dict:
        if list(a) != list(b):
            return f"{at}: keys {list(a)} != {list(b)}"
        return next((_first_difference(a[k], b[k], f"{at}/{k}") for k in a if a[k] != b[k]), at)
    if type(a) is list and type(b) is list and len(a) == len(b):
        pairs = enumerate(zip(a, b, strict=True))
        return next((_first_difference(x, y, f"{at}/{n}") for n, (x, y) in pairs if x != y), at)
    return f"{at}: {a!r} != {b!r}"


def test_a_response_block_no_rule_reads_is_written_back_where_it_stood_and_the_history_still_matches():
    story = recorded("anthropic-tool-use")
    server = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "sf"}}
    agent = story["turns"][1]
    agent["extra"]["blocks"] = {"/content/0": server}  # before the thinking block: it moves one on
    del agent["extra"]["unmapped"]  # so the thinking signature is made up, at its new place
    notes: list[Any] = []
    records = events.synthesize_wire(story, "anthropic-messages", notes=notes)
    response = next(r for r in records if r["seq"] == 2)["payload"]
    assert [b["type"] for b in response["http"]["response_body"]["content"]] == [
        "server_tool_use",
        "thinking",
        "text",
        "tool_use",
    ]
    assert "/http/response_body/content/1/signature" in response["synthesized"]
    assert "/http/response_body/content/0/signature" not in response["synthesized"]
    back = events.project_records(records, notes=notes)
    assert notes == []  # the next request resends the message without it: the same history
    assert back == story
