"""Hypothesis rollouts of Codex CLI (`codex`): every shape the record types allow.

`rollouts()` draws the records of one session file, in an order Codex writes them or not:
a `session_meta` (first, later, or twice: a rollout without one has no session and is refused),
with or without its optional keys (git, base instructions, a sub-agent source, a fork parent);
events before the first turn; `turn_context`s (with and without a turn id, two in a row, one left
at the end); messages of every role with one
or several text items, an image, `phase`/`end_turn`/`id`; reasoning before a turn (summaries, raw
content, encrypted content only, several records, one left at the end); function calls whose
arguments are compact JSON, spaced JSON or no JSON, custom (free-form) tool calls and shell calls;
their outputs right after them, after several parallel calls, missing, before their call or for
no call at all; events after a turn (token counts with and without info, agent messages, patch
and exec ends); compactions with and without replacement history; response items mapc keeps
without promoting (web search, ghost snapshots); and what a newer version writes: record types
and response item types mapc does not know, unknown keys in records and payloads.  Call ids are
unique within a file (Storyline's tool call ids are).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

TEXT = st.text(alphabet="abcdefghij klmnop", min_size=1, max_size=10)
UNKNOWN = st.dictionaries(st.sampled_from(["x_new", "x/slash", "x~tilde", "metadata"]), st.integers(0, 9), max_size=1)
ARGS = st.dictionaries(
    st.sampled_from(["command", "workdir", "timeout_ms"]), st.one_of(TEXT, st.integers(0, 99)), max_size=2
)
MINUTE = "2025-11-20T16:{m:02d}:{s:02d}.{ms:03d}Z"


class Clock:
    """Timestamps that move forward, one per record."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self) -> str:
        self.n += 1
        return MINUTE.format(m=self.n // 600 % 60, s=self.n // 10 % 60, ms=self.n % 10 * 100)


def record(clock: Clock, rtype: str, payload: Any, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"timestamp": clock(), "type": rtype, "payload": payload, **(extra or {})}


@st.composite
def session_meta(draw: Any, clock: Clock) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "id": draw(st.sampled_from(["019a3f6e-5d21-7c80-b1e4-9f0a2b3c4d5e", "0199a1b2-3c4d-7e5f-8a9b-0c1d2e3f4a5b"])),
        "timestamp": clock(),
        "cwd": draw(st.sampled_from(["/srv/app", ""])),
        "originator": draw(st.sampled_from(["codex_cli_rs", "codex_exec", "codex_vscode"])),
        "cli_version": draw(st.sampled_from(["0.46.0", "0.58.0", "0.63.0", "0.128.0"])),
    }
    optional = {
        "instructions": st.one_of(st.none(), TEXT),
        "source": st.one_of(
            st.sampled_from(["cli", "exec", "vscode", "mcp"]),
            st.just({"subagent": {"thread_spawn": {"parent_thread_id": "p", "depth": 1}}}),
        ),
        "model_provider": st.sampled_from(["openai", "azure"]),
        "git": st.just({"commit_hash": "5f3c2a9d", "branch": "main", "repository_url": None}),
        "base_instructions": st.builds(lambda t: {"text": t}, TEXT),
        "forked_from_id": st.just("0199a1b2-0000-7e5f-8a9b-0c1d2e3f4a5b"),
        "agent_nickname": TEXT,
        "memory_mode": st.just("disabled"),
    }
    for key, strategy in optional.items():
        if draw(st.booleans()):
            payload[key] = draw(strategy)
    payload.update(draw(UNKNOWN))
    return record(clock, "session_meta", payload, draw(UNKNOWN))


@st.composite
def message(draw: Any, clock: Clock, role: str) -> dict[str, Any]:
    kind = "output_text" if role == "assistant" else "input_text"
    content = [{"type": kind, "text": t} for t in draw(st.lists(TEXT, min_size=1, max_size=2))]
    if role == "user" and draw(st.integers(0, 4)) == 0:
        content.append({"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="})
    if draw(st.integers(0, 6)) == 0:  # an item type that says the other side's kind
        content[0] = {"type": "output_text" if kind == "input_text" else "input_text", "text": content[0]["text"]}
    payload: dict[str, Any] = {"type": "message", "role": role, "content": content}
    if role == "assistant" and draw(st.booleans()):
        payload["phase"] = draw(st.sampled_from(["commentary", "final_answer"]))
    if draw(st.integers(0, 3)) == 0:
        payload["id"] = f"msg_{clock.n}"
    if draw(st.integers(0, 5)) == 0:
        payload["end_turn"] = draw(st.sampled_from([True, None]))
    payload.update(draw(UNKNOWN))
    return record(clock, "response_item", payload)


