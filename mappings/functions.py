"""Named functions the format specs call where a rule cannot be said as data.

Each is registered in `mapc.engine.functions` and documented, and specs name them with `call:`.
"""

from __future__ import annotations

from typing import Any

from mapc.engine.functions import effective_kind, int_ms, register
from mapc.engine.values import MISSING

_IMPLIED_KINDS = {("user", "dialogue"), ("system", "internal"), ("agent", "dialogue")}


@register("atif_turn_kind", 2)
def atif_turn_kind(source: Any, tool_calls: Any) -> Any:
    """ATIF turn kind: the effective kind, written only where a reader would not assume it.

    An agent step with tool calls is written ``autonomous``; a non-standard source (``tool``)
    is written ``dialogue``; user, system and plain agent steps get no explicit kind.
    """
    kind = effective_kind(source, tool_calls)
    return MISSING if (source, kind) in _IMPLIED_KINDS else kind


# --- ACTF v1.0 (docs/formats.md) ---------------------------------------------------------------

_ACTF_METRIC_KEYS = ("prompt_tokens_len", "completion_tokens_len", "llm_infer_ms", "env_action_ms", "stop_reason")


@register("actf_member_key", 5)
def actf_member_key(trajectory: Any, session: Any, parent: Any, children: Any, count: Any) -> Any:
    """The attempt key of a tree member without an attempt id: its trajectory, else its session.
    Subagents that share their parent's session group into one task; so do continuation segments
    of one run (one session, a trajectory each: ATIF v1.7), keyed by their trajectories when the
    task has several (`count`).  Outside a tree, several Storylines without attempt or trajectory
    ids stay an error (docs/formats.md, "ACTF")."""
    if parent is MISSING and children is MISSING:
        several = type(count) is int and count > 1
        return trajectory if several and type(trajectory) is str and trajectory else MISSING
    return next((v for v in (trajectory, session) if type(v) is str and v), MISSING)


@register("actf_session", 3)
def actf_session(task_id: Any, attempt: Any, attempts: Any) -> Any:
    """The Storyline session of an attempt: the task id alone, or ``{task_id}#attempt-{a}`` when
    the task has several attempts."""
    if type(task_id) is not str:
        return MISSING
    return task_id if type(attempts) is dict and len(attempts) == 1 else f"{task_id}#attempt-{attempt}"


def _effective_tools(tools: Any, tool_calls: Any) -> list[Any]:
    return tools if type(tools) is list and tools else tool_calls if type(tool_calls) is list else []


@register("actf_kind", 2)
def actf_kind(tools: Any, tool_calls: Any) -> Any:
    """``autonomous`` when the step has tools (its effective tool list is not empty)."""
    return "autonomous" if _effective_tools(tools, tool_calls) else MISSING


@register("actf_single_tool_ms", 3)
def actf_single_tool_ms(env_action_ms: Any, tools: Any, tool_calls: Any) -> Any:
    """A tool's ``duration_ms``: the step's ``env_action_ms`` (truncated), only for a single tool."""
    return int_ms(env_action_ms) if len(_effective_tools(tools, tool_calls)) == 1 else MISSING


@register("actf_tool_id", 3)
def actf_tool_id(tool_id: Any, step_id: Any, index: Any) -> str:
    """A tool's effective id: its ``id``, or ``step-{step_id}-tool-{i}`` when that is blank."""
    return tool_id if type(tool_id) is str and tool_id.strip() else f"step-{step_id}-tool-{index}"


@register("actf_tool_id_back", 3)
def actf_tool_id_back(tcid: Any, step_id: Any, index: Any) -> Any:
    """The ``id`` to write for a tool call: empty when the tcid is the synthesized one."""
    return "" if tcid == f"step-{step_id}-tool-{index}" else tcid


@register("actf_args_home", 2)
def actf_args_home(args: Any, tool: Any) -> Any:
    """Where a tool's arguments are written back: ``command`` for a command execution, else ``input``."""
    command = type(tool) is dict and tool.get("type") == "command_execution"
    if command and type(args) is dict and list(args) == ["command"]:
        return ("command", args["command"])
    return ("input", args)


