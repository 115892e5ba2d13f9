"""The `otel-genai` codec as it stood before the spec rewrite, frozen: what the shipped format's
output is compared with byte for byte (tests/formats/test_otel_reference.py).  Do not edit it; a
change of output on purpose is a change of that test's expectations, said there.
"""

from __future__ import annotations

import json
from typing import Any, Final

import orjson
from blake3 import blake3

from mapc.engine import duplicates
from mapc.engine.codecs import Codec
from mapc.engine.options import DEFAULT, Options
from mapc.engine.problems import MapcError, Problem
from mapc.engine.timestamp import TimestampError, format_rfc3339, timestamp_ns
from mapc.engine.views import document_id

NAME: Final = "otel-genai"
SCOPE: Final = {"name": "mapc", "version": "1"}
INTERNAL, CLIENT = 1, 3
OP = "gen_ai.operation.name"
# What no GenAI attribute says rides in attributes of mapc's own namespace (and one part type).
NS = "storyline."
DOC, TURN, NEW_TURNS, TRAILING = NS + "document", NS + "turn", NS + "new_turns", NS + "trailing_turns"
RESULT_JSON, MSG_PART = NS + "result_json", NS + "msg"
_ROLES = {"user": "user", "system": "system", "agent": "assistant"}
_SOURCES = {"user": "user", "system": "system", "assistant": "agent"}
# Storyline metric names (ATIF, ACTF, OpenAI) read as GenAI usage attributes (a copy: the metrics
# themselves ride in `storyline.turn`).
_USAGE = {
    "gen_ai.usage.input_tokens": ("input_tokens", "prompt_tokens", "prompt_tokens_len"),
    "gen_ai.usage.output_tokens": ("output_tokens", "completion_tokens", "completion_tokens_len"),
    "gen_ai.usage.cache_read.input_tokens": ("cached_tokens", "cache_read_input_tokens"),
}


# --- writing -----------------------------------------------------------------------------------


def _hex(text: str, nbytes: int) -> str:
    return blake3(text.encode("utf-8", "surrogatepass")).hexdigest(length=nbytes)


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def _attr(key: str, value: Any) -> dict[str, Any]:
    if type(value) is bool:
        return {"key": key, "value": {"boolValue": value}}
    if type(value) is int:
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value if type(value) is str else _json(value)}}


def _ns(value: Any) -> int | None:
    if value is None:
        return None
    try:
        return timestamp_ns(value)
    except (TimestampError, MapcError, TypeError, ValueError):
        return None


def _msg_parts(msg: Any) -> list[dict[str, Any]]:
    if msg is None:
        return []
    if type(msg) is str:
        return [{"type": "text", "content": msg}]
    return [{"type": MSG_PART, "content": msg}]  # a GenericPart: content lists, objects


def _results(turn: dict[str, Any]) -> dict[str, Any] | None:
    """The observation results by call id, when the observation is just `{results: [...]}` of
    `{source_call_id, content}` answering the turn's calls once each, in call order."""
    obs, calls = turn.get("observation"), turn.get("tool_calls")
    if type(obs) is not dict or set(obs) != {"results"} or type(calls) is not list:
        return None
    results = obs["results"]
    if type(results) is not list or not results:
        return None
    order = [c.get("tcid") for c in calls if type(c) is dict]
    seen: list[str] = []
    for r in results:
        if type(r) is not dict or set(r) != {"source_call_id", "content"} or r["source_call_id"] not in order:
            return None
        seen.append(r["source_call_id"])
    if len(set(seen)) != len(seen) or seen != [t for t in order if t in seen]:
        return None
    return {r["source_call_id"]: r["content"] for r in results}


def _span(trace: str, span: str, parent: str | None, name: str, kind: int, start: int, end: int, attrs: list) -> dict:
    out: dict[str, Any] = {"traceId": trace, "spanId": span}
    if parent:
        out["parentSpanId"] = parent
    out.update(
        name=name,
        kind=kind,
        startTimeUnixNano=str(start),
        endTimeUnixNano=str(max(start, end)),
        attributes=attrs,
        status={},
    )
    return out