@st.composite
def reasoning(draw: Any, clock: Clock) -> dict[str, Any]:
    summary = [{"type": "summary_text", "text": t} for t in draw(st.lists(TEXT, max_size=2))]
    payload: dict[str, Any] = {"type": "reasoning", "summary": summary}
    payload["content"] = draw(st.one_of(st.none(), st.just([{"type": "reasoning_text", "text": "raw"}])))
    if draw(st.booleans()):
        payload["encrypted_content"] = "gAAAAB" + draw(st.text(alphabet="abcXYZ019=", max_size=12))
    return record(clock, "response_item", payload)


@st.composite
def call(draw: Any, clock: Clock, call_id: str) -> dict[str, Any]:
    shape = draw(st.sampled_from(["function", "function", "custom", "shell"]))
    payload: dict[str, Any]
    if shape == "function":
        args = draw(ARGS)
        text = draw(st.sampled_from([json.dumps(args, separators=(",", ":")), json.dumps(args), "not json {"]))
        payload = {"type": "function_call", "name": draw(st.sampled_from(["shell", "apply_patch"])), "arguments": text}
    elif shape == "custom":
        payload = {"type": "custom_tool_call", "name": "apply_patch", "input": draw(TEXT)}
    else:
        action = {"type": "exec", "command": ["ls", draw(TEXT)], "timeout_ms": None}
        payload = {"type": "local_shell_call", "status": "completed", "action": action}
    payload["call_id"] = call_id
    if draw(st.integers(0, 3)) == 0:
        payload["id"] = f"fc_{call_id}"
    payload.update(draw(UNKNOWN))
    return record(clock, "response_item", payload)


def output(clock: Clock, call_rec: dict[str, Any], text: Any) -> dict[str, Any]:
    kind = "custom_tool_call_output" if call_rec["payload"]["type"] == "custom_tool_call" else "function_call_output"
    return record(clock, "response_item", {"type": kind, "call_id": call_rec["payload"]["call_id"], "output": text})


@st.composite
def event(draw: Any, clock: Clock) -> dict[str, Any]:
    usage = {
        "input_tokens": 900,
        "cached_input_tokens": 512,
        "output_tokens": 40,
        "reasoning_output_tokens": 8,
        "total_tokens": 940,
    }
    payload = draw(
        st.sampled_from(
            [
                {"type": "token_count", "info": None, "rate_limits": None},
                {"type": "token_count", "info": {"total_token_usage": usage, "last_token_usage": usage}},
                {"type": "agent_message", "message": "done"},
                {"type": "user_message", "message": "hi", "images": []},
                {"type": "agent_reasoning", "text": "thinking"},
                {"type": "exec_command_end", "call_id": "x", "exit_code": 0},
                {"type": "task_complete", "last_agent_message": None},
                {"type": "a_newer_event", "value": 1},
            ]
        )
    )
    return record(clock, "event_msg", payload)


@st.composite
def other(draw: Any, clock: Clock) -> dict[str, Any]:
    """Records mapc keeps without a turn: known response items, and a newer version's."""
    return draw(
        st.sampled_from(
            [
                record(
                    clock, "response_item", {"type": "web_search_call", "status": "completed", "action": {"query": "q"}}
                ),
                record(clock, "response_item", {"type": "ghost_snapshot", "ghost_commit": {"id": "abc"}}),
                record(clock, "response_item", {"type": "a_newer_item", "value": 2}),
                record(clock, "world_state", {"open_files": ["a.py"]}),
                record(clock, "compacted", {"message": "summary"}),
                record(clock, "compacted", {"message": "summary", "replacement_history": []}),
            ]
        )
    )


