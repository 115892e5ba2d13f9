"""OTLP JSON traces with the OpenTelemetry GenAI conventions (`otel-genai`): the laws and the readings.

- Storyline → OTel → Storyline is exact (what no GenAI attribute says rides in `storyline.*`
  attributes), so A → OTel → A is exact for every format A;
- the spans are what the conventions name: `invoke_agent` per trajectory (subagents as its child
  spans), `chat` per agent turn with the message JSON, `execute_tool` per call; ids are hashes of
  the Storyline identity; times come from the turns;
- the file is an OTLP/HTTP JSON request: it parses as `ExportTraceServiceRequest` with the
  opentelemetry-proto messages once its hex ids are given as protobuf's base64, and every id is
  the hex of the bytes a receiver stores;
- a trace without `storyline.*` attributes (another instrumentation's) reads as turns from its
  chat and tool spans, each chat span's repeated history skipped.
"""

from __future__ import annotations

import base64
import itertools
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from atif_strategies import atif_documents
from chat_strategies import conversations
from conftest import FIXTURES
from google.protobuf import json_format
from hypothesis import HealthCheck, given, settings
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

import mapc
from mapc.cli.main import cli
from mapc.engine import detect

FILES = sorted(p for fmt in ("atif", "actf", "openai-msg") for p in (FIXTURES / fmt).glob("*.json"))
CHAT = FIXTURES / "openai-chat" / "stock_toolcall_training.jsonl"


def plain(value: Any) -> Any:
    return json.loads(orjson.dumps(value))


