"""cli/events.py: mapc events append, project and synthesize."""

from __future__ import annotations

import json
from pathlib import Path

from mapc.cli.main import cli

ATIF = Path(__file__).resolve().parents[1] / "data" / "fixtures" / "atif"

RECORDS = [
    {
        "seq": 0,
        "source": "proxy",
        "kind": "session.started",
        "timestamp": "2026-01-01T00:00:00Z",
        "session_id": "sess-1",
        "agent_id": "agent-a",
        "payload": {},
    },
    {
        "seq": 1,
        "source": "proxy",
        "kind": "http.request",
        "timestamp": "2026-01-01T00:00:01Z",
        "timestamp_unix_ms": 1767225601000,
        "session_id": "sess-1",
        "agent_id": "agent-a",
        "call_id": "c1",
        "payload": {
            "http": {
                "method": "POST",
                "headers": {},
                "request_body": {"model": "gpt-4o", "messages": [{"role": "user", "content": "ping"}]},
            }
        },
    },
    {
        "seq": 2,
        "source": "proxy",
        "kind": "http.response",
        "timestamp": "2026-01-01T00:00:02.5Z",
        "session_id": "sess-1",
        "agent_id": "agent-a",
        "call_id": "c1",
        "payload": {
            "http": {
                "status": 200,
                "headers": {},
                "response_body": {"choices": [{"message": {"content": "pong"}}]},
            }
        },
    },
]


def jsonl(path: Path, records: list[object]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def test_append_then_project_to_storyline_and_atif(tmp_path, runner):
    table = tmp_path / "events.lance"
    result = runner.invoke(cli, ["events", "append", jsonl(tmp_path / "e.jsonl", RECORDS), "--to", str(table)])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"appended 3 events to {table}\n"
    result = runner.invoke(cli, ["events", "project", str(table)])
    assert result.exit_code == 0, result.output
    story = json.loads(result.stdout)
    assert story["origin"] == {"format": "canonical-event"} and story["session"] == "sess-1"
    assert [(t["id"], t["src"], t["msg"]) for t in story["turns"]] == [
        (1, "user", "ping"),
        (2, "agent", "pong"),
        (3, "system", {"kind": "session.started", "payload": {}}),
    ]
    out = tmp_path / "t.json"
    result = runner.invoke(cli, ["events", "project", str(table), "--to", "atif", "-o", str(out)])
    assert result.exit_code == 0, result.output
    atif = json.loads(out.read_text())
    assert [s["message"] for s in atif["steps"]][:2] == ["ping", "pong"]


def test_append_reports_each_bad_line_and_appends_nothing(tmp_path, runner):
    table = tmp_path / "events.lance"
    bad = [
        RECORDS[0],
        {"seq": 1, "source": "", "kind": "k", "payload": 1, "timestamp_unix_ms": 0},
        {**RECORDS[1], "timestamp_unix_ms": 5},
    ]
    path = jsonl(tmp_path / "bad.jsonl", bad)
    result = runner.invoke(cli, ["events", "append", path, "--to", str(table)])
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"{path}: line 2: /source: source must not be blank [events.blank]",
        f"{path}: line 3: /timestamp_unix_ms: timestamp_unix_ms 5 disagrees with timestamp "
        '"2026-01-01T00:00:01Z" (1767225601000 ms) [events.timestamp_conflict]',
    ]
    assert not table.exists()


def test_project_a_missing_table_is_a_usage_error(tmp_path, runner):
    assert runner.invoke(cli, ["events", "project", str(tmp_path / "none.lance")]).exit_code == 2
    (tmp_path / "empty.lance").mkdir()
    result = runner.invoke(cli, ["events", "project", str(tmp_path / "empty.lance")])
    assert result.exit_code == 1 and "[events.not_a_table]" in result.stderr


def test_synthesize_then_project(tmp_path, runner):
    table = tmp_path / "events.lance"
    source = tmp_path / "story.json"
    assert runner.invoke(cli, ["run", "atif", str(ATIF / "dialogue_10.json"), "-o", str(source)]).exit_code == 0
    result = runner.invoke(cli, ["events", "synthesize", str(source), "--to", str(table)])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("appended ") and result.stdout.endswith(f" events to {table}\n")
    projected = json.loads(runner.invoke(cli, ["events", "project", str(table)]).stdout)
    original = json.loads(source.read_text())
    assert projected["session"] == original["session"]
    dialogue = [t["msg"] for t in original["turns"] if t["src"] != "system"]
    notes = [{"kind": "note", "payload": t["msg"]} for t in original["turns"] if t["src"] == "system"]
    assert [t["msg"] for t in projected["turns"]] == dialogue + notes  # orphan notes come after the calls


