"""OpenAI Messages (docs/formats.md, "OpenAI Messages"): the two functions openai-msg.yaml names.

`engine/rows.py` does what any row corpus needs (shape, grouping by session, ordering by step,
JSON strings decoded, unknown keys kept); these functions do what only this format needs: pick
the turns out of a session's rows (context messages, the last user message, the assistant
output) and write rows back with their full message history.  The key lists they read (metric
names, env keys, identity chains) are data in the spec's `tables:`.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import orjson

from mapc.engine import duplicates, pointer, spread
from mapc.engine.functions import I64_MAX, I64_MIN, U64_MAX, register
from mapc.engine.problems import MapcError, Problem
from mapc.engine.rows import Back, Group
from mapc.engine.timestamp import TimestampError, timestamp_ns
from mapc.engine.values import MISSING

_SOURCES = {"system": "system", "user": "user", "assistant": "agent"}
_ROLES = {"system": "system", "user": "user", "agent": "assistant"}
_CONTEXT_KINDS = {"system": "context", "user": "llm.request", "agent": "llm.response"}
_EMBEDDED_NAME = re.compile(r"<tool_call>\s*([^\s<]+)|<function=([^>\s]+)>?")
_EMBEDDED_PARAM = re.compile(r"<parameter=([^>]+)>(.*?)</parameter>", re.DOTALL)


# --- what "has value" means (rule 7) -----------------------------------------------------------


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
    if type(calls) is list and calls:
        return True
    return has_value(message.get("refusal")) or has_value(message.get("content"))


@functools.cache
def _tokens(ptr: str) -> tuple[str, ...]:
    return pointer.parse(ptr)


def _get(row: Any, ptr: str) -> Any:
    return pointer.resolve(row, _tokens(ptr))


def _first(row: Any, ptrs: list[str]) -> Any:
    """The first value of `ptrs` that is a non-empty string."""
    for ptr in ptrs:
        value = _get(row, ptr)
        if type(value) is str and value:
            return value
    return MISSING


# --- forward: one session's rows → one Storyline ---------------------------------------------


@register("openai_session", 1)
def openai_session(group: Group) -> tuple[dict[str, Any], dict[str, Any]]:
    """The Storyline of one session (its rows in step order) and the values kept as residuals."""
    return _Session(group).build()


class _Session:
    def __init__(self, group: Group) -> None:
        self.g = group
        self.t = group.tables
        self.turns: list[dict[str, Any]] = []
        self.residual: dict[str, Any] = {}
        self.problems: list[Problem] = []
        self.story: dict[str, Any] = {}

    def build(self) -> tuple[dict[str, Any], dict[str, Any]]:
        rows = self.g.rows
        first_r, first = rows[0]
        story = self.story
        story["schema_version"] = "storyline/v1"
        story["origin"] = {"format": "openai-msg", "document_id": self.g.document_id}
        story.update(self.g.values)  # session, run, agent: the spec's `group:`
        self.problems.extend(self.g.problems)
        context_count = self._context(first_r, first)
        for r, row in rows:
            self._interaction(r, row, context_count, row is first)
        if self.problems:
            raise MapcError(self.problems)
        story["turns"] = self.turns
        last_metrics = self.turns[-1].get("metrics") if self.turns else None
        if last_metrics is not None:
            story["final_metrics"] = last_metrics
        return story, self.residual

    def _context(self, r: int, row: dict[str, Any]) -> int:
        """The context turns of the session's first row: messages before its last user message."""
        found = self.g.select["request"](row)
        if found is None or "content" not in found[1]:
            return 0
        end = found[0][-1]
        for m, message in enumerate(row["messages"][:end]):
            if type(message) is not dict:
                continue
            src = _SOURCES.get(message.get("role"))  # type: ignore[arg-type]
            if src is None:
                if not self._tool_result(message, None):
                    self.residual[self.g.pointer(r, "messages", m)] = message
                continue
            calls = self._calls(r, ("messages", m), message, None)
            turn: dict[str, Any] = {"id": len(self.turns) + 1, "src": src}
            turn["kind"] = "autonomous" if calls else _CONTEXT_KINDS[src]
            turn["msg"] = message.get("content")
            turn["copied"] = True
            if calls:
                turn["tool_calls"] = calls
            self.turns.append(turn)
        return len(self.turns)

    def _interaction(self, r: int, row: dict[str, Any], context_count: int, first: bool) -> None:
        step = row["step_id"]
        request_id = self.g.ids["request"].of(context_count, step)  # the spec's `ids:`
        response_id = self.g.ids["response"].of(context_count, step)
        if response_id > I64_MAX:
            self.problems.append(Problem("openai.turn_id", self.g.pointer(r, "step_id"), "the turn id overflows i64"))
            return
        ts = self._timestamp(r, row)
        messages = row.get("messages") if type(row.get("messages")) is list else []
        request = self.g.select["request"](row)
        user = request[0][-1] if request is not None else None
        if request is not None and "content" in request[1]:
            turn = {"id": request_id, "src": "user", "kind": "llm.request", "msg": request[1]["content"]}
            if ts is not MISSING:
                turn["ts"] = ts
            self.turns.append(turn)
        found = self.g.select["output"](row)
        if found is None:
            self.problems.append(Problem("openai.no_output", self.g.pointer(r), "the row has no assistant output"))
            return
        at, output = found
        calls = self._calls(r, at, output, step)
        turn = {"id": response_id, "src": "agent", "kind": "autonomous" if calls else "llm.response"}
        content, refusal = output.get("content"), output.get("refusal")
        turn["msg"] = content if has_value(content) else refusal if has_value(refusal) else content
        if turn["msg"] is refusal and refusal is not content and "content" in output:
            self.residual[self.g.pointer(r, *at, "content")] = content  # the export writes msg as content
        if type(output.get("reasoning_content")) is str:
            turn["reason"] = output["reasoning_content"]
        model = _first(row, self.t["model"])
        if model is not MISSING:
            turn["model"] = model
        if ts is not MISSING:
            turn["ts"] = ts
        turn["nllm"] = 1
        if calls:
            turn["tool_calls"] = calls
        self._metrics(row, turn)
        spread.forward(self.g.spread, row, turn, self.story, "/env")  # the spec's `spread:`
        self.turns.append(turn)
        start = (user + 1) if first and user is not None else 0
        for message in messages[start:]:
            if type(message) is dict and message.get("role") == "tool":
                self._tool_result(message, turn)

    def _timestamp(self, r: int, row: dict[str, Any]) -> Any:
        value = row.get("created_at", MISSING)
        if value is MISSING or value is None:
            return MISSING
        try:
            timestamp_ns(value)
        except TimestampError as exc:
            self.problems.append(Problem("openai.created_at", self.g.pointer(r, "created_at"), str(exc)))
            return MISSING
        return value

    def _calls(self, r: int, at: tuple[Any, ...], message: dict[str, Any], step: int | None) -> list[dict[str, Any]]:
        """Valid structured tool calls (rule 11); else calls embedded in the text, for a row turn."""
        calls = []
        raw = message.get("tool_calls")
        for c, call in enumerate(raw if type(raw) is list else []):
            function = call.get("function") if type(call) is dict else None
            name = function.get("name") if type(function) is dict else None
            if type(call) is not dict or not _text(call.get("id")) or not _text(name):
                if call is not None:
                    self.residual[self.g.pointer(r, *at, "tool_calls", c)] = call
                continue
            assert isinstance(function, dict)
            raw = function.get("arguments", None)
            args = _arguments(raw)
            if raw is not None and (type(raw) is not str or (args is not raw and _encoded(args) != raw)):
                # Not the compact, sorted text the export writes (an object, other spacing or
                # key order): keep the value as it was.
                self.residual[self.g.pointer(r, *at, "tool_calls", c, "function", "arguments")] = raw
            calls.append({"tcid": call["id"], "fn": name, "args": args})
        if calls or step is None:
            return calls
        return embedded_calls(message.get("content"), step)

    def _tool_result(self, message: dict[str, Any], current: dict[str, Any] | None) -> bool:
        """Attach a tool message to the latest turn that made its call (else to `current`), once."""
        call_id = message.get("tool_call_id")
        if not _text(call_id):
            return False
        result = {"source_call_id": call_id, "content": message.get("content")}
        target = current
        for turn in reversed(self.turns):
            if any(c["tcid"] == call_id for c in turn.get("tool_calls") or ()):
                target = turn
                break
        if target is None:
            return False
        results = target.setdefault("observation", {"results": []})["results"]
        if result not in results:
            results.append(result)
        return True

    def _metrics(self, row: dict[str, Any], turn: dict[str, Any]) -> None:
        spread.forward(self.g.spread, row, turn, self.story, "/metrics")
        state = _get(row, "/meta_json/env_state")
        state = state if type(state) is dict else {}
        for key, name in (("latency_ms", "total_latency_ms"), ("ttft_ms", "ttft_ms")):
            value = _whole_ms(state.get(name))
            if value is not MISSING:
                turn[key] = value


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


