"""Wire bodies → Storyline turns: a small generic projector driven by the tables in ``mappings/wire/``.

Projection re-derives the conversation from the recorded HTTP bodies ("protocol re-parsing").  Each
protocol is a YAML table (``mappings/wire/NAME.yaml``) in the engine's rule vocabulary (``from`` /
``first_of`` / ``const``, ``to``, ``call`` + ``args``, ``when``; docs/events.md, "Wire tables"),
read by `wire_table.read` into the form this module runs: which request path and
``payload.protocol`` hint recognise it, the pointers of the messages, model, system prompt and
usage, the message role → Storyline ``src`` map, and which content block type becomes which
Storyline field (``msg``, ``reason``, ``tool_call``, ``observation``).  This module knows no
protocol by name: a streamed response is put back together by the codec function its table names
(`ASSEMBLERS`), which turns the SSE events into the body a non-streamed response would have had,
so one table reads both.  A conversation is a list of messages, or (a table with a
``message_type``: OpenAI Responses) of typed items, consecutive items of one side read as one message.

Nothing is dropped: keys a row does not read go to the turn's ``extra.unmapped``, response keys
the table does not read to ``extra.response_unmapped``, request keys it does not read to
``extra.params`` (when they change), unknown block and item types whole to ``extra.blocks``.
The table's ``consume`` values (an object ``type`` the protocol fixes) are the only values not
carried, and only when they hold the constant.

History: every request carries the whole conversation so far.  `Conversation` remembers what it
has seen (each message keyed by its text and tool-call ids, not by reasoning, which clients may
drop) and adds only what is new; a request whose history does not extend what was seen (an edit or
a fork) is reported as ``events.history_fork`` and its differing messages are added marked
``extra.history_fork``, never silently repeated; a resent copy that matches but carries values
no rule reads that its first reading did not is reported as ``events.history_changed``.  A
request that names the response it continues (``continues``: ``previous_response_id``) sends
only what is new; the history is that response's.
A failed call whose response carries no message (an HTTP error) adds nothing to the history.
"""

from __future__ import annotations

import base64
import binascii
import importlib.resources
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any, Final, TypeVar
from urllib.parse import urlsplit

import orjson
import yaml

from mapc.engine import duplicates, pointer
from mapc.engine.functions import joined_texts
from mapc.engine.options import DEFAULT, Options
from mapc.engine.problems import MapcError, Problem
from mapc.engine.values import MISSING
from mapc.mappings.openai_chat import json_text_value
from mapc.store import wire_table

T = TypeVar("T")


def _typed(value: Any, kind: type[T], default: T) -> T:
    """`value` when it is exactly of type `kind` (a JSON value read from a record), else `default`."""
    return value if type(value) is kind else default


@lru_cache(maxsize=4096)
def _tokens(where: str) -> tuple[str, ...]:
    """`pointer.parse`, remembered: the pointers come from the tables, a small set read again and again."""
    return pointer.parse(where)


@dataclass(frozen=True)
class Table:
    """One protocol's table (a ``mappings/wire/NAME.yaml``), as read."""

    protocol: str
    paths: tuple[str, ...]
    hints: tuple[str, ...]
    stream: str | None
    spec: dict[str, Any]


@cache
def tables() -> tuple[Table, ...]:
    """Every shipped protocol table, in name order."""
    files = importlib.resources.files("mapc.mappings.wire")
    out = []
    for entry in sorted(files.iterdir(), key=lambda p: p.name):
        if not entry.name.endswith(".yaml"):
            continue
        spec = wire_table.read(yaml.safe_load(entry.read_text(encoding="utf-8")), f"mappings/wire/{entry.name}")
        out.append(
            Table(
                protocol=spec["protocol"],
                paths=tuple(spec.get("paths", ())),
                hints=tuple(spec.get("hints", ())),
                stream=spec.get("stream"),
                spec=spec,
            )
        )
    return tuple(out)


def at(document: Any, where: str | None) -> Any:
    """The value at RFC 6901 pointer `where` in `document`, or `MISSING`."""
    if where is None:
        return MISSING
    node = document
    for token in _tokens(where):
        if type(node) is dict and token in node:
            node = node[token]
        elif type(node) is list and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return MISSING
    return node


def _http(payload: Any) -> dict[str, Any]:
    http = payload.get("http") if type(payload) is dict else None
    return http if type(http) is dict else {}


def header(payload: Any, name: str) -> str | None:
    """A header of the record (``payload.http.headers``, else the flat ``headers``): an object (names
    in any case) or a list of ``[name, value]`` pairs or ``{name, value}`` objects; the first value."""
    if type(payload) is not dict:
        return None
    headers = _http(payload).get("headers", payload.get("headers"))
    pairs: list[Any] = list(headers.items()) if type(headers) is dict else headers if type(headers) is list else []
    for pair in pairs:
        if type(pair) is dict:
            pair = (pair.get("name"), pair.get("value"))
        if type(pair) in (list, tuple) and len(pair) == 2 and type(pair[0]) is str and pair[0].lower() == name:
            return pair[1] if type(pair[1]) is str else None
    return None


def request_path(payload: Any) -> str | None:
    """The request path: ``payload.http.path`` (else the flat legacy ``path``, E-5), else a URL's,
    else an HTTP/2 record's ``:path`` pseudo-header (a recorder that keeps the frames' header block)."""
    if type(payload) is not dict:
        return None
    http = _http(payload)
    for value in (http.get("path"), payload.get("path")):
        if type(value) is str and value:
            return urlsplit(value).path or value
    for value in (http.get("url"), payload.get("url"), header(payload, ":path")):
        if type(value) is str and value:
            return urlsplit(value).path or None
    return None


def status(payload: Any) -> Any:
    """The response status: ``payload.http.status`` (else the flat ``status``), else an HTTP/2
    record's ``:status`` pseudo-header as the integer it names."""
    if type(payload) is not dict:
        return None
    value = _http(payload).get("status", payload.get("status"))
    if value is None:
        text = header(payload, ":status")
        value = int(text) if text is not None and text.isdigit() and len(text) == 3 else None
    return value


def recognise(payloads: list[Any]) -> Table | None:
    """The protocol of one call's payloads: by request path first, ``payload.protocol`` as a hint."""
    for payload in payloads:
        path = request_path(payload)
        if path is not None:
            for table in tables():
                if any(path == p or path.endswith(p) for p in table.paths):
                    return table
    for payload in payloads:
        hint = payload.get("protocol") if type(payload) is dict else None
        if type(hint) is str:
            for table in tables():
                if hint in table.hints:
                    return table
    return None


# --- bodies -------------------------------------------------------------------------------------------


def json_body(body: Any, where: str = "", options: Options = DEFAULT) -> Any:
    """A body as JSON: an object or list as is, a string holding JSON parsed, else None.

    A JSON text that repeats a key in one object is refused (``json.duplicate_key``, at `where` +
    the key's pointer) unless `options` allow duplicate keys, as every other input of mapc is
    (engine/duplicates.py): the body would be read with one of the two values lost."""
    if type(body) in (dict, list):
        return body
    if type(body) is str and body.lstrip()[:1] in ("{", "["):
        try:
            value = orjson.loads(body)
        except orjson.JSONDecodeError:
            return None
        _refuse_repeats(body, value, where, options)
        return value
    return None


def _refuse_repeats(text: str, value: Any, where: str, options: Options) -> None:
    if options.allow_duplicate_keys:
        return
    repeated = duplicates.problems_of(text, value)
    if repeated:
        raise MapcError(
            Problem(p.code, f"{where}{p.pointer}", f"{p.message} (--allow-duplicate-keys keeps the last value)")
            for p in repeated
        )