def _story_spans(story: dict[str, Any], trace: str, parent_span: str | None) -> tuple[str, list[dict[str, Any]]]:
    ident = document_id(story)
    agent_span = _hex(f"invoke_agent\0{ident}", 8)
    turns = story.get("turns") or []
    agent = story.get("agent") or {}
    started = _ns(story.get("started_at"))
    first = next((n for t in turns if (n := _ns(t.get("ts"))) is not None), None)
    base = started if started is not None else first if first is not None else 0
    spans: list[dict[str, Any]] = []
    history: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    last = base
    for t, turn in enumerate(turns):
        start = _ns(turn.get("ts"))
        start = start if start is not None else base + t * 1000
        end = _ns(turn.get("finished_at"))
        end = end if end is not None else start
        last = max(last, end)
        rest = {k: v for k, v in turn.items() if k != "msg"}
        if turn.get("src") != "agent":
            history.append({"role": _ROLES.get(turn.get("src"), turn.get("src")), "parts": _msg_parts(turn.get("msg"))})
            pending.append(rest)
            continue
        parts = _msg_parts(turn.get("msg"))
        if type(turn.get("reason")) is str:
            parts.insert(0, {"type": "reasoning", "content": rest.pop("reason")})
        calls = [c for c in turn.get("tool_calls") or [] if type(c) is dict]
        if "tool_calls" in turn:
            rest["tool_calls"] = [{k: v for k, v in c.items() if k not in ("tcid", "fn", "args")} for c in calls]
        for c in calls:
            parts.append({"type": "tool_call", "id": c["tcid"], "name": c["fn"], "arguments": c["args"]})
        results = _results(turn)
        if results is not None:
            rest.pop("observation")
        output = {"role": "assistant", "parts": parts, "finish_reason": "tool_call" if calls else "stop"}
        model = turn.get("model") or agent.get("model")
        chat_span = _hex(f"chat\0{ident}\0{t}", 8)
        attrs = [_attr(OP, "chat"), _attr("gen_ai.conversation.id", story["session"])]
        if model:
            attrs.append(_attr("gen_ai.request.model", model))
        metrics = turn.get("metrics")
        for key, names in _USAGE.items():
            value = next((metrics[n] for n in names if type(metrics) is dict and type(metrics.get(n)) is int), None)
            if value is not None:
                attrs.append(_attr(key, value))
        attrs += [_attr("gen_ai.input.messages", history), _attr("gen_ai.output.messages", [output])]
        attrs.append(_attr(TURN, rest))
        if pending:
            attrs.append(_attr(NEW_TURNS, pending))
        spans.append(
            _span(trace, chat_span, agent_span, f"chat {model}" if model else "chat", CLIENT, start, end, attrs)
        )
        history = [*history, output]
        pending = []
        for c, call in enumerate(calls):
            tool_attrs = [
                _attr(OP, "execute_tool"),
                _attr("gen_ai.tool.name", call["fn"]),
                _attr("gen_ai.tool.call.id", call["tcid"]),
                _attr("gen_ai.tool.call.arguments", _json(call["args"])),
            ]
            if results is not None and call["tcid"] in results:
                content = results[call["tcid"]]
                tool_attrs.append(_attr("gen_ai.tool.call.result", content))
                if type(content) is not str:
                    tool_attrs.append(_attr(RESULT_JSON, True))
                history.append(
                    {"role": "tool", "parts": [{"type": "tool_call_response", "id": call["tcid"], "response": content}]}
                )
            span_id = _hex(f"execute_tool\0{ident}\0{t}\0{c}", 8)
            spans.append(
                _span(trace, span_id, agent_span, f"execute_tool {call['fn']}", INTERNAL, end, end, tool_attrs)
            )
    finished = _ns(story.get("finished_at"))
    name = agent.get("name") or agent.get("id")
    attrs = [
        _attr(OP, "invoke_agent"),
        _attr("gen_ai.agent.id", agent.get("id")),
        _attr("gen_ai.agent.name", name),
        _attr("gen_ai.conversation.id", story["session"]),
    ]
    if agent.get("model"):
        attrs.append(_attr("gen_ai.request.model", agent["model"]))
    attrs.append(_attr(DOC, {k: v for k, v in story.items() if k != "turns"}))
    if pending:
        trailing = [t for t in turns[len(turns) - len(pending) :]]
        attrs.append(_attr(TRAILING, trailing))
    end = finished if finished is not None else last
    root = _span(trace, agent_span, parent_span, f"invoke_agent {name}", INTERNAL, base, end, attrs)
    return agent_span, [root, *spans]