def _whole_ms(value: Any) -> Any:
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


# --- reverse: Storylines → rows with their full history ----------------------------------------


@register("openai_rows", 3)
def openai_rows(stories: list[dict[str, Any]], back: Back, source: str) -> list[list[dict[str, Any]]]:
    """The rows of each Storyline: one per interaction, each with the full message history."""
    documents = {_provenance(s, source) for s in stories} - {None}
    if len(documents) > 1:
        message = f"these Storylines come from {len(documents)} OpenAI files ({', '.join(sorted(documents))})"
        raise MapcError.single("export.several_documents", "", message + "; one JSON document holds one")
    problems: list[Problem] = []
    out = []
    used: set[str] = set()
    for n, story in enumerate(stories):
        try:
            rows = _rows(story, back, _provenance(story, source) is not None)
            session = _group_key(story, used)
            for r in rows:
                r["session_id"] = session
            out.append(rows)
        except MapcError as exc:
            problems.extend(p.within(f"/{n}") for p in exc.problems)
    if problems:
        raise MapcError(problems)
    return out


def _group_key(story: dict[str, Any], used: set[str]) -> str:
    """The rows' session id: the Storyline's session, unless an earlier Storyline of this export
    has it (subagents sharing their parent's session): then its trajectory id, else the session
    numbered.  Rows are grouped by session, so each Storyline needs its own; the hop carries the
    session back."""
    session = story["session"]
    if session in used:
        trajectory = story.get("trajectory")
        session = trajectory if type(trajectory) is str and trajectory and trajectory not in used else session
        k = 2
        while session in used:
            session, k = f"{story['session']}#{k}", k + 1
    used.add(session)
    return session