def request_body(payload: Any, options: Options = DEFAULT) -> Any:
    """The request body as JSON: ``payload.http.request_body``, else the flat legacy ``body``.

    A body text that repeats a key is a `MapcError` at ``/payload/http/request_body/…`` (see `json_body`)."""
    if type(payload) is not dict:
        return None
    body = json_body(_http(payload).get("request_body"), "/payload/http/request_body", options)
    return body if body is not None else json_body(payload.get("body"), "/payload/body", options)


def _is_sse(payload: dict[str, Any], body: Any) -> bool:
    encoding = _http(payload).get("body_encoding", payload.get("body_encoding"))
    if encoding in ("sse", "sse-wire"):
        return True
    return type(body) is str and body.lstrip().startswith(("event:", "data:"))


def sse_events(text: str, where: str = "", options: Options = DEFAULT) -> list[Any]:
    """The JSON ``data:`` payloads of an SSE text, in order (``[DONE]`` and non-JSON data skipped).

    A payload that repeats a key is refused as `json_body` refuses a body, at `where` + ``/N`` (the
    N-th data payload of the stream, from 0) + the key's pointer."""
    out = []
    data: list[str] = []
    n = 0
    for line in [*text.splitlines(), ""]:
        if line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        elif not line.strip() and data:
            joined = "\n".join(data)
            data = []
            if joined.strip() == "[DONE]":
                continue
            try:
                value = orjson.loads(joined)
            except orjson.JSONDecodeError:
                continue
            _refuse_repeats(joined, value, f"{where}/{n}", options)
            n += 1
            out.append(value)
    return out


def content_block_events(events: list[Any]) -> dict[str, Any]:
    """The message a stream of content-block events describes (the body a non-streamed call returns).

    ``message_start`` gives the message; ``content_block_start`` opens block ``index``;
    ``content_block_delta`` appends ``text_delta`` text, ``thinking_delta`` thinking,
    ``signature_delta`` signature and ``input_json_delta`` partial JSON (parsed once the block is
    complete; text that is not JSON is kept as a string); ``message_delta`` sets the stop reason
    and merges usage; an ``error`` event is kept as ``error``.  Any other event or delta (but
    ``ping`` and the stops, which carry nothing) is kept whole in ``stream_unmapped``.
    """
    message: dict[str, Any] = {"content": []}
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, list[str]] = {}
    leftover: list[Any] = []
    for event in events:
        if type(event) is not dict:
            continue
        kind = event.get("type")
        index = _typed(event.get("index"), int, len(blocks))
        if kind == "message_start" and type(event.get("message")) is dict:
            content = event["message"].get("content")
            message = {**event["message"], "content": content if type(content) is list else []}
        elif kind == "content_block_start" and type(event.get("content_block")) is dict:
            blocks[index] = dict(event["content_block"])
        elif kind == "content_block_delta" and type(event.get("delta")) is dict:
            block = blocks.setdefault(index, {"type": "text", "text": ""})
            delta = event["delta"]
            kind = delta.get("type")
            if kind == "input_json_delta":
                partial.setdefault(index, []).append(str(delta.get("partial_json", "")))
            else:
                key = {"text_delta": "text", "thinking_delta": "thinking", "signature_delta": "signature"}.get(kind)
                if key is not None:
                    block[key] = str(block.get(key) or "") + str(delta.get(key, ""))
                else:  # a delta type this assembly does not know (citations_delta, ...): kept, not dropped
                    leftover.append(event)
        elif kind == "message_delta":
            delta = event.get("delta")
            if type(delta) is dict:
                message.update({k: v for k, v in delta.items()})
            if type(event.get("usage")) is dict:
                before = _typed(message.get("usage"), dict, {})
                message["usage"] = {**before, **event["usage"]}
        elif kind == "error":
            message["error"] = event.get("error")
        elif kind not in ("ping", "content_block_stop", "message_stop"):  # events that carry nothing
            leftover.append(event)
    if leftover:
        message["stream_unmapped"] = leftover
    for index, parts in partial.items():
        text = "".join(parts)
        blocks[index]["input"] = json_text_value(text) if text else {}  # not JSON once complete: the text
    message["content"] = [*message["content"], *(blocks[i] for i in sorted(blocks))]
    return message


_CHAT_DELTA: Final = frozenset({"role", "content", "refusal", "reasoning_content", "tool_calls"})


def choice_delta_chunks(chunks: list[Any]) -> dict[str, Any]:
    """The completion a stream of choice-delta chunks describes (the body a non-streamed call returns).

    Only choice ``index`` 0 is assembled (the first choice, what the projection reads); its
    ``delta.content``, ``delta.refusal`` and ``delta.reasoning_content`` texts are concatenated,
    ``delta.tool_calls`` are put together by their ``index`` (``id``, ``function.name`` and the
    ``function.arguments`` fragments in order); ``finish_reason`` and a final ``usage`` chunk are kept,
    and the chunks' other keys (``id``, ``model``, ``created``, ...; not ``object``, which names the
    chunk type), the last value given of each.  A choice with other delta or choice keys (``logprobs``)
    is kept whole in ``stream_unmapped``.
    Chunks of other choices are kept whole in ``other_choices``.
    """
    body: dict[str, Any] = {}
    message: dict[str, Any] = {"role": "assistant"}
    calls: dict[int, dict[str, Any]] = {}
    finish = None
    others = []
    leftover: list[Any] = []
    for chunk in chunks:
        if type(chunk) is not dict:
            continue
        for key, value in chunk.items():  # id, model, created, system_fingerprint, ...: the last one given
            if key not in ("choices", "object", "usage") and value is not None:
                body[key] = value
        if type(chunk.get("usage")) is dict:
            body["usage"] = chunk["usage"]
        for choice in _typed(chunk.get("choices"), list, []):
            if type(choice) is not dict:
                continue
            if choice.get("index", 0) != 0:
                others.append(choice)
                continue
            finish = choice.get("finish_reason") or finish
            delta = _typed(choice.get("delta"), dict, {})
            for key in ("content", "refusal", "reasoning_content"):
                if type(delta.get(key)) is str:
                    message[key] = str(message.get(key) or "") + delta[key]
            rest = {k: v for k, v in delta.items() if k not in _CHAT_DELTA and v is not None}
            if rest or any(k not in ("index", "delta", "finish_reason") and v is not None for k, v in choice.items()):
                leftover.append(choice)  # delta keys or choice keys (logprobs, ...) not assembled: kept
            for part in _typed(delta.get("tool_calls"), list, []):
                if type(part) is not dict:
                    continue
                index = _typed(part.get("index"), int, len(calls))
                call = calls.setdefault(index, {"function": {"arguments": ""}})
                for key in ("id", "type"):
                    if part.get(key) is not None:
                        call[key] = part[key]
                function = _typed(part.get("function"), dict, {})
                if function.get("name") is not None:
                    call["function"]["name"] = function["name"]
                call["function"]["arguments"] += str(function.get("arguments") or "")
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    body["choices"] = [{"index": 0, "message": message, "finish_reason": finish}]
    if leftover:
        body["stream_unmapped"] = leftover
    if others:
        body["other_choices"] = others
    return body


_RESPONSE_EVENTS: Final = frozenset(
    {
        "response.created",
        "response.queued",
        "response.in_progress",
        "response.completed",
        "response.failed",
        "response.incomplete",
    }
)


# Where the Responses stream events go (`output_item_events`).  A part's address: the item's list
# key, the event's index key, and the type of a part the stream opens without naming it.
_CONTENT = ("content", "content_index", "output_text")
_REFUSAL = ("content", "content_index", "refusal")
_SUMMARY = ("summary", "summary_index", "summary_text")
# kind -> (the event's key holding the whole object, the part it replaces; None: the item)
_REPLACED: dict[str, tuple[str, tuple[str, str, str] | None]] = {
    "response.output_item.added": ("item", None),
    "response.output_item.done": ("item", None),
    "response.content_part.added": ("part", _CONTENT),
    "response.content_part.done": ("part", _CONTENT),
    "response.reasoning_summary_part.added": ("part", _SUMMARY),
    "response.reasoning_summary_part.done": ("part", _SUMMARY),
}
# kind -> (the part, None: the item; its key): a ``.delta`` appends to the key, a ``.done`` event's
# value under that key replaces what the deltas built
_STREAMED: dict[str, tuple[tuple[str, str, str] | None, str]] = {
    f"response.{name}.{step}": (address, key)
    for name, address, key in (
        ("output_text", _CONTENT, "text"),
        ("refusal", _REFUSAL, "refusal"),
        ("function_call_arguments", None, "arguments"),
        ("custom_tool_call_input", None, "input"),
        ("reasoning_summary_text", _SUMMARY, "text"),
    )
    for step in ("delta", "done")
}


