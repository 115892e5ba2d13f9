"""OTel GenAI spans (`traces/otel-genai.yaml`): the two named functions its spec calls.

The spec and the engine (engine/spans.py) say the trace file's shape; what is here is what the
GenAI spans mean for turns.  Writing, per Storyline: the `invoke_agent` span, a `chat` span per
agent turn (`gen_ai.input.messages`: the whole history before the turn, as instrumentations record
it; user and system turns are messages of the next chat span's input), an `execute_tool` span per
tool call; what no GenAI attribute says goes in `storyline.*` attributes.  Reading takes each chat
span's new input messages only (the history it repeats is skipped).
"""

from __future__ import annotations

from typing import Any

import orjson

from mapc.engine.functions import register
from mapc.engine.problems import MapcError
from mapc.engine.spans import Context, Span
from mapc.engine.timestamp import TimestampError, format_rfc3339, timestamp_ns
from mapc.engine.views import call_results, document_id


def _ns(value: Any) -> int | None:
    try:
        return None if value is None else timestamp_ns(value)
    except (TimestampError, MapcError, TypeError, ValueError):
        return None


def _parts(msg: Any, ns: dict[str, str]) -> list[dict[str, Any]]:
    if msg is None:
        return []
    # A text is a text part; content lists and objects ride whole in a GenericPart of mapc's type.
    return [{"type": "text", "content": msg}] if type(msg) is str else [{"type": ns["msg_part"], "content": msg}]


def _output(turn: dict[str, Any], ns: dict[str, str]) -> dict[str, Any]:
    """The output message of an agent turn: reasoning, text and tool-call parts."""
    parts = _parts(turn.get("msg"), ns)
    if type(turn.get("reason")) is str:
        parts.insert(0, {"type": "reasoning", "content": turn["reason"]})
    calls = [c for c in turn.get("tool_calls") or [] if type(c) is dict]
    parts += [{"type": "tool_call", "id": c["tcid"], "name": c["fn"], "arguments": c["args"]} for c in calls]
    return {"role": "assistant", "parts": parts, "finish_reason": "tool_call" if calls else "stop"}


def _clock(story: dict[str, Any], turns: list[dict[str, Any]]) -> int:
    """The trace's base time: the Storyline's start, else its first turn's, else 0."""
    started = _ns(story.get("started_at"))
    first = next((n for t in turns if (n := _ns(t.get("ts"))) is not None), None)
    return started if started is not None else first if first is not None else 0


def _times(turn: dict[str, Any], t: int, base: int) -> tuple[int, int]:
    """A turn's span times: its `ts` (else a microsecond per turn after the base) to `finished_at`."""
    start = _ns(turn.get("ts"))
    start = start if start is not None else base + t * 1000
    end = _ns(turn.get("finished_at"))
    return start, end if end is not None else start


def _usage(metrics: Any, usage: dict[str, list[str]]) -> list[list[Any]]:
    """The GenAI usage attributes of a turn's metrics (the first integer of each one's names)."""
    out = []
    for key, names in usage.items():
        value = next((metrics[n] for n in names if type(metrics) is dict and type(metrics.get(n)) is int), None)
        if value is not None:
            out.append([key, value])
    return out


def _rest(turn: dict[str, Any], calls: list[dict[str, Any]], results: Any) -> dict[str, Any]:
    """What of an agent turn its chat and tool spans' GenAI attributes do not say (`storyline.turn`)."""
    rest = {k: v for k, v in turn.items() if k != "msg"}
    if type(turn.get("reason")) is str:
        rest.pop("reason")
    if "tool_calls" in turn:
        rest["tool_calls"] = [{k: v for k, v in c.items() if k not in ("tcid", "fn", "args")} for c in calls]
    if results is not None:
        rest.pop("observation")
    return rest


