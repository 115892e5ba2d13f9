"""A hand-written OpenAI Messages ⇄ Storyline converter: the baseline the row-corpus engine is measured against.

Written the way a competent user would write it (dicts, loops, orjson), following docs/formats.md (OpenAI) for
the corpora `rows_openai.py` generates: rows grouped by `session_id` (first appearance first) and sorted
by `step_id`; context turns from the first row's messages before its last user message; per row a
request turn (the last user message) and a response turn (`response`, with tool calls whose string
arguments are decoded), tool messages attached to the turn that made the call; `agent_model`, `job_id`,
`env_name` (first value to the task env), the row `id` (turn env), the row metric keys and
`meta_json.env_state` as metrics, `total_latency_ms` as `latency_ms`; unknown row keys kept under
``/session_steps/{r}/key``.  The reverse writes the rows back with their full message history.

It is a baseline, not product code: it trusts its input (no validation, no selection fallbacks, no
embedded tool-call markers, no envelope, no conditional consumption, no residuals below the row).

    forward_bytes(open("corpus.json", "rb").read())   # → Storyline JSON (an array, one per session)
    reverse_bytes(storyline_bytes)                     # → {"session_steps": [...]}
"""

from __future__ import annotations

import contextlib
from typing import Any

import orjson

ROW_KEYS = frozenset(
    [
        "session_id",
        "step_id",
        "created_at",
        "messages",
        "response",
        "agent_model",
        "job_id",
        "env_name",
        "id",
        "meta_json",
        "reward",
        "step_reward",
        "is_terminal",
        "is_truncated",
        "is_session_completed",
        "is_trainable",
    ]
)
ROW_METRICS = ("reward", "step_reward", "is_terminal", "is_truncated", "is_session_completed", "is_trainable")
SOURCES = {"system": "system", "user": "user", "assistant": "agent"}
ROLES = {"system": "system", "user": "user", "agent": "assistant"}
KINDS = {"system": "context", "user": "llm.request", "agent": "llm.response"}


def _calls(message: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for call in message.get("tool_calls") or ():
        args = call["function"].get("arguments")
        if type(args) is str:
            with contextlib.suppress(orjson.JSONDecodeError):
                args = orjson.loads(args)
        out.append({"tcid": call["id"], "fn": call["function"]["name"], "args": args})
    return out


def _last_user(messages: list[dict[str, Any]]) -> int:
    return max(i for i, m in enumerate(messages) if m.get("role") == "user")


def _attach(turns: list[dict[str, Any]], message: dict[str, Any]) -> None:
    result = {"source_call_id": message["tool_call_id"], "content": message.get("content")}
    for turn in reversed(turns):
        if any(c["tcid"] == result["source_call_id"] for c in turn.get("tool_calls") or ()):
            results = turn.setdefault("observation", {"results": []})["results"]
            if result not in results:
                results.append(result)
            return


def _session(rows: list[tuple[int, dict[str, Any]]], document_id: str) -> dict[str, Any]:
    first = rows[0][1]
    turns: list[dict[str, Any]] = []
    messages = first["messages"]
    end = _last_user(messages)
    for message in messages[:end]:
        src = SOURCES.get(message["role"])
        if src is None:
            _attach(turns, message)
            continue
        calls = _calls(message)
        turn = {
            "id": len(turns) + 1,
            "src": src,
            "kind": "autonomous" if calls else KINDS[src],
            "msg": message.get("content"),
            "copied": True,
        }
        if calls:
            turn["tool_calls"] = calls
        turns.append(turn)
    context = len(turns)
    task_env: dict[str, Any] = {}
    residual: dict[str, Any] = {}
    for r, row in rows:
        step = row["step_id"]
        messages = row["messages"]
        user = _last_user(messages)
        ts = row.get("created_at")
        request = {"id": context + 2 * step - 1, "src": "user", "kind": "llm.request", "msg": messages[user]["content"]}
        if ts is not None:
            request["ts"] = ts
        turns.append(request)
        output = row["response"]
        calls = _calls(output)
        turn: dict[str, Any] = {
            "id": context + 2 * step,
            "src": "agent",
            "kind": "autonomous" if calls else "llm.response",
            "msg": output.get("content"),
        }
        if "agent_model" in row:
            turn["model"] = row["agent_model"]
        if ts is not None:
            turn["ts"] = ts
        turn["nllm"] = 1
        if calls:
            turn["tool_calls"] = calls
        state = (row.get("meta_json") or {}).get("env_state") or {}
        metrics = {**state, **{k: row[k] for k in ROW_METRICS if k in row}}
        if metrics:
            turn["metrics"] = metrics
        if type(state.get("total_latency_ms")) is int:
            turn["latency_ms"] = state["total_latency_ms"]
        env = {}
        if row.get("env_name"):
            if "name" not in task_env:
                task_env["name"] = row["env_name"]
            elif task_env["name"] != row["env_name"]:
                env["name"] = row["env_name"]
        if row.get("id"):
            env["id"] = row["id"]
        if env:
            turn["env"] = env
        turns.append(turn)
        for message in messages[user + 1 :]:
            if message.get("role") == "tool":
                _attach(turns, message)
        for key, value in row.items():
            if key not in ROW_KEYS:
                residual[f"/session_steps/{r}/{key}"] = value
    model = first.get("agent_model", "openai-import")
    story: dict[str, Any] = {
        "schema_version": "storyline/v1",
        "origin": {"format": "openai-msg", "document_id": document_id},
        "session": first["session_id"],
    }
    if first.get("job_id"):
        story["run"] = first["job_id"]
    story["agent"] = (
        {"id": model, "name": model, "model": model} if "agent_model" in first else {"id": model, "name": model}
    )
    if task_env:
        story["task"] = {"env": task_env}
    story["turns"] = turns
    if "metrics" in turns[-1]:
        story["final_metrics"] = turns[-1]["metrics"]
    if residual:
        story["unknown_fields"] = {"sources": {"openai-msg": {"source_document_id": document_id, "fields": residual}}}
        counts: dict[str, int] = {}
        for ptr in residual:
            key = "/session_steps/*/" + ptr.split("/", 3)[3]
            counts[key] = counts.get(key, 0) + 1
        story["unknown_key_counts"] = {"openai-msg": counts}
    return story


def forward(doc: Any, document_id: str = "source.json") -> list[dict[str, Any]]:
    """The Storylines of a corpus (a list of rows, or {"session_steps": rows})."""
    rows = doc["session_steps"] if type(doc) is dict else doc
    groups: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for r, row in enumerate(rows):
        groups.setdefault(row["session_id"], []).append((r, row))
    return [_session(sorted(g, key=lambda p: p[1]["step_id"]), document_id) for g in groups.values()]


def _call(call: dict[str, Any]) -> dict[str, Any]:
    args = (
        call["args"] if type(call["args"]) is str else orjson.dumps(call["args"], option=orjson.OPT_SORT_KEYS).decode()
    )
    return {"id": call["tcid"], "type": "function", "function": {"name": call["fn"], "arguments": args}}


def _message(turn: dict[str, Any]) -> dict[str, Any]:
    message = {"role": ROLES[turn["src"]], "content": turn["msg"]}
    if turn.get("tool_calls"):
        message["tool_calls"] = [_call(c) for c in turn["tool_calls"]]
    return message


def _results(turn: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"role": "tool", "tool_call_id": r["source_call_id"], "content": r["content"]}
        for r in (turn.get("observation") or {}).get("results") or ()
    ]