def output_item_events(events: list[Any]) -> dict[str, Any]:
    """The response a stream of output-item events describes (the body a non-streamed call returns).

    ``response.created`` / ``in_progress`` / ``completed`` / ``failed`` / ``incomplete`` give the
    response object (the last one wins: status, usage, error); ``response.output_item.added`` opens
    item ``output_index``; ``response.content_part.added`` opens its part ``content_index``;
    ``response.output_text.delta`` and ``response.refusal.delta`` append to the part,
    ``response.function_call_arguments.delta`` (and ``custom_tool_call_input.delta``) to the item's
    arguments (input), ``response.reasoning_summary_text.delta`` to summary part ``summary_index``,
    all in stream order; a ``.done`` event (``output_text.done``, ``function_call_arguments.done``,
    ``output_item.done``, ...) carries the complete value and replaces what the deltas built.  The
    assembled items are the ``output`` (the terminal event's own ``output`` when no item event came).
    ``response.output_text.annotation.added`` appends to the part's annotations.  An ``error`` event
    is kept as ``error``, any other event whole in ``stream_unmapped``.
    """
    response: dict[str, Any] = {}
    items: dict[int, dict[str, Any]] = {}
    leftover: list[Any] = []

    def item_of(event: dict[str, Any]) -> dict[str, Any]:
        index = _typed(event.get("output_index"), int, len(items))
        return items.setdefault(index, {})

    def part_of(event: dict[str, Any], key: str, index_key: str, kind: str) -> dict[str, Any]:
        item = item_of(event)
        parts = _typed(item.get(key), list, [])
        item[key] = parts
        index = _typed(event.get(index_key), int, len(parts))
        while len(parts) <= index:
            parts.append({"type": kind})
        if type(parts[index]) is not dict:
            parts[index] = {"type": kind}
        return parts[index]

    def append(obj: dict[str, Any], key: str, text: Any) -> None:
        obj[key] = str(obj.get(key) or "") + (text if type(text) is str else "")

    def target(event: dict[str, Any], address: tuple[str, str, str] | None) -> dict[str, Any]:
        return item_of(event) if address is None else part_of(event, *address)

    for event in events:
        if type(event) is not dict:
            continue
        kind = event.get("type")
        if type(kind) is not str:
            continue
        if kind in _RESPONSE_EVENTS and type(event.get("response")) is dict:
            response = {**response, **event["response"]}
        elif kind in _REPLACED and type(event.get(_REPLACED[kind][0])) is dict:
            key, address = _REPLACED[kind]
            whole = target(event, address)
            whole.clear()
            whole.update(event[key])
        elif kind in _STREAMED and (kind.endswith(".delta") or type(event.get(_STREAMED[kind][1])) is str):
            address, key = _STREAMED[kind]
            if kind.endswith(".delta"):
                append(target(event, address), key, event.get("delta"))
            else:
                target(event, address)[key] = event[key]
        elif kind == "response.output_text.annotation.added" and "annotation" in event:
            part = part_of(event, "content", "content_index", "output_text")
            part["annotations"] = [*(part.get("annotations") or []), event["annotation"]]
        elif kind == "error":
            response["error"] = {k: v for k, v in event.items() if k not in ("type", "sequence_number")}
        else:  # an event this assembly does not read (a hosted tool's progress, ...): kept, not dropped
            leftover.append(event)
    if leftover:
        response["stream_unmapped"] = leftover
    if items or type(response.get("output")) is not list:
        response["output"] = [items[i] for i in sorted(items)]
    return response


def candidate_chunks(chunks: list[Any]) -> dict[str, Any]:
    """The response a stream of candidate chunks describes (the body a non-streamed call returns).

    Each chunk is a whole response object holding the next parts of candidate 0: its
    ``content.parts`` are appended in order, a text part joining the text part before it when
    both hold only ``text`` (and the same ``thought`` flag); the last ``finishReason``,
    ``safetyRatings``, ``usageMetadata``, ``modelVersion`` and ``responseId`` are kept.
    Candidates other than index 0 are kept whole in ``other_candidates``.
    """
    body: dict[str, Any] = {}
    candidate: dict[str, Any] = {}
    parts: list[Any] = []
    role = None
    others = []
    for chunk in chunks:
        if type(chunk) is not dict:
            continue
        body.update({k: v for k, v in chunk.items() if k != "candidates"})
        for found in _typed(chunk.get("candidates"), list, []):
            if type(found) is not dict:
                continue
            if found.get("index", 0) != 0:
                others.append(found)
                continue
            candidate.update({k: v for k, v in found.items() if k != "content"})
            content = _typed(found.get("content"), dict, {})
            role = content.get("role", role)
            for part in _typed(content.get("parts"), list, []):
                last: Any = parts[-1] if parts else None  # a dict when `_plain_text(last)`
                if _plain_text(part) and _plain_text(last) and part.get("thought") == last.get("thought"):
                    parts[-1] = {**last, "text": last["text"] + part["text"]}
                else:
                    parts.append(part)
    content_out: dict[str, Any] = {"parts": parts}
    if role is not None:
        content_out["role"] = role
    body["candidates"] = [{**candidate, "content": content_out}]
    if others:
        body["other_candidates"] = others
    return body


def _plain_text(part: Any) -> bool:
    return type(part) is dict and type(part.get("text")) is str and set(part) <= {"text", "thought"}


ASSEMBLERS: Final[dict[str, Callable[[list[Any]], dict[str, Any]]]] = {
    "content-block-events": content_block_events,
    "choice-delta-chunks": choice_delta_chunks,
    "output-item-events": output_item_events,
    "candidate-chunks": candidate_chunks,
}


def response_body(payload: Any, table: Table, options: Options = DEFAULT) -> Any:
    """The response body as JSON: a JSON body as is, an SSE body assembled by the table's function.

    A body text (or an SSE data payload) that repeats a key is a `MapcError` at
    ``/payload/http/response_body/…`` (see `json_body`, `sse_events`)."""
    if type(payload) is not dict:
        return None
    http = _http(payload)
    where = "/payload/http/response_body" if "response_body" in http else "/payload/body"
    body = http.get("response_body", payload.get("body"))
    if _is_sse(payload, body) and type(body) is str and table.stream in ASSEMBLERS:
        return ASSEMBLERS[table.stream](sse_events(body, where, options))
    return json_body(body, where, options)


