"""store/wire.py and the wire projection of store/events.py: Anthropic Messages bodies → Storyline turns."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import orjson
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from mapc.engine import storyline
from mapc.engine.options import Options
from mapc.engine.problems import MapcError
from mapc.store import events, wire

DATA = Path(__file__).resolve().parents[1] / "data" / "events"
FOUR = DATA / "anthropic-tool-use.events.jsonl"


def four() -> list[dict[str, Any]]:
    return events.parse_jsonl(FOUR.read_bytes())


def sse(*payloads: dict[str, Any]) -> str:
    return "".join(f"event: {p['type']}\ndata: {json.dumps(p)}\n\n" for p in payloads)


def call(seq: int, call_id: str, request: dict[str, Any], response: Any, **http: Any) -> list[dict[str, Any]]:
    base = {"source": "proxy", "session_id": "s", "call_id": call_id}
    return [
        {
            **base,
            "seq": seq,
            "kind": "http.request",
            "timestamp_unix_ms": 1000 * seq,
            "payload": {"http": {"method": "POST", "path": "/v1/messages", "request_body": request}},
        },
        {
            **base,
            "seq": seq + 1,
            "kind": "http.response",
            "timestamp_unix_ms": 1000 * seq + 500,
            "payload": {"http": {"status": 200, "response_body": response, **http}},
        },
    ]


def reply(text: str, **more: Any) -> dict[str, Any]:
    return {"type": "message", "role": "assistant", "content": [{"type": "text", "text": text}], **more}


def test_the_four_event_case_projects_to_user_agent_with_tool_call_and_result_agent():
    story = events.project_records(four())
    assert story == json.loads((DATA / "anthropic-tool-use.storyline.json").read_text())
    user, tool_turn, answer = story["turns"]
    assert (user["src"], user["msg"]) == ("user", "What's the weather like in San Francisco?")
    assert tool_turn["tool_calls"] == [
        {"tcid": "toolu_01A09q90qw90lq917835lq9", "fn": "get_weather", "args": {"location": "San Francisco, CA"}}
    ]
    assert tool_turn["observation"] == {
        "results": [{"source_call_id": "toolu_01A09q90qw90lq917835lq9", "content": "15 degrees, mostly sunny"}]
    }
    assert tool_turn["reason"].startswith("The user wants the weather")
    assert tool_turn["extra"]["unmapped"]["/content/0"]["signature"].startswith("EqQB")  # kept, not dropped
    assert answer["msg"] == "It's currently 15 degrees and mostly sunny in San Francisco."  # the SSE stream
    assert answer["metrics"] == {
        "input_tokens": 580,
        "output_tokens": 15,
        "cache_read_tokens": 472,
        "cache_creation_tokens": 0,
    }
    assert (answer["extra"]["stop_reason"], answer["ttft_ms"], answer["latency_ms"]) == ("end_turn", 420, 1200)
    assert storyline.check(story) == []


def test_the_expected_storyline_survives_the_cli(tmp_path, runner):
    from mapc.cli.main import cli

    table = tmp_path / "events.lance"
    assert runner.invoke(cli, ["events", "append", str(FOUR), "--to", str(table)]).exit_code == 0
    result = runner.invoke(cli, ["events", "project", str(table)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == json.loads((DATA / "anthropic-tool-use.storyline.json").read_text())


def test_history_is_not_repeated_over_three_calls():
    u1 = {"role": "user", "content": "one"}
    u2 = {"role": "user", "content": [{"type": "text", "text": "two"}]}
    u3 = {"role": "user", "content": "three"}
    a1 = {"role": "assistant", "content": "ONE"}  # history may resend the reply as a string
    a2 = {"role": "assistant", "content": [{"type": "text", "text": "TWO"}]}
    records = [
        *call(0, "c1", {"messages": [u1]}, reply("ONE")),
        *call(2, "c2", {"messages": [u1, a1, u2]}, reply("TWO")),
        *call(4, "c3", {"messages": [u1, a1, u2, a2, u3]}, reply("THREE")),
    ]
    notes: list[Any] = []
    story = events.project_records(records, notes=notes)
    assert [(t["src"], t["msg"]) for t in story["turns"]] == [
        ("user", "one"),
        ("agent", "ONE"),
        ("user", "two"),
        ("agent", "TWO"),
        ("user", "three"),
        ("agent", "THREE"),
    ]
    assert notes == []


def test_a_request_that_contradicts_the_history_is_reported_and_marked():
    u1 = {"role": "user", "content": "one"}
    records = [
        *call(0, "c1", {"messages": [u1]}, reply("ONE")),
        *call(2, "c2", {"messages": [u1, {"role": "assistant", "content": "EDITED"}, u1]}, reply("again")),
    ]
    notes: list[Any] = []
    story = events.project_records(records, notes=notes)
    assert [(p.code, p.pointer) for p in notes] == [
        ("events.history_fork", 'events[session="s", call_id="c2"]/payload/http/request_body/messages/1')
    ]
    turns = [(t["src"], t["msg"], t["extra"].get("history_fork")) for t in story["turns"]]
    assert turns == [
        ("user", "one", None),
        ("agent", "ONE", None),
        ("agent", "EDITED", 1),
        ("user", "one", 1),
        ("agent", "again", None),
    ]
    assert story["turns"][2]["kind"] == "history"


def test_a_streamed_tool_use_assembles_its_input_json_deltas_in_order():
    stream = sse(
        {"type": "message_start", "message": {"id": "m", "model": "x", "content": [], "usage": {"input_tokens": 3}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "hm"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig"}},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "t1", "name": "f", "input": {}},
        },
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ""}},
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '{"a": [1, '},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '2], "b": "c"}'},
        },
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}},
        {"type": "message_stop"},
    )
    records = call(0, "c", {"model": "x", "messages": [{"role": "user", "content": "go"}]}, stream, body_encoding="sse")
    _, turn = events.project_records(records)["turns"]
    assert turn["tool_calls"] == [{"tcid": "t1", "fn": "f", "args": {"a": [1, 2], "b": "c"}}]
    assert (turn["reason"], turn["msg"], turn["extra"]["stop_reason"]) == ("hm", "", "tool_use")
    assert turn["extra"]["unmapped"] == {"/content/0": {"type": "thinking", "signature": "sig"}}
    assert turn["metrics"] == {"input_tokens": 3, "output_tokens": 9}


def test_a_tool_result_for_an_unseen_call_and_unknown_blocks_are_kept():
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}
    request = {
        "messages": [
            {"role": "user", "content": [image, {"type": "tool_result", "tool_use_id": "old", "content": "x"}]}
        ]
    }
    user, _ = events.project_records(call(0, "c", request, reply("ok")))["turns"]
    assert user["extra"]["blocks"] == {"/content/0": image}  # kept whole, by where it stood
    assert user["observation"] == {"results": [{"source_call_id": "old", "content": "x"}]}


def test_the_protocol_hint_recognises_a_body_without_a_path_and_unknown_ones_are_degraded():
    records = call(0, "c", {"messages": [{"role": "user", "content": "hi"}]}, reply("yo"))
    for record in records:
        record["payload"]["http"].pop("path", None)
    assert all(t["extra"].get("degraded") for t in events.project_records(records)["turns"])
    for record in records:
        record["payload"]["protocol"] = "anthropic-messages"
    turns = events.project_records(records)["turns"]
    assert [t["extra"]["protocol"] for t in turns] == ["anthropic-messages"] * 2
    assert wire.recognise([{"http": {"url": "https://api.anthropic.com/v1/messages?beta=true"}}]).protocol == (
        "anthropic-messages"
    )
    assert wire.recognise([{"http": {"path": "/v1/other"}}]) is None


def test_usage_keys_the_table_does_not_name_are_kept_in_metrics_extra():
    body = reply("x", usage={"input_tokens": 1, "output_tokens": 2, "service_tier": "standard"})
    [table] = [t for t in wire.tables() if t.protocol == "anthropic-messages"]
    assert wire.usage(body, table.spec) == {
        "input_tokens": 1,
        "output_tokens": 2,
        "extra": {"service_tier": "standard"},
    }


texts = st.text(alphabet="abc xyz", min_size=1, max_size=8)


@settings(deadline=None)  # a first call imports and compiles; the machine is shared: no timing in laws
@given(st.lists(st.tuples(texts, texts), min_size=1, max_size=5))
def test_law_a_growing_conversation_projects_each_turn_once(exchanges):
    """However many calls, each user text and reply appears once, in order: history is never repeated."""
    records: list[dict[str, Any]] = []
    history: list[dict[str, Any]] = []
    for n, (question, answer) in enumerate(exchanges):
        history.append({"role": "user", "content": question})
        records += call(2 * n, f"c{n}", {"messages": copy.deepcopy(history)}, reply(answer))
        history.append({"role": "assistant", "content": [{"type": "text", "text": answer}]})
    notes: list[Any] = []
    story = events.project_records(records, notes=notes)
    expected = [m for q, a in exchanges for m in (("user", q), ("agent", a))]
    assert [(t["src"], t["msg"]) for t in story["turns"]] == expected
    assert notes == []
    assert orjson.dumps(story)  # JSON all the way


# --- OpenAI Chat Completions -----------------------------------------------------------------------------

OPENAI = DATA / "openai-chat-parallel-tools.events.jsonl"


def chat(seq: int, call_id: str, messages: list[Any], response: Any, **http: Any) -> list[dict[str, Any]]:
    records = call(seq, call_id, {"model": "gpt-x", "messages": messages}, response, **http)
    records[0]["payload"]["http"]["path"] = "/v1/chat/completions"
    return records


def completion(message: dict[str, Any], finish: str = "stop", **more: Any) -> dict[str, Any]:
    return {
        "id": "cc",
        "model": "gpt-x",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        **more,
    }


def test_openai_parallel_tool_calls_and_a_streamed_answer_project_to_the_recorded_storyline():
    story = events.project_records(events.parse_jsonl(OPENAI.read_bytes()))
    assert story == json.loads((DATA / "openai-chat-parallel-tools.storyline.json").read_text())
    system, user, tools, answer = story["turns"]
    assert (system["src"], system["extra"]["role"], user["src"]) == ("system", "developer", "user")
    assert [c["tcid"] for c in tools["tool_calls"]] == ["call_abc123", "call_def456"]
    assert tools["tool_calls"][0]["args"] == {"location": "Paris, France"}  # the arguments' JSON text, parsed
    assert [r["content"] for r in tools["observation"]["results"]] == ["18 C, clear", "9 C, rain"]
    assert answer["msg"] == "Paris: 18 C and clear. Boston: 9 C with rain."
    assert answer["metrics"]["cache_read_tokens"] == 64 and answer["ttft_ms"] == 310
    assert tools["metrics"]["extra"]["completion_tokens_details"]["accepted_prediction_tokens"] == 0  # not dropped


def test_openai_streamed_tool_call_arguments_are_assembled_by_index():
    chunks = [
        {"id": "s", "model": "gpt-x", "choices": [{"index": 0, "delta": {"role": "assistant", "content": None}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "f"}}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 1, "id": "c2", "function": {"name": "g"}}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"x":'}}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 1, "function": {"arguments": "not json"}}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": " 1}"}}]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    stream = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    _, turn = events.project_records(chat(0, "c", [{"role": "user", "content": "go"}], stream))["turns"]
    assert turn["tool_calls"] == [
        {"tcid": "c1", "fn": "f", "args": {"x": 1}},
        {"tcid": "c2", "fn": "g", "args": "not json"},
    ]
    assert (turn["extra"]["stop_reason"], turn["extra"]["id"], turn["model"]) == ("tool_calls", "s", "gpt-x")


def test_openai_a_refusal_and_an_error_status_are_kept():
    refused = completion({"role": "assistant", "content": None, "refusal": "I can't help with that."})
    _, turn = events.project_records(chat(0, "c", [{"role": "user", "content": "bad"}], refused))["turns"]
    assert (turn["msg"], turn["extra"]["refusal"]) == ("", "I can't help with that.")
    error = {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}
    records = chat(0, "c", [{"role": "user", "content": "hi"}], error)
    records[1]["payload"]["http"]["status"] = 429
    _, turn = events.project_records(records)["turns"]
    assert (turn["extra"]["status"], turn["extra"]["error"]["code"]) == (429, "rate_limit_exceeded")


def test_openai_a_retried_call_with_the_same_history_adds_nothing_twice():
    u = {"role": "user", "content": "hi"}
    first = chat(0, "c1", [u], completion({"role": "assistant", "content": "yo"}))
    retry = chat(2, "c2", [u], completion({"role": "assistant", "content": "yo"}))  # same history, same answer
    notes: list[Any] = []
    turns = events.project_records(first + retry, notes=notes)["turns"]
    assert [(t["src"], t["msg"]) for t in turns] == [("user", "hi"), ("agent", "yo"), ("agent", "yo")]
    assert [p.code for p in notes] == ["events.history_fork"]  # the second call resends less than was seen


# --- OpenAI Responses ------------------------------------------------------------------------------------

RESPONSES = DATA / "openai-responses-parallel-tools.events.jsonl"
CONTINUED = DATA / "openai-responses-continued.events.jsonl"


def responses(seq: int, call_id: str, request: dict[str, Any], response: Any, **http: Any) -> list[dict[str, Any]]:
    records = call(seq, call_id, {"model": "gpt-x", **request}, response, **http)
    records[0]["payload"]["http"]["path"] = "/v1/responses"
    return records


def test_responses_parallel_function_calls_and_a_streamed_answer_project_to_the_recorded_storyline():
    notes: list[Any] = []
    story = events.project_records(events.parse_jsonl(RESPONSES.read_bytes()), notes=notes)
    assert story == json.loads((DATA / "openai-responses-parallel-tools.storyline.json").read_text())
    assert notes == []  # the second request resends reasoning, both calls and both outputs: nothing new but the outputs
    user, tools, answer = story["turns"]
    assert (user["src"], user["msg"], user["extra"]["system"]) == (
        "user",
        "What's the weather in Paris and in Boston?",
        "You are a helpful assistant.",
    )
    assert [c["tcid"] for c in tools["tool_calls"]] == ["call_paris_01", "call_boston_02"]
    assert tools["tool_calls"][1]["args"] == {"location": "Boston, MA"}
    assert [r["content"] for r in tools["observation"]["results"]] == ["18 C, clear", "9 C, rain"]
    assert tools["reason"].startswith("**Checking two cities**")
    assert tools["extra"]["unmapped"]["/0"]["encrypted_content"].startswith("gAAAA")  # kept, not dropped
    assert tools["metrics"]["reasoning_tokens"] == 64
    assert answer["msg"] == "Paris: 18 C and clear. Boston: 9 C with rain."  # assembled from the SSE events
    assert (answer["metrics"]["cache_read_tokens"], answer["ttft_ms"], answer["latency_ms"]) == (128, 380, 1500)
    assert answer["extra"]["params"]["stream"] is True
    assert storyline.check(story) == []


def test_responses_continued_by_previous_response_id_with_a_refusal_an_error_and_a_retry():
    records = events.parse_jsonl(CONTINUED.read_bytes())
    assert records[5] == records[6]  # the retry duplicate the recording holds
    notes: list[Any] = []
    story = events.project_records(records, notes=notes)
    assert story == json.loads((DATA / "openai-responses-continued.storyline.json").read_text())
    assert notes == []  # previous_response_id continues the history: no fork although the input is short
    turns = [(t["src"], t["msg"]) for t in story["turns"]]
    assert turns == [
        ("user", "Where is my order 4217?"),  # a string input is one user message
        ("agent", ""),
        ("agent", "Order 4217 has shipped and should arrive on 5 January."),
        ("user", "Now give me the home address of the courier."),
        ("agent", ""),
        ("user", "OK. Can you email me the tracking link?"),
        ("agent", ""),
        ("agent", "I can't send email, but the tracking link is in your order confirmation."),
    ]
    call_turn, refused, failed = story["turns"][1], story["turns"][4], story["turns"][6]
    assert call_turn["tool_calls"] == [{"tcid": "call_order_4217", "fn": "lookup_order", "args": {"order": 4217}}]
    assert call_turn["observation"]["results"][0]["content"].startswith('{"status": "shipped"')
    assert refused["extra"]["refusal"].startswith("I'm sorry")
    assert (failed["extra"]["status"], failed["extra"]["error"]["code"]) == (429, "rate_limit_exceeded")


def test_responses_the_retry_duplicate_is_skipped_at_append(tmp_path, runner):
    from mapc.cli.main import cli

    table = tmp_path / "events.lance"
    result = runner.invoke(cli, ["events", "append", str(CONTINUED), "--to", str(table)])
    assert result.exit_code == 0, result.output
    assert "appended 10 events" in result.output and "(1 already stored, skipped)" in result.output
    result = runner.invoke(cli, ["events", "project", str(table)])
    assert json.loads(result.stdout) == json.loads((DATA / "openai-responses-continued.storyline.json").read_text())


def response_sse(*events_: dict[str, Any]) -> str:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events_)


def test_responses_stream_deltas_alone_assemble_in_order():
    """No .done events (a cut stream): the items, text, arguments and summary come from the deltas."""
    stream = response_sse(
        {"type": "response.created", "response": {"id": "r", "object": "response", "model": "m", "output": []}},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {"type": "reasoning", "id": "rs", "summary": []},
        },
        {"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 0, "delta": "thin"},
        {"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 0, "delta": "king"},
        {
            "type": "response.output_item.added",
            "output_index": 2,
            "item": {"type": "function_call", "id": "fc", "call_id": "c9", "name": "f", "arguments": ""},
        },
        {"type": "response.output_item.added", "output_index": 1, "item": {"type": "message", "role": "assistant"}},
        {"type": "response.output_text.delta", "output_index": 1, "content_index": 0, "delta": "Hel"},
        {"type": "response.function_call_arguments.delta", "output_index": 2, "delta": '{"a": '},
        {"type": "response.output_text.delta", "output_index": 1, "content_index": 0, "delta": "lo"},
        {"type": "response.function_call_arguments.delta", "output_index": 2, "delta": "[1]}"},
    )
    body = wire.output_item_events(wire.sse_events(stream))
    assert [item["type"] for item in body["output"]] == ["reasoning", "message", "function_call"]
    _, turn = events.project_records(responses(0, "c", {"input": "go", "stream": True}, stream))["turns"]
    assert (turn["reason"], turn["msg"]) == ("thinking", "Hello")
    assert turn["tool_calls"] == [{"tcid": "c9", "fn": "f", "args": {"a": [1]}}]
    assert turn["extra"]["id"] == "r"


def test_responses_done_events_replace_what_the_deltas_built_and_an_error_event_is_kept():
    stream = response_sse(
        {"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "role": "assistant"}},
        {"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "partial"},
        {"type": "response.output_text.done", "output_index": 0, "content_index": 0, "text": "complete"},
        {"type": "error", "code": "server_error", "message": "The server had an error", "sequence_number": 4},
    )
    _, turn = events.project_records(responses(0, "c", {"input": "go"}, stream, body_encoding="sse"))["turns"]
    assert turn["msg"] == "complete"
    assert turn["extra"]["error"] == {"code": "server_error", "message": "The server had an error"}


def test_responses_unknown_items_and_parts_are_kept_and_an_unseen_previous_response_is_reported():
    image = {"type": "input_image", "image_url": "data:image/png;base64,AAAA"}
    search = {"type": "web_search_call", "id": "ws", "status": "completed", "action": {"type": "search", "query": "q"}}
    request = {
        "previous_response_id": "resp_never_recorded",
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "see"}, image]}],
    }
    body = {"id": "r2", "object": "response", "output": [search], "status": "completed"}
    notes: list[Any] = []
    user, agent = events.project_records(responses(0, "c", request, body), notes=notes)["turns"]
    assert (user["msg"], user["extra"]["blocks"]) == ("see", {"/0/content/1": image})
    assert agent["extra"]["blocks"] == {"/0": search}
    assert [(p.code, p.pointer) for p in notes] == [
        ("events.history_unseen", 'events[session="s", call_id="c"]/payload/http/request_body/previous_response_id')
    ]


def test_responses_a_client_resending_history_as_items_adds_only_the_new_ones():
    reply_ = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "A1"}]}
    body = {"id": "r1", "object": "response", "output": [reply_]}
    first = responses(0, "c1", {"input": [{"role": "user", "content": "Q1"}]}, body)
    history = [
        {"role": "user", "content": "Q1"},
        {"role": "assistant", "content": "A1"},
        {"role": "user", "content": "Q2"},
    ]
    second = responses(2, "c2", {"input": history}, {**body, "id": "r2", "output": [{**reply_, "content": "A2"}]})
    notes: list[Any] = []
    turns = events.project_records(first + second, notes=notes)["turns"]
    assert [(t["src"], t["msg"]) for t in turns] == [("user", "Q1"), ("agent", "A1"), ("user", "Q2"), ("agent", "A2")]
    assert notes == []


# --- http.stream.frame events -------------------------------------------------------------------------------

FRAMES = DATA / "anthropic-stream-frames.events.jsonl"


def test_stream_frames_are_the_streamed_body_in_seq_order_deduplicated_with_the_error_and_retry():
    records = events.parse_jsonl(FRAMES.read_bytes())
    frames = [r for r in records if r["kind"] == "http.stream.frame"]
    assert [r["seq"] for r in frames] != sorted(r["seq"] for r in frames)  # appended out of order
    assert len(frames) == 14 and len({r["event_id"] for r in frames}) == 13  # one redelivered
    notes: list[Any] = []
    story = events.project_records(records, notes=notes)
    assert story == json.loads((DATA / "anthropic-stream-frames.storyline.json").read_text())
    assert notes == []  # the 529 answer is not history: the retry resends the same messages
    _, tool_turn, failed, answer = story["turns"]
    assert tool_turn["msg"] == "Let me read the file."  # the redelivered frame is not doubled
    assert tool_turn["tool_calls"] == [{"tcid": "toolu_01ReadMe", "fn": "read_file", "args": {"path": "README.md"}}]
    assert (tool_turn["ttft_ms"], tool_turn["latency_ms"]) == (300, 780)  # first frame's offset; the last frame
    assert tool_turn["metrics"] == {"input_tokens": 390, "output_tokens": 48}
    assert (failed["extra"]["status"], failed["extra"]["error"]["type"]) == (529, "overloaded_error")
    assert answer["msg"] == "README.md says mapc converts agent trajectories."


def test_frames_without_a_response_record_and_an_unreadable_frame_is_reported():
    request = {"model": "x", "stream": True, "messages": [{"role": "user", "content": "go"}]}
    records = call(0, "c", request, None)[:1]
    texts = [
        sse({"type": "message_start", "message": {"id": "m", "content": []}}),
        sse({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "done"}}),
    ]
    for n, frame in enumerate([texts[1], "%%%not base64", texts[0]]):
        http = {"frame": frame, "body_encoding": "base64"} if n == 1 else {"frame": frame}
        records.append(
            {
                "source": "proxy",
                "session_id": "s",
                "call_id": "c",
                "seq": [5, 4, 3][n],
                "kind": "http.stream.frame",
                "timestamp_unix_ms": 2000 + n,
                "payload": {"http": http},
            }
        )
    notes: list[Any] = []
    _, turn = events.project_records(records, notes=notes)["turns"]
    assert (turn["msg"], turn["extra"]["seq"], turn["ttft_ms"]) == (
        "done",
        5,
        2002,
    )  # the first frame by seq (3) came at 2002 ms
    assert [(p.code, p.pointer) for p in notes] == [
        ("events.bad_frame", 'events[call_id="c", seq=4]/payload/http/frame')
    ]


# --- Gemini generateContent -----------------------------------------------------------------------------

GEMINI = DATA / "gemini-parallel-tools.events.jsonl"


def test_gemini_id_less_parallel_calls_a_streamed_answer_and_a_blocked_prompt_project_to_the_recorded_storyline():
    notes: list[Any] = []
    story = events.project_records(events.parse_jsonl(GEMINI.read_bytes()), notes=notes)
    assert story == json.loads((DATA / "gemini-parallel-tools.storyline.json").read_text())
    assert notes == []  # the streamed answer, resent as one text part, is the history it was
    _, tools, answer, question, blocked = story["turns"]
    assert {t["extra"]["protocol"] for t in story["turns"]} == {"gemini-generate-content"}
    assert tools["reason"].startswith("**Two lookups**")  # a thought part
    assert [(c["tcid"], c["args"], c["extra"]) for c in tools["tool_calls"]] == [
        ("get_weather#1", {"location": "Paris, France"}, {"tcid_derived": True}),
        ("get_weather#2", {"location": "Boston, MA"}, {"tcid_derived": True}),
    ]
    assert [(r["source_call_id"], r["content"]["temperature"]) for r in tools["observation"]["results"]] == [
        ("get_weather#1", "18 C"),
        ("get_weather#2", "9 C"),
    ]
    assert tools["extra"]["unmapped"] == {"/parts/1": {"thoughtSignature": "CiQB0e2Kb7c1dXk="}}  # kept, not dropped
    assert answer["msg"] == "Paris: 18 C and clear. Boston: 9 C with rain."  # three chunks, one text
    assert (answer["metrics"]["cache_read_tokens"], answer["model"]) == (64, "gemini-2.5-flash")
    assert (question["src"], blocked["msg"], blocked["extra"]["block_reason"]) == ("user", "", "SAFETY")
    assert blocked["extra"]["response_unmapped"]["promptFeedback"]["safetyRatings"][0]["probability"] == "HIGH"


def test_gemini_ids_when_the_wire_has_them_and_an_answer_to_no_open_call():
    part = {"functionCall": {"id": "fc-1", "name": "f", "args": {}}}
    records = call(
        0,
        "c1",
        {"contents": [{"role": "user", "parts": [{"text": "go"}]}]},
        {"candidates": [{"content": {"role": "model", "parts": [part]}}]},
    )
    history = [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [part]},
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"id": "fc-1", "name": "f", "response": {"ok": 1}}},
                {"functionResponse": {"name": "g", "response": {"ok": 2}}},
            ],
        },
    ]
    records += call(2, "c2", {"contents": history}, {"candidates": [{"content": {"role": "model", "parts": []}}]})
    for record in records[::2]:
        record["payload"]["http"]["path"] = "/v1beta/models/gemini-2.5-pro:generateContent"
    turns = events.project_records(records)["turns"]
    assert turns[1]["tool_calls"] == [{"tcid": "fc-1", "fn": "f", "args": {}}]
    assert turns[1]["observation"] == {"results": [{"source_call_id": "fc-1", "content": {"ok": 1}}]}
    orphan = next(t for t in turns if t["src"] == "user" and "observation" in t)
    assert orphan["observation"] == {"results": [{"source_call_id": None, "name": "g", "content": {"ok": 2}}]}


# --- tables and totality ---------------------------------------------------------------------------------


def test_every_shipped_table_is_well_formed():
    names = {t.protocol for t in wire.tables()}
    assert names == {"anthropic-messages", "openai-chat-completions", "openai-responses", "gemini-generate-content"}
    for table in wire.tables():
        spec = table.spec
        assert table.paths and table.stream in wire.ASSEMBLERS
        for section in ("request", "message", "roles", "response", "usage", "blocks"):
            assert type(spec[section]) is dict, (table.protocol, section)
        rows = [*spec["blocks"].values(), *spec["message"].get("whole", {}).values()]
        rows += [f["rule"] for f in spec["message"].get("fields", ())]
        rows += [o["rule"] for o in spec.get("items", {}).get("other", {}).values()]
        for row in rows:
            assert type(row["to"]) is str
            for name, where in row.items():
                if name == "calls":
                    assert all(callable(fn) and type(args) is tuple for fn, args in where.values())
                elif name not in ("to", "pair"):
                    assert where == "" or where.startswith("/"), (table.protocol, row)


def test_every_shipped_table_is_written_in_the_rule_vocabulary():
    from mapc.engine.spec import RULE_KEYS

    for path in sorted(Path(wire.__file__).parents[1].joinpath("mappings", "wire").glob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        rules = [*data["rules"]]
        rules += [r for kind in data["message"] for r in kind["rules"]]
        rules += [r for kind in data["blocks"] for r in kind["rules"]]
        for rule in rules:
            assert set(rule) <= set(RULE_KEYS) and "to" in rule, (path.name, rule)
            assert len({"from", "first_of", "const"} & set(rule)) == 1, (path.name, rule)


def test_a_table_that_says_what_the_projector_cannot_do_is_refused_at_its_pointer():
    from mapc.store import wire_table

    good = yaml.safe_load((Path(wire.__file__).parents[1] / "mappings/wire/anthropic-messages.yaml").read_text())

    def refused(change: Any) -> list[tuple[str, str]]:
        data = copy.deepcopy(good)
        change(data)
        try:
            wire_table.read(data, "t.yaml")
        except MapcError as exc:
            assert all(p.message.startswith("t.yaml: ") for p in exc.problems)
            return [(p.code, p.pointer) for p in exc.problems]
        raise AssertionError("read")

    assert refused(lambda d: d.update(colour=1)) == [("spec.invalid", "/colour")]
    assert refused(lambda d: d["rules"][0].update(via=1)) == [("spec.invalid", "/rules/0/via")]
    assert refused(lambda d: d["rules"][0].update(const=1)) == [("spec.invalid", "/rules/0")]  # two ops
    assert refused(lambda d: d["blocks"][0]["rules"][0].update(call="no_such_fn")) == [
        ("spec.invalid", "/blocks/0/rules/0/call")
    ]
    two_places = [{"from": "/text", "to": "/msg"}, {"from": "/id", "to": "/tool_calls/{c}/tcid"}]
    assert refused(lambda d: d["blocks"][0].update(rules=two_places)) == [("spec.invalid", "/blocks/0/rules/1/to")]
    assert refused(lambda d: d["rules"].pop(0)) == [("spec.invalid", "/rules")]  # no conversation
    assert refused(lambda d: d["rules"][1].update(to="/turns/{t}/nowhere")) == [("spec.invalid", "/rules/1/to")]
    assert refused(lambda d: d.update(stream={"call": "eval"})) == [("spec.invalid", "/stream")]
    assert refused(lambda d: d["consume"].update({"/response/x": 1})) == [("spec.invalid", "/consume//response/x")]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "type",
                    "role",
                    "content",
                    "index",
                    "id",
                    "text",
                    "messages",
                    "choices",
                    "delta",
                    "usage",
                    "contents",
                    "parts",
                    "candidates",
                    "functionCall",
                    "functionResponse",
                    "thought",
                    "output",
                    "call_id",
                    "previous_response_id",
                    "arguments",
                    "tool_calls",
                    "input",
                    "name",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


PATHS = ["/v1/messages", "/v1/chat/completions", "/v1/responses", "/v1beta/models/m:streamGenerateContent"]


@settings(deadline=None)
@given(st.sampled_from(PATHS), json_values, json_values, st.booleans())
def test_law_any_body_under_a_known_path_projects_or_fails_cleanly(path, request_body, response_body, as_sse):
    if as_sse:
        response_body = f"data: {json.dumps(response_body)}\n\n"
    records = call(0, "c", request_body, response_body)
    records[0]["payload"]["http"]["path"] = path
    story = events.project_records(records)  # a valid Storyline whatever the bodies hold
    assert storyline.check(story) == []


def test_spec_table_prints_each_wire_protocol_table(runner):
    from mapc.cli.main import cli

    for table in wire.tables():
        result = runner.invoke(cli, ["spec", "table", table.protocol])
        assert result.exit_code == 0, result.output
        assert result.stdout.startswith(f"{table.protocol} (paths {table.paths[0]}")
        for where in table.spec["usage"].values():
            assert f"`response {where}`" in result.stdout
    result = runner.invoke(cli, ["spec", "table", "anthropic-messages"])
    assert "| `request /messages/{m}/content/{b}/input (/type = tool_use)` | `/turns/{t}/tool_calls/{c}/args` |" in (
        result.stdout
    )
    gemini = runner.invoke(cli, ["spec", "table", "gemini"]).stdout  # a hint names the protocol too
    assert "the first of ['thought', 'text', 'functionCall', 'functionResponse'] it holds = functionCall" in gemini


def test_stream_events_no_assembly_reads_are_kept_not_dropped():
    citation = {"type": "citations_delta", "citation": {"type": "char_location", "cited_text": "x"}}
    anthropic = sse(
        {"type": "message_start", "message": {"id": "m", "content": []}},
        {"type": "ping"},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}},
        {"type": "content_block_delta", "index": 0, "delta": citation},
        {"type": "future_event", "x": 1},
        {"type": "message_stop"},
    )
    records = call(0, "c", {"messages": [{"role": "user", "content": "q"}]}, anthropic, body_encoding="sse")
    _, turn = events.project_records(records)["turns"]
    assert turn["msg"] == "hi"
    kept = next(u for u in turn["extra"]["unmapped"].values() if "stream_unmapped" in u)["stream_unmapped"]
    assert [e.get("delta", e)["type"] for e in kept] == ["citations_delta", "future_event"]

    logprobs = {"content": [{"token": "yo", "logprob": -0.1}]}
    chunks = [{"id": "s", "choices": [{"index": 0, "delta": {"content": "yo"}, "logprobs": logprobs}]}]
    stream = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks)
    _, turn = events.project_records(chat(0, "c", [{"role": "user", "content": "q"}], stream))["turns"]
    assert turn["msg"] == "yo"
    assert turn["extra"]["response_unmapped"]["stream_unmapped"][0]["logprobs"] == logprobs

    searching = {"type": "response.web_search_call.searching", "output_index": 0, "item_id": "ws"}
    stream = response_sse({"type": "response.created", "response": {"id": "r", "output": []}}, searching)
    _, turn = events.project_records(responses(0, "c", {"input": "q"}, stream, body_encoding="sse"))["turns"]
    assert turn["extra"]["response_unmapped"]["stream_unmapped"] == [searching]


# --- recorded bodies and the duplicate-key policy ---------------------------------------------------------


def _texts_with_repeats() -> list[dict[str, Any]]:
    """The four-event case with one request body and one SSE data payload written as JSON text that
    repeats a key (a recorder that stores the bytes it saw)."""
    records = four()
    request = records[0]["payload"]["http"]
    text = orjson.dumps(request["request_body"]).decode()
    request["request_body"] = text[:-1] + ', "model": "other"}'  # `model` twice in the top object
    return records


def test_a_recorded_body_that_repeats_a_key_is_refused_naming_the_record_and_the_pointer():
    records = _texts_with_repeats()
    try:
        events.project_records(records)
    except MapcError as exc:
        assert [(p.code, p.pointer) for p in exc.problems] == [
            ("json.duplicate_key", 'events[call_id="call-1", seq=1]/payload/http/request_body/model')
        ]
        assert "more than once" in exc.problems[0].message
    else:
        raise AssertionError("a body that says two things at once was read")
    allowed = events.project_records(records, options=Options(allow_duplicate_keys=True))
    assert allowed["turns"][0]["msg"] == events.project_records(four())["turns"][0]["msg"]  # the last value kept


def test_a_streamed_data_payload_or_frame_that_repeats_a_key_is_refused_at_its_index():
    request = {"model": "x", "stream": True, "messages": [{"role": "user", "content": "go"}]}
    start = sse({"type": "message_start", "message": {"id": "m", "content": []}})
    bad = 'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "index": 0}\n\n'
    records = call(0, "c", request, start + bad, body_encoding="sse")
    try:
        events.project_records(records)
    except MapcError as exc:
        assert [(p.code, p.pointer) for p in exc.problems] == [
            ("json.duplicate_key", 'events[call_id="c", seq=1]/payload/http/response_body/1/index')
        ]
    else:
        raise AssertionError("a streamed payload that repeats a key was read")
    frames = call(0, "c", request, None)[:1] + [
        {
            "source": "proxy",
            "session_id": "s",
            "call_id": "c",
            "seq": n + 3,
            "kind": "http.stream.frame",
            "timestamp_unix_ms": 2000 + n,
            "payload": {"http": {"frame": frame}},
        }
        for n, frame in enumerate([start, bad])
    ]
    try:
        events.project_records(frames)
    except MapcError as exc:
        assert [p.pointer for p in exc.problems] == [
            'events[call_id="c", http.stream.frame seq=3..4]/payload/http/response_body/1/index'
        ]
    else:
        raise AssertionError("a frame that repeats a key was read")


def test_a_body_of_an_unknown_protocol_that_repeats_a_key_is_refused_too_and_the_cli_says_so(tmp_path, runner):
    from mapc.cli.main import cli

    records = call(0, "c", '{"q": 1, "q": 2}', '{"a": 1}')
    for record in records:
        record["payload"]["http"]["path"] = "/v1/other"
    try:
        events.project_records(records)
    except MapcError as exc:
        assert [p.pointer for p in exc.problems] == ['events[call_id="c", seq=0]/payload/http/request_body/q']
    else:
        raise AssertionError("a degraded body that repeats a key was read")
    source = tmp_path / "e.jsonl"
    source.write_text("".join(json.dumps({**r, "event_id": f"e{r['seq']}"}) + "\n" for r in _texts_with_repeats()))
    table = tmp_path / "events.lance"
    assert runner.invoke(cli, ["events", "append", str(source), "--to", str(table)]).exit_code == 0
    result = runner.invoke(cli, ["events", "project", str(table)])
    assert result.exit_code == 1
    assert 'call_id="call-1", seq=1]/payload/http/request_body/model' in result.stderr
    result = runner.invoke(cli, ["--allow-duplicate-keys", "events", "project", str(table)])
    assert result.exit_code == 0, result.output


def test_tool_arguments_text_that_repeats_a_key_stays_the_text_it_is():
    request = {"model": "x", "stream": True, "messages": [{"role": "user", "content": "go"}]}
    start = {"type": "message_start", "message": {"id": "m", "content": []}}
    opened = {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "f"}}
    delta = {"type": "input_json_delta", "partial_json": '{"a": 1, "a": 2}'}
    body = sse(start, opened, {"type": "content_block_delta", "index": 0, "delta": delta})
    _, turn = events.project_records(call(0, "c", request, body, body_encoding="sse"))["turns"]
    assert turn["tool_calls"] == [{"tcid": "t", "fn": "f", "args": '{"a": 1, "a": 2}'}]  # both values, as text


# --- HTTP/2 records -----------------------------------------------------------------------------------------


def test_http2_records_with_pseudo_headers_project_as_their_http1_twins():
    """A recorder of HTTP/2 keeps the header block as it came: ``:method``, ``:path``, ``:status``
    pseudo-headers (as pairs, in order), and no separate path or status field."""
    records = four()
    h2 = copy.deepcopy(records)
    for record in h2:
        http = record["payload"]["http"]
        record["payload"]["connection"] = {"http_version": "HTTP/2.0", "persistent": True}
        if record["kind"] == "http.request":
            path = http.pop("path", None) or http.pop("url")
            http.pop("url", None)
            http["headers"] = [[":method", "POST"], [":scheme", "https"], [":authority", "api.anthropic.com"]]
            http["headers"] += [[":path", path], ["content-type", "application/json"]]
        else:
            http["headers"] = [{"name": ":status", "value": str(http.pop("status"))}, {"name": "server", "value": "x"}]
    assert "path" not in h2[0]["payload"]["http"] and "status" not in h2[1]["payload"]["http"]
    assert events.project_records(h2) == events.project_records(records)
    assert wire.header({"http": {"headers": {"Content-Type": "a"}}}, "content-type") == "a"
    assert wire.status({"http": {"headers": [[":status", "2000"]]}}) is None  # not a status code


def test_spec_lint_checks_a_wire_table_shipped_or_copied(tmp_path, runner):
    from mapc.cli.main import cli

    for protocol in ("anthropic-messages", "openai-chat-completions", "openai-responses", "gemini-generate-content"):
        result = runner.invoke(cli, ["spec", "lint", protocol])
        assert result.exit_code == 0 and "no problems" in result.output, result.output
    copied = tmp_path / "my-wire.yaml"
    text = wire.table_text("openai-responses").replace("call: joined_texts", "call: no_such_function")
    copied.write_text(text)
    result = runner.invoke(cli, ["spec", "lint", str(copied)])
    assert result.exit_code == 1
    assert f"{copied}: /message/3/rules/1/call: unknown function 'no_such_function'" in result.output
    result = runner.invoke(cli, ["spec", "lint", "atif"])  # a format spec is still linted as one
    assert result.exit_code == 0 and "atif.yaml: no problems" in result.output
