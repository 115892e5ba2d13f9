"""A stored event never breaks a later read (issue 14 §4).

`events append` refuses what the projection could not read (a time past what a timestamp holds, a
record nested too deeply), with the line and the pointer; and the projection is total: a stored row
it cannot interpret — written by an older mapc or another tool — is reported and skipped, never a
crash, and the other events still project.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mapc.cli.main import cli
from mapc.engine.problems import MapcError
from mapc.store import events

T0 = 1767225600000


def record(seq: int, **fields: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"seq": seq, "source": "proxy", "kind": "note", "session_id": "s", "timestamp_unix_ms": T0}
    out.update(fields)
    out.setdefault("payload", {"n": seq})
    return out


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"x": value}
    return value


def jsonl(path: Path, records: list[Any]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def raw_table(path: Path, records: list[dict[str, Any]]) -> None:
    """Rows written as another tool (or an older mapc) would: no check, stdlib JSON for any depth."""
    columns: dict[str, list[Any]] = {name: [] for name in events._event_schema().names}
    for r in records:
        columns["seq"].append(r["seq"])
        columns["timestamp"].append(r["timestamp_unix_ms"])
        for name in ("event_id", "agent_id", "session_id", "call_id", "trace_id", "parent_call_id", "model"):
            columns[name].append(r.get(name))
        columns["kind"].append(r["kind"])
        columns["source"].append(r["source"])
        columns["payload_json"].append(json.dumps(r))
    schema = events._event_schema()
    table = pa.Table.from_arrays([pa.array(columns[f.name], type=f.type) for f in schema], schema=schema)
    lance.write_dataset(table, str(path), schema=schema)


def test_append_refuses_a_time_past_what_a_timestamp_holds(tmp_path, runner):
    file = jsonl(tmp_path / "in.jsonl", [record(0), record(1, timestamp_unix_ms=9223372036854775000)])
    result = runner.invoke(cli, ["events", "append", file, "--to", str(tmp_path / "e.lance")])
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines() == [
        f"{file}: line 2: /timestamp_unix_ms: 9223372036854775000 ms is after the last instant a timestamp "
        f"holds ({events.MAX_MS} ms, in the year 2262) [events.timestamp_range]"
    ]
    assert not (tmp_path / "e.lance").exists()


def test_the_last_instant_appends_and_projects(tmp_path, runner):
    file = jsonl(tmp_path / "in.jsonl", [record(0, timestamp_unix_ms=events.MAX_MS)])
    assert runner.invoke(cli, ["events", "append", file, "--to", str(tmp_path / "e.lance")]).exit_code == 0
    result = runner.invoke(cli, ["events", "project", str(tmp_path / "e.lance")])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["turns"][0]["ts"] == "2262-04-11T23:47:16.854Z"


def test_append_refuses_a_record_nested_too_deeply_naming_where(tmp_path, runner):
    file = jsonl(tmp_path / "in.jsonl", [record(0, payload=nested(600))])
    result = runner.invoke(cli, ["events", "append", file, "--to", str(tmp_path / "e.lance")])
    assert result.exit_code == 1, result.output
    pointer = "/payload" + "/x" * (events.MAX_DEPTH - 1)
    assert result.stderr.splitlines() == [
        f"{file}: line 1: {pointer}: the record is nested more than {events.MAX_DEPTH} levels deep [events.too_deep]"
    ]


def test_a_record_at_the_depth_limit_appends_and_projects_to_every_format(tmp_path, runner):
    deep = nested(events.MAX_DEPTH - 1)  # the record is one level more
    file = jsonl(tmp_path / "in.jsonl", [record(0, payload=deep)])
    table = str(tmp_path / "e.lance")
    assert runner.invoke(cli, ["events", "append", file, "--to", table]).exit_code == 0
    result = runner.invoke(cli, ["events", "project", table])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["turns"][0]["msg"]["payload"] == deep
    for fmt in ("atif", "actf"):
        out = runner.invoke(cli, ["events", "project", table, "--to", fmt])
        assert out.exit_code in (0, 1), out.output
        assert "Traceback" not in out.output


def test_project_reports_and_skips_rows_it_cannot_read(tmp_path, runner):
    table = tmp_path / "e.lance"
    raw_table(
        table,
        [
            record(0, session_id="good"),
            record(1, session_id="good", timestamp_unix_ms=9223372036854775000),
            record(2, session_id="good", payload=nested(600)),
            record(3, session_id="other"),
        ],
    )
    result = runner.invoke(cli, ["events", "project", str(table), "-o", str(tmp_path / "out.json")])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    lines = result.stderr.splitlines()
    assert [line.split(" [")[-1] for line in lines] == ["events.bad_record]", "events.bad_record]"]
    assert "row=1, seq=1" in lines[0] and "events.timestamp_range" in lines[0]
    assert "row=2, seq=2" in lines[1] and "events.too_deep" in lines[1]
    projected = json.loads((tmp_path / "out.json").read_bytes())
    assert [(s["session"], [t["msg"]["payload"] for t in s["turns"]]) for s in projected] == [
        ("good", [{"n": 0}]),
        ("other", [{"n": 3}]),
    ]


def test_reading_still_fails_closed_for_library_callers(tmp_path):
    table = tmp_path / "e.lance"
    raw_table(table, [record(0), record(1, timestamp_unix_ms=9223372036854775000)])
    try:
        events.read_records(table)
    except MapcError as exc:
        assert [p.code for p in exc.problems] == ["events.bad_record"]
    else:
        raise AssertionError("read_records accepted a row it cannot project")
    skipped: list[Any] = []
    assert [r["seq"] for r in events.read_records(table, skipped=skipped)] == [0]
    assert len(skipped) == 1


_json = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**63), max_value=2**64) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8,
)
_field = st.sampled_from(["seq", "kind", "source", "call_id", "session_id", "timestamp", "payload", "run_id"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(changes=st.lists(st.tuples(st.integers(0, 3), _field, _json), max_size=6))
def test_projection_is_total_over_any_record(changes):
    """Records of any shape (as any tool could store them): projection reports or projects, never raises else."""
    records = [record(i, call_id="c" if i % 2 else None) for i in range(4)]
    for index, key, value in changes:
        records[index][key] = value
    skipped: list[Any] = []
    try:
        events.project(records, skipped=skipped)
    except MapcError as exc:
        assert exc.problems


def test_append_refuses_a_record_that_repeats_a_key_unless_allowed(tmp_path, runner):
    """A repeated key would be stored with one of its two values lost; refused like any input (issue 14 §7)."""
    file = tmp_path / "in.jsonl"
    file.write_text(json.dumps(record(0)) + "\n" + json.dumps(record(1))[:-1] + ', "kind": "other"}\n')
    result = runner.invoke(cli, ["events", "append", str(file), "--to", str(tmp_path / "e.lance")])
    assert result.exit_code == 1, result.output
    assert "line 2: /kind" in result.stderr and "[json.duplicate_key]" in result.stderr
    assert not (tmp_path / "e.lance").exists()
    allowed = runner.invoke(
        cli, ["--allow-duplicate-keys", "events", "append", str(file), "--to", str(tmp_path / "e.lance")]
    )
    assert allowed.exit_code == 0, allowed.output