def frame_text(payload: Any) -> str | None:
    """The raw text of one ``http.stream.frame`` event: ``payload.http.frame`` (else the flat
    ``frame``), UTF-8 text, or base64 bytes when ``body_encoding`` is ``base64``; None if unreadable."""
    if type(payload) is not dict:
        return None
    http = _http(payload)
    frame = http.get("frame", payload.get("frame"))
    if type(frame) is not str:
        return None
    if http.get("body_encoding", payload.get("body_encoding")) == "base64":
        try:
            return base64.b64decode(frame, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return None
    return frame


# --- messages ---------------------------------------------------------------------------------------


@dataclass
class Message:
    """One message read through a table: its Storyline ``src`` and its blocks, each tagged ``to``."""

    src: str
    blocks: list[dict[str, Any]]
    role: str | None = None
    kept: dict[str, dict[str, bytes]] | None = field(default=None, repr=False, compare=False)  # `kept_values`

    def silent(self) -> bool:
        """Whether the message says nothing history matching compares (only reasoning, say)."""
        return self.key() == orjson.dumps([self.src, []], option=orjson.OPT_SORT_KEYS)

    def key(self) -> bytes:
        """What history matching compares: src, texts, tool-call and tool-result ids, a client's blocks
        kept whole (not reasoning, nor the model's blocks kept whole: clients drop them)."""
        parts: list[list[Any]] = []
        for block in self.blocks:
            if block["to"] == "msg":
                if not block["text"]:  # "" and absent content are the same message (content: null vs "")
                    continue
                if parts and parts[-1][0] == "msg":  # a text streamed in pieces is resent as one
                    parts[-1][1] += block["text"]
                else:
                    parts.append(["msg", block["text"]])
            elif block["to"] in ("tool_call", "observation"):
                name = block.get("fn" if block["to"] == "tool_call" else "name")
                parts.append([block["to"], block.get("id", ["by-name", name])])
            elif block["to"] == "extra" and self.src != "agent":
                # a block kept whole counts in a client's message (an image); not in the model's,
                # which a client resends as it keeps it (a hosted tool's item or block, or not at all)
                parts.append(["extra", block["block"]])
        return orjson.dumps([self.src, parts], option=orjson.OPT_SORT_KEYS)


_ROW_KEYS: Final = frozenset({"to", "calls", "pair"})  # a read row's keys that name no value it reads


def read_block(block: Any, rule: dict[str, Any], kind_key: str = "type") -> dict[str, Any]:
    """One value read by one table row: ``to`` and the named pointers' values.

    A row's ``calls`` (its rules' ``call:`` beside ``from``, store/wire_table.py) convert the values
    read: JSON text parsed (``json_text_value``: tool-call arguments), the texts of a list of parts
    joined (``joined_texts``: a reasoning summary; each part's other keys are kept, and the parts
    whole when the joined text cannot give them back: `_split_kept`).  Keys of an object
    that the row does not read are kept in ``unmapped``.  A row whose text or id is missing or of
    the wrong type keeps the value whole (``to: extra``), so nothing is lost to a table that does
    not fit.  `kind_key` is the key that said which row this is (not unmapped).
    """
    read: dict[str, Any] = {"to": rule["to"]}
    names = {k: v for k, v in rule.items() if k not in _ROW_KEYS}
    for name, where in names.items():
        value = at(block, where)
        if value is not MISSING:
            read[name] = value
    below: dict[str, Any] = {}
    for name, (fn, args) in rule.get("calls", {}).items():  # `call:` beside `from`: converts the value read
        if name in read:
            if fn is joined_texts:  # the parts' texts are read, not the parts' other keys: kept
                if _split_kept(read[name], args):  # the joined text would not give the parts back
                    read.setdefault("unmapped", {"type": block["type"]} if "type" in block else {})
                    set_at(read["unmapped"], names[name], read[name])
                else:
                    below.update(_part_residues(read[name], names[name], args))
            read[name] = fn(read[name], *args)
    if type(block) is dict and "" not in names.values():  # keys the table does not read: kept, not dropped
        paths = [_tokens(where) for where in names.values()]
        # the key that typed the block is read, but not what a row reads below it (its other keys are kept)
        typing = [(kind_key,)] if not any(p[:1] == (kind_key,) for p in paths) else []
        residue = _residue(block, [*paths, *typing, ("type",)])
        if residue is not MISSING:  # beside what a call kept whole above (a summary's parts), not over it
            typed = {"type": block["type"]} if "type" in block else {}
            read["unmapped"] = {**typed, **residue, **read.get("unmapped", {})}
    if read["to"] in ("msg", "reason") and type(read.get("text")) is not str:
        return {"to": "extra", "block": block}
    if below:
        read["parts_unmapped"] = below
    if read["to"] in ("tool_call", "observation") and type(read.get("id")) is not str:
        # ``pair: by_name`` (Gemini): a call without an id is matched by its name (`Conversation`)
        called = read.get("fn" if read["to"] == "tool_call" else "name")
        if rule.get("pair") != "by_name" or "id" in read or type(called) is not str or not called:
            return {"to": "extra", "block": block}
    return read


def _split_kept(parts: Any, args: tuple[Any, ...]) -> bool:
    """Whether a list of parts is kept whole beside its joined text: when it is not one part with a
    non-empty text (two parts or more, a part without text, a text instead of the list), which the
    joined text cannot give back."""
    if not args or type(args[0]) is not str:
        return False
    if type(parts) is not list:  # one text where parts belong (the writer would write a list back)
        return type(parts) is str
    if not parts:
        return False
    return (
        len(parts) > 1
        or type(parts[0]) is not dict
        or type(at(parts[0], args[0])) is not str
        or not at(parts[0], args[0])
    )


def _part_residues(parts: Any, where: str, args: tuple[Any, ...]) -> dict[str, Any]:
    """What `joined_texts` does not read of each part of the list at `where` (a reasoning
    summary's parts: all but their text), by the part's pointer below the block.  A part's
    ``type`` alone is its kind, as a block's is (the writer writes it); beside other keys it is
    kept too, so that synthesis writes them back only into a part of that type."""
    if type(parts) is not list or not args or type(args[0]) is not str:
        return {}
    text = _tokens(args[0])
    out = {}
    for n, part in enumerate(parts):
        rest = _residue(part, [text]) if type(part) is dict else MISSING
        if type(rest) is dict and set(rest) - {"type"}:
            out[f"{where}/{n}"] = rest
    return out


def read_blocks(content: Any, table: Table) -> list[dict[str, Any]]:
    """A message's content as tagged blocks: a string is one text block; unknown types go to extra.

    A block's kind is its ``type``, or with the table's ``part_keys`` the first of those keys it
    holds with a value other than null or false (``{"thought": true, "text": ...}`` is a thought).
    """
    if type(content) is str:
        content = [{"type": "text", "text": content}]
    if type(content) is not list:
        return [] if content is MISSING or content is None else [{"to": "extra", "block": content}]
    out = []
    by_key = table.spec.get("part_keys")
    for block in content:
        kind: Any = block.get("type") if type(block) is dict else None  # a str where a rule is found
        if by_key is not None and type(block) is dict:  # parts typed by which key they hold (Gemini)
            kind = next((k for k in by_key if block.get(k) not in (None, False)), None)
        rule = table.spec["blocks"].get(kind) if type(kind) is str else None
        if rule is None:
            out.append({"to": "extra", "block": block})
        else:
            out.append(read_block(block, rule, kind if by_key is not None else "type"))
    return out


def read_message(message: Any, table: Table, *, src: str | None = None, exclude: tuple[str, ...] = ()) -> Message:
    """One conversation message through the table (an unknown role keeps its own name as src).

    The table's ``message`` section names the role and content pointers, ``fields``: other
    message keys that become blocks (``each`` for a list, such as tool calls), and ``whole``: roles
    whose whole message is one block (a tool-result message).  `src` overrides the role (a response).
    Keys of the message that none of these read (and that are not in `exclude`, the keys read
    elsewhere) are kept as an ``unmapped`` block; a message that is not an object is kept whole.
    """
    if message is MISSING:
        return Message(src or "unknown", [])
    rules = table.spec["message"]
    role = at(message, rules["role"])
    if src is None:
        src = table.spec["roles"].get(role, role) if type(role) is str and role else "unknown"
    if type(message) is not dict:
        return Message(src, [{"to": "extra", "block": message}])
    whole = rules.get("whole", {}).get(role) if type(role) is str else None
    if whole is not None:
        block = _placed(read_block(message, whole), "")
        unmapped = block.get("unmapped")
        if unmapped is not None:  # the role was read by the message rules
            for key in (rules["role"].lstrip("/"), *exclude):
                unmapped.pop(key, None)
            if not unmapped:
                del block["unmapped"], block["at"]
        return Message(src, [block], role)
    content = at(message, rules["content"])
    inside = type(content) is list  # a block's place: its position in the content list, else the content
    blocks = [
        _placed(b, f"{rules['content']}/{n}" if inside else rules["content"])
        for n, b in enumerate(read_blocks(content, table))
    ]
    for field_rule in rules.get("fields", ()):
        value = at(message, field_rule["at"])
        if value is MISSING or value is None:
            continue
        if field_rule.get("each") and type(value) is list:
            blocks += [
                _placed(read_block(item, field_rule["rule"]), f"{field_rule['at']}/{n}") for n, item in enumerate(value)
            ]
        else:
            blocks.append(_placed(read_block(value, field_rule["rule"]), field_rule["at"]))
    read = {_top(rules["role"]), _top(rules["content"]), *(_top(f["at"]) for f in rules.get("fields", ())), *exclude}
    residue = {k: v for k, v in message.items() if k not in read}
    if residue:  # message keys the table does not read: kept, not dropped
        blocks.append({"to": "unmapped", "unmapped": residue, "at": ""})
    return Message(src, blocks, role if type(role) is str else None)


def _placed(block: dict[str, Any], where: str) -> dict[str, Any]:
    """A block with keys no rule reads, or kept whole, remembers where it stood in its message
    (``at``, a pointer), so that synthesis puts it back there (a turn's ``unmapped`` and ``blocks``
    are keyed by these pointers)."""
    if "unmapped" in block or "parts_unmapped" in block or block["to"] == "extra":
        block["at"] = where
    return block


def _below(block: dict[str, Any], n: int) -> dict[str, Any]:
    """A block of the `n`-th item of a run of items: its place is below that item's."""
    return {**block, "at": f"/{n}{block['at']}"} if "at" in block else block


def _top(where: str) -> str:
    """The first token of a pointer ("" for the whole document)."""
    tokens = _tokens(where)
    return tokens[0] if tokens else ""


def read_item(item: Any, table: Table) -> Message:
    """One item of an item-list conversation (the table's ``items`` section).

    Item types listed in ``messages`` (and an item without a type) are read as messages; a type in
    ``other`` is one block read by its row, under the role it names; any other item is kept whole
    as an ``extra`` block under the ``unknown`` role.
    """
    spec = table.spec["items"]
    kind = at(item, spec["type"])
    type_key = _top(spec["type"])
    if kind is MISSING or (type(kind) is str and kind in spec.get("messages", ())):
        return read_message(item, table, exclude=(type_key,))
    other = spec.get("other", {}).get(kind) if type(kind) is str else None
    role = other["role"] if other is not None else spec.get("unknown", "unknown")
    src = table.spec["roles"].get(role, role)
    block = _placed(read_block(item, other["rule"]) if other is not None else {"to": "extra", "block": item}, "")
    return Message(src, [block], role)


def read_conversation(
    value: Any, table: Table, *, merge: bool = True, cache: dict[bytes, Message] | None = None
) -> list[Message]:
    """The messages of a request's conversation value (the table's ``request.messages``).

    A string is one message of the role ``string_message`` names (when the table names one);
    with an ``items`` section the list holds typed items, one message each, which (with `merge`)
    `merge_items` joins into the messages of each side.  `cache` (message JSON → `Message`) reads
    each message once however often it is resent; the messages it returns are then shared, not
    to be changed.
    """
    value = conversation_list(value, table)
    read = read_message if table.spec.get("items") is None else read_item
    if cache is None:
        units = [read(m, table) for m in value]
    else:  # every request resends the history: each message is read once per conversation
        units = []
        for m in value:
            try:
                seen = orjson.dumps(m)
            except TypeError:  # not JSON (a caller's own value): read, not remembered
                units.append(read(m, table))
                continue
            if seen not in cache:
                cache[seen] = read(m, table)
            units.append(cache[seen])
    if table.spec.get("items") is None:
        return units
    return [m for _, m in merge_items(units, value, table)] if merge else units


def conversation_list(value: Any, table: Table) -> list[Any]:
    """The conversation as a list: a string is one message of the role ``string_message`` names."""
    if type(value) is str and table.spec.get("string_message"):
        return [{"role": table.spec["string_message"], "content": value}]
    return value if type(value) is list else []


def merge_items(units: list[Message], items: list[Any], table: Table) -> list[tuple[int, Message]]:
    """Consecutive item messages whose src is ``items.merge`` joined into one (the items of one
    response's output: reasoning, a message, function calls), except that a second message item
    begins the next one (two responses in a row); each with the index of its first item."""
    spec = table.spec["items"]
    out: list[tuple[int, Message]] = []
    spoke = False  # whether the message being merged already holds a message item
    for n, (unit, item) in enumerate(zip(units, items, strict=True)):
        kind = at(item, spec["type"])
        is_message = kind is MISSING or (type(kind) is str and kind in spec.get("messages", ()))
        if out and unit.src == spec.get("merge") and out[-1][1].src == unit.src and not (is_message and spoke):
            out[-1][1].blocks.extend(_below(b, n - out[-1][0]) for b in unit.blocks)
            spoke = spoke or is_message
            continue
        out.append((n, Message(unit.src, [_below(b, 0) for b in unit.blocks], unit.role)))
        spoke = is_message
    return out


def read_response(body: Any, table: Table) -> Message:
    """The response's assistant message (src ``agent``): the table's ``response.message``.

    With an ``items`` section that is a list of output items, all read into one message.  Keys
    the response section or usage read are not the message's own unmapped keys.
    """
    where = table.spec["response"]["message"]
    value = at(body, where)
    if table.spec.get("items") is not None:  # every output item, each block placed below its item
        units = read_conversation(value if type(value) is list else [], table, merge=False)
        blocks = [_below(b, n) for n, m in enumerate(units) for b in m.blocks]
        if value is not MISSING and type(value) is not list:
            blocks.append({"to": "extra", "block": value})
        return Message("agent", blocks, "assistant")
    exclude: tuple[str, ...] = ()
    if where == "":  # the body is the message: what the response section reads is not unmapped
        exclude = (*(_top(w) for w in _read_pointers(table.spec, body)), "error")
    return read_message(value, table, src="agent", exclude=exclude)


def _read_pointers(spec: dict[str, Any], body: Any) -> list[str]:
    """The response-body pointers a table reads outside the message: response keys, usage, and
    the table's ``constants`` that `body` holds (the protocol's fixed values, such as an object
    ``type``, which synthesis writes back: they carry nothing)."""
    out = [w for name, w in spec["response"].items() if name != "message"]
    usage_pointers = list(spec.get("usage", {}).values())
    if usage_pointers:
        out.append(usage_pointers[0].rsplit("/", 1)[0])
    out += [w for w, value in spec.get("constants", {}).items() if _same(at(body, w), value)]
    return out


def _same(a: Any, b: Any) -> bool:
    """`a` is the constant `b` (of the same JSON type), or one of them when `b` is a list."""
    if type(b) is list:
        return any(_same(a, one) for one in b)
    return type(a) is type(b) and a == b


def response_residue(body: Any, request: Any, table: Table) -> Any:
    """What of a response body the table does not read, or `MISSING`.

    The message, the response and usage pointers and ``error`` are read; a top-level key whose
    value equals the request's same key (parameters the Responses API echoes) is not repeated.
    When the message is the whole body, its unmapped keys are the message's (see `read_response`).
    """
    where = table.spec["response"]["message"]
    if type(body) is not dict or where == "":
        return MISSING
    paths = [_tokens(w) for w in (where, *_read_pointers(table.spec, body), "/error")]
    rest = _residue(body, [p for p in paths if p])
    if type(rest) is dict and type(request) is dict:
        rest = {k: v for k, v in rest.items() if k not in request or request[k] != v} or MISSING
    return rest


def _residue(value: Any, paths: list[tuple[str, ...]]) -> Any:
    """`value` without the leaves at `paths` (lists by index), containers left empty removed too;
    `MISSING` when nothing is left."""
    if () in paths:
        return MISSING
    if not paths:
        return value
    if type(value) is dict:
        out = {}
        for key, child in value.items():
            rest = _residue(child, [p[1:] for p in paths if p[0] == key])
            if rest is not MISSING:
                out[key] = rest
        return out or MISSING
    if type(value) is list:
        kept = [_residue(child, [p[1:] for p in paths if p[0] == str(i)]) for i, child in enumerate(value)]
        kept = [k for k in kept if k is not MISSING]
        return kept or MISSING
    return value


# --- turns ------------------------------------------------------------------------------------------


@dataclass
class Conversation:
    """One session's conversation as projected so far: the history seen and the turns made."""

    table: Table
    history: list[bytes] = field(default_factory=list)
    turns: list[dict[str, Any]] = field(default_factory=list)
    calls: dict[str, dict[str, Any]] = field(default_factory=dict)  # tool-call id → the turn that made it
    problems: list[Problem] = field(default_factory=list)
    declared: dict[str, Any] = field(default_factory=dict)  # the system prompt, tools and params last sent
    responses: dict[str, int] = field(default_factory=dict)  # response id → history length after it
    unanswered: dict[str, list[str]] = field(default_factory=dict)  # fn → tcids of id-less calls, oldest first
    derived: dict[str, int] = field(default_factory=dict)  # fn → id-less calls numbered so far
    read_cache: dict[bytes, Message] = field(default_factory=dict)  # message JSON → as read (history resent)
    first: list[Message | None] = field(default_factory=list)  # beside each history key: its first reading

    def add_call(self, call: Call) -> list[dict[str, Any]]:
        """Add one request/response pair: what is new in the request, then the response.

        Returns the turns added.  A system prompt or tool list the request sends that differs from
        the last one sent goes to the first added turn's ``extra`` (``system``, ``tools``), and so
        do the request's other keys, those the table does not read (``params``: max_tokens,
        temperature, stream, ...), when they differ from the last request's.
        """
        before = len(self.turns)
        self.problems.extend(call.problems)
        self._add_call(call)
        added = self.turns[before:]
        changed = {}
        request = self.table.spec["request"]
        for name in ("system", "tools"):
            value = at(call.request_body, request.get(name))
            if value is not MISSING and value != self.declared.get(name, MISSING):
                changed[name] = value
                self.declared[name] = value
        if type(call.request_body) is dict:
            read = {_top(w) for w in request.values()}
            params = {k: v for k, v in call.request_body.items() if k not in read}
            if params != self.declared.get("params", {}):
                changed["params"] = params
                self.declared["params"] = params
        if changed and added:
            added[0]["extra"].update(changed)
        return added

    def _add_call(self, call: Call) -> None:
        spec = self.table.spec
        body = call.request_body
        value = conversation_list(at(body, spec["request"]["messages"]), self.table)
        units = read_conversation(value, self.table, merge=False, cache=self.read_cache)
        # History is matched message by message, or for an item table item by item (two responses
        # in a row resend as one run of items), skipping items that say nothing (reasoning a
        # client may or may not resend).
        keyed = [n for n, u in enumerate(units) if not (self._items and u.silent())]
        keys = [units[n].key() for n in keyed]
        positions: list[int | None] = list(keyed)
        shown = 0  # messages of the history the request continues without resending them
        previous = at(body, spec["request"].get("continues"))
        if type(previous) is str:
            shown = self.responses.get(previous, len(self.history))
            if previous not in self.responses:
                self.problems.append(
                    Problem(
                        "events.history_unseen",
                        f"{call.where or f'events[call_id={_q(call.call_id)}]'}"
                        f"/payload/http/request_body{spec['request']['continues']}",
                        f"the request continues response {_q(previous)}, which no recorded call returned; "
                        "its input is read as continuing the conversation projected so far",
                    )
                )
            keys = self.history[:shown] + keys
            unplaced: list[int | None] = [None] * shown
            positions = unplaced + positions
        same = 0
        while same < min(len(keys), len(self.history)) and keys[same] == self.history[same]:
            same += 1
        if same < len(positions):
            start = positions[same] or 0
        else:
            matched = [p for p in positions if p is not None]
            start = matched[-1] + 1 if matched else 0
        for i in range(same):  # a resent message matched: what no rule reads must say what its first reading did
            p = positions[i]
            if p is not None:
                self._check_resent(units[p], i, call, p)
        fork = same < len(self.history)
        if fork:
            self.problems.append(
                Problem(
                    "events.history_fork",
                    f"{call.where or f'events[call_id={_q(call.call_id)}]'}"
                    f"/payload/http/request_body{spec['request']['messages']}/{start}",
                    f"the request's history differs from what earlier calls showed at message {start} "
                    f"(an edit or a fork); its messages from there on are added again, marked extra.history_fork",
                )
            )
        if self._items and self.turns and not fork:  # leading silent items were a response's, already projected
            while start < len(units) and units[start].silent():
                start += 1
        new = units[start:]
        groups = (
            [(start + n, m) for n, m in merge_items(new, value[start:], self.table)]
            if self._items
            else [(start + n, m) for n, m in enumerate(new)]
        )
        for index, message in groups:
            self._add_message(message, call, index, fork_at=start if fork else None)
        self.first = [self.first[i] if i < same or p is None else units[p] for i, p in enumerate(positions)]
        self.history = keys
        if call.response_body is not None:
            self._add_response(call)
            response_id = at(call.response_body, spec["response"].get("id"))
            if type(response_id) is str:
                self.responses[response_id] = len(self.history)

    @property
    def _items(self) -> bool:
        return self.table.spec.get("items") is not None

    def _add_message(self, message: Message, call: Call, index: int, *, fork_at: int | None) -> None:
        results = [b for b in message.blocks if b["to"] == "observation"]
        rest = [b for b in message.blocks if b["to"] != "observation"]
        orphans = []
        for result in results:
            if "id" not in result:  # an id-less result (Gemini) answers the oldest open call of its name
                waiting = self.unanswered.get(result["name"], [])
                if not waiting:
                    orphans.append({**result, "id": None})
                    continue
                result = {**result, "id": waiting.pop(0)}
            turn = self.calls.get(result["id"])
            if turn is None:
                orphans.append(result)
                continue
            entry = {"source_call_id": result["id"], "content": result.get("content")}
            if result.get("error") is not None:
                entry["is_error"] = result["error"]
            if "unmapped" in result:  # keys of the result no rule reads: kept on it, written back with it
                entry["unmapped"] = result["unmapped"]
            turn.setdefault("observation", {"results": []})["results"].append(entry)
        if not rest and not orphans:
            return
        turn = self._turn(message.src, rest, call, call.request_seq, call.request_ts)
        turn["kind"] = "history" if message.src == "agent" else "llm.request"  # agent text not seen as a response
        if message.role is not None and message.role in self.table.spec.get("roles_kept", ()):
            turn["extra"]["role"] = message.role  # a role read as another's src (developer → system): named
        if orphans:  # a result of a call this projection never saw: kept on the message that carried it
            turn["observation"] = {
                "results": [
                    {
                        "source_call_id": r["id"],
                        **({"name": r["name"]} if "name" in r else {}),
                        "content": r.get("content"),
                        **({"unmapped": r["unmapped"]} if "unmapped" in r else {}),
                    }
                    for r in orphans
                ]
            }
        turn["extra"]["message_index"] = index
        if fork_at is not None:
            turn["extra"]["history_fork"] = fork_at
        self.turns.append(turn)

    def _add_response(self, call: Call) -> None:
        spec = self.table.spec
        body = call.response_body
        message = read_response(body, self.table)
        turn = self._turn("agent", message.blocks, call, call.response_seq, call.response_ts)
        turn["kind"] = "llm.response"
        model = at(body, spec["response"]["model"])
        if type(model) is not str:
            model = at(call.request_body, spec["request"].get("model"))
        if type(model) is str:
            turn["model"] = model
        turn["nllm"] = 1
        metrics = usage(body, spec)
        if metrics is not None:
            turn["metrics"] = metrics
        if call.latency_ms is not None:
            turn["latency_ms"] = call.latency_ms
        if call.ttft_ms is not None:
            turn["ttft_ms"] = call.ttft_ms
        for name, where in spec["response"].items():
            if name in ("message", "model"):
                continue
            value = at(body, where)
            if value is not MISSING and value is not None:
                turn["extra"][name] = value
        if type(body) is dict and body.get("error") is not None:
            turn["extra"]["error"] = body["error"]
        rest = response_residue(body, call.request_body, self.table)
        if rest is not MISSING:  # response keys the table does not read: kept, not dropped
            turn["extra"]["response_unmapped"] = rest
        if call.status is not None:
            turn["extra"]["status"] = call.status
        self.turns.append(turn)
        failed = (type(call.status) is int and call.status >= 400) or "error" in turn["extra"]
        said = [b for b in message.blocks if b["to"] != "unmapped"]
        if failed and not said:  # an error the client got no message from is not history
            return
        if not self._items:
            self.history.append(message.key())
            self.first.append(message)
            return
        output = at(body, spec["response"]["message"])
        for unit in read_conversation(output if type(output) is list else [], self.table, merge=False):
            if not unit.silent():
                self.history.append(Message("agent", unit.blocks).key())
                self.first.append(unit)

    def _check_resent(self, unit: Message, i: int, call: Call, index: int) -> None:
        """Report what a resent copy of history message `i` (at `index` of the request's
        conversation) keeps that its first reading did not: the turn holds the first reading, so
        a key added or a value changed in a later copy would otherwise be lost without a word
        (a key a later copy leaves out is not: clients drop what they do not resend)."""
        reading = self.first[i] if i < len(self.first) else None
        if unit is reading:  # the same JSON resent: read once (`read_cache`), nothing can differ
            return
        first = kept_values(reading) if reading is not None else {}
        changed: dict[str, Any] = {}
        for place, leaves in kept_values(unit).items():
            if any(leaves.items() <= other.items() for other in first.values()):
                continue  # kept by the first reading (here, or at another place: a block before it was dropped)
            there = first.get(place, {})
            changed.update((place + k, orjson.loads(v)) for k, v in leaves.items() if there.get(k) != v)
        if not changed:
            return
        where = call.where or f"events[call_id={_q(call.call_id)}]"
        shown = orjson.dumps(changed, option=orjson.OPT_SORT_KEYS).decode()
        if len(shown) > 400:
            shown = shown[:400] + "…"
        self.problems.append(
            Problem(
                "events.history_changed",
                f"{where}/payload/http/request_body{self.table.spec['request']['messages']}/{index}{min(changed)}",
                f"a resent history message carries values no rule reads that its first reading did not "
                f"(by pointer in the message: {shown}); the projection keeps the first reading, so these "
                "are not in the Storyline",
            )
        )

    def _turn(
        self, src: str, blocks: list[dict[str, Any]], call: Call, seq: int | None, ts: str | None
    ) -> dict[str, Any]:
        texts = [b["text"] for b in blocks if b["to"] == "msg"]
        turn: dict[str, Any] = {"id": 0, "kind": ""}
        if ts is not None:
            turn["ts"] = ts
        turn["src"] = src
        turn["msg"] = texts[0] if len(texts) == 1 else [{"type": "text", "text": t} for t in texts] if texts else ""
        reasons = [b["text"] for b in blocks if b["to"] == "reason" and b["text"]]
        if reasons:
            turn["reason"] = "\n\n".join(reasons)
        calls: list[Any] = []
        repeated: list[Any] = []
        for b in blocks:
            if b["to"] != "tool_call":
                continue
            if "id" not in b:  # no id on the wire (Gemini): one derived from the name, and said so
                fn = b["fn"]
                self.derived[fn] = self.derived.get(fn, 0) + 1
                b = {**b, "id": f"{fn}#{self.derived[fn]}", "derived": True}
                self.unanswered.setdefault(fn, []).append(b["id"])
            if b["id"] in self.calls or any(c["tcid"] == b["id"] for c in calls):
                repeated.append(b)  # an id already used (an edited history resends it): tcid is unique
                continue
            one: dict[str, Any] = {"tcid": b["id"], "fn": b.get("fn"), "args": b.get("args")}
            if type(one["fn"]) is not str or not one["fn"]:
                one["fn"] = "unknown"  # Storyline needs a name; what the wire held is kept beside it
                one["extra"] = {"fn": b.get("fn")}
            if b.get("derived"):
                one["extra"] = {"tcid_derived": True}  # the wire gave no id: tcid is fn#n, not the wire's
            calls.append(one)
            self.calls[b["id"]] = turn
        if calls:
            turn["tool_calls"] = calls
        extra: dict[str, Any] = {"call_id": call.call_id, "protocol": self.table.protocol}
        if seq is not None:
            extra["seq"] = seq
        if repeated:
            extra["repeated_tool_calls"] = [{k: v for k, v in b.items() if k not in ("to", "at")} for b in repeated]
        kept = {b.get("at", ""): b["block"] for b in blocks if b["to"] == "extra"}  # by where each stood
        if kept:
            extra["blocks"] = kept
        for b in blocks:  # a row whose `to` is no turn field names a key of the turn's extra
            if b["to"] not in ("msg", "reason", "tool_call", "observation", "extra") and "value" in b:
                extra.setdefault(b["to"], b["value"])
        unmapped = {b["at"]: b["unmapped"] for b in blocks if "unmapped" in b}  # by where each stood
        for b in blocks:  # the unread keys of a block's parts (a reasoning summary's), by each part's place
            unmapped.update((b["at"] + below, rest) for below, rest in b.get("parts_unmapped", {}).items())
        if unmapped:
            extra["unmapped"] = unmapped
        turn["extra"] = extra
        return turn


def kept_values(message: Message) -> dict[str, dict[str, bytes]]:
    """What a reading of `message` keeps that no rule reads, by the place of each block (a pointer
    in the message): its ``unmapped`` keys (and its parts'), or the block kept whole, as leaves by
    pointer below that place, each value as canonical JSON."""
    if message.kept is not None:  # a message resent is read once: so are its kept values
        return message.kept
    out: dict[str, dict[str, bytes]] = {}

    def leaves(value: Any, where: str, into: dict[str, bytes]) -> None:
        if type(value) is dict and value:
            for key, child in value.items():
                leaves(child, f"{where}/{key.replace('~', '~0').replace('/', '~1')}", into)
        else:
            into[where] = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)

    def unread(kept: Any) -> Any:  # a kept object's ``type`` names its kind, read to choose its rule
        return {k: v for k, v in kept.items() if k != "type"} if type(kept) is dict else kept

    for b in message.blocks:
        place = b.get("at", "")
        if "unmapped" in b:
            leaves(unread(b["unmapped"]), "", out.setdefault(place, {}))
        for below, rest in b.get("parts_unmapped", {}).items():
            leaves(unread(rest), "", out.setdefault(place + below, {}))
        if b["to"] == "extra":
            out.setdefault(place, {})[""] = orjson.dumps(b["block"], option=orjson.OPT_SORT_KEYS)
    message.kept = out
    return out