def _prompt_pair(system: Any, user: Any) -> dict[str, str]:
    return {k: v for k, v in (("system", system), ("user", user)) if type(v) is str and v}


@register("actf_prompt_baseline", 1)
def actf_prompt_baseline(steps: Any) -> Any:
    """The document prompt: the first step's (system_prompt, user_content) with a non-empty string."""
    steps = [s for s in steps if type(s) is dict] if type(steps) is list else []
    return next((p for s in steps if (p := _prompt_pair(s.get("system_prompt"), s.get("user_content")))), MISSING)


@register("actf_turn_prompt", 3)
def actf_turn_prompt(system: Any, user: Any, baseline: Any) -> Any:
    """A turn's prompt against the baseline: none when equal, the explicit clear when both are empty,
    else the whole pair (docs/formats.md, ACTF "Prompt pairs")."""
    pair = _prompt_pair(system, user)
    return MISSING if baseline is MISSING or pair == baseline else pair or {"system": "", "user": ""}


@register("actf_prompt_back", 2)
def actf_prompt_back(turn_prompt: Any, document_prompt: Any) -> tuple[str, str]:
    """(system_prompt, user_content) of a step: the turn's effective prompt, ``""`` for a missing key."""
    prompt = turn_prompt if type(turn_prompt) is dict else document_prompt if type(document_prompt) is dict else {}
    return (prompt.get("system", ""), prompt.get("user", ""))


def _observation_ref(observation: dict[str, Any]) -> str | None:
    """The key of an observation's tool reference: ``tool_use_id``, else ``id`` (a string), else none."""
    return next((k for k in ("tool_use_id", "id") if type(observation.get(k)) is str), None)


@register("actf_result", 1)
def actf_result(observation: Any) -> Any:
    """An observation as a Storyline result: the whole object, with ``source_call_id`` (its
    ``tool_use_id`` or ``id``) and ``content`` (its ``aggregated_output`` when it has one)."""
    if type(observation) is not dict:
        return MISSING
    out = dict(observation)
    if (ref := _observation_ref(observation)) is not None:
        out["source_call_id"] = observation[ref]
    if "aggregated_output" in observation:
        out["content"] = observation["aggregated_output"]
    return out


@register("actf_observation", 1)
def actf_observation(result: Any) -> Any:
    """A Storyline result as an ACTF observation (the reverse of `actf_result`)."""
    if type(result) is not dict:
        return MISSING
    out = dict(result)
    ref = out.pop("source_call_id", MISSING)
    if ref is not MISSING and "tool_use_id" not in out and "id" not in out:
        out["tool_use_id"] = ref
        out.setdefault("type", "tool_result")
    if "aggregated_output" in out and out.get("content") == out["aggregated_output"]:
        del out["content"]  # forward copied aggregated_output into content
    elif out.get("type") == "command_execution" and "content" in out and "aggregated_output" not in out:
        out["aggregated_output"] = out.pop("content")
    return out


@register("actf_step_problems", 1)
def actf_step_problems(step: Any) -> list[tuple[str, str, str]]:
    """A step's tool-id rules: effective ids unique, and observations referring to one of them.

    Returns (pointer below the step, code, message) triples (docs/formats.md, ACTF "Tool ids").
    """
    if type(step) is not dict:
        return []
    tools = step.get("tools")
    home = "/tools" if type(tools) is list and tools else "/assistant_content/tool_calls"
    problems: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    for i, tool in enumerate(_effective_tools(tools, (step.get("assistant_content") or {}).get("tool_calls"))):
        tool_id = actf_tool_id(tool.get("id") if type(tool) is dict else None, step.get("step_id"), i)
        if tool_id in seen:
            problems.append((f"{home}/{i}/id", "duplicate_tool_id", f"tool id {tool_id!r} is used twice in this step"))
        seen.add(tool_id)
    observations = step.get("observation")
    for j, obs in enumerate(observations if type(observations) is list else ()):
        key = _observation_ref(obs) if type(obs) is dict else None
        if key is not None and obs[key] not in seen:
            message = f"{obs[key]!r} is not the id of a tool of this step"
            problems.append((f"/observation/{j}/{key}", "unknown_tool_reference", message))
    return problems