def encode(stories: list[dict[str, Any]]) -> str:
    """One OTLP/HTTP JSON request (`ExportTraceServiceRequest`) for the Storylines (already valid):
    one trace per tree of parent and child Storylines."""
    by_id = {document_id(s): s for s in stories}
    spans: list[dict[str, Any]] = []
    agent_spans: dict[str, str] = {}
    for story in _parents_first(stories, by_id):
        root = story
        while type(root.get("parent")) is dict and root["parent"].get("psid") in by_id:
            root = by_id[root["parent"]["psid"]]
        trace = _hex(f"trace\0{document_id(root)}", 16)
        psid = (story.get("parent") or {}).get("psid") if type(story.get("parent")) is dict else None
        span_id, own = _story_spans(story, trace, agent_spans.get(psid) if psid else None)
        agent_spans[document_id(story)] = span_id
        spans += own
    request = {
        "resourceSpans": [
            {
                "resource": {"attributes": [_attr("service.name", "mapc")]},
                "scopeSpans": [{"scope": SCOPE, "spans": spans}],
            }
        ]
    }
    return json.dumps(request, ensure_ascii=False, indent=2) + "\n"


def _parents_first(stories: list[dict[str, Any]], by_id: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    done: set[str] = set()

    def visit(story: dict[str, Any]) -> None:
        ident = document_id(story)
        if ident in done:
            return
        done.add(ident)
        parent = story.get("parent")
        if type(parent) is dict and parent.get("psid") in by_id:
            visit(by_id[parent["psid"]])
        out.append(story)

    for story in stories:
        visit(story)
    return out


# --- reading -----------------------------------------------------------------------------------


def _fail(code: str, at: str, message: str) -> MapcError:
    return MapcError([Problem(code, at, message)])


def _value(v: Any) -> Any:
    if type(v) is not dict or len(v) != 1:
        return None
    ((kind, inner),) = v.items()
    if kind == "intValue":
        return int(inner)
    if kind == "arrayValue":
        return [_value(x) for x in (inner or {}).get("values", [])]
    if kind == "kvlistValue":
        return {kv["key"]: _value(kv.get("value")) for kv in (inner or {}).get("values", [])}
    return inner


def _attrs(span: dict[str, Any]) -> dict[str, Any]:
    return {a["key"]: _value(a.get("value")) for a in span.get("attributes") or [] if type(a) is dict and "key" in a}


def _loads(allow_duplicate_keys: bool, value: Any, at: str) -> Any:
    """An attribute's JSON text, decoded; a key repeated in one of its objects is refused (at the
    attribute) unless allowed, as in the file itself."""
    if type(value) is not str:
        return value
    try:
        out = orjson.loads(value)
    except orjson.JSONDecodeError:
        raise _fail("otel.invalid", at, "expected JSON text in this attribute") from None
    if not allow_duplicate_keys:
        found = duplicates.problems_of(value, out)
        if found:
            where = found[0].pointer
            raise _fail("json.duplicate_key", at, f"the JSON text of this attribute repeats a key (at {where})")
    return out


def _spans(doc: Any) -> list[tuple[str, dict[str, Any]]]:
    if type(doc) is not dict or type(doc.get("resourceSpans")) is not list:
        raise _fail("otel.invalid", "", 'expected an OTLP JSON trace request: {"resourceSpans": [...]}')
    out = []
    for r, rs in enumerate(doc["resourceSpans"]):
        for s, ss in enumerate((rs or {}).get("scopeSpans") or []):
            for n, span in enumerate((ss or {}).get("spans") or []):
                at = f"/resourceSpans/{r}/scopeSpans/{s}/spans/{n}"
                if type(span) is not dict:
                    raise _fail("otel.invalid", at, "a span is an object")
                for key, size in (("traceId", 32), ("spanId", 16)):
                    value = span.get(key)
                    if (
                        type(value) is not str
                        or len(value) != size
                        or any(c not in "0123456789abcdefABCDEF" for c in value)
                    ):
                        raise _fail("otel.bad_id", f"{at}/{key}", f"expected {size} hex digits")
                out.append((at, span))
    return out


def _is_tool_result(message: dict[str, Any]) -> bool:
    """A message holding tool results only (they are read from the execute_tool spans)."""
    parts = message.get("parts")
    return (
        bool(parts)
        and type(parts) is list
        and all(type(p) is dict and p.get("type") == "tool_call_response" for p in parts)
    )


def _text(parts: list[Any]) -> Any:
    """A message's text from its parts: one text part's content, a `storyline.msg` part's value."""
    texts = [p for p in parts if type(p) is dict and p.get("type") in ("text", MSG_PART)]
    if not texts:
        return None
    if len(texts) == 1:
        return texts[0].get("content")
    return "".join(str(p.get("content", "")) for p in texts)


def decode(data: bytes, path: str | None = None, options: Options = DEFAULT) -> list[dict[str, Any]]:
    """The Storylines of an OTLP JSON trace file: one per `invoke_agent` span.  A key repeated in
    one object is refused (``json.duplicate_key``) unless `options` allow it (the last value wins)."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise _fail("json.invalid", "", f"not valid JSON: {exc}") from None
    repeated = [] if options.allow_duplicate_keys else duplicates.problems_of(data, doc)
    if repeated:
        raise MapcError(repeated)
    spans = _spans(doc)
    by_id = {span["spanId"].lower(): (at, span) for at, span in spans}
    agents = [(at, span) for at, span in spans if _attrs(span).get(OP) == "invoke_agent"]
    if not agents:
        raise _fail("otel.no_agent", "", "no invoke_agent span: nothing says where a trajectory is")
    agent_ids = {span["spanId"].lower() for _, span in agents}

    def owner(span: dict[str, Any]) -> str | None:
        seen = 0
        parent = (span.get("parentSpanId") or "").lower()
        while parent and seen < len(spans):
            if parent in agent_ids:
                return parent
            parent = (by_id.get(parent, ("", {}))[1].get("parentSpanId") or "").lower()
            seen += 1
        return None

    members: dict[str, list[tuple[str, dict[str, Any]]]] = {a["spanId"].lower(): [] for _, a in agents}
    for at, span in spans:
        if span["spanId"].lower() not in agent_ids:
            home = owner(span)
            if home is not None:
                members[home].append((at, span))
    stories = []
    for at, span in agents:
        own = sorted(members[span["spanId"].lower()], key=lambda m: int(m[1].get("startTimeUnixNano") or 0))
        stories.append(_story(at, span, own, agents, options.allow_duplicate_keys))
    return stories


def _story(
    at: str, span: dict[str, Any], own: list[tuple[str, dict[str, Any]]], agents: list, allow_duplicate_keys: bool
) -> dict[str, Any]:
    attrs = _attrs(span)
    if DOC in attrs:
        story = _loads(allow_duplicate_keys, attrs[DOC], f"{at}/attributes")
    else:
        agent_id = attrs.get("gen_ai.agent.id") or attrs.get("gen_ai.agent.name") or "otel-genai"
        story = {
            "schema_version": "storyline/v1",
            "origin": {"format": NAME},
            "session": attrs.get("gen_ai.conversation.id") or span["traceId"].lower(),
            "agent": {
                "id": agent_id,
                **({"name": attrs["gen_ai.agent.name"]} if attrs.get("gen_ai.agent.name") else {}),
            },
        }
    turns: list[dict[str, Any]] = []
    tools = {}
    for _, s in own:
        a = _attrs(s)
        if a.get(OP) == "execute_tool":
            tools[a.get("gen_ai.tool.call.id")] = a
    seen_inputs = 0
    for sat, s in own:
        a = _attrs(s)
        if a.get(OP) != "chat":
            continue
        inputs = _loads(allow_duplicate_keys, a.get("gen_ai.input.messages", "[]"), f"{sat}/attributes") or []
        outputs = _loads(allow_duplicate_keys, a.get("gen_ai.output.messages", "[]"), f"{sat}/attributes") or []
        new = [m for m in inputs[seen_inputs:] if type(m) is dict and not _is_tool_result(m)]
        residuals = _loads(allow_duplicate_keys, a[NEW_TURNS], f"{sat}/attributes") if NEW_TURNS in a else None
        for k, message in enumerate(new):
            msg = _text(message.get("parts") or [])
            if residuals is not None and k < len(residuals):
                turns.append({**residuals[k], "msg": msg})
            else:
                src = _SOURCES.get(message.get("role"), message.get("role") or "user")
                turns.append({"id": len(turns) + 1, "src": src, "msg": msg})
        seen_inputs = len(inputs) + 1
        output = outputs[0] if outputs and type(outputs[0]) is dict else {"parts": []}
        parts = output.get("parts") or []
        if TURN in a:
            turn = dict(_loads(allow_duplicate_keys, a[TURN], f"{sat}/attributes"))
        else:
            turn = {"id": len(turns) + 1, "src": "agent"}
            start = s.get("startTimeUnixNano")
            if start:
                turn["ts"] = format_rfc3339(int(start))
            if a.get("gen_ai.request.model"):
                turn["model"] = a["gen_ai.request.model"]
        turn["msg"] = _text(parts)
        reasoning = [p for p in parts if type(p) is dict and p.get("type") == "reasoning"]
        if reasoning:
            turn["reason"] = reasoning[0].get("content")
        calls = [p for p in parts if type(p) is dict and p.get("type") == "tool_call"]
        if calls or "tool_calls" in turn:
            extra = turn.get("tool_calls") or [{} for _ in calls]
            turn["tool_calls"] = [
                {**x, "tcid": p.get("id"), "fn": p.get("name"), "args": p.get("arguments")}
                for p, x in zip(calls, extra, strict=False)
            ]
            results = []
            for p in calls:
                tool = tools.get(p.get("id"))
                if tool is not None and "gen_ai.tool.call.result" in tool:
                    content = tool["gen_ai.tool.call.result"]
                    if tool.get(RESULT_JSON):
                        content = _loads(allow_duplicate_keys, content, f"{sat}/attributes")
                    results.append({"source_call_id": p.get("id"), "content": content})
            if results:
                turn["observation"] = {"results": results}
        turns.append(turn)
    if TRAILING in attrs:
        turns += _loads(allow_duplicate_keys, attrs[TRAILING], f"{at}/attributes")
    story["turns"] = turns
    if DOC not in attrs:
        parent = (span.get("parentSpanId") or "").lower()
        for _pat, p in agents:
            if p["spanId"].lower() == parent:
                story["parent"] = {"psid": _attrs(p).get("gen_ai.conversation.id") or p["traceId"].lower()}
    return story


_UNUSED: Final = Codec(
    name=NAME,
    source=NAME,
    decode=decode,
    encode=encode,
    path_patterns=("*.otlp.json",),
    description="OTLP JSON traces with the OpenTelemetry GenAI semantic conventions",
)