def usage(body: Any, spec: dict[str, Any]) -> dict[str, Any] | None:
    """The table's usage keys read from `body`; what the usage object holds beside them goes to ``extra``."""
    metrics = {}
    pointers = list(spec.get("usage", {}).values())
    for name, where in spec.get("usage", {}).items():
        value = at(body, where)
        if value is not MISSING and value is not None:
            metrics[name] = value
    parent = pointers[0].rsplit("/", 1)[0] if pointers else None
    raw = at(body, parent) if parent else MISSING
    if type(raw) is dict and parent:  # raw is MISSING without a parent
        rest = _without(raw, [_tokens(w[len(parent) :]) for w in pointers if w.startswith(f"{parent}/")])
        if rest:
            metrics["extra"] = rest
    return metrics or None


def _without(obj: dict[str, Any], paths: list[tuple[str, ...]]) -> dict[str, Any]:
    """`obj` without the leaves at `paths`, objects left empty by that removed too."""
    out = {}
    for key, value in obj.items():
        below = [p[1:] for p in paths if p and p[0] == key]
        if () in below:
            continue
        if below and type(value) is dict:
            value = _without(value, below)
            if not value:
                continue
        out[key] = value
    return out


@dataclass
class Call:
    """One call's request and response as the projector needs them (gathered by store/events.py)."""

    call_id: str
    request_body: Any
    response_body: Any
    request_seq: int | None = None
    response_seq: int | None = None
    request_ts: str | None = None
    response_ts: str | None = None
    latency_ms: int | None = None
    ttft_ms: int | None = None
    status: Any = None
    where: str | None = None  # how a problem names the call (its session and call_id)
    problems: list[Problem] = field(default_factory=list)  # found while gathering it (an unreadable frame)


