"""Hypothesis conversations of the OpenAI chat / fine-tuning format (`openai-chat`) and ShareGPT.

`conversations()` draws what the fine-tuning reference allows and what files in the wild hold:
system / developer / user / assistant / tool messages, content as a string, a list of parts or
null (or no content at all on an assistant message that calls tools), tool calls whose `arguments`
are compact JSON text, spaced JSON text or text that is no JSON, each answered (or not) by tool
messages in order, `weight` on assistant messages, `reasoning_content`, `tools`,
`parallel_tool_calls`, a `model`, and unknown keys at every level (keys with `/`, `~`, digits).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

TEXT = st.text(alphabet="abcdefghij klmnop", min_size=1, max_size=12)
UNKNOWN = st.dictionaries(
    st.sampled_from(["x_vendor", "x/slash", "x~tilde", "0", "name"]), st.integers(0, 9), max_size=1
)
ARGS = st.dictionaries(st.sampled_from(["q", "path", "n"]), st.one_of(TEXT, st.integers(0, 99)), max_size=2)
CONTENT = st.one_of(
    TEXT, st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": TEXT}), min_size=1, max_size=2)
)
TOOLS = [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in ("search", "run")]


@st.composite
def arguments(draw: Any) -> str:
    value = draw(ARGS)
    style = draw(st.sampled_from(["compact", "spaced", "text"]))
    if style == "compact":
        return json.dumps(value, separators=(",", ":"))
    if style == "spaced":
        return json.dumps(value)
    return draw(TEXT) + "{"  # no JSON


@st.composite
def conversations(draw: Any) -> dict[str, Any]:
    """One conversation (one line of a fine-tuning file)."""
    messages: list[dict[str, Any]] = []
    if draw(st.booleans()):
        messages.append({"role": draw(st.sampled_from(["system", "developer"])), "content": draw(TEXT)})
    calls = 0
    for _ in range(draw(st.integers(1, 3))):
        messages.append({"role": "user", "content": draw(CONTENT), **draw(UNKNOWN)})
        for _ in range(draw(st.integers(0, 2))):  # assistant turns that call tools
            n = draw(st.integers(1, 2))
            tool_calls = []
            for _ in range(n):
                calls += 1
                call: dict[str, Any] = {"id": f"call_{calls}", "type": "function"}
                call["function"] = {"name": draw(st.sampled_from(["search", "run"])), "arguments": draw(arguments())}
                call.update(draw(UNKNOWN))
                tool_calls.append(call)
            message: dict[str, Any] = {"role": "assistant", "tool_calls": tool_calls}
            shape = draw(st.sampled_from(["absent", "null", "text"]))
            if shape != "absent":
                message["content"] = None if shape == "null" else draw(TEXT)
            messages.append(message)
            for call in tool_calls[: draw(st.integers(0, n))]:
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": draw(CONTENT), **draw(UNKNOWN)})
        final: dict[str, Any] = {"role": "assistant", "content": draw(TEXT)}
        if draw(st.booleans()):
            final["weight"] = draw(st.sampled_from([0, 1]))
        if draw(st.booleans()):
            final["reasoning_content"] = draw(TEXT)
        if draw(st.booleans()):
            messages.append(final)
    doc: dict[str, Any] = {"messages": messages}
    if draw(st.booleans()):
        doc["tools"] = TOOLS
    if draw(st.booleans()):
        doc["parallel_tool_calls"] = draw(st.booleans())
    if draw(st.booleans()):
        doc["model"] = "gpt-4o-mini"
    doc.update(draw(UNKNOWN))
    return doc


@st.composite
def sharegpt(draw: Any) -> dict[str, Any]:
    """One ShareGPT conversation, with the speakers trainers use and unknown keys."""
    turns = [
        {"from": draw(st.sampled_from(["system", "human", "gpt", "function_call", "observation"])), "value": draw(TEXT)}
        | draw(UNKNOWN)
        for _ in range(draw(st.integers(1, 5)))
    ]
    doc: dict[str, Any] = {"conversations": turns}
    if draw(st.booleans()):
        doc["system"] = draw(TEXT)
    doc.update(draw(st.dictionaries(st.sampled_from(["id", "x/slash"]), TEXT, max_size=1)))
    return doc
