"""OTel GenAI spans written by real instrumentation (tests/data/fixtures/otel-genai/): what mapc reads.

The committed file and a fresh recording (the same script, run here against its local stand-in of
the API) read alike: one Storyline per `invoke_agent` span, turns from the chat spans without the
history each repeats, the tool result from the `execute_tool` span, usage as metrics, times from
the spans; what no Storyline field says (response model and id, finish reasons, provider, resource,
scope) is kept in `unknown_fields` at its pointer.  Without the agent and tool spans (an LLM client's
instrumentation alone) the trace is the trajectory and the tool result comes from the next chat
span's input.
"""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import FIXTURES

import mapc

HERE = FIXTURES / "otel-genai"
FILE = HERE / "openai_v2_weather.otlp.json"


def recorder() -> Any:
    spec = importlib.util.spec_from_file_location("make_openai_v2", HERE / "make_openai_v2.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def unknown(story: dict[str, Any]) -> dict[str, Any]:
    return story["unknown_fields"]["sources"]["otel-genai"]["fields"]


def kept_keys(story: dict[str, Any]) -> set[str]:
    return {v["key"] for p, v in unknown(story).items() if "/attributes/" in p}


def check_reading(data: bytes) -> dict[str, Any]:
    (story,) = mapc.into_storyline("otel-genai", data)
    assert (story["session"], story["agent"]) == ("conv-paris-1", {"id": "weather-agent-1", "name": "weather-agent"})
    assert [(t["id"], t["src"], t["msg"]) for t in story["turns"]] == [
        (1, "system", "You answer weather questions with the get_weather tool."),
        (2, "user", "What is the weather in Paris?"),
        (3, "agent", None),
        (4, "agent", "It is 18 °C and cloudy in Paris."),
    ]
    call, answer = story["turns"][2], story["turns"][3]
    assert call["tool_calls"] == [{"tcid": "call_w1", "fn": "get_weather", "args": {"city": "Paris"}}]
    assert call["observation"] == {
        "results": [{"source_call_id": "call_w1", "content": '{"temperature_c":18,"sky":"cloudy"}'}]
    }
    assert call["metrics"] == {"prompt_tokens": 80, "completion_tokens": 9}
    assert answer["metrics"] == {"prompt_tokens": 100, "completion_tokens": 18}
    assert call["model"] == answer["model"] == "gpt-4o-mini"
    assert story["started_at"] < call["ts"] < call["finished_at"] <= answer["ts"] < story["finished_at"]
    assert {
        "gen_ai.response.model",
        "gen_ai.response.id",
        "gen_ai.response.finish_reasons",
        "gen_ai.provider.name",
        "gen_ai.tool.type",
        "gen_ai.request.model",  # on the agent span
        "gen_ai.output.messages",  # its finish_reason `tool_calls` is not what mapc writes
    } <= kept_keys(story)
    fields = unknown(story)
    assert fields["/resourceSpans/0/scopeSpans/0/scope"]["name"] == "opentelemetry.util.genai.handler"
    assert {"key": "service.name", "value": {"stringValue": "weather-agent"}} in fields["/resourceSpans/0/resource"][
        "attributes"
    ]
    # What was read goes on: Storyline → OTel → Storyline is exact for it too.
    back = mapc.into_storyline("otel-genai", mapc.from_storyline("otel-genai", [story]).encode())
    assert back == [story]
    return story


def test_the_committed_recording_reads_as_turns_with_nothing_dropped() -> None:
    check_reading(FILE.read_bytes())


def test_a_fresh_recording_reads_the_same(tmp_path: Path) -> None:
    out = tmp_path / "run.otlp.json"
    assert recorder().record(out) == 4
    check_reading(out.read_bytes())


def test_an_llm_client_trace_alone_is_one_trajectory() -> None:
    doc = json.loads(FILE.read_bytes())
    chats = copy.deepcopy(doc)
    for rs in chats["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            ss["spans"] = [s for s in ss["spans"] if s["name"].startswith("chat")]
    (story,) = mapc.into_storyline("otel-genai", orjson.dumps(chats))
    trace = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
    assert (story["session"], story["agent"]) == (trace, {"id": "otel-genai"})
    assert [t["src"] for t in story["turns"]] == ["system", "user", "agent", "agent"]
    # No tool span: the result is the tool message the second chat span's input holds.
    assert story["turns"][2]["observation"] == {
        "results": [{"source_call_id": "call_w1", "content": '{"temperature_c": 18, "sky": "cloudy"}'}]
    }


def _edited(doc: dict[str, Any], span: int, edit: Any) -> bytes:
    out = copy.deepcopy(doc)
    edit(out["resourceSpans"][0]["scopeSpans"][0]["spans"][span])
    return orjson.dumps(out)


def _attribute(key: str, value: dict[str, Any]) -> Any:
    def edit(span: dict[str, Any]) -> None:
        span["attributes"] = [a for a in span["attributes"] if a["key"] != key] + [{"key": key, "value": value}]

    return edit


AT = "/resourceSpans/0/scopeSpans/0/spans/0"


@pytest.mark.parametrize(
    ("edit", "code", "where"),
    [
        (lambda s: s.__setitem__("startTimeUnixNano", "soon"), "otel.invalid", f"{AT}/startTimeUnixNano"),
        (lambda s: s.__setitem__("parentSpanId", 5), "otel.bad_id", f"{AT}/parentSpanId"),
        (lambda s: s.__setitem__("attributes", {"a": 1}), "otel.invalid", f"{AT}/attributes"),
        (lambda s: s["attributes"].append({"key": 5}), "otel.invalid", f"{AT}/attributes/11"),
        # OTLP keys are unique: a repeated one is refused, not read as the last of its values
        (lambda s: s["attributes"].append(dict(s["attributes"][0])), "otel.invalid", f"{AT}/attributes/11/key"),
        (
            _attribute("gen_ai.usage.input_tokens", {"intValue": "many"}),
            "otel.invalid",
            f"{AT}/attributes/10/value/intValue",
        ),
        (
            _attribute("x", {"kvlistValue": {"values": [1]}}),
            "otel.invalid",
            f"{AT}/attributes/11/value/kvlistValue/values/0",
        ),
        (_attribute("gen_ai.input.messages", {"stringValue": '{"role": "user"}'}), "otel.invalid", f"{AT}/attributes"),
    ],
)
def test_a_bad_span_is_refused_at_its_pointer(edit: Any, code: str, where: str) -> None:
    with pytest.raises(mapc.MapcError) as bad:
        mapc.into_storyline("otel-genai", _edited(json.loads(FILE.read_bytes()), 0, edit))
    assert [(p.code, p.pointer) for p in bad.value.problems] == [(code, where)]


def test_a_storyline_attribute_of_the_wrong_shape_is_refused() -> None:
    (story,) = mapc.into_storyline("atif", (FIXTURES / "atif" / "support-ticket.json").read_bytes())
    doc = json.loads(mapc.from_storyline("otel-genai", [story]))
    with pytest.raises(mapc.MapcError) as bad:
        mapc.into_storyline("otel-genai", _edited(doc, 1, _attribute("storyline.turn", {"stringValue": '"x"'})))
    assert [(p.code, p.pointer) for p in bad.value.problems] == [("otel.invalid", f"{AT[:-1]}1/attributes")]