def _q(value: Any) -> str:
    return orjson.dumps(value).decode()


# --- writing (synthesis) ------------------------------------------------------------------------------


def table_text(protocol: str) -> str:
    """The YAML text of a shipped protocol's table (`mapc spec lint`)."""
    return importlib.resources.files("mapc.mappings.wire").joinpath(f"{protocol}.yaml").read_text(encoding="utf-8")


def table_named(protocol: str) -> Table | None:
    """The shipped table of `protocol` (its name or one of its hints), or None."""
    for table in tables():
        if protocol == table.protocol or protocol in table.hints:
            return table
    return None


def set_at(document: dict[str, Any], where: str, value: Any) -> None:
    """Write `value` at pointer `where` in `document`, making the objects (or list slots) on the way."""
    tokens = _tokens(where)
    node: Any = document
    for n, token in enumerate(tokens):
        last = n == len(tokens) - 1
        if type(node) is list:
            index = int(token)
            while len(node) <= index:
                node.append({})
            if last:
                node[index] = value
            else:
                node = node[index]
            continue
        if last:
            node[token] = value
        else:
            node = node.setdefault(token, {})


def without(document: Any, pointers: Any) -> Any:
    """A copy of `document` without the values at `pointers` (a list of RFC 6901 pointers); others ignored."""
    if type(pointers) is not list or not pointers:
        return document
    paths = [_tokens(p) for p in pointers if type(p) is str and p and pointer.is_valid(p)]
    rest = _residue(document, paths)
    return {} if rest is MISSING and type(document) is dict else rest


