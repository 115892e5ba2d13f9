"""store/rows.py: Storyline → the three Arrow tables of §4 → Storyline, exactly."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import storyline_documents

from mapc.engine import convert, storyline
from mapc.engine.serialize import dumps
from mapc.store import rows

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "fixtures"
FIXTURE_FILES = sorted(
    (fmt.name, path)
    for fmt in FIXTURES.iterdir()
    if fmt.is_dir() and fmt.name in convert.formats()
    for path in sorted(fmt.iterdir())
    # legacy-*: a file mapc must refuse (tests/formats/test_agenticmd.py); a directory (a Claude Code
    # session's subagents) is read with the session file beside it, not alone; a README says where the
    # fixtures come from; a .py is the script that wrote a fixture
    if not path.name.startswith("legacy-")
    and path.is_file()
    and path.suffix != ".py"
    and (path.name != "README.md" or fmt.name == "agenticmd")
)


def round_trip(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    tables = rows.split(docs)
    return rows.rebuild(tables.runs, tables.steps, tables.tool_calls)


def assert_exact(docs: list[dict[str, Any]]) -> None:
    back = round_trip(docs)
    assert [dumps(d) for d in back] == [dumps(d) for d in docs]


def base(**root: Any) -> dict[str, Any]:
    doc = {"schema_version": "storyline/v1", "session": "s1", "agent": {"id": "a"}, "turns": []}
    doc.update(root)
    assert storyline.check(doc) == [], storyline.check(doc)
    return doc


# --- the layout --------------------------------------------------------------------------------------


def test_runs_columns_are_those_of_reference_section_4():
    assert rows.RUNS_SCHEMA.names == [
        "schema_version",
        "origin_json",
        "document_id",
        "storage_ordinal",
        "trajectory_id_explicit",
        "run_id",
        "attempt_id",
        "session_id",
        "agent_id",
        "agent_name",
        "agent_version",
        "agent_model_name",
        "agent_tool_definitions_json",
        "agent_extra_json",
        "parent_json",
        "child_session_ids_json",
        "notes",
        "final_metrics_json",
        "continued_trajectory_ref",
        "extra_json",
        "meta_json",
        "unknown_fields_json",
        "unknown_key_counts_json",
        "task_json",
        "started_at_json",
        "finished_at_json",
        "prompt_json",
    ]
    required = {f.name for f in rows.RUNS_SCHEMA if not f.nullable}
    assert required == {
        "schema_version",
        "document_id",
        "storage_ordinal",
        "trajectory_id_explicit",
        "session_id",
        "agent_id",
    }


def test_steps_and_tool_calls_types_and_nullability():
    steps = {f.name: f for f in rows.STEPS_SCHEMA}
    assert steps["timestamp"].type == pa.timestamp("ns", tz="UTC") and steps["timestamp"].nullable
    assert not steps["message_json"].nullable  # `msg: null` is the text "null"
    assert not steps["turn_ordinal"].nullable and steps["turn_ordinal"].type == pa.int64()
    for name in ("had_tool_calls", "had_observation"):
        assert steps[name].type == pa.bool_() and not steps[name].nullable
    calls = {f.name: f for f in rows.TOOL_CALLS_SCHEMA}
    assert not calls["results_json"].nullable and not calls["arguments_json"].nullable
    assert calls["result_json"].nullable and calls["call_index"].type == pa.int64()
    assert list(calls) == [
        "document_id",
        "run_id",
        "session_id",
        "step_id",
        "call_index",
        "tool_call_id",
        "function_name",
        "arguments_json",
        "result_json",
        "results_json",
        "duration_ms",
        "extra_json",
        "kind",
        "response_json",
    ]


# --- exact round trips ---------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(storyline_documents())
def test_hypothesis_documents_round_trip_exactly(doc):
    assert_exact([doc])


@st.composite
def documents_with_results(draw: st.DrawFn) -> dict[str, Any]:
    """Documents whose observations name their calls, sometimes twice, sometimes by tool_call_id."""
    doc = draw(storyline_documents())
    for turn in doc["turns"]:
        calls = turn.get("tool_calls") or []
        if not calls or not draw(st.booleans()):
            continue
        results = []
        for call in calls:
            key = draw(st.sampled_from(["source_call_id", "tool_call_id"]))
            for n in range(draw(st.integers(0, 2))):
                results.append({key: call["tcid"], "content": f"r{n}"})
        results.append({"source_call_id": "nobody", "content": None})
        turn["observation"] = {"results": draw(st.permutations(results))}
    return doc


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents_with_results())
def test_observation_results_round_trip_and_derive(doc):
    tables = rows.split([doc])
    for call, results in zip(
        tables.tool_calls.column("tool_call_id").to_pylist(),
        tables.tool_calls.column("results_json").to_pylist(),
        strict=True,
    ):
        for item in orjson.loads(results):
            assert item.get("source_call_id", item.get("tool_call_id")) == call
    assert_exact([doc])


@pytest.mark.parametrize(("fmt", "path"), FIXTURE_FILES, ids=[f"{f}/{p.name}" for f, p in FIXTURE_FILES])
def test_every_shared_fixture_round_trips_exactly(fmt, path):
    stories = convert.into_storyline(fmt, path.read_bytes(), jsonl=path.suffix in (".jsonl", ".ndjson"))
    assert_exact(stories)


def test_several_documents_keep_their_order():
    docs = [base(session=f"s{i}", turns=[{"id": i, "src": "user", "msg": i}]) for i in (3, 1, 2)]
    tables = rows.split(docs, first_ordinal=10)
    assert tables.runs.column("storage_ordinal").to_pylist() == [10, 11, 12]
    # Rows given in another physical order come back in storage order.
    shuffled = rows.rebuild(tables.runs.take([2, 0, 1]), tables.steps.take([1, 2, 0]), tables.tool_calls)
    assert [d["session"] for d in shuffled] == ["s3", "s1", "s2"]


# --- the cases the issue names --------------------------------------------------------------------------


def test_turn_ids_out_of_order_are_kept_in_array_order():
    doc = base(
        turns=[
            {"id": 7, "src": "user", "msg": "a"},
            {"id": -2, "src": "agent", "msg": "b"},
            {"id": 3, "src": "agent", "msg": "c"},
        ]
    )
    tables = rows.split([doc])
    assert tables.steps.column("step_id").to_pylist() == [7, -2, 3]
    assert tables.steps.column("turn_ordinal").to_pylist() == [0, 1, 2]
    reversed_rows = tables.steps.take([2, 1, 0])
    back = rows.rebuild(tables.runs, reversed_rows, tables.tool_calls)
    assert [t["id"] for t in back[0]["turns"]] == [7, -2, 3]
    assert_exact([doc])


def test_empty_tool_calls_differs_from_absent():
    doc = base(turns=[{"id": 1, "src": "agent", "msg": "x", "tool_calls": []}, {"id": 2, "src": "agent", "msg": "y"}])
    tables = rows.split([doc])
    assert tables.steps.column("had_tool_calls").to_pylist() == [True, False]
    back = round_trip([doc])[0]
    assert back["turns"][0]["tool_calls"] == [] and "tool_calls" not in back["turns"][1]
    assert_exact([doc])


def test_duplicate_observation_results_stay_and_both_go_to_results_json():
    result = {"source_call_id": "c1", "content": "same"}
    doc = base(
        turns=[
            {
                "id": 1,
                "src": "agent",
                "msg": None,
                "tool_calls": [
                    {"tcid": "c1", "fn": "f", "args": {"b": 1, "a": 2}},
                    {"tcid": "c2", "fn": "g", "args": None},
                ],
                "observation": {"results": [result, result, {"tool_call_id": "c2", "x": 1}]},
            }
        ]
    )
    tables = rows.split([doc])
    assert tables.tool_calls.column("results_json").to_pylist() == [
        '[{"content":"same","source_call_id":"c1"},{"content":"same","source_call_id":"c1"}]',
        '[{"tool_call_id":"c2","x":1}]',
    ]
    assert tables.tool_calls.column("arguments_json").to_pylist() == ['{"a":2,"b":1}', "null"]
    assert tables.steps.column("message_json").to_pylist() == ["null"]
    assert_exact([doc])


@pytest.mark.parametrize(
    ("ts", "source_json", "ns"),
    [
        ("2026-08-20 00:00:00.5+02:00", '"2026-08-20 00:00:00.5+02:00"', 1787176800500000000),
        (1785578400.25, "1785578400.25", 1785578400250000000),
        (0, "0", 0),
        (-1, "-1", -1_000_000_000),
    ],
)
def test_timestamps_are_kept_verbatim(ts, source_json, ns):
    doc = base(started_at=ts, turns=[{"id": 1, "src": "user", "msg": "", "ts": ts, "finished_at": ts}])
    tables = rows.split([doc])
    assert tables.steps.column("timestamp_source_json").to_pylist() == [source_json]
    assert tables.steps.column("timestamp").cast(pa.int64()).to_pylist() == [ns]
    assert tables.steps.column("finished_at_json").to_pylist() == [source_json]
    assert tables.runs.column("started_at_json").to_pylist() == [source_json]
    back = round_trip([doc])[0]
    assert type(back["turns"][0]["ts"]) is type(ts) and back["turns"][0]["ts"] == ts
    assert_exact([doc])


def test_unknown_fields_and_counts():
    fields = {"/vendor~1x": {"b": 1, "a": [1.5, None]}}
    doc = base(
        unknown_fields={"sources": {"vendor": {"source_document_id": "d", "fields": fields}}},
        unknown_key_counts={"vendor": {"/vendor~1x": 1}},
    )
    tables = rows.split([doc])
    assert orjson.loads(tables.runs.column("unknown_fields_json")[0].as_py()) == doc["unknown_fields"]
    assert_exact([doc])
    empty = base(
        unknown_fields={"sources": {"vendor": {"source_document_id": "d", "fields": {}}}},
        unknown_key_counts={},
    )
    tables = rows.split([empty])
    assert tables.runs.column("unknown_fields_json").to_pylist() == [None]  # null when empty
    assert tables.runs.column("unknown_key_counts_json").to_pylist() == [None]
    assert_exact([empty])


@pytest.mark.parametrize(
    ("root", "document_id", "explicit"),
    [
        ({}, "s1", False),
        ({"trajectory": "t1"}, "t1", True),
        ({"trajectory": "s1"}, "s1", True),
        ({"trajectory": None}, "s1", False),
    ],
)
def test_trajectory_present_or_absent(root, document_id, explicit):
    doc = base(**root)
    tables = rows.split([doc])
    assert tables.runs.column("document_id").to_pylist() == [document_id]
    assert tables.runs.column("trajectory_id_explicit").to_pylist() == [explicit]
    assert ("trajectory" in round_trip([doc])[0]) is explicit
    assert_exact([doc])


def test_explicit_kind_and_effective_kind():
    call = {"tcid": "c", "fn": "f", "args": {}}
    doc = base(
        turns=[
            {"id": 1, "src": "agent", "msg": "", "tool_calls": [call]},
            {"id": 2, "src": "system", "msg": ""},
            {"id": 3, "src": "agent", "msg": "", "kind": "dialogue", "tool_calls": [dict(call, tcid="d")]},
            {"id": 4, "src": "tool", "msg": "", "kind": ""},
        ]
    )
    tables = rows.split([doc])
    assert tables.steps.column("kind").to_pylist() == [None, None, "dialogue", ""]
    assert tables.steps.column("effective_kind").to_pylist() == ["autonomous", "internal", "dialogue", ""]
    back = round_trip([doc])[0]
    assert ["kind" in t for t in back["turns"]] == [False, False, True, True]
    assert_exact([doc])


def test_json_cells_are_canonical():
    doc = base(
        origin={"document_id": "x", "format": "f"},
        parent={"rel": "handoff", "psid": "p"},
        extra={"z": 1, "a": {"y": 2, "b": 3}},
        turns=[
            {
                "id": 1,
                "src": "user",
                "msg": {"k": 1, "c": 2},
                "env": {"state": {"b": 1, "a": 2}, "name": "n"},
                "extra": None,
            }
        ],
    )
    tables = rows.split([doc])
    runs = tables.runs.to_pylist()[0]
    assert runs["origin_json"] == '{"format":"f","document_id":"x"}'  # declaration order
    assert runs["parent_json"] == '{"psid":"p","rel":"handoff"}'
    assert runs["extra_json"] == '{"a":{"b":3,"y":2},"z":1}'  # free JSON: sorted keys
    step = tables.steps.to_pylist()[0]
    assert step["message_json"] == '{"c":2,"k":1}'
    assert step["env_json"] == '{"name":"n","state":{"a":2,"b":1}}'
    assert step["extra_json"] is None  # `extra: null` is absent
    assert_exact([doc])


def test_split_does_not_change_its_input():
    doc = base(extra={"b": 1, "a": 2}, turns=[{"id": 1, "src": "user", "msg": {"z": 0, "y": 1}}])
    before = copy.deepcopy(doc)
    rows.split([doc])
    assert orjson.dumps(doc) == orjson.dumps(before)


def _cell(value: Any) -> str | None:
    return None if value is None else orjson.dumps(value).decode()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents_with_results())
def test_every_json_cell_is_the_dump_of_its_part_of_the_canonical_storyline(doc):
    """The split reads the turns as they are (orjson sorts the free values' keys, the engine shapes the owned
    objects); each cell must still be exactly the compact dump of its part of `canonical_storyline(doc)`."""
    from mapc.engine.serialize import canonical_storyline

    canon = canonical_storyline(doc)
    tables = rows.split([doc])
    steps = tables.steps.drop_columns(["timestamp"]).to_pylist()
    for turn, row in zip(canon["turns"], steps, strict=True):
        assert row["message_json"] == orjson.dumps(turn["msg"]).decode()
        for column, key in (
            ("reasoning_effort_json", "effort"),
            ("metrics_json", "metrics"),
            ("observation_json", "observation"),
            ("extra_json", "extra"),
            ("env_json", "env"),
            ("prompt_json", "prompt"),
            ("timestamp_source_json", "ts"),
            ("finished_at_json", "finished_at"),
        ):
            assert row[column] == _cell(turn.get(key)), column
    calls = [(t, c) for t in canon["turns"] for c in t.get("tool_calls") or []]
    for (turn, call), row in zip(calls, tables.tool_calls.to_pylist(), strict=True):
        assert row["arguments_json"] == orjson.dumps(call["args"]).decode()
        assert row["result_json"] == _cell(call.get("result"))
        assert row["extra_json"] == _cell(call.get("extra"))
        assert row["response_json"] == _cell(call.get("response"))
        results = rows.results_by_call(turn.get("observation")).get(call["tcid"], [])
        assert row["results_json"] == orjson.dumps(results).decode()
    assert tables.runs.to_pylist()[0]["task_json"] == _cell(canon.get("task"))
