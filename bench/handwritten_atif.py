"""A hand-written ATIF v1.7 ⇄ Storyline converter: the baseline the mapping engine is measured against.

Written the way a competent user would write it (dicts, loops, orjson), following docs/formats.md ("ATIF") and
mappings/atif.yaml's pointer table: session rule (children: own `session_id` → own `trajectory_id` → parent's session),
agent and turn renames, the effective `kind` written only where it differs from the default, `latency_ms`
from the first present of `metrics.latency_ms` / `elapsed_ms` / `duration_ms`, `ttft_ms`, integer
`extra.duration_ms` promoted on tool calls, subagents as separate Storylines linked by `children`/`parent`,
and unknown keys captured into ``unknown_fields.sources.atif`` with wildcarded `unknown_key_counts`.

It is a baseline, not product code. Left out on purpose: validation (it trusts its input), the `_storyline`
envelope (foreign residuals), JSONL containers, timestamp parsing, and the exact serde float formatting of the
canonical JSON hashed for `source_document_id` (orjson's shortest repr is used; equal for ordinary floats).
Storyline fields ATIF cannot hold (`run`, `task`, `prompt`, turn `env`, tool `kind`/`response`, …) are
dropped by `reverse`.

    forward_bytes(open("x.atif.json", "rb").read())   # → Storyline JSON (object, or array with subagents)
    reverse_bytes(storyline_bytes)                     # → ATIF JSON
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import blake3
import orjson

ROOT_KEYS = frozenset(
    {
        "schema_version",
        "session_id",
        "trajectory_id",
        "agent",
        "steps",
        "notes",
        "final_metrics",
        "continued_trajectory_ref",
        "extra",
        "subagent_trajectories",
    }
)
AGENT_KEYS = frozenset({"name", "version", "model_name", "tool_definitions", "extra"})
STEP_KEYS = frozenset(
    {
        "step_id",
        "timestamp",
        "source",
        "message",
        "model_name",
        "reasoning_effort",
        "reasoning_content",
        "tool_calls",
        "observation",
        "metrics",
        "extra",
        "llm_call_count",
        "is_copied_context",
    }
)
CALL_KEYS = frozenset({"tool_call_id", "function_name", "arguments", "result", "extra"})
OBSERVATION_KEYS = frozenset({"results"})
LATENCY_KEYS = ("latency_ms", "elapsed_ms", "duration_ms")
# (src, kind) pairs that a Storyline reader derives anyway, so forward leaves `kind` out.
DEFAULT_KINDS = frozenset({("user", "dialogue"), ("system", "internal"), ("agent", "dialogue")})


def escape(token: str) -> str:
    """RFC 6901 token escape: ``~`` → ``~0`` first, then ``/`` → ``~1``."""
    return token.replace("~", "~0").replace("/", "~1")


def unescape(token: str) -> str:
    """RFC 6901 token decode: ``~1`` → ``/`` first, then ``~0`` → ``~``."""
    return token.replace("~1", "/").replace("~0", "~")


def source_document_id(doc: dict[str, Any]) -> str:
    """BLAKE3 hex of the canonical JSON (sorted keys, compact, raw UTF-8) of one top-level trajectory."""
    doc = {k: v for k, v in doc.items() if k != "_storyline"}
    return blake3.blake3(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)).hexdigest()


def whole_ms(value: Any) -> int | None:
    """An integer millisecond count: an int as is, a float truncated, anything else (bool too) none."""
    if type(value) is int:
        return value
    if type(value) is float:
        return int(value)
    return None


def latency_from(metrics: dict[str, Any]) -> int | None:
    """The first *present* key of the latency chain decides, even when its value is not a number."""
    for key in LATENCY_KEYS:
        if key in metrics:
            return whole_ms(metrics[key])
    return None


def ttft_from(metrics: dict[str, Any]) -> int | None:
    """`metrics.ttft_ms` as whole milliseconds."""
    return whole_ms(metrics["ttft_ms"]) if "ttft_ms" in metrics else None


def effective_kind(src: str, tool_calls: Any) -> str:
    """R-KIND (docs/storyline.md): the kind a reader assumes when `kind` is absent."""
    if src == "user":
        return "dialogue"
    if src == "system":
        return "internal"
    if src == "agent" and tool_calls:
        return "autonomous"
    return "dialogue"


def _capture(obj: dict[str, Any], known: frozenset[str], ptr: str, norm: str, fields: dict, counts: dict) -> None:
    """Put every key of `obj` not in `known` into `fields` at its raw pointer; count it under `norm`."""
    for key, value in obj.items():
        if key not in known:
            token = "/" + escape(key)
            fields[ptr + token] = value
            counts[norm + token] = counts.get(norm + token, 0) + 1


# -- forward: ATIF → Storyline ----------------------------------------------------------------------


def forward(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """One top-level ATIF trajectory → its Storylines: the root first, then subagents depth-first."""
    stories: list[dict[str, Any]] = []
    _forward_node(doc, "", "", None, None, stories)
    if any("unknown_fields" in s for s in stories):
        doc_id = source_document_id(doc)  # one hash for the whole tree; pointers are relative to its root
        for story in stories:
            if "unknown_fields" in story:
                story["unknown_fields"]["sources"]["atif"]["source_document_id"] = doc_id
    return stories


def _forward_node(
    node: dict[str, Any],
    ptr: str,
    norm: str,
    parent_session: str | None,
    parent_psid: str | None,
    stories: list[dict[str, Any]],
) -> None:
    fields: dict[str, Any] = {}
    counts: dict[str, int] = {}
    _capture(node, ROOT_KEYS, ptr, norm, fields, counts)

    trajectory = node.get("trajectory_id")
    session = node.get("session_id") or trajectory or parent_session
    if not session:
        raise ValueError(f"{ptr or '/'}: ATIF trajectory needs a non-empty session_id or trajectory_id")

    src_agent = node["agent"]
    _capture(src_agent, AGENT_KEYS, ptr + "/agent", norm + "/agent", fields, counts)
    agent: dict[str, Any] = {"id": src_agent["name"], "name": src_agent["name"], "ver": src_agent["version"]}
    for src_key, key in (("model_name", "model"), ("tool_definitions", "tools"), ("extra", "extra")):
        if src_agent.get(src_key) is not None:
            agent[key] = src_agent[src_key]

    turns = [
        _forward_step(step, f"{ptr}/steps/{s}", norm + "/steps/*", fields, counts)
        for s, step in enumerate(node["steps"])
    ]

    story: dict[str, Any] = {
        "schema_version": "storyline/v1",
        "origin": {"format": "atif", "schema_version": node["schema_version"]},
    }
    if trajectory:
        story["trajectory"] = trajectory
    story["session"] = session
    story["agent"] = agent
    if parent_psid is not None:
        story["parent"] = {"psid": parent_psid}  # rel "spawn" is the default, so it is left out
    subagents = node.get("subagent_trajectories") or []
    if subagents:
        story["children"] = [child["trajectory_id"] for child in subagents]
    for key in ("notes", "final_metrics", "continued_trajectory_ref", "extra"):
        if node.get(key) is not None:
            story[key] = node[key]
    if fields:
        story["unknown_fields"] = {"sources": {"atif": {"source_document_id": "", "fields": fields}}}
        story["unknown_key_counts"] = {"atif": counts}
    story["turns"] = turns
    stories.append(story)

    psid = trajectory or session
    for c, child in enumerate(subagents):
        child_ptr = f"{ptr}/subagent_trajectories/{c}"
        _forward_node(child, child_ptr, norm + "/subagent_trajectories/*", session, psid, stories)


def _forward_step(step: dict[str, Any], ptr: str, norm: str, fields: dict, counts: dict) -> dict[str, Any]:
    _capture(step, STEP_KEYS, ptr, norm, fields, counts)
    src = step["source"]
    calls = step.get("tool_calls")
    turn: dict[str, Any] = {"id": step["step_id"]}
    kind = effective_kind(src, calls)
    if (src, kind) not in DEFAULT_KINDS:
        turn["kind"] = kind
    if step.get("timestamp") is not None:
        turn["ts"] = step["timestamp"]
    turn["src"] = src
    turn["msg"] = step["message"]  # required, and null is a value here
    if step.get("reasoning_content") is not None:
        turn["reason"] = step["reasoning_content"]
    if step.get("reasoning_effort") is not None:
        turn["effort"] = step["reasoning_effort"]
    if calls is not None:
        turn["tool_calls"] = [
            _forward_call(call, f"{ptr}/tool_calls/{c}", norm + "/tool_calls/*", fields, counts)
            for c, call in enumerate(calls)
        ]
    observation = step.get("observation")
    if observation is not None:
        _capture(observation, OBSERVATION_KEYS, ptr + "/observation", norm + "/observation", fields, counts)
        turn["observation"] = {"results": observation["results"]}
    metrics = step.get("metrics")
    if metrics is not None:
        turn["metrics"] = metrics
    if step.get("model_name") is not None:
        turn["model"] = step["model_name"]
    if step.get("llm_call_count") is not None:
        turn["nllm"] = step["llm_call_count"]
    if step.get("is_copied_context") is not None:
        turn["copied"] = step["is_copied_context"]
    if type(metrics) is dict:
        latency = latency_from(metrics)
        if latency is not None:
            turn["latency_ms"] = latency
        ttft = ttft_from(metrics)
        if ttft is not None:
            turn["ttft_ms"] = ttft
    if step.get("extra") is not None:
        turn["extra"] = step["extra"]
    return turn


def _forward_call(call: dict[str, Any], ptr: str, norm: str, fields: dict, counts: dict) -> dict[str, Any]:
    _capture(call, CALL_KEYS, ptr, norm, fields, counts)
    out: dict[str, Any] = {
        "tcid": call["tool_call_id"],
        "fn": call["function_name"],
        "args": call["arguments"],
    }
    if call.get("result") is not None:
        out["result"] = call["result"]
    extra = call.get("extra")
    if type(extra) is dict and type(extra.get("duration_ms")) is int:
        out["duration_ms"] = extra["duration_ms"]  # floats are not promoted; the whole extra stays below
    if extra is not None:
        out["extra"] = extra
    return out


# -- reverse: Storyline → ATIF ----------------------------------------------------------------------


def reverse(stories: list[dict[str, Any]]) -> dict[str, Any] | list[dict[str, Any]]:
    """Storylines → ATIF: the subagent trees are rebuilt from `children`; one root gives one object."""
    by_id = {story.get("trajectory") or story["session"]: story for story in stories}
    child_ids = {child for story in stories for child in story.get("children", ())}
    docs = []
    for story in stories:
        if (story.get("trajectory") or story["session"]) in child_ids:
            continue
        fields: dict[str, Any] = {}
        doc = _reverse_node(story, by_id, fields)
        for pointer, value in fields.items():
            _restore(doc, pointer, value)
        docs.append(doc)
    return docs[0] if len(docs) == 1 else docs


def _reverse_node(story: dict[str, Any], by_id: dict[str, dict], fields: dict[str, Any]) -> dict[str, Any]:
    origin = story.get("origin") or {}
    atif_version = origin.get("schema_version") if origin.get("format") == "atif" else None
    node: dict[str, Any] = {"schema_version": atif_version or "ATIF-v1.7", "session_id": story["session"]}
    if "trajectory" in story:
        node["trajectory_id"] = story["trajectory"]
    agent = story["agent"]
    node["agent"] = {"name": agent.get("name", agent["id"]), "version": agent.get("ver", "unknown")}
    for key, atif_key in (("model", "model_name"), ("tools", "tool_definitions"), ("extra", "extra")):
        if key in agent:
            node["agent"][atif_key] = agent[key]
    node["steps"] = [_reverse_turn(turn) for turn in story["turns"]]
    for key in ("notes", "final_metrics", "continued_trajectory_ref", "extra"):
        if key in story:
            node[key] = story[key]
    if story.get("children"):
        node["subagent_trajectories"] = [_reverse_node(by_id[c], by_id, fields) for c in story["children"]]
    atif = story.get("unknown_fields", {}).get("sources", {}).get("atif")
    if atif:
        fields.update(atif["fields"])
    return node


def _reverse_turn(turn: dict[str, Any]) -> dict[str, Any]:
    step: dict[str, Any] = {"step_id": turn["id"]}
    ts = turn.get("ts")
    if ts is not None:
        step["timestamp"] = ts if type(ts) is str else epoch_to_rfc3339(ts)
    step["source"] = turn["src"]
    step["message"] = turn["msg"]
    for key, atif_key in (
        ("model", "model_name"),
        ("reason", "reasoning_content"),
        ("effort", "reasoning_effort"),
    ):
        if key in turn:
            step[atif_key] = turn[key]
    if "tool_calls" in turn:
        step["tool_calls"] = [_reverse_call(call) for call in turn["tool_calls"]]
    if "observation" in turn:
        step["observation"] = dict(turn["observation"])  # a copy: unknown keys are restored into it
    metrics = _reverse_metrics(turn)
    if metrics is not None:
        step["metrics"] = metrics
    for key, atif_key in (("extra", "extra"), ("nllm", "llm_call_count"), ("copied", "is_copied_context")):
        if key in turn:
            step[atif_key] = turn[key]
    return step


def _reverse_metrics(turn: dict[str, Any]) -> Any:
    """`metrics`, with `latency_ms`/`ttft_ms` written back only where forward would not derive them again."""
    metrics = turn.get("metrics")
    latency, ttft = turn.get("latency_ms"), turn.get("ttft_ms")
    if latency is None and ttft is None:
        return metrics
    if metrics is None:
        metrics = {}
    elif type(metrics) is not dict:
        return metrics  # nowhere to put them
    if latency is not None and latency_from(metrics) != latency:
        metrics = {**metrics, "latency_ms": latency}
    if ttft is not None and ttft_from(metrics) != ttft:
        metrics = {**metrics, "ttft_ms": ttft}
    return metrics


def _reverse_call(call: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "tool_call_id": call["tcid"],
        "function_name": call["fn"],
        "arguments": call["args"],
    }
    if "result" in call:
        out["result"] = call["result"]
    extra = call.get("extra")
    duration = call.get("duration_ms")
    if duration is not None and not (type(extra) is dict and extra.get("duration_ms") == duration):
        extra = {**extra, "duration_ms": duration} if type(extra) is dict else {"duration_ms": duration}
    if extra is not None:
        out["extra"] = extra
    return out


def _restore(doc: dict[str, Any], pointer: str, value: Any) -> None:
    """Put an unknown key back at its raw pointer; refuse to overwrite a different canonical value."""
    tokens = [unescape(t) for t in pointer[1:].split("/")]
    node: Any = doc
    for token in tokens[:-1]:
        node = node[int(token)] if type(node) is list else node[token]
    key = tokens[-1]
    if key in node and node[key] != value:
        raise ValueError(f"{pointer}: unknown field collides with a mapped value")
    node[key] = value


def epoch_to_rfc3339(seconds: int | float) -> str:
    """A numeric Storyline timestamp as RFC3339 UTC, fraction in groups of 3/6/9 digits (chrono AutoSi)."""
    # The shortest repr of a float is what Storyline validated as nanosecond-exact, so use its digits.
    total = int(Decimal(repr(seconds)) * 1_000_000_000)
    whole, nanos = divmod(total, 1_000_000_000)
    text = datetime.fromtimestamp(whole, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    if nanos and nanos % 1_000_000 == 0:
        text += f".{nanos // 1_000_000:03d}"
    elif nanos and nanos % 1_000 == 0:
        text += f".{nanos // 1_000:06d}"
    elif nanos:
        text += f".{nanos:09d}"
    return text + "Z"


# -- bytes in, bytes out: what the benchmark times ------------------------------------------------


def forward_bytes(data: bytes) -> bytes:
    """ATIF JSON (one trajectory or an array of them) → Storyline JSON (one object, else an array)."""
    value = orjson.loads(data)
    docs = value if type(value) is list else [value]
    stories = [story for doc in docs for story in forward(doc)]
    return orjson.dumps(stories[0] if len(stories) == 1 else stories)


def reverse_bytes(data: bytes) -> bytes:
    """Storyline JSON (one object or an array) → ATIF JSON (one object, else an array)."""
    value = orjson.loads(data)
    return orjson.dumps(reverse(value if type(value) is list else [value]))