def reverse(stories: list[dict[str, Any]]) -> dict[str, Any]:
    """The rows of all Storylines, story by story, each with its full history."""
    rows: list[dict[str, Any]] = []
    for story in stories:
        turns = story["turns"]
        n = 0
        while n < len(turns) and turns[n].get("copied"):
            n += 1
        context = len(turns[:n])
        history = [m for t in turns[:n] for m in (_message(t), *_results(t))]
        task_env = (story.get("task") or {}).get("env") or {}
        start = len(rows)
        for request, response in zip(turns[n::2], turns[n + 1 :: 2], strict=True):
            step = (response["id"] - context) // 2
            asked, results = _message(request), _results(response)
            answer = {"role": "assistant", "content": response["msg"]}
            if response.get("tool_calls"):
                answer["tool_calls"] = [_call(c) for c in response["tool_calls"]]
            row: dict[str, Any] = {"session_id": story["session"], "step_id": step}
            if story.get("run") is not None:
                row["job_id"] = story["run"]
            if response.get("model") is not None:
                row["agent_model"] = response["model"]
            if response.get("ts") is not None:
                row["created_at"] = response["ts"]
            row["messages"] = [*history, asked, *results]
            row["response"] = answer
            env = {**task_env, **(response.get("env") or {})}
            if env.get("name"):
                row["env_name"] = env["name"]
            if env.get("id"):
                row["id"] = env["id"]
            state = {}
            for key, value in (response.get("metrics") or {}).items():
                if key in ROW_METRICS:
                    row[key] = value
                else:
                    state[key] = value
            if state:
                row["meta_json"] = {"env_state": state}
            history = [*history, asked, *results, answer]
            rows.append(row)
        fields = ((story.get("unknown_fields") or {}).get("sources") or {}).get("openai-msg", {}).get("fields") or {}
        for ptr, value in fields.items():
            _, _, r, key = ptr.split("/", 3)
            rows[start + int(r) - start][key] = value
    return {"session_steps": rows}


def forward_bytes(data: bytes) -> bytes:
    """Corpus JSON bytes → Storyline JSON bytes."""
    return orjson.dumps(forward(orjson.loads(data)))


def reverse_bytes(data: bytes) -> bytes:
    """Storyline JSON bytes → corpus JSON bytes."""
    return orjson.dumps(reverse(orjson.loads(data)))