def merge_into(target: dict[str, Any], extra: dict[str, Any]) -> None:
    """Deep-merge `extra` into `target`: objects merged key by key, a value already there kept."""
    for key, value in extra.items():
        if key in target and type(target[key]) is dict and type(value) is dict:
            merge_into(target[key], value)
        elif key in target and type(target[key]) is list and type(value) is list:
            for i, item in enumerate(value):
                if i < len(target[key]) and type(target[key][i]) is dict and type(item) is dict:
                    merge_into(target[key][i], item)
        elif key not in target:
            target[key] = value


# --- the table as Markdown (`mapc spec table PROTOCOL`) ------------------------------------------------

_PLACES: Final = {
    "msg": {"text": "/turns/{t}/msg"},
    "reason": {"text": "/turns/{t}/reason"},
    "tool_call": {
        "id": "/turns/{t}/tool_calls/{c}/tcid",
        "fn": "/turns/{t}/tool_calls/{c}/fn",
        "args": "/turns/{t}/tool_calls/{c}/args",
    },
    "observation": {
        "id": "/turns/{t}/observation/results/{r}/source_call_id",
        "content": "/turns/{t}/observation/results/{r}/content",
        "error": "/turns/{t}/observation/results/{r}/is_error",
        "name": "(matches the oldest open call of that name)",
    },
}