def _chat(story: dict[str, Any], t: int, turn: dict[str, Any], history: list, output: dict, ctx: Context) -> dict:
    """The `chat` span draft of agent turn `t` (its times, pending turns and rest added by the caller)."""
    model = turn.get("model") or (story.get("agent") or {}).get("model")
    attrs: list[list[Any]] = [[ctx.spec.kind, "chat"], ["gen_ai.conversation.id", story["session"]]]
    if model:
        attrs.append(["gen_ai.request.model", model])
    attrs += _usage(turn.get("metrics"), ctx.tables["usage"])
    attrs += [["gen_ai.input.messages", history], ["gen_ai.output.messages", [output]]]
    kind = ctx.tables["span_kinds"]["client"]
    return _draft(["chat", document_id(story), str(t)], 0, f"chat {model}" if model else "chat", kind, 0, 0, attrs)


def _tool(story: dict[str, Any], t: int, c: int, call: dict[str, Any], results: Any, ctx: Context) -> dict:
    """The `execute_tool` span draft of call `c` of turn `t` (its result, when the turn has it)."""
    tool = [[ctx.spec.kind, "execute_tool"], ["gen_ai.tool.name", call["fn"]], ["gen_ai.tool.call.id", call["tcid"]]]
    tool.append(["gen_ai.tool.call.arguments", orjson.dumps(call["args"]).decode()])
    if results is not None and call["tcid"] in results:
        content = results[call["tcid"]]
        tool.append(["gen_ai.tool.call.result", content])
        if type(content) is not str:
            tool.append([ctx.tables["ns"]["result_json"], True])
    kind = ctx.tables["span_kinds"]["internal"]
    return _draft(
        ["execute_tool", document_id(story), str(t), str(c)], 0, f"execute_tool {call['fn']}", kind, 0, 0, tool
    )


def _root(story: dict[str, Any], trailing: list[dict[str, Any]], start: int, end: int, ctx: Context) -> dict:
    """The `invoke_agent` span draft of a Storyline: its agent, and the document but its turns."""
    ns, agent = ctx.tables["ns"], story.get("agent") or {}
    name = agent.get("name") or agent.get("id")
    attrs = [[ctx.spec.kind, ctx.spec.root], ["gen_ai.agent.id", agent.get("id")], ["gen_ai.agent.name", name]]
    attrs.append(["gen_ai.conversation.id", story["session"]])
    if agent.get("model"):
        attrs.append(["gen_ai.request.model", agent["model"]])
    attrs.append([ns["document"], {k: v for k, v in story.items() if k != "turns"}])
    if trailing:
        attrs.append([ns["trailing"], trailing])
    finished = _ns(story.get("finished_at"))
    kind = ctx.tables["span_kinds"]["internal"]
    return _draft(
        ["invoke_agent", document_id(story)],
        None,
        f"invoke_agent {name}",
        kind,
        start,
        finished if finished is not None else end,
        attrs,
    )


def _agent_spans(
    story: dict[str, Any], t: int, times: tuple[int, int], history: list, pending: list, drafts: list, ctx: Context
) -> list[dict[str, Any]]:
    """Agent turn `t`'s chat span and its calls' execute_tool spans (added to `drafts`), after the
    `history` of messages and the `pending` turns it answers; the history after it."""
    turn, ns = story["turns"][t], ctx.tables["ns"]
    calls = [c for c in turn.get("tool_calls") or [] if type(c) is dict]
    results = call_results(turn)
    output = _output(turn, ns)
    chat = _chat(story, t, turn, history, output, ctx)
    chat["attributes"].append([ns["turn"], _rest(turn, calls, results)])
    if pending:
        chat["attributes"].append([ns["new_turns"], pending])
    chat["start"], chat["end"] = times
    drafts.append(chat)
    history = [*history, output]  # a new list: the chat span's input stays as it is
    for c, call in enumerate(calls):
        tool = _tool(story, t, c, call, results, ctx)
        tool["start"] = tool["end"] = times[1]
        drafts.append(tool)
        if results is not None and call["tcid"] in results:
            part = {"type": "tool_call_response", "id": call["tcid"], "response": results[call["tcid"]]}
            history.append({"role": "tool", "parts": [part]})
    return history


