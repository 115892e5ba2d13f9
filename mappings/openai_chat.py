"""OpenAI chat / fine-tuning JSONL and ShareGPT: the few named functions their specs call.

`openai-chat.yaml` and `sharegpt.yaml` say everything else as data; what is here is the role
vocabulary of each format and the JSON text of tool-call arguments.
"""

from __future__ import annotations

from typing import Any

import orjson

from mapc.engine import duplicates
from mapc.engine.functions import register
from mapc.engine.values import MISSING

# Chat roles and Storyline sources.  `developer` (the newer name of `system` for reasoning models)
# reads as a system turn; the reverse writes `system`, so a `developer` role is kept as a residual.
_CHAT_SRC = {"system": "system", "developer": "system", "user": "user", "assistant": "agent", "tool": "tool"}
_CHAT_ROLE = {"system": "system", "user": "user", "agent": "assistant", "tool": "tool"}
# ShareGPT speakers (`from`); any other speaker is a source of its own name, both ways.
_SHAREGPT_SRC = {"system": "system", "human": "user", "gpt": "agent"}
_SHAREGPT_FROM = {v: k for k, v in _SHAREGPT_SRC.items()}


@register("chat_src", 1)
def chat_src(role: Any) -> Any:
    """The Storyline source of a chat role (an unknown role stays as it is: the schema refuses it)."""
    return _CHAT_SRC.get(role, role) if type(role) is str else role


@register("chat_role", 1)
def chat_role(src: Any) -> Any:
    """The chat role of a Storyline source; a source no role says stays as it is, so the rebuilt
    line fails the format's schema and the export says which turn cannot be written."""
    return _CHAT_ROLE.get(src, src) if type(src) is str else src


@register("chat_msg", 1)
def chat_msg(content: Any) -> Any:
    """A turn's message: the content, or null for a message without one (an assistant tool call)."""
    return None if content is MISSING else content


@register("chat_content", 1)
def chat_content(msg: Any) -> Any:
    """The content of a message: none for a null message (a content of null is kept as a residual)."""
    return MISSING if msg is None or msg is MISSING else msg


@register("chat_turn_id", 1)
def chat_turn_id(position: Any) -> Any:
    """A turn id from the message's position: 1, 2, 3… (chat messages have no id of their own)."""
    return position + 1 if type(position) is int else MISSING


@register("json_text_value", 1)
def json_text_value(text: Any) -> Any:
    """The JSON a string holds (tool-call `arguments`); a string that holds no JSON stays a string."""
    if type(text) is not str:
        return text
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return text
    return text if duplicates.repeats(text, value) else value  # a repeated key: decoding would lose one


@register("json_value_text", 1)
def json_value_text(value: Any) -> Any:
    """Compact JSON text of a value (the `arguments` string the API and fine-tuning files hold)."""
    if value is MISSING:
        return MISSING
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError:
        return value  # what JSON cannot say (only a Python caller hands it over): the schema refuses it


@register("sharegpt_src", 1)
def sharegpt_src(speaker: Any) -> Any:
    """The Storyline source of a ShareGPT speaker (`human` → user, `gpt` → agent, others as they are)."""
    return _SHAREGPT_SRC.get(speaker, speaker) if type(speaker) is str else speaker


@register("sharegpt_from", 1)
def sharegpt_from(src: Any) -> Any:
    """The ShareGPT speaker of a Storyline source."""
    return _SHAREGPT_FROM.get(src, src) if type(src) is str else src
