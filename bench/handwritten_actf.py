"""A hand-written ACTF v1.0 ⇄ Storyline converter: the baseline the mapping engine is measured against.

Written the way a competent user would write it (dicts, loops, orjson), following docs/formats.md ("ACTF"): one
Storyline per attempt in file order (`session` = task id, or ``{task_id}#attempt-{a}`` for several;
`run` = task id; `attempt_id`), the constants (`agent`, `src`, `nllm`), `kind` autonomous when the step has
tools, the effective tool list (`tools`, else `assistant_content.tool_calls`) with effective ids
(``step-{step_id}-tool-{i}`` when blank), `fn` (`name` → `function.name` → `type`), `args` (`input` →
`arguments` → ``{"command": …}`` → `function.arguments` → the remaining fields), `result`, tool `kind`,
`response`, `duration_ms` for a single tool, `latency_ms` truncated, observations copied into
`observation.results` with `source_call_id` and `content`, `task.llm.k`, `task.result` and `final_metrics`
with empty values left out, `extra`/`meta`, the prompt baseline with per-turn overlays and the explicit
clear, and unknown keys captured into ``unknown_fields.sources.actf`` (`source_document_id` = task id, root
unknowns copied into every attempt) with normalized `unknown_key_counts` (the attempt key stays literal).

It is a baseline, not product code. Left out on purpose: validation (it trusts its input), the `_storyline`
envelope, JSONL containers, the OpenClaw event-log variant, and keeping values its own reverse cannot
rebuild (a null `ground_truth` comes back as ``""``, a `tool_calls` list that differs from `tools` only in
being empty is kept as a residual, nothing else); the synthesized export of Storylines that never were ACTF.

    forward_bytes(open("x.actf.json", "rb").read())   # → Storyline JSON (an array: one per attempt)
    reverse_bytes(storyline_bytes)                     # → ACTF JSON
"""

from __future__ import annotations

from typing import Any

import orjson

ROOT_KEYS = frozenset(
    {"task_id", "correct", "attempts", "category", "k", "attempts_tried", "solved_at", "retry_count", "retry_counts"}
)
ATTEMPT_KEYS = frozenset(
    {
        "correct",
        "trajectory",
        "status",
        "score",
        "analysis_result",
        "final_answer",
        "ground_truth",
        "error",
        "artifacts",
        "extra",
        "meta",
        "max_score",
    }
)
TRAJECTORY_KEYS = frozenset({"schema_version", "steps", "started_at", "finished_at"})
STEP_KEYS = frozenset(
    {
        "step_id",
        "assistant_content",
        "metric",
        "tools",
        "observation",
        "started_at",
        "finished_at",
        "system_prompt",
        "user_content",
    }
)
ASSISTANT_KEYS = frozenset({"content", "reasoning_content", "tool_calls"})
TOOL_KEYS = frozenset(
    {"type", "id", "name", "input", "arguments", "command", "aggregated_output", "status", "exit_code"}
)
METRIC_KEYS = ("prompt_tokens_len", "completion_tokens_len", "llm_infer_ms", "env_action_ms", "stop_reason")
AGENT = {"id": "actf-agent", "name": "ACTF Agent"}
I64_MIN, I64_MAX = -(2**63), 2**63 - 1


def escape(token: str) -> str:
    """RFC 6901 token escape: ``~`` → ``~0`` first, then ``/`` → ``~1``."""
    return token.replace("~", "~0").replace("/", "~1")


def unescape(token: str) -> str:
    """RFC 6901 token decode: ``~1`` → ``/`` first, then ``~0`` → ``~``."""
    return token.replace("~1", "/").replace("~0", "~")


def empty(value: Any) -> bool:
    """null, "", {} and [] are "no value" for the omitted keys of task.result, extra and meta."""
    return value is None or value == "" or value == {} or value == []


def whole_ms(value: Any) -> int | None:
    """Milliseconds as an i64: an int as is, a float truncated (saturating), anything else none."""
    if type(value) is int:
        return value if I64_MIN <= value <= I64_MAX else None
    if type(value) is float and value == value:
        return max(I64_MIN, min(I64_MAX, int(value))) if abs(value) < 1e19 else (I64_MAX if value > 0 else I64_MIN)
    return None


def _capture(obj: dict[str, Any], known: frozenset[str], ptr: str, norm: str, fields: dict, counts: dict) -> None:
    """Put every key of `obj` not in `known` into `fields` at its raw pointer; count it under `norm`."""
    for key, value in obj.items():
        if key not in known:
            token = "/" + escape(key)
            fields[ptr + token] = value
            counts[norm + token] = counts.get(norm + token, 0) + 1


# -- forward: ACTF → Storyline ----------------------------------------------------------------------