@register("otel_spans", 2)
def otel_spans(story: dict[str, Any], ctx: Context) -> list[dict[str, Any]]:
    """The span drafts of one Storyline (engine/spans.py): its `invoke_agent` span first."""
    ns, turns = ctx.tables["ns"], story.get("turns") or []
    base = last = _clock(story, turns)
    drafts: list[dict[str, Any]] = []
    history: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    for t, turn in enumerate(turns):
        start, end = _times(turn, t, base)
        last = max(last, end)
        if turn.get("src") != "agent":  # a message of the next chat span's input
            role = ctx.tables["roles"].get(turn.get("src"), turn.get("src"))
            history.append({"role": role, "parts": _parts(turn.get("msg"), ns)})
            pending.append({k: v for k, v in turn.items() if k != "msg"})
            continue
        history = _agent_spans(story, t, (start, end), history, pending, drafts, ctx)
        pending = []
    root = _root(story, turns[len(turns) - len(pending) :] if pending else [], base, last, ctx)
    if "openinference" in ctx.tables:
        for d in (root, *drafts):
            d["attributes"] += _openinference(dict(d["attributes"]), ctx.tables["openinference"], ctx.spec.kind)
    return [root, *drafts]


def _mime(value: Any) -> str:
    if type(value) is not str:
        return "application/json"
    try:
        return "application/json" if type(orjson.loads(value)) in (dict, list) else "text/plain"
    except orjson.JSONDecodeError:
        return "text/plain"


def _openinference(attrs: dict[str, Any], oi: dict[str, Any], kind: str) -> list[list[Any]]:
    """The OpenInference attributes (what Phoenix reads) a span's GenAI attributes say: its kind,
    copies, JSON input/output values, and messages flattened to `PREFIX.i.message.…` keys."""
    out: list[list[Any]] = [["openinference.span.kind", oi["kinds"][attrs[kind]]]]
    out += [[to, attrs[src]] for to, src in oi["copy"].items() if src in attrs]
    for to, src in oi["values"]:
        if src in attrs:
            value = attrs[src]
            out += [[to, _json_text(value)], [to.replace(".value", ".mime_type"), _mime(value)]]
    for prefix, src in oi["messages"].items():
        for i, message in enumerate(attrs.get(src) or []):
            out += _oi_message(f"{prefix}.{i}.message", message)
    return out


def _json_text(value: Any) -> str:
    return value if type(value) is str else orjson.dumps(value).decode()


def _oi_message(at: str, message: dict[str, Any]) -> list[list[Any]]:
    """One GenAI message as OpenInference's flattened `AT.role`, `AT.content`, `AT.tool_calls.j.…` keys."""
    out: list[list[Any]] = [[f"{at}.role", message["role"]]]
    texts = [p["content"] for p in message["parts"] if p["type"] == "text"]
    if texts:
        out.append([f"{at}.content", "".join(texts)])
    calls = [p for p in message["parts"] if p["type"] == "tool_call"]
    for j, call in enumerate(calls):
        call_at = f"{at}.tool_calls.{j}.tool_call"
        out += [[f"{call_at}.id", call["id"]], [f"{call_at}.function.name", call["name"]]]
        out.append([f"{call_at}.function.arguments", orjson.dumps(call["arguments"]).decode()])
    for part in (p for p in message["parts"] if p["type"] == "tool_call_response"):
        out += [[f"{at}.tool_call_id", part["id"]], [f"{at}.content", _json_text(part["response"])]]
    return out


def _draft(parts: list[str], parent: int | None, name: str, kind: int, start: int, end: int, attrs: list) -> dict:
    return {
        "id": parts,
        "parent": parent,
        "fields": {"name": name, "kind": kind},
        "start": start,
        "end": end,
        "attributes": attrs,
    }


# --- reading -----------------------------------------------------------------------------------


def _tool_result_only(message: dict[str, Any]) -> bool:
    """A message holding tool results only (they are read from the execute_tool spans)."""
    parts = message.get("parts")
    return (
        bool(parts)
        and type(parts) is list
        and all(type(p) is dict and p.get("type") == "tool_call_response" for p in parts)
    )


def _text(parts: list[Any], ns: dict[str, str]) -> Any:
    """A message's text from its parts: one text part's content, a `storyline.msg` part's value."""
    texts = [p for p in parts if type(p) is dict and p.get("type") in ("text", ns["msg_part"])]
    if not texts:
        return None
    if len(texts) == 1:
        return texts[0].get("content")
    return "".join(str(p.get("content", "")) for p in texts)