def markdown(table: Table) -> str:
    """The protocol table as Markdown: wire pointer | Storyline place, as `mapc spec table` prints a spec's."""
    spec = table.spec
    rows: list[tuple[str, str]] = []
    request, response = spec["request"], spec["response"]
    items = spec.get("items")
    unit = "/{i}" if items is not None else "/{m}"
    messages = f"request {request['messages']}{unit}"
    rows.append((f"request {request['messages']}", "/turns (the messages not seen in earlier requests, each once)"))
    if request.get("continues"):
        rows.append((f"request {request['continues']}", "(the history is that response's: only the input is new)"))
    for name in ("system", "tools"):
        if request.get(name):
            rows.append((f"request {request[name]}", f"/turns/{{t}}/extra/{name} (when it changes)"))
    rows.append(("request (any other key)", "/turns/{t}/extra/params (when they change)"))
    if request.get("model"):
        rows.append((f"request {request['model']}", "/turns/{t}/model (when the response names none)"))
    roles = ", ".join(f"{role} → {src}" for role, src in spec["roles"].items())
    rows.append((f"{messages}{spec['message']['role']}", f"/turns/{{t}}/src ({roles})"))
    content = f"{messages}{spec['message']['content']}"
    kinds = f"the first of {spec['part_keys']} it holds" if spec.get("part_keys") else "/type"
    for kind, rule in spec["blocks"].items():
        for name, where in _reads(rule):
            rows.append((f"{content}/{{b}}{where} ({kinds} = {kind})", _place(rule["to"], name)))
    for field_rule in spec["message"].get("fields", ()):
        for name, where in _reads(field_rule["rule"]):
            each = "/{n}" if field_rule.get("each") else ""
            rows.append((f"{messages}{field_rule['at']}{each}{where}", _place(field_rule["rule"]["to"], name)))
    for role, rule in spec["message"].get("whole", {}).items():
        for name, where in _reads(rule):
            rows.append((f"{messages}{where} (role {role})", _place(rule["to"], name)))
    if items is not None:
        for kind, other in items.get("other", {}).items():
            for name, where in _reads(other["rule"]):
                rows.append((f"{messages}{where} ({items['type']} = {kind})", _place(other["rule"]["to"], name)))
        rows.append((f"{messages} (any other {items['type']})", "/turns/{t}/extra/blocks (kept whole)"))
    rows.append((f"response {response['message']}", "the agent turn, read as a message"))
    for name, where in response.items():
        if name == "message":
            continue
        rows.append((f"response {where}", "/turns/{t}/model" if name == "model" else f"/turns/{{t}}/extra/{name}"))
    for name, where in spec.get("usage", {}).items():
        rows.append((f"response {where}", f"/turns/{{t}}/metrics/{name}"))
    for where, value in spec.get("constants", {}).items():
        rows.append((f"response {where} = {orjson.dumps(value).decode()}", "(the protocol's constant: not carried)"))
    rows.append(("(keys no row reads)", "/turns/{t}/extra/unmapped, extra/response_unmapped"))
    stream = f"SSE responses: assembled by `{table.stream}`" if table.stream else "no SSE assembly"
    lines = [f"{table.protocol} (paths {', '.join(table.paths)}; {stream})", "", "| wire | Storyline |", "|---|---|"]
    lines += [f"| `{a}` | {b if b.startswith('(') else f'`{b}`' if ' ' not in b else b} |" for a, b in rows]
    return "\n".join(lines) + "\n"


def _reads(rule: dict[str, Any]) -> list[tuple[str, str]]:
    return [(n, w) for n, w in rule.items() if n not in _ROW_KEYS and type(w) is str]


def _place(to: str, name: str) -> str:
    return _PLACES.get(to, {}).get(name) or f"/turns/{{t}}/extra/{to}"
