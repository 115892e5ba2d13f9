"""Storyline turns → wire bodies: the message shapes of each protocol, for ``mapc events synthesize``.

The tables in this folder say where things are (the model, usage, stop reason, system prompt
pointers), and the synthesizer in ``mapc.store.events`` writes those generically.  What a table
cannot say is how one Storyline turn becomes the protocol's messages: Anthropic puts tool results
in a user message's content, Chat Completions in ``role: tool`` messages, Responses in
``function_call_output`` items.  Each protocol's writer is one small class here, named by its
table's ``write`` key.

A writer fills in what the protocol requires and the Storyline does not hold (a response ``id``,
``created``, a thinking ``signature``) and returns those pointers: the events list them in
``payload.synthesized`` and the projection ignores them, so nothing made up is read back as data.
What the protocol cannot carry is an `Unrepresentable` naming the turn's pointer, never dropped.
"""

from __future__ import annotations

from typing import Any, Final

import orjson


class Unrepresentable(Exception):
    """A turn value the protocol has no place for; `where` is a pointer under the turn."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(message)
        self.where = where
        self.message = message


def _texts(msg: Any, where: str) -> list[str]:
    """The texts of a Storyline ``msg``: a string is one (``""`` none), a list of text parts each."""
    if type(msg) is str:
        return [msg] if msg else []
    parts = type(msg) is list and all(
        type(p) is dict and set(p) == {"type", "text"} and p["type"] == "text" for p in msg
    )
    if parts and all(type(p["text"]) is str for p in msg):
        return [p["text"] for p in msg]
    raise Unrepresentable(f"{where}/msg", "only a text message (a string or a list of text parts) can be written")


def _json_text(value: Any) -> str:
    return orjson.dumps(value).decode()


def _result_text(result: dict[str, Any], where: str) -> str:
    content = result.get("content")
    if type(content) is not str:
        raise Unrepresentable(f"{where}/content", "this protocol's tool results are text; this one is not a string")
    return content


def _check_result(result: Any, where: str, keys: frozenset[str]) -> dict[str, Any]:
    if type(result) is not dict or type(result.get("source_call_id")) is not str or not set(result) <= keys:
        raise Unrepresentable(where, f"a tool result with source_call_id and only {sorted(keys)} can be written")
    return result


def put_back(target: dict[str, Any], kept: dict[str, Any], where: str = "") -> list[str]:
    """Write the keys a projection kept (``unmapped``: what no rule read) back into `target`, an
    object written for the same place: an object value into the object `target` holds there, key
    by key (a partly read object keeps its read keys), any other value over what is there (a value
    the writer made up gives way to the recorded one).  Returns the pointers written (below `where`)."""
    out = []
    for key, value in kept.items():
        at = f"{where}/{key.replace('~', '~0').replace('/', '~1')}"
        if type(value) is dict and type(target.get(key)) is dict:
            out += put_back(target[key], value, at)
        else:
            target[key] = value
            out.append(at)
    return out


def with_unmapped(written: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """A written tool result (block, message, item or part) with the keys the projection kept in the
    result's ``unmapped`` (keys of the recorded result that no rule reads) put back."""
    kept = result.get("unmapped")
    if type(kept) is dict:
        put_back(written, kept)
    return written


def _refusal(turn: dict[str, Any]) -> str | None:
    extra = turn.get("extra") if type(turn.get("extra")) is dict else {}
    refusal = extra.get("refusal")
    return refusal if type(refusal) is str else None


def _sse(events: list[dict[str, Any]], *, named: bool, done: bool = False) -> str:
    """Server-sent events: one ``data:`` line each (after an ``event:`` line of its type when `named`)."""
    out = []
    for event in events:
        head = f"event: {event['type']}\n" if named else ""
        out.append(f"{head}data: {_json_text(event)}\n\n")
    return "".join(out) + ("data: [DONE]\n\n" if done else "")


def _pieces(text: str) -> list[str]:
    """`text` cut in two (a stream sends a text in pieces), or as it is when shorter than two."""
    middle = len(text) // 2
    return [text[:middle], text[middle:]] if middle else [text]