def forward(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """One ACTF document → one Storyline per attempt, in the order the file lists them."""
    attempts = doc["attempts"]
    root_fields: dict[str, Any] = {}
    root_counts: dict[str, int] = {}
    _capture(doc, ROOT_KEYS, "", "", root_fields, root_counts)
    root_result: dict[str, Any] = {"task_correct": doc["correct"]}
    if not empty(doc.get("category")):
        root_result["category"] = doc["category"]
    root_result["attempts_tried"] = doc["attempts_tried"]
    for key in ("solved_at", "retry_count", "retry_counts"):
        if not empty(doc.get(key)):
            root_result[key] = doc[key]
    return [
        _forward_attempt(doc, key, attempt, len(attempts) == 1, root_result, root_fields, root_counts)
        for key, attempt in attempts.items()
    ]


def _forward_attempt(
    doc: dict[str, Any],
    key: str,
    attempt: dict[str, Any],
    single: bool,
    root_result: dict[str, Any],
    root_fields: dict[str, Any],
    root_counts: dict[str, int],
) -> dict[str, Any]:
    task_id = doc["task_id"]
    base = "/attempts/" + escape(key)
    fields = dict(root_fields)
    counts = dict(root_counts)
    _capture(attempt, ATTEMPT_KEYS, base, base, fields, counts)
    trajectory = attempt["trajectory"]
    _capture(trajectory, TRAJECTORY_KEYS, base + "/trajectory", base + "/trajectory", fields, counts)

    steps = trajectory["steps"]
    baseline = None
    for step in steps:
        pair = _pair(step)
        if pair:
            baseline = pair
            break
    turns = [
        _forward_step(step, f"{base}/trajectory/steps/{s}", f"{base}/trajectory/steps/*", baseline, fields, counts)
        for s, step in enumerate(steps)
    ]

    result: dict[str, Any] = {"task_correct": root_result["task_correct"], "correct": attempt["correct"]}
    for src in ("final_answer", "ground_truth", "status", "score", "error", "artifacts"):
        if not empty(attempt.get(src)):
            result[src] = attempt[src]
    result.update((k, v) for k, v in root_result.items() if k != "task_correct")
    if not empty(attempt.get("max_score")):
        result["max_score"] = attempt["max_score"]
    status = attempt.get("status")
    final_metrics: dict[str, Any] = {
        "analysis_result": attempt.get("analysis_result"),
        "correct": attempt["correct"],
        "score": attempt.get("score"),
        "status": status if type(status) is str else "",
        "task_correct": doc["correct"],
    }
    if "max_score" in result:
        final_metrics["max_score"] = result["max_score"]

    story: dict[str, Any] = {
        "schema_version": "storyline/v1",
        "origin": {"format": "actf", "schema_version": trajectory["schema_version"]},
        "run": task_id,
        "attempt_id": key,
        "session": task_id if single else f"{task_id}#attempt-{key}",
        "agent": dict(AGENT),
        "task": {"llm": {"k": doc["k"]}, "result": result},
    }
    if baseline:
        story["prompt"] = baseline
    story["started_at"] = trajectory["started_at"]
    story["finished_at"] = trajectory["finished_at"]
    story["final_metrics"] = final_metrics
    for src in ("extra", "meta"):
        if not empty(attempt.get(src)):
            story[src] = attempt[src]
    if fields:
        story["unknown_fields"] = {"sources": {"actf": {"source_document_id": task_id, "fields": fields}}}
        story["unknown_key_counts"] = {"actf": counts}
    story["turns"] = turns
    return story


def _pair(step: dict[str, Any]) -> dict[str, str]:
    """A step's (system_prompt, user_content) as a prompt object, empty strings left out."""
    pair = {}
    system, user = step.get("system_prompt"), step.get("user_content")
    if type(system) is str and system:
        pair["system"] = system
    if type(user) is str and user:
        pair["user"] = user
    return pair


def _forward_step(
    step: dict[str, Any], ptr: str, norm: str, baseline: dict[str, str] | None, fields: dict, counts: dict
) -> dict[str, Any]:
    _capture(step, STEP_KEYS, ptr, norm, fields, counts)
    assistant = step["assistant_content"]
    _capture(assistant, ASSISTANT_KEYS, ptr + "/assistant_content", norm + "/assistant_content", fields, counts)
    step_id = step["step_id"]
    tools = step.get("tools") or []
    calls = assistant.get("tool_calls") or []
    if tools:
        effective, other_name, other = tools, "/assistant_content/tool_calls", assistant.get("tool_calls")
    else:
        effective, other_name, other = calls, "/tools", step.get("tools")
    if other is not None and other != effective:  # the reverse writes both lists the same
        fields[ptr + other_name] = other
        counts[norm + other_name] = counts.get(norm + other_name, 0) + 1
    for c, tool in enumerate(tools):
        _capture(tool, TOOL_KEYS, f"{ptr}/tools/{c}", norm + "/tools/*", fields, counts)
    for c, tool in enumerate(calls):
        _capture(
            tool,
            TOOL_KEYS,
            f"{ptr}/assistant_content/tool_calls/{c}",
            norm + "/assistant_content/tool_calls/*",
            fields,
            counts,
        )
    metric = step["metric"]

    turn: dict[str, Any] = {"id": step_id}
    if effective:
        turn["kind"] = "autonomous"
    turn["ts"] = step["started_at"]
    turn["src"] = "agent"
    content = assistant.get("content")
    turn["msg"] = content if type(content) is str else "" if content is None else orjson.dumps(content).decode()
    reason = assistant.get("reasoning_content")
    if type(reason) is str and reason:
        turn["reason"] = reason
    if effective:
        single_ms = whole_ms(metric.get("env_action_ms")) if len(effective) == 1 else None
        turn["tool_calls"] = [_forward_tool(tool, step_id, i, single_ms) for i, tool in enumerate(effective)]
    observation = step.get("observation") or []
    if observation:
        turn["observation"] = {"results": [_forward_observation(o) for o in observation]}
    turn["metrics"] = {**dict.fromkeys(METRIC_KEYS), **metric}
    turn["nllm"] = 1
    latency = whole_ms(metric.get("llm_infer_ms"))
    if latency is not None:
        turn["latency_ms"] = latency
    if baseline:
        pair = _pair(step)
        if not pair:
            turn["prompt"] = {"system": "", "user": ""}  # the explicit clear
        elif pair != baseline:
            turn["prompt"] = pair
    turn["finished_at"] = step["finished_at"]
    return turn


def _forward_tool(tool: dict[str, Any], step_id: int, i: int, single_ms: int | None) -> dict[str, Any]:
    tool_id = tool.get("id")
    function = tool.get("function") if type(tool.get("function")) is dict else {}
    name = tool.get("name")
    fn = name if type(name) is str and name else function.get("name")
    if not (type(fn) is str and fn):
        fn = tool.get("type") or ""
    if "input" in tool:
        args = tool["input"]
    elif "arguments" in tool:
        args = tool["arguments"]
    elif "command" in tool:
        args = {"command": tool["command"]}
    elif "arguments" in function:
        args = function["arguments"]
    else:
        args = {k: v for k, v in tool.items() if k not in ("type", "id")}
    call: dict[str, Any] = {
        "tcid": tool_id if type(tool_id) is str and tool_id.strip() else f"step-{step_id}-tool-{i}",
        "fn": fn,
        "args": args,
    }
    if tool.get("aggregated_output") is not None:
        call["result"] = tool["aggregated_output"]
    if tool.get("type"):
        call["kind"] = tool["type"]
    response = {}
    status, exit_code = tool.get("status"), tool.get("exit_code")
    if type(status) is str and status:
        response["status"] = status
    if type(exit_code) is int and I64_MIN <= exit_code <= I64_MAX:
        response["exit_code"] = exit_code
    if response:
        call["response"] = response
    if single_ms is not None:
        call["duration_ms"] = single_ms
    return call


def _forward_observation(obs: Any) -> Any:
    if type(obs) is not dict:
        return obs
    out = dict(obs)
    ref = obs.get("tool_use_id", obs.get("id"))
    if type(ref) is str:
        out["source_call_id"] = ref
    if "aggregated_output" in obs:
        out["content"] = obs["aggregated_output"]
    return out


# -- reverse: Storyline → ACTF ----------------------------------------------------------------------


def reverse(stories: list[dict[str, Any]]) -> dict[str, Any]:
    """The Storylines of one task (the attempts, in order) → its ACTF document."""
    first = stories[0]
    result = first.get("task", {}).get("result", {})
    doc: dict[str, Any] = {
        "task_id": first.get("run") or first["session"],
        "category": result.get("category", "unknown"),
        "k": first.get("task", {}).get("llm", {}).get("k", len(stories)),
        "correct": result.get("task_correct", False),
        "attempts_tried": result.get("attempts_tried", len(stories)),
        "solved_at": result.get("solved_at"),
    }
    for key in ("retry_count", "retry_counts"):
        if key in result:
            doc[key] = result[key]
    attempts: dict[str, Any] = {}
    fields: dict[str, Any] = {}
    for story in stories:
        key = story.get("attempt_id") or "1"
        attempts[key] = _reverse_attempt(story)
        actf = story.get("unknown_fields", {}).get("sources", {}).get("actf")
        if actf:
            fields.update(actf["fields"])
    doc["attempts"] = attempts
    for pointer, value in fields.items():
        _restore(doc, pointer, value)
    return doc


def _reverse_attempt(story: dict[str, Any]) -> dict[str, Any]:
    result = story.get("task", {}).get("result", {})
    final = story.get("final_metrics", {})
    prompt = story.get("prompt") or {}
    attempt: dict[str, Any] = {
        "correct": result.get("correct", final.get("correct", False)),
        "final_answer": result.get("final_answer"),
        "ground_truth": result.get("ground_truth", ""),
        "trajectory": {
            "schema_version": story.get("origin", {}).get("schema_version", "ACTF_v1.0"),
            "steps": [_reverse_turn(turn, prompt) for turn in story["turns"]],
            "started_at": story.get("started_at", "1970-01-01 00:00:00+00:00"),
            "finished_at": story.get("finished_at", "1970-01-01 00:00:00+00:00"),
        },
        "status": result.get("status", final.get("status", "completed")),
        "score": result.get("score", final.get("score")),
        "error": result.get("error", ""),
        "artifacts": result.get("artifacts", {}),
        "extra": story.get("extra", {}),
        "analysis_result": final.get("analysis_result"),
        "meta": story.get("meta", {}),
    }
    if "max_score" in result:
        attempt["max_score"] = result["max_score"]
    return attempt


def _reverse_turn(turn: dict[str, Any], prompt: dict[str, str]) -> dict[str, Any]:
    step_id = turn["id"]
    tools = [_reverse_tool(call, step_id, i) for i, call in enumerate(turn.get("tool_calls", ()))]
    effective = turn.get("prompt", prompt)
    msg = turn.get("msg")
    return {
        "step_id": step_id,
        "assistant_content": {
            "content": "" if msg is None else msg,
            "reasoning_content": turn.get("reason", ""),
            "tool_calls": [dict(t) for t in tools],
        },
        "metric": turn.get("metrics", {}),
        "system_prompt": effective.get("system", ""),
        "user_content": effective.get("user", ""),
        "tools": tools,
        "observation": [_reverse_observation(r) for r in turn.get("observation", {}).get("results", ())],
        "started_at": turn.get("ts", "1970-01-01 00:00:00+00:00"),
        "finished_at": turn.get("finished_at", "1970-01-01 00:00:00+00:00"),
    }


def _reverse_tool(call: dict[str, Any], step_id: int, i: int) -> dict[str, Any]:
    tcid = call["tcid"]
    kind = call.get("kind") or ("command_execution" if call["fn"] == "command_execution" else "tool_use")
    tool: dict[str, Any] = {"type": kind, "id": "" if tcid == f"step-{step_id}-tool-{i}" else tcid}
    args = call.get("args")
    if kind == "command_execution" and type(args) is dict and list(args) == ["command"]:
        tool["command"] = args["command"]
    else:
        tool["name"] = call["fn"]
        tool["input"] = args
    if "result" in call:
        tool["aggregated_output"] = call["result"]
    response = call.get("response", {})
    if "exit_code" in response:
        tool["exit_code"] = response["exit_code"]
    if "status" in response:
        tool["status"] = response["status"]
    return tool


def _reverse_observation(result: Any) -> Any:
    if type(result) is not dict:
        return result
    obs = dict(result)
    ref = obs.pop("source_call_id", None)
    if ref is not None and "tool_use_id" not in obs and "id" not in obs:
        obs["tool_use_id"] = ref
    if "aggregated_output" in obs and obs.get("content") == obs["aggregated_output"]:
        del obs["content"]
    return obs


def _restore(doc: dict[str, Any], pointer: str, value: Any) -> None:
    """Put an unknown key back at its raw pointer (a residual is the source's own value: it wins)."""
    tokens = [unescape(t) for t in pointer[1:].split("/")]
    node: Any = doc
    for token in tokens[:-1]:
        node = node[int(token)] if type(node) is list else node.setdefault(token, {})
    node[tokens[-1]] = value


# -- bytes in, bytes out: what the benchmark times ------------------------------------------------


def forward_bytes(data: bytes) -> bytes:
    """ACTF JSON (one document or an array of them) → Storyline JSON (one object, else an array)."""
    value = orjson.loads(data)
    docs = value if type(value) is list else [value]
    stories = [story for doc in docs for story in forward(doc)]
    return orjson.dumps(stories[0] if len(stories) == 1 else stories)


def reverse_bytes(data: bytes) -> bytes:
    """Storyline JSON (one object or an array) → ACTF JSON: one document per task (`run`), in order."""
    value = orjson.loads(data)
    stories = value if type(value) is list else [value]
    tasks: dict[str, list[dict[str, Any]]] = {}
    for story in stories:
        tasks.setdefault(story.get("run") or story["session"], []).append(story)
    docs = [reverse(group) for group in tasks.values()]
    return orjson.dumps(docs[0] if len(docs) == 1 else docs)
