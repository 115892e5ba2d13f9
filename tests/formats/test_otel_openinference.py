"""`otel-openinference`: the OTel GenAI spans with OpenInference attributes as well (what Phoenix
and other OpenInference readers read natively), a sibling span-tree spec of `otel-genai`.

- Storyline → OpenInference → Storyline is exact (fixtures and generated Storylines), and the file
  reads as `otel-genai` too, to the same Storylines (the OpenInference attributes are copies);
- each span says its OpenInference kind and the values OpenInference names: session, model, token
  counts, input/output values with mime types, messages flattened to `llm.*_messages.N.message.*`,
  tool name, call id, arguments and result.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from atif_strategies import atif_documents
from conftest import FIXTURES
from hypothesis import HealthCheck, given, settings

import mapc

FILES = sorted(p for fmt in ("atif", "actf", "openai-msg") for p in (FIXTURES / fmt).glob("*.json"))


def plain(value: Any) -> Any:
    return json.loads(orjson.dumps(value))


def spans(text: str) -> list[dict[str, Any]]:
    return [s for rs in json.loads(text)["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]


def attrs(span: dict[str, Any]) -> dict[str, Any]:
    return {a["key"]: next(iter(a["value"].values())) for a in span["attributes"]}


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_fixtures_go_through_openinference_and_back_exactly(path: Path) -> None:
    stories = mapc.into_storyline(path.parent.name, path.read_bytes())
    text = mapc.from_storyline("otel-openinference", stories)
    assert plain(mapc.into_storyline("otel-openinference", text.encode())) == plain(stories)
    assert plain(mapc.into_storyline("otel-genai", text.encode())) == plain(stories)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(atif_documents())
def test_generated_atif_goes_through_openinference_and_back(doc: dict[str, Any]) -> None:
    stories = mapc.into_storyline("atif", orjson.dumps(doc))
    text = mapc.from_storyline("otel-openinference", stories)
    assert plain(mapc.into_storyline("otel-openinference", text.encode())) == plain(stories)


def test_the_spans_say_what_openinference_names() -> None:
    (story,) = mapc.into_storyline("atif", (FIXTURES / "atif" / "support-ticket.json").read_bytes())
    agent, chat, tool, *_ = (attrs(s) for s in spans(mapc.from_storyline("otel-openinference", [story])))
    assert (agent["openinference.span.kind"], chat["openinference.span.kind"], tool["openinference.span.kind"]) == (
        "AGENT",
        "LLM",
        "TOOL",
    )
    assert agent["session.id"] == chat["session.id"] == story["session"]
    assert chat["llm.model_name"] == "example-model"
    assert chat["llm.input_messages.0.message.role"] == "user"
    assert chat["llm.input_messages.0.message.content"] == story["turns"][0]["msg"]
    assert chat["llm.output_messages.0.message.tool_calls.0.tool_call.function.name"] == "deployment_status"
    assert json.loads(chat["input.value"]) == json.loads(chat["gen_ai.input.messages"])
    assert chat["input.mime_type"] == "application/json"
    call = story["turns"][1]["tool_calls"][0]
    assert (tool["tool.name"], tool["tool_call.id"]) == (call["fn"], call["tcid"])
    assert json.loads(tool["input.value"]) == call["args"] and tool["input.mime_type"] == "application/json"
    # A tool result (a chat conversation's tool message) is the tool span's output value.
    chat = {
        "messages": [
            {"role": "user", "content": "weather?"},
            {
                "role": "assistant",
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        ]
    }
    (chat_story,) = mapc.into_storyline("openai-chat", orjson.dumps(chat))
    answered = next(t for t in chat_story["turns"] if t.get("observation"))
    tools = [
        attrs(s)
        for s in spans(mapc.from_storyline("otel-openinference", [chat_story]))
        if s["name"].startswith("execute_tool")
    ]
    assert tools[0]["output.value"] == answered["observation"]["results"][0]["content"]
    # The GenAI attributes are all there too: the dialect adds, it does not replace.
    genai = [a for a in spans(mapc.from_storyline("otel-genai", [story]))]
    assert all(
        set(attrs(g)) <= set(attrs(o))
        for g, o in zip(genai, spans(mapc.from_storyline("otel-openinference", [story])), strict=True)
    )