class Anthropic:
    """Anthropic Messages: content blocks; tool results open the next user message."""

    RESULT_KEYS: Final = frozenset({"source_call_id", "content", "is_error", "unmapped"})
    EXTRA: Final = frozenset()
    USAGE: Final[dict[str, Any]] = {}  # the response's usage placeholders are in `response`

    def request_defaults(self) -> dict[str, Any]:
        return {"/max_tokens": 1024}  # required by the API; the Storyline keeps none unless params has it

    def error_body(self, error: Any) -> dict[str, Any]:
        """The body of a failed call: the API's error object."""
        return {"type": "error", "error": error}

    def user(self, turn: dict[str, Any], results: list[dict[str, Any]], where: str) -> list[dict[str, Any]]:
        blocks = [self._result(r) for r in results]
        blocks += [{"type": "text", "text": t} for t in _texts(turn["msg"], where)] if turn is not None else []
        return [{"role": "user", "content": blocks}]

    def results(self, results: list[dict[str, Any]], where: str) -> list[dict[str, Any]]:
        return [{"role": "user", "content": [self._result(r) for r in results]}]

    def _result(self, result: dict[str, Any]) -> dict[str, Any]:
        block = {"type": "tool_result", "tool_use_id": result["source_call_id"], "content": result.get("content")}
        if "is_error" in result:
            block["is_error"] = result["is_error"]
        return with_unmapped(block, result)

    def system(self, turn: dict[str, Any], where: str) -> list[dict[str, Any]]:
        raise Unrepresentable(
            f"{where}/src", "Anthropic Messages has no system message (the system prompt is not a turn)"
        )

    def assistant(self, turn: dict[str, Any], where: str) -> tuple[dict[str, Any], list[str]]:
        """The assistant message (role, content) and the pointers in it that were made up."""
        content: list[dict[str, Any]] = []
        made: list[str] = []
        if turn.get("reason"):
            content.append({"type": "thinking", "thinking": turn["reason"], "signature": ""})
            made.append("/content/0/signature")
        content += [{"type": "text", "text": t} for t in _texts(turn["msg"], where)]
        for call in turn.get("tool_calls") or ():
            content.append({"type": "tool_use", "id": call["tcid"], "name": call["fn"], "input": call["args"]})
        return {"role": "assistant", "content": content}, made

    def history(self, turn: dict[str, Any], where: str) -> list[dict[str, Any]]:
        """The turn resent as history: without thinking (it would need the signature it lacks)."""
        message, _ = self.assistant({**turn, "reason": None}, where)
        return [message]

    def response(self, turn: dict[str, Any], where: str) -> tuple[dict[str, Any], list[str]]:
        message, made = self.assistant(turn, where)
        body = {"id": "msg_synthesized", "type": "message", **message, "model": "unknown", "stop_reason": None}
        body["stop_sequence"] = None
        body["usage"] = {"input_tokens": 0, "output_tokens": 0}
        return body, [
            *made,
            "/id",
            "/model",
            "/stop_reason",
            "/stop_sequence",
            "/usage/input_tokens",
            "/usage/output_tokens",
        ]

    def stream(self, body: dict[str, Any]) -> str:
        """The response as Messages streaming events: ``message_start``, each block's start, deltas and
        stop, ``message_delta`` (stop reason, output tokens), ``message_stop``."""
        usage = body.get("usage") if type(body.get("usage")) is dict else {}
        start = {**body, "content": [], "stop_reason": None, "stop_sequence": None}
        start["usage"] = {**usage, "output_tokens": 0} if "output_tokens" in usage else dict(usage)
        events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
        for i, block in enumerate(body["content"]):
            kind = block.get("type")
            if kind == "text":
                events.append({"type": "content_block_start", "index": i, "content_block": {**block, "text": ""}})
                events += [
                    {"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": t}}
                    for t in _pieces(block["text"])
                ]
            elif kind == "thinking":
                opened = {**block, "thinking": "", "signature": ""}
                events.append({"type": "content_block_start", "index": i, "content_block": opened})
                events += [
                    {"type": "content_block_delta", "index": i, "delta": {"type": "thinking_delta", "thinking": t}}
                    for t in _pieces(block["thinking"])
                ]
                signature = {"type": "signature_delta", "signature": block.get("signature", "")}
                events.append({"type": "content_block_delta", "index": i, "delta": signature})
            elif kind == "tool_use":
                events.append({"type": "content_block_start", "index": i, "content_block": {**block, "input": {}}})
                events += [
                    {
                        "type": "content_block_delta",
                        "index": i,
                        "delta": {"type": "input_json_delta", "partial_json": t},
                    }
                    for t in _pieces(_json_text(block["input"]))
                ]
            else:
                events.append({"type": "content_block_start", "index": i, "content_block": block})
            events.append({"type": "content_block_stop", "index": i})
        delta = {"stop_reason": body.get("stop_reason"), "stop_sequence": body.get("stop_sequence")}
        last: dict[str, Any] = {"type": "message_delta", "delta": delta}
        if "output_tokens" in usage:
            last["usage"] = {"output_tokens": usage["output_tokens"]}
        return _sse([*events, last, {"type": "message_stop"}], named=True)