def spans(text: str) -> list[dict[str, Any]]:
    return [s for rs in json.loads(text)["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]


def attrs(span: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for a in span["attributes"]:
        ((kind, value),) = a["value"].items()
        out[a["key"]] = int(value) if kind == "intValue" else value
    return out


def to_proto(text: str) -> ExportTraceServiceRequest:
    """Parse OTLP/JSON as a receiver does: ids are hex there, base64 in protobuf's JSON mapping."""
    doc = json.loads(text)
    for s in (s for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]):
        for key in ("traceId", "spanId", "parentSpanId"):
            if key in s:
                s[key] = base64.b64encode(bytes.fromhex(s[key])).decode()
    return json_format.ParseDict(doc, ExportTraceServiceRequest())


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_fixture_goes_through_otel_and_back_exactly(path: Path) -> None:
    fmt = path.parent.name
    stories = mapc.into_storyline(fmt, path.read_bytes(), path="x.json")
    text = mapc.from_storyline("otel-genai", stories)
    back = mapc.into_storyline("otel-genai", text.encode())
    assert plain(back) == plain(stories)
    assert plain(mapc.from_storyline(fmt, back)) == plain(mapc.from_storyline(fmt, stories))  # A → OTel → A


def test_the_spans_follow_the_genai_conventions() -> None:
    path = FIXTURES / "atif" / "parallel_tools_14.json"
    (story,) = mapc.into_storyline("atif", path.read_bytes())
    text = mapc.from_storyline("otel-genai", [story])
    all_spans = spans(text)
    ops = [attrs(s)["gen_ai.operation.name"] for s in all_spans]
    agent_turns = [t for t in story["turns"] if t["src"] == "agent"]
    calls = [c for t in agent_turns for c in t.get("tool_calls") or []]
    assert ops.count("invoke_agent") == 1 and ops.count("chat") == len(agent_turns)
    assert ops.count("execute_tool") == len(calls) > 1
    root = all_spans[0]
    assert attrs(root)["gen_ai.conversation.id"] == story["session"] and "parentSpanId" not in root
    assert all(s["parentSpanId"] == root["spanId"] for s in all_spans[1:])
    assert {s["traceId"] for s in all_spans} == {root["traceId"]}
    tool = next(attrs(s) for s in all_spans if attrs(s)["gen_ai.operation.name"] == "execute_tool")
    assert (tool["gen_ai.tool.call.id"], tool["gen_ai.tool.name"]) == (calls[0]["tcid"], calls[0]["fn"])
    assert json.loads(tool["gen_ai.tool.call.arguments"]) == calls[0]["args"]
    chat = [attrs(s) for s in all_spans if attrs(s)["gen_ai.operation.name"] == "chat"]
    outputs = [json.loads(c["gen_ai.output.messages"])[0] for c in chat]
    assert {o["role"] for o in outputs} == {"assistant"}
    assert any(p["type"] == "tool_call" for o in outputs for p in o["parts"])
    # Each chat span's input is the whole history before it (as instrumentations record it).
    inputs = [json.loads(c["gen_ai.input.messages"]) for c in chat]
    assert all(len(a) < len(b) and b[: len(a)] == a for a, b in itertools.pairwise(inputs))
    # Deterministic: the same trajectory gives the same trace, byte for byte.
    assert mapc.from_storyline("otel-genai", [story]) == text
    other = mapc.from_storyline("otel-genai", [{**story, "session": "another", "trajectory": "another"}])
    assert spans(other)[0]["traceId"] != root["traceId"]


def test_times_come_from_the_turns() -> None:
    (story,) = mapc.into_storyline(
        "openai-msg", (FIXTURES / "openai-msg" / "training.json").read_bytes(), path="t.json"
    )[:1]
    chat = next(
        s for s in spans(mapc.from_storyline("otel-genai", [story])) if attrs(s)["gen_ai.operation.name"] == "chat"
    )
    ts = next(t["ts"] for t in story["turns"] if t["src"] == "agent")
    from mapc.engine.timestamp import timestamp_ns

    assert int(chat["startTimeUnixNano"]) == timestamp_ns(ts)


def test_subagents_are_child_invoke_agent_spans() -> None:
    doc = {
        "schema_version": "ATIF-v1.7",
        "session_id": "parent",
        "agent": {"name": "lead", "version": "1"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "go"},
            {"step_id": 2, "source": "agent", "message": "ok"},
        ],
        "subagent_trajectories": [
            {
                "schema_version": "ATIF-v1.7",
                "trajectory_id": "child-1",
                "agent": {"name": "helper", "version": "1"},
                "steps": [{"step_id": 1, "source": "agent", "message": "done"}],
            }
        ],
    }
    stories = mapc.into_storyline("atif", orjson.dumps(doc))
    text = mapc.from_storyline("otel-genai", stories)
    agents = [s for s in spans(text) if attrs(s)["gen_ai.operation.name"] == "invoke_agent"]
    assert len(agents) == 2 and agents[1]["parentSpanId"] == agents[0]["spanId"]
    assert agents[0]["traceId"] == agents[1]["traceId"]
    assert attrs(agents[1])["gen_ai.agent.name"] == "helper"
    back = mapc.into_storyline("otel-genai", text.encode())
    assert plain(back) == plain(stories)
    assert plain(mapc.from_storyline("atif", back)) == plain(mapc.from_storyline("atif", stories))


def test_the_file_is_an_otlp_http_json_request() -> None:
    stories = mapc.into_storyline("openai-chat", CHAT.read_bytes(), jsonl=True)[:5]
    text = mapc.from_storyline("otel-genai", stories)
    request = to_proto(text)
    parsed = [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
    written = spans(text)
    assert len(parsed) == len(written) > 5
    for got, want in zip(parsed, written, strict=True):
        assert got.trace_id.hex() == want["traceId"] and len(got.trace_id) == 16
        assert got.span_id.hex() == want["spanId"] and len(got.span_id) == 8
        assert got.parent_span_id.hex() == want.get("parentSpanId", "")
        assert got.start_time_unix_nano == int(want["startTimeUnixNano"]) <= got.end_time_unix_nano
    ids = {s.span_id for s in parsed}
    assert all(s.parent_span_id in ids for s in parsed if s.parent_span_id)
    # A plain protobuf parse of the hex ids would read them as base64 and store other bytes.
    wrong = json_format.ParseDict(json.loads(text), ExportTraceServiceRequest())
    assert wrong.resource_spans[0].scope_spans[0].spans[0].trace_id.hex() != written[0]["traceId"]


def test_a_trace_of_another_instrumentation_reads_without_repeating_the_history() -> None:
    chat = {
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "weather?"},
            {
                "role": "assistant",
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "w", "arguments": '{"city":"Paris"}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
            {"role": "assistant", "content": "Sunny."},
            {"role": "user", "content": "thanks"},
            {"role": "assistant", "content": "You are welcome."},
        ]
    }
    (story,) = mapc.into_storyline("openai-chat", orjson.dumps(chat))
    doc = json.loads(mapc.from_storyline("otel-genai", [story]))
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for s in ss["spans"]:
                s["attributes"] = [a for a in s["attributes"] if not a["key"].startswith("storyline.")]
    (back,) = mapc.into_storyline("otel-genai", orjson.dumps(doc))
    assert [(t["src"], t["msg"]) for t in back["turns"]] == [(t["src"], t["msg"]) for t in story["turns"]]
    assert back["turns"][2]["tool_calls"] == [{"tcid": "c1", "fn": "w", "args": {"city": "Paris"}}]
    assert back["turns"][2]["observation"] == {"results": [{"source_call_id": "c1", "content": "sunny"}]}
    assert back["session"] == story["session"] and back["agent"]["id"] == "openai-chat"


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(atif_documents())
def test_generated_atif_goes_through_otel_and_back(doc: dict[str, Any]) -> None:
    stories = mapc.into_storyline("atif", orjson.dumps(doc))
    back = mapc.into_storyline("otel-genai", mapc.from_storyline("otel-genai", stories).encode())
    assert plain(back) == plain(stories)
    assert plain(mapc.from_storyline("atif", back)) == plain(mapc.from_storyline("atif", stories))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations())
