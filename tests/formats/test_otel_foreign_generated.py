"""Traces of other instrumentations, generated: every shape the GenAI conventions allow a chat /
tool / agent span to have (with or without an agent span, tool spans or not, usage or not, extra
attributes of every value type, other span kinds, resources and scopes), read by `otel-genai`.

Laws: the file reads (or is refused with a problem, never a crash); each attribute of each span is
either said by the Storyline (writing it back gives the same value at that span) or kept in
`unknown_fields` at its pointer, so nothing is dropped; and the Storyline read goes through OTel
and back exactly.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mapc

TEXT = st.text(alphabet="abcdef xyz", min_size=1, max_size=8)
HEX = "0123456789abcdef"
VALUES = st.one_of(
    TEXT.map(lambda v: {"stringValue": v}),
    st.integers(-5, 10**6).map(lambda v: {"intValue": str(v)}),
    st.booleans().map(lambda v: {"boolValue": v}),
    st.floats(0, 10, allow_nan=False).map(lambda v: {"doubleValue": v}),
    st.lists(TEXT.map(lambda v: {"stringValue": v}), max_size=2).map(lambda v: {"arrayValue": {"values": v}}),
)


def attr(key: str, value: Any) -> dict[str, Any]:
    if type(value) is int:
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value if type(value) is str else json.dumps(value)}}


@st.composite
def traces(draw: st.DrawFn) -> dict[str, Any]:
    ids = iter(f"{n:016x}" for n in range(1, 10_000))
    trace = "".join(draw(st.sampled_from(HEX)) for _ in range(32))
    agent = draw(st.booleans())
    root = next(ids)
    spans: list[dict[str, Any]] = []
    clock = 1_800_000_000_000_000_000
    history: list[dict[str, Any]] = [{"role": "system", "parts": [{"type": "text", "content": draw(TEXT)}]}]
    for n in range(draw(st.integers(1, 3))):
        history.append({"role": "user", "parts": [{"type": "text", "content": draw(TEXT)}]})
        calls = [f"call{n}_{k}" for k in range(draw(st.integers(0, 2)))]
        parts: list[dict[str, Any]] = [{"type": "text", "content": draw(TEXT)}] if draw(st.booleans()) else []
        parts += [{"type": "tool_call", "id": c, "name": draw(TEXT), "arguments": {"q": draw(TEXT)}} for c in calls]
        output = {"role": "assistant", "parts": parts}
        if draw(st.booleans()):
            output["finish_reason"] = draw(st.sampled_from(["stop", "tool_calls", "length"]))
        attrs = [attr("gen_ai.operation.name", "chat"), attr("gen_ai.input.messages", history)]
        attrs.append(attr("gen_ai.output.messages", [output]))
        if draw(st.booleans()):
            attrs.append(attr("gen_ai.request.model", draw(TEXT)))
        if draw(st.booleans()):
            attrs.append(attr("gen_ai.usage.input_tokens", draw(st.integers(0, 999))))
        attrs += [{"key": f"x.{k}", "value": draw(VALUES)} for k in range(draw(st.integers(0, 2)))]
        start = clock = clock + draw(st.integers(1, 10**9))
        clock += draw(st.integers(0, 10**9))
        chat = {"traceId": trace, "spanId": next(ids), "name": "chat", "kind": 3}
        if agent:
            chat["parentSpanId"] = root
        chat.update(startTimeUnixNano=str(start), endTimeUnixNano=str(clock), attributes=attrs)
        spans.append(chat)
        history = [*history, {"role": "assistant", "parts": parts}]
        for c in calls:
            result = draw(TEXT)
            if draw(st.booleans()):  # a tool span, or the result only in the next chat's input
                tool = [attr("gen_ai.operation.name", "execute_tool"), attr("gen_ai.tool.call.id", c)]
                tool.append(attr("gen_ai.tool.call.result", result))
                clock += 1
                span = {"traceId": trace, "spanId": next(ids), "name": "execute_tool", "kind": 1}
                if agent:
                    span["parentSpanId"] = root
                span.update(startTimeUnixNano=str(clock), endTimeUnixNano=str(clock + 1), attributes=tool)
                spans.append(span)
            history.append({"role": "tool", "parts": [{"type": "tool_call_response", "id": c, "response": result}]})
    if draw(st.booleans()):  # a span of another kind (an HTTP client's, say)
        spans.append({"traceId": trace, "spanId": next(ids), "name": "POST", "kind": 3, "attributes": []})
    if agent:
        head = [attr("gen_ai.operation.name", "invoke_agent"), attr("gen_ai.agent.name", draw(TEXT))]
        spans.insert(0, {"traceId": trace, "spanId": root, "name": "invoke_agent", "kind": 1, "attributes": head})
    resource = {"attributes": [attr("service.name", draw(TEXT))]}
    return {"resourceSpans": [{"resource": resource, "scopeSpans": [{"scope": {"name": "x"}, "spans": spans}]}]}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traces())
def test_another_instrumentations_trace_reads_with_nothing_dropped(doc: dict[str, Any]) -> None:
    stories = mapc.into_storyline("otel-genai", orjson.dumps(doc))
    kept: dict[str, Any] = {}
    for story in stories:
        kept.update(((story.get("unknown_fields") or {}).get("sources") or {}).get("otel-genai", {}).get("fields", {}))
    written = {
        s["name"] + "\0" + str(i): s
        for i, s in enumerate(
            s
            for rs in json.loads(mapc.from_storyline("otel-genai", stories))["resourceSpans"]
            for ss in rs["scopeSpans"]
            for s in ss["spans"]
        )
    }
    said = {(a["key"], json.dumps(a["value"], sort_keys=True)) for s in written.values() for a in s["attributes"]}
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    for n, span in enumerate(spans):
        at = f"/resourceSpans/0/scopeSpans/0/spans/{n}"
        if at in kept:
            continue  # kept whole
        for i, a in enumerate(span["attributes"]):
            here = f"{at}/attributes/{i}"
            if a["key"].startswith("x."):
                assert kept[here] == a  # no Storyline field says it
            if here in kept or (a["key"], json.dumps(a["value"], sort_keys=True)) in said:
                continue
            # Said by the Storyline in other words: JSON text that the writer writes compactly.
            value = a["value"].get("stringValue")
            assert value is not None and any(
                k == a["key"] and json.loads(json.loads(v)["stringValue"]) == json.loads(value)
                for k, v in said
                if "stringValue" in json.loads(v)
            ), f"{here} ({a['key']}) is neither said nor kept"
    back = mapc.into_storyline("otel-genai", mapc.from_storyline("otel-genai", stories).encode())
    assert back == stories