class ChatCompletions:
    """OpenAI Chat Completions: messages; tool calls on the assistant message, results as tool messages."""

    EXTRA: Final = frozenset({"refusal"})
    # usage keys the protocol requires once there is a usage object
    USAGE: Final = {"/usage/prompt_tokens": 0, "/usage/completion_tokens": 0, "/usage/total_tokens": 0}

    RESULT_KEYS: Final = frozenset({"source_call_id", "content", "unmapped"})

    def request_defaults(self) -> dict[str, Any]:
        return {}

    def error_body(self, error: Any) -> dict[str, Any]:
        """The body of a failed call: the API's error object."""
        return {"error": error}

    def user(self, turn: dict[str, Any], results: list[dict[str, Any]], where: str) -> list[dict[str, Any]]:
        out = self.results(results, where)
        return [*out, {"role": "user", "content": self._content(turn, where)}]

    def results(self, results: list[dict[str, Any]], where: str) -> list[dict[str, Any]]:
        return [
            with_unmapped({"role": "tool", "tool_call_id": r["source_call_id"], "content": _result_text(r, where)}, r)
            for r in results
        ]

    def _content(self, turn: dict[str, Any], where: str) -> Any:
        texts = _texts(turn["msg"], where)
        if type(turn["msg"]) is list and len(texts) != 1:
            return [{"type": "text", "text": t} for t in texts]
        return texts[0] if texts else ""

    def system(self, turn: dict[str, Any], where: str) -> list[dict[str, Any]]:
        extra = turn.get("extra") if type(turn.get("extra")) is dict else {}
        role = "developer" if extra.get("role") == "developer" else "system"
        return [{"role": role, "content": self._content(turn, where)}]

    def assistant(self, turn: dict[str, Any], where: str) -> dict[str, Any]:
        calls = turn.get("tool_calls") or []
        texts = _texts(turn["msg"], where)
        message: dict[str, Any] = {"role": "assistant", "content": self._content(turn, where)}
        if calls and not texts:
            message["content"] = None
        if turn.get("reason"):
            message["reasoning_content"] = turn["reason"]
        refusal = _refusal(turn)
        if refusal is not None:
            message["refusal"] = refusal
            if not texts:
                message["content"] = None
        if calls:
            message["tool_calls"] = [
                {"id": c["tcid"], "type": "function", "function": {"name": c["fn"], "arguments": _json_text(c["args"])}}
                for c in calls
            ]
        return message

    def history(self, turn: dict[str, Any], where: str) -> list[dict[str, Any]]:
        return [self.assistant(turn, where)]

    def response(self, turn: dict[str, Any], where: str) -> tuple[dict[str, Any], list[str]]:
        finish = "tool_calls" if turn.get("tool_calls") else "stop"
        choice = {"index": 0, "message": self.assistant(turn, where), "finish_reason": finish, "logprobs": None}
        body = {"id": "chatcmpl-synthesized", "object": "chat.completion", "created": 0, "model": "unknown"}
        body["choices"] = [choice]
        made = ["/id", "/created", "/model", "/choices/0/finish_reason", "/choices/0/logprobs"]
        return body, made

    def stream(self, body: dict[str, Any]) -> str:
        """The completion as chunks: the role, then text, reasoning and refusal pieces, each tool call
        opened (id, name) and its arguments in pieces, the finish reason, a usage chunk, ``[DONE]``."""
        choice = body["choices"][0]
        message = choice["message"]
        head = {k: v for k, v in body.items() if k not in ("choices", "usage", "object")}
        head["object"] = "chat.completion.chunk"

        def chunk(delta: dict[str, Any], finish: Any = None) -> dict[str, Any]:
            return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        chunks = [chunk({"role": "assistant"})]
        for key in ("reasoning_content", "content", "refusal"):
            if type(message.get(key)) is str:
                chunks += [chunk({key: piece}) for piece in _pieces(message[key])]
        for i, call in enumerate(message.get("tool_calls") or ()):
            opened = {
                "index": i,
                "id": call["id"],
                "type": call["type"],
                "function": {"name": call["function"]["name"]},
            }
            chunks.append(chunk({"tool_calls": [opened]}))
            chunks += [
                chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
                for piece in _pieces(call["function"]["arguments"])
            ]
        chunks.append(chunk({}, choice.get("finish_reason")))
        if "usage" in body:
            chunks.append({**head, "choices": [], "usage": body["usage"]})
        return _sse(chunks, named=False, done=True)