def _actf_trajectory(trajectory: Any) -> bool:
    if type(trajectory) is list:
        return all(type(e) is dict for e in trajectory)
    return type(trajectory) is dict and str(trajectory.get("schema_version", "")).startswith("ACTF_")


@register("actf_document", 1)
def actf_document(doc: Any) -> bool:
    """Detection: a ``task_id`` and a non-empty ``attempts`` object whose every value has a
    trajectory that is an array of objects or has a ``schema_version`` starting with ``ACTF_``."""
    attempts = doc.get("attempts") if type(doc) is dict else None
    if "task_id" not in doc or type(attempts) is not dict or not attempts:
        return False
    return all(_actf_trajectory(a.get("trajectory") if type(a) is dict else None) for a in attempts.values())


@register("actf_event_log", 1)
def actf_event_log(events: Any) -> Any:
    """An OpenClaw event log (a bare array trajectory) as a canonical ACTF trajectory — lossy.

    Each assistant message becomes a step (its text, thinking and ``toolCall`` blocks, the user
    text before it as ``user_content``); a ``toolResult`` message is folded into the previous
    step (an observation, and the tool's ``aggregated_output``).  The trajectory's times are the
    first and last event ``timestamp``.  The events themselves are not kept.
    """
    steps: list[dict[str, Any]] = []
    user = ""
    stamps = [e["timestamp"] for e in events if type(e) is dict and type(e.get("timestamp")) is str]
    for event in events:
        message = event.get("message") if type(event) is dict else None
        if type(message) is not dict:
            continue
        role, blocks = message.get("role"), message.get("content")
        if role == "user":
            user = _blocks_text(blocks, "text")
        elif role == "assistant":
            steps.append(_event_step(len(steps) + 1, event, blocks, user))
            user = ""
        elif role == "toolResult" and steps:
            text, ref = _blocks_text(blocks, "text"), message.get("toolCallId")
            result = dict(type="tool_result", tool_use_id=ref, content=text, is_error=bool(message.get("isError")))
            steps[-1]["observation"].append(result)
            for tool in steps[-1]["tools"] + steps[-1]["assistant_content"]["tool_calls"]:
                if tool.get("id") == ref:
                    tool["aggregated_output"] = text
    first, last = (stamps[0], stamps[-1]) if stamps else ("1970-01-01T00:00:00Z", "1970-01-01T00:00:00Z")
    return {"schema_version": "ACTF_v1.0", "steps": steps, "started_at": first, "finished_at": last}


def _event_step(step_id: int, event: dict[str, Any], blocks: Any, user: str) -> dict[str, Any]:
    """The step of one assistant message: its text, thinking and ``toolCall`` blocks (as tools and tool calls)."""
    calls = [
        {"type": "tool_use", "id": b.get("id", ""), "name": b.get("name", ""), "input": b.get("arguments", {})}
        for b in _blocks(blocks, "toolCall")
    ]
    stamp = event.get("timestamp") if type(event.get("timestamp")) is str else "1970-01-01 00:00:00+00:00"
    content = {"content": _blocks_text(blocks, "text"), "reasoning_content": _blocks_text(blocks, "thinking")}
    return {
        "step_id": step_id,
        "assistant_content": {**content, "tool_calls": calls},
        "metric": dict.fromkeys(_ACTF_METRIC_KEYS),
        "system_prompt": "",
        "user_content": user,
        "tools": [dict(c) for c in calls],
        "observation": [],
        "started_at": stamp,
        "finished_at": stamp,
    }


def _blocks(blocks: Any, kind: str) -> list[dict[str, Any]]:
    return [b for b in blocks if type(b) is dict and b.get("type") == kind] if type(blocks) is list else []


def _blocks_text(blocks: Any, kind: str) -> str:
    if type(blocks) is str:
        return blocks if kind == "text" else ""
    return "\n".join(b[kind] for b in _blocks(blocks, kind) if type(b.get(kind)) is str)


# The chat and ShareGPT, OpenAI, Codex and Claude Code functions register in their own modules, which the
# shipped catalog names after this one (api/__init__.py): a run imports those its spec calls.
from mapc.mappings import atif_harbor  # noqa: E402

register("atif_extension_slots", 2)(atif_harbor.extension_slots)