def _messages(ctx: Context, span: Span, key: str) -> list[Any]:
    """A messages attribute's list (JSON text of the conventions' message schema; null: none)."""
    found = ctx.json(span.attrs.get(key, "[]"), f"{span.at}/attributes")
    return [] if found is None else list(ctx.json(found, f"{span.at}/attributes", list))


def _foreign_head(root: Span | None, key: str, ctx: Context) -> dict[str, Any]:
    """A Storyline's top level from another instrumentation's `invoke_agent` span (None: none)."""
    attrs = root.attrs if root is not None else {}
    trace = root.raw[ctx.spec.trace_key].lower() if root is not None else key
    name = attrs.get("gen_ai.agent.name")
    story = {
        "schema_version": "storyline/v1",
        "origin": {"format": ctx.spec.name},
        "session": attrs.get("gen_ai.conversation.id") or trace,
        "agent": {"id": attrs.get("gen_ai.agent.id") or name or ctx.spec.name, **({"name": name} if name else {})},
    }
    if root is not None:
        story.update(_span_times(root, ("started_at", "finished_at"), ctx))
    return story


def _span_times(span: Span, to: tuple[str, str], ctx: Context) -> dict[str, str]:
    """A span's start and end times, as RFC 3339 at the keys `to` (a time not given: none)."""
    keys = (ctx.spec.start_key, ctx.spec.end_key)
    return {t: format_rfc3339(int(span.raw[k])) for k, t in zip(keys, to, strict=True) if span.raw.get(k)}


def _responses(own: list[Span], ctx: Context) -> dict[Any, Any]:
    """Tool results another instrumentation's chat spans repeat in their input, by call id."""
    out: dict[Any, Any] = {}
    for s in own:
        if s.attrs.get(ctx.spec.kind) == "chat":
            for m in _messages(ctx, s, "gen_ai.input.messages"):
                if type(m) is dict and _tool_result_only(m):
                    for part in m["parts"]:
                        out.setdefault(part.get("id"), part.get("response"))
    return out


def _new_turns(s: Span, new: list[dict[str, Any]], count: int, ctx: Context) -> list[dict[str, Any]]:
    """The turns of a chat span's new input messages (`count` turns before them), with what of them
    `storyline.new_turns` keeps."""
    ns = ctx.tables["ns"]
    kept = ctx.json(s.attrs[ns["new_turns"]], f"{s.at}/attributes", list) if ns["new_turns"] in s.attrs else None
    out = []
    for n, message in enumerate(new):
        msg = _text(message.get("parts") or [], ns)
        if kept is not None and n < len(kept):
            out.append({**kept[n], "msg": msg})
        else:
            src = ctx.tables["sources"].get(message.get("role"), message.get("role") or "user")
            out.append({"id": count + len(out) + 1, "src": src, "msg": msg})
    return out


def _agent_turn(s: Span, count: int, ctx: Context) -> dict[str, Any]:
    """A chat span's agent turn but its output: `storyline.turn`, else what its attributes say."""
    a, ns = s.attrs, ctx.tables["ns"]
    if ns["turn"] in a:
        return dict(ctx.json(a[ns["turn"]], f"{s.at}/attributes", dict))
    turn: dict[str, Any] = {"id": count + 1, "src": "agent", **_span_times(s, ("ts", "finished_at"), ctx)}
    if a.get("gen_ai.request.model"):
        turn["model"] = a["gen_ai.request.model"]
    usage = {to: a[k] for k, to in ctx.tables["read_usage"].items() if type(a.get(k)) is int}
    if usage:
        turn["metrics"] = usage
    return turn