class Responses:
    """OpenAI Responses: typed items; function_call items and function_call_output items."""

    EXTRA: Final = frozenset({"refusal"})
    USAGE: Final = {
        "/usage/input_tokens": 0,
        "/usage/input_tokens_details/cached_tokens": 0,
        "/usage/input_tokens_details/cache_write_tokens": 0,  # required by the SDK's ResponseUsage type
        "/usage/output_tokens": 0,
        "/usage/output_tokens_details/reasoning_tokens": 0,
        "/usage/total_tokens": 0,
    }

    RESULT_KEYS: Final = frozenset({"source_call_id", "content", "unmapped"})

    def request_defaults(self) -> dict[str, Any]:
        return {}

    def error_body(self, error: Any) -> dict[str, Any]:
        """The body of a failed call: the API's error object."""
        return {"error": error}

    def user(self, turn: dict[str, Any], results: list[dict[str, Any]], where: str) -> list[dict[str, Any]]:
        return [*self.results(results, where), {"role": "user", "content": self._content(turn, where, "input_text")}]

    def results(self, results: list[dict[str, Any]], where: str) -> list[dict[str, Any]]:
        return [
            with_unmapped(
                {"type": "function_call_output", "call_id": r["source_call_id"], "output": _result_text(r, where)}, r
            )
            for r in results
        ]

    def _content(self, turn: dict[str, Any], where: str, part: str) -> Any:
        texts = _texts(turn["msg"], where)
        if type(turn["msg"]) is list and len(texts) != 1:
            return [{"type": part, "text": t} for t in texts]
        return texts[0] if texts else ""

    def system(self, turn: dict[str, Any], where: str) -> list[dict[str, Any]]:
        extra = turn.get("extra") if type(turn.get("extra")) is dict else {}
        role = "developer" if extra.get("role") == "developer" else "system"
        return [{"role": role, "content": self._content(turn, where, "input_text")}]

    def items(self, turn: dict[str, Any], where: str) -> tuple[list[dict[str, Any]], list[str]]:
        """The output items of an agent turn, and the pointers (from the item list) made up."""
        items: list[dict[str, Any]] = []
        made: list[str] = []
        if turn.get("reason"):
            items.append(
                {
                    "type": "reasoning",
                    "id": "rs_synthesized",
                    "summary": [{"type": "summary_text", "text": turn["reason"]}],
                }
            )
            made.append("/0/id")
        texts = _texts(turn["msg"], where)
        refusal = _refusal(turn)
        if texts or refusal is not None or not turn.get("tool_calls"):
            n = len(items)
            parts: list[dict[str, Any]] = [{"type": "output_text", "text": t, "annotations": []} for t in texts]
            if not texts and refusal is None:
                parts = [{"type": "output_text", "text": "", "annotations": []}]
            made += [f"/{n}/content/{i}/annotations" for i in range(len(parts))]
            if refusal is not None:
                parts.append({"type": "refusal", "refusal": refusal})
            items.append(
                {
                    "type": "message",
                    "id": "msg_synthesized",
                    "status": "completed",
                    "role": "assistant",
                    "content": parts,
                }
            )
            made += [f"/{n}/id", f"/{n}/status"]
        for call in turn.get("tool_calls") or ():
            items.append(
                {
                    "type": "function_call",
                    "call_id": call["tcid"],
                    "name": call["fn"],
                    "arguments": _json_text(call["args"]),
                }
            )
        return items, made

    def history(self, turn: dict[str, Any], where: str) -> list[dict[str, Any]]:
        """The turn resent as input items: its text as an assistant message (an output message item
        would need the id and status it lacks; reasoning items need theirs), then its calls."""
        items: list[dict[str, Any]] = []
        texts = _texts(turn["msg"], where)
        if texts or not turn.get("tool_calls"):
            content = texts[0] if len(texts) == 1 and type(turn["msg"]) is str else "".join(texts)
            items.append({"role": "assistant", "content": content})
        for call in turn.get("tool_calls") or ():
            items.append(
                {
                    "type": "function_call",
                    "call_id": call["tcid"],
                    "name": call["fn"],
                    "arguments": _json_text(call["args"]),
                }
            )
        return items

    def response(self, turn: dict[str, Any], where: str) -> tuple[dict[str, Any], list[str]]:
        items, made = self.items(turn, where)
        body = {
            "id": "resp_synthesized",
            "object": "response",
            "created_at": 0,
            "model": "unknown",
            "output": items,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
        }
        fixed = ["/id", "/created_at", "/model", "/parallel_tool_calls", "/tool_choice", "/tools"]
        return body, [*fixed, *(f"/output{p}" for p in made)]

    def stream(self, body: dict[str, Any]) -> str:
        """The response as Responses streaming events: ``response.created``, each output item added,
        its parts, text, refusal, argument and summary deltas and their ``.done`` events, the item
        done, and ``response.completed`` (each event numbered by ``sequence_number``)."""
        events: list[dict[str, Any]] = [{"type": "response.created", "response": {**body, "output": []}}]
        for i, item in enumerate(body["output"]):
            kind = item.get("type")
            opened = dict(item)
            if kind == "message":
                opened["content"] = []
            elif kind == "function_call":
                opened["arguments"] = ""
            elif kind == "reasoning":
                opened["summary"] = []
            events.append({"type": "response.output_item.added", "output_index": i, "item": opened})
            at = {"item_id": item.get("id") or f"item_{i}", "output_index": i}  # item_id: the events need one
            if kind == "message":
                for j, part in enumerate(item.get("content") or ()):
                    key = "refusal" if part.get("type") == "refusal" else "text"
                    name = "refusal" if key == "refusal" else "output_text"
                    where = {**at, "content_index": j}
                    events.append({"type": "response.content_part.added", **where, "part": {**part, key: ""}})
                    logprobs = {} if key == "refusal" else {"logprobs": []}
                    events += [
                        {"type": f"response.{name}.delta", **where, "delta": t, **logprobs} for t in _pieces(part[key])
                    ]
                    events.append({"type": f"response.{name}.done", **where, key: part[key], **logprobs})
                    events.append({"type": "response.content_part.done", **where, "part": part})
            elif kind == "function_call":
                events += [
                    {"type": "response.function_call_arguments.delta", **at, "delta": t}
                    for t in _pieces(item["arguments"])
                ]
                events.append({"type": "response.function_call_arguments.done", **at, "arguments": item["arguments"]})
            elif kind == "reasoning":
                for j, part in enumerate(item.get("summary") or ()):
                    where = {**at, "summary_index": j}
                    events.append(
                        {"type": "response.reasoning_summary_part.added", **where, "part": {**part, "text": ""}}
                    )
                    events += [
                        {"type": "response.reasoning_summary_text.delta", **where, "delta": t}
                        for t in _pieces(part["text"])
                    ]
                    events.append({"type": "response.reasoning_summary_text.done", **where, "text": part["text"]})
            events.append({"type": "response.output_item.done", "output_index": i, "item": item})
        events.append({"type": "response.completed", "response": body})
        return _sse([{**e, "sequence_number": n} for n, e in enumerate(events)], named=True)


