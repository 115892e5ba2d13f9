"""OpenAI Messages (docs/formats.md, "OpenAI Messages"): the named functions openai-msg.yaml calls.

The rows ⇄ turns fan-out is data (`fanout:` in the spec, run by engine/fanout.py); what is here is
what a value table cannot say: when a value "has value" (rule 7), which tool calls are valid and
how their arguments are read and written (rule 11), and milliseconds as the format counts them.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from mapc.engine import duplicates
from mapc.engine.functions import I64_MAX, I64_MIN, U64_MAX, Kept, register
from mapc.engine.problems import MapcError
from mapc.engine.values import MISSING

_EMBEDDED_NAME = re.compile(r"<tool_call>\s*([^\s<]+)|<function=([^>\s]+)>?")
_EMBEDDED_PARAM = re.compile(r"<parameter=([^>]+)>(.*?)</parameter>", re.DOTALL)


@register("openai_has_value", 1)
def has_value(value: Any) -> bool:
    """A non-empty string, an array with an item that has value, an object whose `text` has value
    (or any non-empty object without `text`), a number or a bool."""
    if type(value) is str:
        return value != ""
    if type(value) is list:
        return any(has_value(v) for v in value)
    if type(value) is dict:
        return has_value(value["text"]) if "text" in value else bool(value)
    return type(value) in (int, float, bool)


@register("openai_has_output", 1)
def has_output(message: Any) -> bool:
    """An assistant message with output: non-empty tool calls, a refusal or content with value."""
    if type(message) is not dict:
        return False
    calls = message.get("tool_calls")
    return (
        (type(calls) is list and bool(calls)) or has_value(message.get("refusal")) or has_value(message.get("content"))
    )


@register("openai_turn_has_output", 1)
def turn_has_output(turn: Any) -> bool:
    """A turn an OpenAI row can hold as its response: a message with value, or tool calls."""
    return has_value(turn["msg"]) or bool(turn.get("tool_calls"))


@register("openai_tool_calls", 3)
def tool_calls(raw: Any, content: Any, step: Any) -> Kept:
    """Valid structured tool calls (rule 11), invalid ones and argument text the export would not
    write kept; with none, for a row's turn (`step`), a call embedded in the text."""
    calls: list[dict[str, Any]] = []
    kept: dict[tuple[Any, ...], Any] = {}
    for c, call in enumerate(raw if type(raw) is list else []):
        function = call.get("function") if type(call) is dict else None
        name = function.get("name") if type(function) is dict else None
        if type(call) is not dict or not _text(call.get("id")) or not _text(name):
            if call is not None:
                kept[(c,)] = call
            continue
        assert isinstance(function, dict)
        text = function.get("arguments", None)
        args = _arguments(text)
        if text is not None and (type(text) is not str or (args is not text and _encoded(args) != text)):
            kept[(c, "function", "arguments")] = text  # not the compact, sorted text
        calls.append({"tcid": call["id"], "fn": name, "args": args})
    if not calls and step is not None:
        calls = embedded_calls(None if content is MISSING else content, step)
    return Kept(calls or MISSING, kept)


def _text(value: Any) -> bool:
    return type(value) is str and value != ""


def _arguments(value: Any) -> Any:
    if type(value) is str:
        try:
            decoded = orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
        return value if duplicates.repeats(value, decoded) else decoded  # a repeated key: keep the text
    return value


@register("openai_whole_ms", 1)
def whole_ms(value: Any) -> Any:
    """Milliseconds: an integer (u64 saturating at i64), a finite float truncated; else no value."""
    if type(value) is int and I64_MIN <= value <= U64_MAX:
        return min(value, I64_MAX)
    if type(value) is float and value == value and abs(value) < 2**63:
        return int(value)
    return MISSING


def embedded_calls(content: Any, step: int) -> list[dict[str, Any]]:
    """A tool call written into the text as ``<tool_call>NAME`` or ``<function=NAME>``, with
    ``<parameter=K>V</parameter>`` arguments (rule 11)."""
    text = content if type(content) is str else None
    if text is None and type(content) is list:
        text = "".join(p["text"] for p in content if type(p) is dict and type(p.get("text")) is str)
    found = _EMBEDDED_NAME.search(text or "")
    if found is None:
        return []
    name = found.group(1) or found.group(2)
    args = {k.strip(): v.strip() for k, v in _EMBEDDED_PARAM.findall(text or "")}
    return [{"tcid": f"embedded-{step}-{name}", "fn": name, "args": args}]


def _encoded(value: Any) -> str:
    """Tool-call arguments as the export writes them: compact JSON with sorted keys, so Storylines
    equal as JSON give equal rows.  Arguments orjson cannot write (nested more than 254 levels, or,
    from a Python caller, an integer beyond 64 bits or a lone surrogate) are export.unrepresentable."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except orjson.JSONEncodeError as exc:
        raise MapcError.single(
            "export.unrepresentable", "", f"tool call arguments that cannot be written as JSON text: {exc}"
        ) from None


@register("openai_calls_back", 1)
def calls_back(calls: Any) -> Any:
    """A turn's tool calls as a message's: arguments as compact JSON text, `type: function`."""
    if not calls:
        return MISSING
    out = []
    for call in calls:
        function: dict[str, Any] = {"name": call["fn"]}
        if call["args"] is not None:  # a call without arguments is read as null
            function["arguments"] = call["args"] if type(call["args"]) is str else _encoded(call["args"])
        out.append({"id": call["tcid"], "type": "function", "function": function})
    return out


@register("openai_response_calls_back", 3)
def response_calls_back(calls: Any, msg: Any, step: int) -> Any:
    """The response's tool calls, unless its text gives them again (embedded calls)."""
    if not calls or calls == embedded_calls(msg, step):
        return MISSING
    return calls_back(calls)