def _read_calls(turn: dict[str, Any], calls: list[dict], s: Span, found: dict, ctx: Context) -> None:
    """An agent turn's tool calls from its output's parts, and their results: an execute_tool span's
    (`found["tools"]`, taken), else one a later chat span's input repeats (`found["responses"]`)."""
    extra = turn.get("tool_calls") or [{} for _ in calls]
    turn["tool_calls"] = [
        {**x, "tcid": p.get("id"), "fn": p.get("name"), "args": p.get("arguments")}
        for p, x in zip(calls, extra, strict=False)
    ]
    results = []
    for p in calls:
        tool = found["tools"].pop(p.get("id"), None)
        if tool is not None and "gen_ai.tool.call.result" in tool.attrs:
            content = tool.attrs["gen_ai.tool.call.result"]
            if tool.attrs.get(ctx.tables["ns"]["result_json"]):
                content = ctx.json(content, f"{s.at}/attributes")
            results.append({"source_call_id": p.get("id"), "content": content})
        elif p.get("id") in found["responses"]:
            results.append({"source_call_id": p.get("id"), "content": found["responses"][p.get("id")]})
    if results:
        turn["observation"] = {"results": results}


def _output_turn(s: Span, count: int, found: dict, ctx: Context) -> dict[str, Any]:
    """The agent turn of a chat span: its output message's text, reasoning and tool calls."""
    outputs = _messages(ctx, s, "gen_ai.output.messages")
    output = outputs[0] if outputs and type(outputs[0]) is dict else {"parts": []}
    parts = [p for p in output.get("parts") or [] if type(p) is dict]
    turn = _agent_turn(s, count, ctx)
    turn["msg"] = _text(output.get("parts") or [], ctx.tables["ns"])
    reasoning = [p for p in parts if p.get("type") == "reasoning"]
    if reasoning:
        turn["reason"] = reasoning[0].get("content")
    calls = [p for p in parts if p.get("type") == "tool_call"]
    if calls or "tool_calls" in turn:
        _read_calls(turn, calls, s, found, ctx)
    return turn


def _parent(root: Span, roots: list[Span], ctx: Context) -> dict[str, Any] | None:
    """The parent link of a foreign `invoke_agent` span under another one (None: a top one)."""
    spec = ctx.spec
    parent = (root.raw.get(spec.parent_key) or "").lower()
    for p in reversed(roots):  # a span id repeated: the last one's (as the ids' index reads it)
        if p.raw[spec.span_key].lower() == parent:
            return {"psid": p.attrs.get("gen_ai.conversation.id") or p.raw[spec.trace_key].lower()}
    return None


@register("otel_story", 5)
def otel_story(
    root: Span | None, own: list[Span], roots: list[Span], ctx: Context, key: str
) -> tuple[dict[str, Any], bool]:
    """The Storyline of one `invoke_agent` span (None: a trace without one, `key` its id) from
    its spans in start order, and whether the trace carried it whole (mapc wrote it)."""
    ns = ctx.tables["ns"]
    attrs, at = (root.attrs, root.at) if root is not None else ({}, "")
    foreign = ns["document"] not in attrs
    if foreign:
        story = _foreign_head(root, key, ctx)
    else:  # mapc's own spans, in the order it wrote them (turns need not be in time order)
        story = ctx.json(attrs[ns["document"]], f"{at}/attributes", dict)
        own = sorted(own, key=lambda s: s.n)
    tools = {s.attrs.get("gen_ai.tool.call.id"): s for s in own if s.attrs.get(ctx.spec.kind) == "execute_tool"}
    found = {"tools": tools, "responses": _responses(own, ctx) if foreign else {}}
    turns: list[dict[str, Any]] = []
    seen_inputs = 0
    for s in (s for s in own if s.attrs.get(ctx.spec.kind) == "chat"):
        inputs = _messages(ctx, s, "gen_ai.input.messages")
        new = [m for m in inputs[seen_inputs:] if type(m) is dict and not _tool_result_only(m)]
        turns += _new_turns(s, new, len(turns), ctx)
        seen_inputs = len(inputs) + 1  # the history it repeats, and this span's own output
        turns.append(_output_turn(s, len(turns), found, ctx))
    if ns["trailing"] in attrs:
        turns += ctx.json(attrs[ns["trailing"]], f"{at}/attributes", list)
    story["turns"] = turns
    parent = _parent(root, roots, ctx) if foreign and root is not None else None
    if parent is not None:
        story["parent"] = parent
    return story, not foreign