def test_a_second_append_of_the_same_file_leaves_the_projection_unchanged(tmp_path, runner):
    with_ids = [{**r, "event_id": f"ev-{i}", "producer": "test"} for i, r in enumerate(RECORDS)]
    for records in (with_ids, RECORDS):  # new writers (event_id) and legacy ones
        source = jsonl(tmp_path / "e.jsonl", records)
        target = tmp_path / f"{len(records[0])}.lance"
        assert runner.invoke(cli, ["events", "append", source, "--to", str(target)]).exit_code == 0
        before = runner.invoke(cli, ["events", "project", str(target)]).stdout
        result = runner.invoke(cli, ["events", "append", source, "--to", str(target)])
        assert result.exit_code == 0, result.output
        if records is with_ids:
            assert result.stdout == f"appended 0 events to {target} (3 already stored, skipped)\n"
        assert runner.invoke(cli, ["events", "project", str(target)]).stdout == before
        assert len(json.loads(before)["turns"]) == 3


def test_append_refuses_a_changed_record_under_a_stored_event_id(tmp_path, runner):
    table = tmp_path / "events.lance"
    first = jsonl(tmp_path / "a.jsonl", [{**RECORDS[0], "event_id": "x"}])
    assert runner.invoke(cli, ["events", "append", first, "--to", str(table)]).exit_code == 0
    second = jsonl(tmp_path / "b.jsonl", [RECORDS[1], {**RECORDS[0], "event_id": "x", "seq": 9}])
    result = runner.invoke(cli, ["events", "append", second, "--to", str(table)])
    assert result.exit_code == 1
    assert result.stderr.startswith(f'{second}: line 2: /event_id: event_id "x" is already stored')
    assert "[events.event_id_conflict]" in result.stderr


def test_append_help_states_what_the_rfc_requires(runner):
    text = " ".join(runner.invoke(cli, ["events", "append", "--help"]).stdout.split())
    for word in ("seq", "source", "kind", "payload", "event_id", "timestamp_unix_ms", "producer"):
        assert word in text
    assert "already stored with the same content is skipped" in text


WIRE = Path(__file__).resolve().parents[1] / "data" / "events"


def test_project_warns_of_a_history_fork_and_still_projects(tmp_path, runner):
    def exchange(seq: int, call_id: str, messages: list[object], text: str) -> list[dict[str, object]]:
        base = {"source": "proxy", "session_id": "s", "call_id": call_id, "timestamp_unix_ms": seq}
        request = {"http": {"path": "/v1/messages", "request_body": {"messages": messages}}}
        reply = {"type": "message", "role": "assistant", "content": [{"type": "text", "text": text}]}
        return [
            {**base, "seq": seq, "kind": "http.request", "payload": request},
            {**base, "seq": seq + 1, "kind": "http.response", "payload": {"http": {"response_body": reply}}},
        ]

    hi = {"role": "user", "content": "hi"}
    records = exchange(0, "a", [hi], "yo") + exchange(2, "b", [hi, {"role": "assistant", "content": "YO!"}, hi], "ok")
    table = tmp_path / "events.lance"
    assert (
        runner.invoke(cli, ["events", "append", jsonl(tmp_path / "e.jsonl", records), "--to", str(table)]).exit_code
        == 0
    )
    result = runner.invoke(cli, ["events", "project", str(table)])
    assert result.exit_code == 0, result.output
    [line] = result.stderr.splitlines()
    assert line.startswith(f'warning: {table}: events[session="s", call_id="b"]/payload/http/request_body/messages/1: ')
    assert line.endswith("[events.history_fork]")
    assert [t["msg"] for t in json.loads(result.stdout)["turns"]] == ["hi", "yo", "YO!", "hi", "ok"]


def test_the_recorded_anthropic_set_projects_to_atif_with_its_tool_call_and_result(tmp_path, runner):
    table = tmp_path / "events.lance"
    source = str(WIRE / "anthropic-tool-use.events.jsonl")
    assert runner.invoke(cli, ["events", "append", source, "--to", str(table)]).exit_code == 0
    result = runner.invoke(cli, ["events", "project", str(table), "--to", "atif"])
    assert result.exit_code == 0, result.output
    steps = json.loads(result.stdout)["steps"]
    assert [s["source"] for s in steps] == ["user", "agent", "agent"]
    assert steps[1]["tool_calls"][0]["function_name"] == "get_weather"
    assert steps[1]["observation"]["results"][0]["content"] == "15 degrees, mostly sunny"
