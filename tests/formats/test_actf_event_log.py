"""The OpenClaw event-log variant of an ACTF trajectory (docs/formats.md, ACTF): accepted, lossy."""

from __future__ import annotations

import orjson

from mapc.engine import convert, storyline


def _events() -> list[dict]:
    def message(i: int, role: str, content: object, **extra: object) -> dict:
        return {
            "type": "message",
            "id": f"m{i}",
            "timestamp": f"2026-02-06T07:49:0{i}.000Z",
            "message": {"role": role, "content": content, **extra},
        }

    return [
        {"type": "session", "id": "s", "timestamp": "2026-02-06T07:49:00.000Z"},
        message(1, "user", [{"type": "text", "text": "list files"}]),
        message(
            2,
            "assistant",
            [
                {"type": "thinking", "thinking": "use ls"},
                {"type": "toolCall", "id": "t1", "name": "exec", "arguments": {"cmd": "ls"}},
            ],
        ),
        message(3, "toolResult", [{"type": "text", "text": "a b"}], toolCallId="t1", isError=False),
        message(4, "assistant", "done"),
    ]


def _document(trajectory: object) -> bytes:
    attempt = {"correct": True, "trajectory": trajectory}
    doc = {
        "task_id": "oc",
        "category": "c",
        "k": 1,
        "correct": True,
        "attempts_tried": 1,
        "solved_at": None,
        "attempts": {"1": attempt},
    }
    return orjson.dumps(doc)


def test_each_assistant_message_is_a_turn_and_tool_results_fold_into_its_calls():
    (story,) = convert.into_storyline("actf", _document(_events()))
    assert storyline.check(story) == []
    first, second = story["turns"]
    assert (first["ts"], first["reason"], first["kind"]) == ("2026-02-06T07:49:02.000Z", "use ls", "autonomous")
    (call,) = first["tool_calls"]
    assert (call["tcid"], call["fn"], call["args"], call["result"]) == ("t1", "exec", {"cmd": "ls"}, "a b")
    assert first["observation"]["results"][0]["source_call_id"] == "t1"
    assert second["msg"] == "done" and "tool_calls" not in second
    assert story["prompt"] == {"user": "list files"}
    assert (story["started_at"], story["finished_at"]) == ("2026-02-06T07:49:00.000Z", "2026-02-06T07:49:04.000Z")


def test_the_variant_is_lossy_the_export_is_the_canonical_trajectory():
    stories = convert.into_storyline("actf", _document(_events()))
    exported = convert.from_storyline("actf", stories)
    trajectory = exported["attempts"]["1"]["trajectory"]
    assert isinstance(trajectory, dict) and trajectory["schema_version"] == "ACTF_v1.0"
    assert [s["step_id"] for s in trajectory["steps"]] == [1, 2]
    assert "unknown_fields" not in stories[0]  # the events are not kept


def test_an_empty_event_log_is_rejected_like_an_empty_trajectory():
    import pytest

    from mapc.engine.problems import MapcError

    with pytest.raises(MapcError) as info:
        convert.into_storyline("actf", _document([]))
    assert any(p.code == "check.nonempty_any" for p in info.value.problems)