class Gemini:
    """Gemini generateContent: contents of parts; function responses open the next user content.

    A call's id is written only when the Storyline's tcid is the wire's (not ``extra.tcid_derived``);
    function arguments and responses are objects on this wire.
    """

    EXTRA: Final = frozenset()
    USAGE: Final[dict[str, Any]] = {}
    RESULT_KEYS: Final = frozenset({"source_call_id", "content", "unmapped"})

    def __init__(self) -> None:
        self.calls: dict[str, dict[str, Any]] = {}  # tcid → the call, for the response's function name

    def path(self, model: str | None) -> str:
        return f"/v1beta/models/{model or 'unknown'}:generateContent"

    def request_defaults(self) -> dict[str, Any]:
        return {}

    def error_body(self, error: Any) -> dict[str, Any]:
        """The body of a failed call: the API's error object."""
        return {"error": error}

    def user(self, turn: dict[str, Any], results: list[dict[str, Any]], where: str) -> list[dict[str, Any]]:
        parts = [self._result(r, where) for r in results]
        parts += [{"text": t} for t in _texts(turn["msg"], where)]
        return [{"role": "user", "parts": parts}]

    def results(self, results: list[dict[str, Any]], where: str) -> list[dict[str, Any]]:
        return [{"role": "user", "parts": [self._result(r, where) for r in results]}]

    def _result(self, result: dict[str, Any], where: str) -> dict[str, Any]:
        call = self.calls.get(result["source_call_id"])
        if call is None:
            raise Unrepresentable(where, "a function response names its function: this result answers no call")
        if type(result.get("content")) is not dict:
            raise Unrepresentable(f"{where}/content", "a Gemini function response is an object; this one is not")
        response: dict[str, Any] = {"name": call["fn"], "response": result["content"]}
        if not _derived(call):
            response["id"] = call["tcid"]
        return with_unmapped({"functionResponse": response}, result)

    def system(self, turn: dict[str, Any], where: str) -> list[dict[str, Any]]:
        raise Unrepresentable(f"{where}/src", "Gemini has no system message (systemInstruction is not a turn)")

    def _content(self, turn: dict[str, Any], where: str, *, thought: bool) -> dict[str, Any]:
        parts: list[dict[str, Any]] = []
        if thought and turn.get("reason"):
            parts.append({"text": turn["reason"], "thought": True})
        parts += [{"text": t} for t in _texts(turn["msg"], where)]
        for n, call in enumerate(turn.get("tool_calls") or ()):
            if type(call["args"]) is not dict:
                raise Unrepresentable(f"{where}/tool_calls/{n}/args", "Gemini function arguments are an object")
            function: dict[str, Any] = {"name": call["fn"], "args": call["args"]}
            if not _derived(call):
                function["id"] = call["tcid"]
            parts.append({"functionCall": function})
            self.calls[call["tcid"]] = call
        return {"role": "model", "parts": parts}

    def history(self, turn: dict[str, Any], where: str) -> list[dict[str, Any]]:
        return [self._content(turn, where, thought=False)]

    def response(self, turn: dict[str, Any], where: str) -> tuple[dict[str, Any], list[str]]:
        candidate = {"content": self._content(turn, where, thought=True), "finishReason": "STOP", "index": 0}
        body = {"candidates": [candidate], "modelVersion": "unknown", "responseId": "synthesized"}
        return body, ["/candidates/0/finishReason", "/modelVersion", "/responseId"]


def _derived(call: dict[str, Any]) -> bool:
    extra = call.get("extra")
    return type(extra) is dict and extra.get("tcid_derived") is True


# One writer object per synthesis (a writer may remember the calls it wrote).
WRITERS: Final[dict[str, Any]] = {
    "anthropic-messages": Anthropic,
    "openai-chat-completions": ChatCompletions,
    "openai-responses": Responses,
    "gemini-generate-content": Gemini,
}