@st.composite
def rollouts(draw: Any) -> list[dict[str, Any]]:
    """The records of one rollout file."""
    clock = Clock()
    calls = 0
    out: list[dict[str, Any]] = []
    meta = draw(session_meta(clock))
    late = draw(st.integers(0, 5)) == 0  # the session_meta is not the first record
    if not late:
        out.append(meta)
    if draw(st.integers(0, 3)) == 0:
        out.append(record(clock, "event_msg", {"type": "task_started", "model_context_window": 258400}))
    for _ in range(draw(st.integers(1, 3))):  # user turns
        for _ in range(draw(st.integers(0, 2))):
            ctx: dict[str, Any] = {"cwd": "/srv/app", "model": draw(st.sampled_from(["gpt-5-codex", "gpt-5.1"]))}
            if draw(st.booleans()):
                ctx["turn_id"] = str(clock.n)
            out.append(record(clock, "turn_context", ctx))
        out.append(draw(message(clock, draw(st.sampled_from(["user", "user", "developer", "system"])))))
        for _ in range(draw(st.integers(0, 2))):
            out.append(draw(event(clock)))
        for _ in range(draw(st.integers(0, 3))):  # model steps
            for _ in range(draw(st.integers(0, 2))):
                out.append(draw(reasoning(clock)))
            step = draw(st.sampled_from(["message", "calls", "calls", "other"]))
            if step == "message":
                out.append(draw(message(clock, "assistant")))
            elif step == "other":
                out.append(draw(other(clock)))
            else:
                made = []
                for _ in range(draw(st.integers(1, 2))):
                    calls += 1
                    made.append(draw(call(clock, f"call_{calls}")))
                placement = draw(st.sampled_from(["after each", "after all", "missing", "before", "orphan"]))
                if placement == "after each":
                    for c in made:
                        out += [c, output(clock, c, draw(st.one_of(TEXT, st.none())))]
                elif placement == "after all":
                    out += made + [output(clock, c, draw(TEXT)) for c in made]
                elif placement == "before":
                    out += [output(clock, made[0], draw(TEXT)), *made]
                elif placement == "orphan":
                    out += [*made, output(clock, {"payload": {"type": "function_call", "call_id": "nobody"}}, "x")]
                else:
                    out += made
            for _ in range(draw(st.integers(0, 2))):
                out.append(draw(event(clock)))
    if draw(st.integers(0, 4)) == 0:
        out.append(draw(reasoning(clock)))
    if draw(st.integers(0, 4)) == 0:
        out.append(record(clock, "turn_context", {"cwd": "/srv/app"}))
    if late or draw(st.integers(0, 5)) == 0:  # a session_meta that is not first, or a second one
        out.insert(draw(st.integers(0, len(out))), meta if late else draw(session_meta(clock)))
    return out


def jsonl(records: list[Any]) -> bytes:
    """The bytes of a rollout file."""
    return b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in records)


def _as_thread(recs: list[dict[str, Any]], own: str, parent: str | None) -> list[dict[str, Any]]:
    """`recs` as the rollout of thread `own`, spawned by thread `parent` (None: started by a user)."""
    out = []
    for r in recs:
        if r["type"] == "session_meta":
            payload = {**r["payload"], "id": own}
            if parent is not None:
                spawn = {"parent_thread_id": parent, "depth": 1, "agent_nickname": "Tesla", "agent_role": "explorer"}
                payload["source"] = {"subagent": {"thread_spawn": spawn}}
            elif type(payload.get("source")) is dict:
                payload["source"] = "cli"
            r = {**r, "payload": payload}
        out.append(r)
    return out


@st.composite
def thread_trees(draw: Any) -> list[list[dict[str, Any]]]:
    """The rollouts of a thread and the sub-agent threads it spawned (Codex writes each spawned
    thread to a rollout of its own whose session_meta names its parent thread): a root, then one to
    three children, each spawned by the root or by an earlier child (a grandchild)."""
    ids = [f"019a{n:04d}-0000-7000-8000-000000000000" for n in range(4)]
    streams = [_as_thread(draw(rollouts()), ids[0], None)]
    for n in range(1, draw(st.integers(2, 4))):
        streams.append(_as_thread(draw(rollouts()), ids[n], ids[draw(st.integers(0, n - 1))]))
    return streams