def _provenance(story: dict[str, Any], source: str) -> str | None:
    origin = story.get("origin") or {}
    if origin.get("format") == source and origin.get("document_id"):
        return str(origin["document_id"])
    own = ((story.get("unknown_fields") or {}).get("sources") or {}).get(source)
    return own.get("source_document_id") if own else None


def _rows(story: dict[str, Any], back: Back, provenance: bool) -> list[dict[str, Any]]:
    turns = story["turns"]
    n = 0
    while (
        n < len(turns) and turns[n]["src"] in _ROLES and (turns[n].get("copied") is True or turns[n]["src"] == "system")
    ):
        n += 1
    context, rest = turns[:n], turns[n:]
    # A row is an agent turn with output, with the user turn before it if there is one.  The other
    # turns (a trailing user turn, a system turn mid-run, an agent turn without output) are no row:
    # they join the history of the next row, and the hop carries them (the reader reads only rows).
    interactions: list[tuple[dict[str, Any] | None, dict[str, Any], list[dict[str, Any]]]] = []
    between: list[dict[str, Any]] = []
    for turn in rest:
        if turn["src"] == "agent" and (has_value(turn["msg"]) or turn.get("tool_calls")):
            request = between.pop() if between and between[-1]["src"] == "user" else None
            interactions.append((request, turn, between))
            between = []
        elif turn["src"] in _ROLES:
            between.append(turn)
    if not interactions:
        raise MapcError.single(
            "export.unrepresentable", "/turns", "a Storyline without an agent turn with output has no OpenAI row"
        )
    history = [m for turn in context for m in _messages(turn)]
    steps = _steps(interactions, len(context), provenance, back.ids)
    rows = []
    for (request, response, skipped), step in zip(interactions, steps, strict=True):
        history = [*history, *(m for turn in skipped for m in _messages(turn))]
        asked = _message(request) if request is not None else {"role": "user"}
        results = _tool_messages(response)
        row: dict[str, Any] = {"session_id": story["session"], "step_id": step}  # then job_id, agent_id: `group:`
        if response.get("model") is not None:
            row["agent_model"] = response["model"]
        ts = response.get("ts", request.get("ts") if request else None)
        if ts is not None:
            row["created_at"] = ts
        row["messages"] = [*history, asked, *results]
        row["response"] = _response(response, step)
        spread.reverse(back.spread, row, response, story, "/env")  # the spec's `spread:`
        spread.reverse(back.spread, row, response, story, "/metrics")
        _write_latency(row, response)
        history = [*history, asked, *results, _response(response, step)]
        rows.append(row)
    return rows


