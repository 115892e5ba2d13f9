"""Hypothesis sessions of the Claude Code transcript format (`claude-code`).

`sessions()` draws a session file as Claude Code writes one, in every shape the checked versions
and the public notes allow, and what a newer version may add:

- user text (a string, or a list of text blocks), meta user records, interrupted-by-user text;
- assistant API messages split into one record per content block (text, thinking with a
  signature, tool_use with `caller`), or several blocks in one record; the message's usage on
  every record (cache creation and cache read tokens, `server_tool_use`, nulls);
- tool results: one record per result or several in one record, string or block content,
  `is_error`, `toolUseResult`; parallel calls whose results are siblings in the tree; results that
  answer no call (an orphan);
- threading: uuid/parentUuid chains, an abandoned branch (an edited message), sidechain records,
  a compaction (a compact_boundary system record with a null parentUuid and a logicalParentUuid,
  then the isCompactSummary user record);
- progress (hook / bash / agent), stop_hook_summary and turn_duration system records,
  file-history-snapshot and queue-operation records (no uuid);
- older versions: a `summary` record, sidechain records in the session file (one record, or a Task
  subagent's whole chain: its own root, replies, a call and its result, all `isSidechain: true`),
  a user record mixing a late tool_result with the interruption text;
- drift: record types and keys no checked version writes, at the top and inside messages,
  another version string, null values.

`subagent()` draws a subagent transcript (agentId on every record, sidechain).
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

TEXT = st.text(alphabet="abcdefgh ijk\n", min_size=1, max_size=10)
SESSION = "0b0c0d0e-0000-4000-8000-000000000001"
UNKNOWN_KEY = st.sampled_from(["futureKey", "x/slash", "x~tilde", "0"])
DEEP = st.recursive(st.one_of(st.none(), st.integers(-5, 5), TEXT), lambda s: st.lists(s, max_size=2), max_leaves=4)


class Ids:
    """Sequential uuids (distinct per session)."""

    def __init__(self, prefix: str) -> None:
        self.prefix, self.n = prefix, 0

    def __call__(self) -> str:
        self.n += 1
        return f"{self.prefix}-{self.n:04d}-4000-8000-000000000000"


def _base(draw: Any, ids: Ids, parent: str | None, kind: str, agent: str | None, version: str) -> dict[str, Any]:
    record: dict[str, Any] = {
        "parentUuid": parent,
        "isSidechain": agent is not None,
        "userType": "external",
        "cwd": "/home/USER/project",
        "sessionId": SESSION,
        "version": version,
        "gitBranch": draw(st.sampled_from(["main", ""])),
    }
    if agent is not None:
        record["agentId"] = agent
    if draw(st.booleans()):
        record["slug"] = "quiet-drawing-turtle"
    record["type"] = kind
    return record


def _close(draw: Any, record: dict[str, Any], ids: Ids, ts: list[int]) -> dict[str, Any]:
    ts[0] += draw(st.integers(1, 5000))
    s, ms = divmod(ts[0], 1000)
    record["uuid"] = ids()
    record["timestamp"] = f"2026-02-11T20:{(s // 60) % 60:02d}:{s % 60:02d}.{ms:03d}Z"
    if draw(st.integers(0, 9)) == 0:
        record[draw(UNKNOWN_KEY)] = draw(DEEP)  # a key of a newer version
    return record


def _usage(draw: Any) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "input_tokens": draw(st.integers(0, 50)),
        "cache_creation_input_tokens": draw(st.integers(0, 900)),
        "cache_read_input_tokens": draw(st.integers(0, 9000)),
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": draw(st.integers(0, 9))},
        "output_tokens": draw(st.integers(0, 500)),
        "service_tier": draw(st.sampled_from(["standard", None])),
    }
    if draw(st.booleans()):
        usage["server_tool_use"] = {"web_search_requests": 0, "web_fetch_requests": 0}
    if draw(st.integers(0, 5)) == 0:
        usage = {k: v for k, v in usage.items() if k != "cache_read_input_tokens"}  # an older shape
    return usage


@st.composite
def _session(draw: Any, agent: str | None = None) -> list[dict[str, Any]]:
    ids = Ids("a" if agent is None else "b")
    version = draw(st.sampled_from(["2.1.39", "2.1.39", "2.2.0"]))
    ts = [0]
    out: list[dict[str, Any]] = []
    parent: str | None = None
    if agent is None and draw(st.booleans()):
        out.append(
            {"type": "file-history-snapshot", "messageId": ids(), "snapshot": {"files": {}}, "isSnapshotUpdate": False}
        )
    if draw(st.booleans()):
        out.append(
            {
                "type": "queue-operation",
                "operation": "enqueue",
                "timestamp": "2026-02-11T20:00:00.000Z",
                "sessionId": SESSION,
            }
        )
    if agent is None and draw(st.integers(0, 4)) == 0:  # an older version's branch summary
        out.append({"type": "summary", "summary": draw(TEXT), "leafUuid": "a-9999-4000-8000-000000000000"})
    calls = 0
    for _ in range(draw(st.integers(1, 4))):
        shape = draw(
            st.sampled_from(
                [
                    "text",
                    "blocks",
                    "meta",
                    "compaction",
                    "branch",
                    "progress",
                    "unknown",
                    "system",
                    "sidechain",
                    "sidechain-chain",
                    "mixed",
                ]
            )
        )
        if shape == "compaction" and parent is not None:
            boundary = _base(draw, ids, None, "system", agent, version)
            boundary.update(
                {
                    "logicalParentUuid": parent,
                    "subtype": "compact_boundary",
                    "content": "Conversation compacted",
                    "isMeta": False,
                    "level": "info",
                    "compactMetadata": {"trigger": "auto", "preTokens": 100},
                }
            )
            out.append(_close(draw, boundary, ids, ts))
            parent = boundary["uuid"]
            summary = _base(draw, ids, parent, "user", agent, version)
            summary.update(
                {
                    "message": {"role": "user", "content": "This session is being continued: " + draw(TEXT)},
                    "isVisibleInTranscriptOnly": True,
                    "isCompactSummary": True,
                }
            )
            out.append(_close(draw, summary, ids, ts))
            parent = summary["uuid"]
            continue
        if shape == "branch" and parent is not None:  # an edited message: the old branch stays in the file
            old = _base(draw, ids, parent, "user", agent, version)
            old["message"] = {"role": "user", "content": draw(TEXT)}
            out.append(_close(draw, old, ids, ts))
            reply = _base(draw, ids, old["uuid"], "assistant", agent, version)
            reply.update(
                {
                    "message": {
                        "model": "claude-opus-4-6",
                        "id": f"msg_old{ids.n}",
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "text", "text": draw(TEXT)}],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": _usage(draw),
                    },
                    "requestId": "req_old",
                }
            )
            out.append(_close(draw, reply, ids, ts))
        if shape == "progress" and parent is not None:
            progress = _base(draw, ids, parent, "progress", agent, version)
            progress.update(
                {
                    "data": {"type": draw(st.sampled_from(["hook_progress", "bash_progress"])), "output": draw(TEXT)},
                    "parentToolUseID": "toolu_x",
                    "toolUseID": "toolu_x",
                }
            )
            out.append(_close(draw, progress, ids, ts))
            parent = progress["uuid"] if draw(st.booleans()) else parent
        if shape == "unknown":  # a record type of a newer version
            future = _base(draw, ids, parent, draw(st.sampled_from(["attachment", "x-future"])), agent, version)
            future["payload"] = draw(DEEP)
            out.append(_close(draw, future, ids, ts))
        if shape == "system" and parent is not None:
            hook = _base(draw, ids, parent, "system", agent, version)
            hook.update(
                {
                    "subtype": draw(st.sampled_from(["stop_hook_summary", "turn_duration"])),
                    "durationMs": 5,
                    "isMeta": False,
                }
            )
            out.append(_close(draw, hook, ids, ts))
        if shape == "sidechain" and parent is not None:  # an older version's sidechain, in the session file
            side = _base(draw, ids, parent, "user", "sidechain", version)
            side["message"] = {"role": "user", "content": draw(TEXT)}
            out.append(_close(draw, side, ids, ts))
        if shape == "sidechain-chain" and parent is not None and agent is None:
            out += _sidechain_chain(draw, ids, ts, version)
        user = _base(draw, ids, parent, "user", agent, version)
        content: Any = draw(TEXT) if shape != "blocks" else [{"type": "text", "text": draw(TEXT)}]
        if shape == "mixed" and calls:  # a late result with the user's interruption
            content = [
                {"type": "tool_result", "tool_use_id": f"toolu_{agent or 'm'}{calls}", "content": "late"},
                {"type": "text", "text": "[Request interrupted by user for tool use]"},
            ]
        user["message"] = {"role": "user", "content": content}
        if shape == "meta":
            user["isMeta"] = True
        out.append(_close(draw, user, ids, ts))
        parent = user["uuid"]
        for _ in range(draw(st.integers(0, 3))):  # API messages of the agent
            message_id = f"msg_{ids.n:04d}"
            usage = _usage(draw)
            blocks: list[dict[str, Any]] = []
            if draw(st.booleans()):
                blocks.append({"type": "thinking", "thinking": draw(TEXT), "signature": "sig"})
            if draw(st.booleans()):
                blocks.append({"type": "text", "text": draw(TEXT)})
            made = []
            for _ in range(draw(st.integers(0, 2))):
                calls += 1
                block = {
                    "type": "tool_use",
                    "id": f"toolu_{agent or 'm'}{calls}",
                    "name": draw(st.sampled_from(["Bash", "Read", "Task"])),
                    "input": {"command": draw(TEXT), "deep": draw(DEEP)},
                }
                if draw(st.booleans()):
                    block["caller"] = {"type": "direct"}
                blocks.append(block)
                made.append(block["id"])
            if not blocks:
                blocks.append({"type": "text", "text": draw(TEXT)})
            split = draw(st.booleans())
            groups = [[b] for b in blocks] if split else [blocks]
            owners = []
            for group in groups:
                rec = _base(draw, ids, parent, "assistant", agent, version)
                message = {
                    "model": draw(st.sampled_from(["claude-opus-4-6", "claude-sonnet-4-5"])),
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "content": group,
                    "stop_reason": draw(st.sampled_from([None, "tool_use", "end_turn"])),
                    "stop_sequence": None,
                    "usage": usage,
                }
                if draw(st.integers(0, 9)) == 0:
                    message[draw(UNKNOWN_KEY)] = draw(DEEP)
                rec.update({"message": message, "requestId": f"req_{message_id}"})
                out.append(_close(draw, rec, ids, ts))
                parent = rec["uuid"]
                owners.append(rec["uuid"])
            if not made:
                continue
            together = draw(st.booleans()) and len(made) > 1
            answers = [made] if together else [[m] for m in made]
            for n, group_ids in enumerate(answers):
                result = _base(
                    draw,
                    ids,
                    owners[min(n, len(owners) - 1)] if draw(st.booleans()) else parent,
                    "user",
                    agent,
                    version,
                )
                blocks_ = []
                for tid in group_ids:
                    b: dict[str, Any] = {
                        "tool_use_id": tid,
                        "type": "tool_result",
                        "content": draw(st.one_of(TEXT, st.just([{"type": "text", "text": "out"}]))),
                    }
                    if draw(st.booleans()):
                        b["is_error"] = draw(st.booleans())
                    blocks_.append(b)
                result.update(
                    {
                        "message": {"role": "user", "content": blocks_},
                        "toolUseResult": draw(st.one_of(TEXT, st.just({"stdout": "x", "stderr": ""}))),
                        "sourceToolAssistantUUID": owners[-1],
                    }
                )
                out.append(_close(draw, result, ids, ts))
                parent = result["uuid"]
        if draw(st.integers(0, 7)) == 0:  # a result that answers no call
            orphan = _base(draw, ids, parent, "user", agent, version)
            orphan["message"] = {
                "role": "user",
                "content": [{"tool_use_id": "toolu_gone", "type": "tool_result", "content": "late"}],
            }
            out.append(_close(draw, orphan, ids, ts))
            parent = orphan["uuid"]
    return out


def _sidechain_chain(draw: Any, ids: Ids, ts: list[int], version: str) -> list[dict[str, Any]]:
    """An older version's Task subagent inside the session file: its own chain (a root with a null
    parentUuid, the Task's prompt), every record `isSidechain: true` without an agentId, written
    between the main chain's records; a reply, maybe a tool call of its own and its result."""
    root = _base(draw, ids, None, "user", None, version)
    root.update({"isSidechain": True, "message": {"role": "user", "content": "Task: " + draw(TEXT)}})
    chain = [_close(draw, root, ids, ts)]
    for _ in range(draw(st.integers(1, 2))):
        reply = _base(draw, ids, chain[-1]["uuid"], "assistant", None, version)
        tid = f"toolu_side{ids.n}"
        content: list[Any] = [{"type": "text", "text": draw(TEXT)}]
        called = draw(st.booleans())
        if called:
            content = [{"type": "tool_use", "id": tid, "name": "Read", "input": {"path": draw(TEXT)}}]
        message = {
            "model": "claude-sonnet-4-5",
            "id": f"msg_side{ids.n}",
            "type": "message",
            "role": "assistant",
            "content": content,
            "stop_reason": None,
            "stop_sequence": None,
            "usage": _usage(draw),
        }
        reply.update({"isSidechain": True, "message": message, "requestId": f"req_side{ids.n}"})
        chain.append(_close(draw, reply, ids, ts))
        if called:
            result = _base(draw, ids, chain[-1]["uuid"], "user", None, version)
            block = {"tool_use_id": tid, "type": "tool_result", "content": draw(TEXT)}
            result.update({"isSidechain": True, "message": {"role": "user", "content": [block]}})
            chain.append(_close(draw, result, ids, ts))
    return chain


def sessions() -> Any:
    """A main session file's records."""
    return _session()


def subagent() -> Any:
    """A subagent transcript's records."""
    return _session(agent="a1b2c3d")
