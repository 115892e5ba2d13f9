"""store/events.py: EventRecord checks, events.lance rows, projection, degraded synthesis (docs/formats.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lance
import orjson
import pyarrow as pa
import pytest

from mapc.engine import storyline
from mapc.engine.problems import MapcError
from mapc.store import events

T0 = 1767225600000  # 2026-01-01T00:00:00Z in ms


def ev(seq: int, kind: str, payload: Any = None, **fields: Any) -> dict[str, Any]:
    record: dict[str, Any] = {"seq": seq, "source": "proxy", "kind": kind}
    record.setdefault("timestamp_unix_ms", T0 + 1000 * seq)
    record.update(fields)
    record["payload"] = {} if payload is None else payload
    return record


def request(seq: int, call_id: str, text: str, **fields: Any) -> dict[str, Any]:
    body = {
        "model": "m-1",
        "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": text}],
    }
    fields.setdefault("session_id", "sess")
    return ev(seq, "http.request", {"http": {"method": "POST", "request_body": body}}, call_id=call_id, **fields)


def response(seq: int, call_id: str, text: str, **fields: Any) -> dict[str, Any]:
    body = {"choices": [{"message": {"role": "assistant", "content": text}}], "usage": {"total_tokens": seq}}
    fields.setdefault("session_id", "sess")
    return ev(seq, "http.response", {"http": {"status": 200, "response_body": body}}, call_id=call_id, **fields)


def codes(records: Any) -> list[tuple[str, str]]:
    return [(p.code, p.pointer) for p in events.record_problems(records)]


# --- record checks (E-1, identity, item 9) ------------------------------------------------------------


def test_a_good_record_has_no_problem():
    assert events.record_problems(request(0, "c", "hi")) == []
    assert events.record_problems(ev(0, "note", None, timestamp="2026-01-01T00:00:00Z")) == []


@pytest.mark.parametrize("key", ["seq", "source", "kind", "payload"])
def test_required_keys(key):
    record = ev(0, "note")
    del record[key]
    assert ("events.missing_field", f"/{key}") in codes(record)


def test_payload_null_is_present():
    assert codes(ev(0, "note", None) | {"payload": None}) == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"source": "  "}, ("events.blank", "/source")),
        ({"kind": ""}, ("events.blank", "/kind")),
        ({"kind": 3}, ("events.bad_type", "/kind")),
        ({"seq": -1}, ("events.bad_type", "/seq")),
        ({"seq": 1.0}, ("events.bad_type", "/seq")),
        ({"seq": True}, ("events.bad_type", "/seq")),
        ({"seq": 2**63}, ("events.seq_range", "/seq")),
        ({"call_id": 7}, ("events.bad_type", "/call_id")),
        ({"timestamp": "2026-01-01T00:00:00"}, ("events.bad_timestamp", "/timestamp")),
        ({"timestamp_unix_ms": -5}, ("events.bad_type", "/timestamp_unix_ms")),
        (
            {"timestamp": "2026-01-01T00:00:01Z", "timestamp_unix_ms": T0},
            ("events.timestamp_conflict", "/timestamp_unix_ms"),
        ),
        ({"timestamp_unix_ms": None}, ("events.missing_timestamp", "")),
    ],
)
def test_record_problems(change, expected):
    assert expected in codes(ev(0, "note") | change)


def test_timestamps_agree_to_the_millisecond():
    # 999 µs past the second is still the same millisecond as timestamp_unix_ms (floor).
    assert codes(ev(0, "note", timestamp="2026-01-01T00:00:00.000999Z", timestamp_unix_ms=T0)) == []


def test_jsonl_errors_carry_their_line():
    data = b'{"seq":0,"source":"s","kind":"k","payload":{},"timestamp_unix_ms":0}\n\n{"seq":1}\nnot json\n'
    with pytest.raises(MapcError) as err:
        events.parse_jsonl(data)
    found = [(p.line, p.code) for p in err.value.problems]
    assert (3, "events.missing_field") in found and (4, "json.invalid") in found
    assert all(line != 1 for line, _ in found)


# --- events.lance rows -----------------------------------------------------------------------------------


def test_append_and_read_back_in_append_order(tmp_path):
    path = tmp_path / "events.lance"
    first = [request(5, "c1", "hi", agent_id="a", trace_id="t"), response(2, "c1", "yo")]
    assert events.append(path, first) == 1
    assert events.append(path, [ev(1, "note", {"model": "m"}, session_id="sess")]) == 2  # append-only
    table = lance.dataset(str(path)).to_table()
    assert table.schema.equals(events._event_schema())
    assert table.column("seq").to_pylist() == [5, 2, 1]  # as the producer gave it, not re-sorted
    assert table.column("timestamp").cast(pa.int64()).to_pylist() == [T0 + 5000, T0 + 2000, T0 + 1000]
    assert table.column("model").to_pylist() == [None, None, "m"]
    assert orjson.loads(table.column("payload_json")[0].as_py()) == first[0]
    assert events.read_records(path) == [*first, ev(1, "note", {"model": "m"}, session_id="sess")]


def test_append_checks_every_record_and_writes_nothing_on_error(tmp_path):
    path = tmp_path / "events.lance"
    with pytest.raises(MapcError) as err:
        events.append(path, [ev(0, "note"), ev(1, " ")])
    assert [(p.code, p.pointer) for p in err.value.problems] == [("events.blank", "/1/kind")]
    assert not (path / "_versions").exists()


def test_timestamp_column_comes_from_the_text_when_unix_ms_is_absent(tmp_path):
    path = tmp_path / "events.lance"
    record = ev(0, "note", timestamp="1969-12-31T23:59:59.5Z")
    del record["timestamp_unix_ms"]
    events.append(path, [record])
    assert lance.dataset(str(path)).to_table().column("timestamp").cast(pa.int64()).to_pylist() == [-500]


def rewrite(path: Path, column: str, value: Any) -> None:
    table = lance.dataset(str(path)).to_table()
    index = table.schema.get_field_index(column)
    field = table.schema.field(index)
    table = table.set_column(index, field, pa.array([value] * table.num_rows, type=field.type))
    lance.write_dataset(table, str(path), schema=table.schema, mode="overwrite")


def test_physical_session_and_agent_columns_win(tmp_path):
    path = tmp_path / "events.lance"
    events.append(path, [request(0, "c", "hi", agent_id="claimed")])
    rewrite(path, "session_id", "routed")
    rewrite(path, "agent_id", None)
    [record] = events.read_records(path)
    assert record["session_id"] == "routed" and "agent_id" not in record
    assert orjson.loads(lance.dataset(str(path)).to_table().column("payload_json")[0].as_py())["agent_id"] == "claimed"


@pytest.mark.parametrize(
    ("column", "value"), [("seq", 9), ("kind", "other"), ("call_id", None), ("model", "x"), ("timestamp", 0)]
)
def test_a_column_that_disagrees_with_payload_json_fails_closed(tmp_path, column, value):
    path = tmp_path / "events.lance"
    events.append(path, [request(0, "c", "hi")])
    rewrite(path, column, value)
    with pytest.raises(MapcError) as err:
        events.read_records(path)
    assert [(p.code, p.pointer) for p in err.value.problems] == [
        ("events.row_mismatch", f"events[row=0, seq={value if column == 'seq' else 0}].{column}")
    ]


# --- projection, one test per rule (docs/formats.md, Events) ------------------------------------------


def test_rule_session_is_the_last_non_empty_of_session_storyline_run():
    by_session = [
        request(0, "c", "a", session_id="s-old"),
        response(1, "c", "b", session_id="s-new", storyline_id="x"),
    ]
    assert events.project_records(by_session)["session"] == "s-new"
    by_storyline = [response(0, "c", "b", session_id="", storyline_id="story", run_id="r")]
    assert events.project_records(by_storyline)["session"] == "story"
    by_run = [response(0, "c", "b", session_id=None, run_id="r")]
    assert events.project_records(by_run)["session"] == "r"
    with pytest.raises(MapcError) as err:
        events.project_records([response(0, "c", "b", session_id="")])
    assert err.value.problems[0].code == "events.no_session"


def test_rule_run_differing_from_session_gives_run_and_parent():
    story = events.project_records([response(0, "c", "b", run_id="r1"), response(1, "d", "e", run_id="r2")])
    assert story["run"] == "r2" and story["parent"] == {"psid": "r2", "rel": "spawn"}
    same = events.project_records([response(0, "c", "b", session_id="s", run_id="s")])
    assert "run" not in same and "parent" not in same


def test_rule_grouping_by_call_id_in_order_of_first_appearance():
    records = [
        request(0, "B", "q-b"),
        request(1, "A", "q-a"),
        response(2, "A", "r-a"),
        response(3, "B", "r-b"),
    ]
    story = events.project_records(records)
    assert [(t["src"], t["msg"], t["extra"]["call_id"]) for t in story["turns"]] == [
        ("user", "q-b", "B"),
        ("agent", "r-b", "B"),
        ("user", "q-a", "A"),
        ("agent", "r-a", "A"),
    ]
    assert [t["extra"]["seq"] for t in story["turns"]] == [0, 3, 1, 2]


def test_rule_user_and_assistant_text_from_wire_bodies_first():
    req = request(0, "c", "from the wire")
    req["payload"]["user_content"] = "summary says otherwise"
    resp = response(1, "c", "wire answer")
    resp["payload"]["assistant_content"] = "summary answer"
    story = events.project_records([req, resp])
    assert [t["msg"] for t in story["turns"]] == ["from the wire", "wire answer"]
    assert story["turns"][1]["extra"]["request_messages"] == req["payload"]["http"]["request_body"]["messages"]


def test_rule_summaries_are_the_fallback():
    req = ev(0, "llm.request", {"user_content": "summary q"}, session_id="s", call_id="c")
    resp = ev(1, "llm.response", {"assistant_content": "summary a"}, session_id="s", call_id="c")
    assert [t["msg"] for t in events.project_records([req, resp])["turns"]] == ["summary q", "summary a"]


@pytest.mark.parametrize(
    ("payload", "text"),
    [
        ({"body": {"choices": [{"message": {"content": "flat legacy"}}]}}, "flat legacy"),
        ({"http": {"response_body": '{"choices":[{"message":{"content":"json text"}}]}'}}, "json text"),
        (
            {
                "http": {
                    "response_body": 'data: {"choices":[{"delta":{"content":"str"}}]}\n\n'
                    'data: {"choices":[{"delta":{"content":"eam"}}]}\n\ndata: [DONE]\n'
                }
            },
            "stream",
        ),
        (
            {"http": {"response_body": {"type": "message", "content": [{"type": "text", "text": "claude"}]}}},
            "claude",
        ),
        ({"choices": [{"message": {"content": [{"type": "text", "text": "pa"}, {"text": "rts"}]}}]}, "parts"),
        ({"content": "bare"}, "bare"),
    ],
    ids=["flat body", "json text body", "sse", "anthropic", "content parts", "bare content"],
)
def test_rule_assistant_text_shapes(payload, text):
    assert events.extract_assistant(payload) == text


def test_rule_one_turn_when_only_one_text_exists():
    only_request = events.project_records([request(0, "c", "just asking")])
    assert [(t["src"], t["kind"], t["msg"]) for t in only_request["turns"]] == [("user", "llm.request", "just asking")]
    nothing = events.project_records([ev(0, "http.response", {"http": {"status": 500}}, session_id="s", call_id="c")])
    [turn] = nothing["turns"]
    assert (turn["src"], turn["kind"], turn["msg"], turn["nllm"]) == ("agent", "llm.response", "", 1)
    assert turn["extra"] == {"call_id": "c", "request_messages": None, "seq": 0, "degraded": True}


def test_rule_metrics_latency_ttft_and_model():
    req, resp = request(0, "c", "q"), response(3, "c", "a")
    story = events.project_records([req, resp])
    user, agent = story["turns"]
    assert agent["metrics"] == {"total_tokens": 3} and agent["model"] == "m-1"
    assert agent["latency_ms"] == 3000 and "ttft_ms" not in agent  # response time − request time
    assert "latency_ms" not in user and "metrics" not in user
    resp["payload"].update(latency_ms=42, ttft_ms=7)
    agent = events.project_records([req, resp])["turns"][1]
    assert (agent["latency_ms"], agent["ttft_ms"]) == (42, 7)  # the payload's own numbers win
    timing = response(3, "c", "a")
    timing["payload"]["timing"] = {"duration_ms": 11, "ttft_ms": 5}
    agent = events.project_records([req, timing])["turns"][1]
    assert (agent["latency_ms"], agent["ttft_ms"]) == (11, 5)


def test_rule_orphan_session_and_note_events_become_system_turns_after_the_calls():
    records = [
        ev(0, "session.started", {"who": "me"}, session_id="s"),
        ev(1, "http.request", {}, session_id="s"),  # an orphan of another kind: dropped
        request(2, "c", "q", session_id="s"),
        response(3, "c", "a", session_id="s"),
        ev(4, "note", "remember", session_id="s"),
    ]
    story = events.project_records(records)
    assert [t["src"] for t in story["turns"]] == ["user", "agent", "system", "system"]
    first = story["turns"][2]
    assert first == {
        "id": 3,
        "kind": "internal",
        "ts": "2026-01-01T00:00:00.000Z",
        "src": "system",
        "msg": {"kind": "session.started", "payload": {"who": "me"}},
        "extra": {"seq": 0, "event_seq": 0},
    }


def test_rule_turn_ids_origin_agent_and_millisecond_timestamps():
    records = [request(0, "c", "q", agent_id="a1"), response(1, "c", "a", agent_id="")]
    records[1]["timestamp_unix_ms"] = T0 + 1234
    story = events.project_records(records)
    assert [t["id"] for t in story["turns"]] == [1, 2]
    assert story["origin"] == {"format": "canonical-event"}
    assert story["agent"] == {"id": "a1", "name": "a1"}  # the last non-empty agent_id
    assert [t["ts"] for t in story["turns"]] == ["2026-01-01T00:00:00.000Z", "2026-01-01T00:00:01.234Z"]
    assert storyline.check(story) == []
    assert events.project_records([response(0, "c", "a")])["agent"]["id"] == "unknown"


def test_rule_timestamp_conflict_is_an_error():
    bad = response(0, "c", "a", timestamp="2026-01-01T00:00:05Z")
    with pytest.raises(MapcError) as err:
        events.project_records([bad])
    assert err.value.problems[0].code == "events.timestamp_conflict"


def test_project_groups_records_by_session():
    records = [
        request(0, "c", "q1", session_id="s1"),
        request(1, "d", "q2", session_id="s2"),
        response(2, "c", "a1", session_id="s1"),
    ]
    stories = events.project(records)
    assert [s["session"] for s in stories] == ["s1", "s2"]
    assert [len(s["turns"]) for s in stories] == [2, 1]
    assert [s["session"] for s in events.project(records, session="s2")] == ["s2"]
    with pytest.raises(MapcError) as err:
        events.project(records, session="nope")
    assert err.value.problems[0].code == "events.not_found"


# --- synthesis: Storyline → events (degraded) ---------------------------------------------------------


def dialogue() -> dict[str, Any]:
    doc = {
        "schema_version": "storyline/v1",
        "session": "sess",
        "agent": {"id": "bot"},
        "started_at": "2026-01-01T00:00:00Z",
        "turns": [
            {"id": 1, "src": "system", "msg": {"note": "boot"}},
            {"id": 2, "src": "user", "msg": "hello", "ts": 1767225601},
            {
                "id": 3,
                "src": "agent",
                "msg": [{"type": "text", "text": "hi "}, {"text": "there"}],
                "metrics": {"tokens": 3},
                "latency_ms": 9,
                "extra": {"seq": 10},
            },
            {
                "id": 4,
                "src": "agent",
                "msg": "alone",
                "extra": {"call_id": "X", "request_messages": [{"role": "user"}]},
            },
            {"id": 5, "src": "user", "msg": "bye", "kind": "http.request"},
        ],
    }
    assert storyline.check(doc) == []
    return doc


def test_synthesis_is_degraded_and_from_pchronicle():
    records = events.synthesize(dialogue())
    assert all(events.record_problems(r) == [] for r in records)
    assert {r["source"] for r in records} == {"pchronicle"}
    assert [r["kind"] for r in records] == [
        "note",
        "llm.request",
        "llm.response",
        "llm.request",
        "llm.response",
        "http.request",
    ]
    assert all(r["payload"]["degraded"] is True for r in records if r["kind"] != "note")
    assert records[0]["payload"] == {"note": "boot"}  # a note is not an HTTP record
    assert all((r["session_id"], r["agent_id"]) == ("sess", "bot") for r in records)


def test_synthesis_seq_call_ids_and_times():
    records = events.synthesize(dialogue())
    assert [r["seq"] for r in records] == [0, 1, 10, 11, 12, 13]  # extra.seq wins, allocation continues
    assert [r.get("call_id") for r in records] == [None, "turn-2", "turn-2", "X", "X", "turn-5"]
    assert records[1]["timestamp"] == "2026-01-01T00:00:01Z" and records[1]["timestamp_unix_ms"] == T0 + 1000
    assert records[0]["timestamp"] == "2026-01-01T00:00:00Z"  # no ts: started_at
    assert records[2]["timestamp_unix_ms"] == T0 + 1000  # no ts: the previous event's time
    assert records[2]["payload"]["choices"][0]["message"]["content"] == "hi there"
    assert records[3]["payload"]["messages"] == [{"role": "user"}]


def test_synthesize_then_project_keeps_the_dialogue(tmp_path):
    path = tmp_path / "events.lance"
    events.append(path, events.synthesize(dialogue()))
    [story] = events.project(events.read_records(path))
    assert [(t["src"], t["msg"]) for t in story["turns"]] == [
        ("user", "hello"),
        ("agent", "hi there"),
        ("agent", "alone"),
        ("user", "bye"),
        ("system", {"kind": "note", "payload": {"note": "boot"}}),
    ]
    assert story["turns"][1]["metrics"] == {"tokens": 3} and story["turns"][1]["latency_ms"] == 9


# --- idempotent append (issue 19 §4) ------------------------------------------------------------------


def test_admit_skips_a_stored_event_id_with_the_same_record(tmp_path):
    path = tmp_path / "events.lance"
    batch = [request(0, "c", "hi", event_id="e0"), response(1, "c", "yo", event_id="e1"), ev(2, "note")]
    first = events.admit(path, batch)
    assert (first.appended, first.skipped) == (3, 0)
    again = events.admit(path, batch)
    assert (again.appended, again.skipped) == (1, 2)  # the legacy note has no id: appended as it is
    assert again.version == first.version + 1
    assert lance.dataset(str(path)).count_rows() == 4
    only_ids = events.admit(path, batch[:2])
    assert (only_ids.appended, only_ids.skipped, only_ids.version) == (0, 2, again.version)  # no commit


def test_admit_skips_repeats_inside_one_batch_and_keys_order_does_not_matter(tmp_path):
    path = tmp_path / "events.lance"
    record = request(0, "c", "hi", event_id="e0")
    reordered = dict(reversed(list(record.items())))
    done = events.admit(path, [record, reordered])
    assert (done.appended, done.skipped) == (1, 1)


def test_admit_refuses_an_event_id_with_another_record_and_writes_nothing(tmp_path):
    path = tmp_path / "events.lance"
    events.admit(path, [request(0, "c", "hi", event_id="e0")])
    with pytest.raises(MapcError) as err:
        events.admit(path, [ev(5, "note", session_id="s"), request(0, "c", "changed", event_id="e0")], lines=[3, 7])
    [problem] = err.value.problems
    assert (problem.code, problem.pointer, problem.line) == ("events.event_id_conflict", "/event_id", 7)
    assert lance.dataset(str(path)).count_rows() == 1
    with pytest.raises(MapcError) as err:
        events.admit(tmp_path / "other.lance", [ev(0, "note", event_id="x"), ev(1, "note", event_id="x")])
    assert [(p.code, p.pointer) for p in err.value.problems] == [("events.event_id_conflict", "/1/event_id")]


def test_projection_ignores_exact_repeats_of_legacy_records():
    records = [request(0, "c", "hi"), response(1, "c", "yo")]
    once = events.project_records(records)
    assert events.project_records(records + records) == once
    assert events.distinct([ev(0, "note"), ev(0, "note"), ev(1, "note")]) == [ev(0, "note"), ev(1, "note")]