def test_generated_chats_go_through_otel_and_back(doc: dict[str, Any]) -> None:
    stories = mapc.into_storyline("openai-chat", orjson.dumps(doc))
    back = mapc.into_storyline("otel-genai", mapc.from_storyline("otel-genai", stories).encode())
    assert plain(back) == plain(stories)
    assert plain(mapc.from_storyline("openai-chat", back)) == doc


def test_cli_writes_a_trace_file_and_reads_it_back(runner: Any, tmp_path: Path) -> None:
    out = tmp_path / "traces.otlp.json"
    source = FIXTURES / "atif" / "support-ticket.json"
    result = runner.invoke(cli, ["convert", str(source), "--to", "otel-genai", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert detect.detect(str(out), out.read_bytes()) == "otel-genai"
    back = runner.invoke(cli, ["convert", str(out), "--to", "atif"])
    assert back.exit_code == 0, back.output
    assert json.loads(back.output) == plain(mapc.convert("atif", "atif", source.read_bytes()))


def test_bad_ids_are_refused_at_their_pointer() -> None:
    (story,) = mapc.into_storyline("atif", (FIXTURES / "atif" / "support-ticket.json").read_bytes())
    doc = json.loads(mapc.from_storyline("otel-genai", [story]))
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["spanId"] = "AAECAwQFBgc="  # base64, not hex
    with pytest.raises(mapc.MapcError) as info:
        mapc.into_storyline("otel-genai", orjson.dumps(doc))
    (problem,) = info.value.problems
    assert (problem.code, problem.pointer) == ("otel.bad_id", "/resourceSpans/0/scopeSpans/0/spans/1/spanId")


def test_export_from_a_dataset_writes_an_otlp_request(runner: Any, tmp_path: Path) -> None:
    root = tmp_path / "ds"
    source = FIXTURES / "atif" / "parallel_tools_14.json"
    assert runner.invoke(cli, ["store", str(source), "--to", str(root)]).exit_code == 0
    out = tmp_path / "traces.otlp.json"
    result = runner.invoke(cli, ["export", str(root), "--to", "otel-genai", "-o", str(out), "--redact"])
    assert result.exit_code == 0, result.output
    request = to_proto(out.read_text())
    assert request.resource_spans[0].scope_spans[0].spans[0].name.startswith("invoke_agent")
    assert "redacted" in result.stderr
    back = mapc.into_storyline("otel-genai", out.read_bytes())
    assert plain(mapc.from_storyline("atif", back)) == plain(mapc.convert("atif", "atif", source.read_bytes()))


@pytest.mark.parametrize("fmt", ["otel-genai", "otel-openinference"])
def test_the_spec_table_names_every_attribute_the_spans_carry(fmt: str) -> None:
    # `mapc spec table` prints the spec's `table`: it cannot drift from what the writer writes
    import yaml

    from mapc.engine import catalog

    table = yaml.safe_load(catalog.installed().trace_spec_text(fmt))["document"]["spans"]["table"]
    stories = [
        s for p in sorted((FIXTURES / "atif").glob("*.json")) for s in mapc.into_storyline("atif", p.read_bytes())
    ]
    written = json.loads(mapc.from_storyline(fmt, stories))
    keys = {
        a["key"]
        for r in written["resourceSpans"]
        for s in r["scopeSpans"]
        for sp in s["spans"]
        for a in sp["attributes"]
    }
    flattened = {k.split("{i}")[0] for k in table if "{i}" in k}  # PREFIX.{i}.message.*: every message's keys
    missing = {k for k in keys if k not in table and not any(k.startswith(p) for p in flattened)}
    assert len(keys) > 10 and not missing, missing


@pytest.mark.parametrize("fmt", ["otel-genai", "otel-openinference"])
def test_turns_out_of_time_order_come_back_in_their_order(fmt: str) -> None:
    # a later turn stamped earlier (clocks of two hosts, an ACTF step's own times): read back in the
    # order mapc wrote the spans, not by start time
    story = {
        "schema_version": "storyline/v1",
        "session": "s",
        "agent": {"id": "a"},
        "turns": [
            {"id": 1, "src": "agent", "msg": "first", "ts": "2000-01-07T02:00:00Z"},
            {"id": 2, "src": "agent", "msg": "second", "ts": "2000-01-07T00:00:00Z"},
        ],
    }
    (back,) = mapc.into_storyline(fmt, mapc.from_storyline(fmt, [story]).encode())
    assert [t["msg"] for t in back["turns"]] == ["first", "second"]
    assert {k: v for k, v in back.items() if k != "origin"} == story
