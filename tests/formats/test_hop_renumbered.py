"""A hop that renumbers turns: a session log written back in place keys its records on turn ids.

openai-msg numbers turns from its rows (two per row), so two agent turns in a row come back with
other ids. The way back to claude-code then found its records' turns moved and refused the
Storyline (`export.edited`), while provenance, which had tried the hop without A's residuals,
believed a few values were enough (found by the hop law over generated sessions)."""

from __future__ import annotations

from typing import Any

import orjson
from claude_strategies import SESSION
from test_hops import hop_in, hop_out, without_source

import mapc


def _rec(n: int, kind: str, message: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {
        "parentUuid": f"u{n - 1}" if n > 1 else None,
        "isSidechain": False,
        "sessionId": SESSION,
        "version": "2.1.39",
        "type": kind,
        "message": message,
        "uuid": f"u{n}",
        "timestamp": f"2026-02-11T20:00:0{n}.000Z",
        **more,
    }


def _call(n: int, *calls: str) -> dict[str, Any]:
    content = [{"type": "tool_use", "id": c, "name": "Bash", "input": {"command": "ls"}} for c in calls]
    return _rec(n, "assistant", {"id": f"m{n}", "type": "message", "role": "assistant", "content": content})


def _result(n: int, *calls: str, text: str = "ok") -> dict[str, Any]:
    content = [{"tool_use_id": c, "type": "tool_result", "content": text} for c in calls]
    return _rec(n, "user", {"role": "user", "content": content})


SESSION_RECORDS = [
    _rec(1, "user", {"role": "user", "content": "go"}),
    _call(2, "c1", "c2"),
    _result(3, "c1", "c2"),
    _call(4, "c3"),  # a second agent turn straight after the first: no user turn between them
    _result(5, "c3"),
    _rec(6, "user", {"role": "user", "content": "and now?"}),
    _rec(7, "assistant", {"id": "m7", "role": "assistant", "content": [{"type": "text", "text": "ok"}]}),
    _result(8, "c-late", text="late"),  # a result answering no call, after the last answer
]


def test_consecutive_agent_turns_renumbered_by_openai_msg_still_come_back() -> None:
    data = b"".join(orjson.dumps(r) + b"\n" for r in SESSION_RECORDS)
    stories = mapc.into_storyline("claude-code", data)
    hopped = hop_in("openai-msg", hop_out("openai-msg", stories))
    assert [t["id"] for t in hopped[0]["turns"]] != [t["id"] for t in stories[0]["turns"]]  # renumbered
    back = orjson.loads(orjson.dumps(mapc.from_storyline("claude-code", hopped)))
    assert without_source(back, "openai-msg") == SESSION_RECORDS