def _steps(interactions: list[Any], context: int, provenance: bool, ids: Any) -> list[int]:
    """Step ids from the turn ids when this format wrote them (the spec's `ids:`), else 1, 2, 3…"""
    if provenance:
        steps = [ids["response"].order(context, response["id"]) for _, response, _ in interactions]
        if None not in steps and len(set(steps)) == len(steps):
            return steps  # type: ignore[return-value]
    return list(range(1, len(interactions) + 1))


def _message(turn: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": _ROLES[turn["src"]], "content": turn["msg"]}
    if turn.get("tool_calls"):
        message["tool_calls"] = [_call(c) for c in turn["tool_calls"]]
    return message


def _messages(turn: dict[str, Any]) -> list[dict[str, Any]]:
    return [_message(turn), *_tool_messages(turn)]


def _tool_messages(turn: dict[str, Any]) -> list[dict[str, Any]]:
    observation = turn.get("observation")
    results = observation.get("results") if type(observation) is dict else None
    out = []
    for result in results if type(results) is list else ():
        if type(result) is dict and _text(result.get("source_call_id")):
            out.append({"role": "tool", "tool_call_id": result["source_call_id"], "content": result.get("content")})
    return out


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


def _call(call: dict[str, Any]) -> dict[str, Any]:
    function: dict[str, Any] = {"name": call["fn"]}
    if call["args"] is not None:  # a call without arguments is read as null
        function["arguments"] = call["args"] if type(call["args"]) is str else _encoded(call["args"])
    return {"id": call["tcid"], "type": "function", "function": function}


def _response(turn: dict[str, Any], step: int) -> dict[str, Any]:
    response: dict[str, Any] = {"role": "assistant", "content": turn["msg"]}
    if turn.get("reason") is not None:
        response["reasoning_content"] = turn["reason"]
    calls = turn.get("tool_calls") or []
    if calls and calls != embedded_calls(turn["msg"], step):  # calls the text gives again are not repeated
        response["tool_calls"] = [_call(c) for c in calls]
    return response


def _write_latency(row: dict[str, Any], turn: dict[str, Any]) -> None:
    state = _get(row, "/meta_json/env_state")
    state = state if type(state) is dict else {}
    for key, name in (("latency_ms", "total_latency_ms"), ("ttft_ms", "ttft_ms")):
        if turn.get(key) is not None and _whole_ms(state.get(name)) != turn[key]:
            _set(row, ("meta_json", "env_state", name), turn[key])


def _set(row: dict[str, Any], tokens: tuple[str, ...], value: Any) -> None:
    node = row
    for token in tokens[:-1]:
        node = node.setdefault(token, {})
    node[tokens[-1]] = value
