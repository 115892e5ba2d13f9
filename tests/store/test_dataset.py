"""store/dataset.py: the three-table dataset: atomic imports, unique ids, locking, invariants on read."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import lance
import orjson
import pyarrow as pa
import pytest

from mapc.engine import convert, storyline
from mapc.engine.problems import MapcError
from mapc.engine.serialize import canonical_storyline, dumps
from mapc.engine.values import json_equal
from mapc.store import dataset, rows
from mapc.store.dataset import Source

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "fixtures"


def story(session: str, *, trajectory: str | None = None, calls: int = 2) -> dict[str, Any]:
    tool_calls = [{"tcid": f"{session}-c{i}", "fn": f"fn{i % 2}", "args": {"i": i}} for i in range(calls)]
    results = [{"source_call_id": c["tcid"], "content": "ok"} for c in tool_calls]
    doc: dict[str, Any] = {
        "schema_version": "storyline/v1",
        "session": session,
        "agent": {"id": "agent"},
        "turns": [
            {"id": 5, "src": "user", "msg": "hi", "ts": "2026-01-01T00:00:00Z"},
            {
                "id": 6,
                "src": "agent",
                "msg": None,
                "tool_calls": tool_calls,
                "observation": {"results": results},
            },
            {"id": 7, "src": "agent", "msg": "done", "ts": 1767225600.5},
        ],
    }
    if trajectory is not None:
        doc["trajectory"] = trajectory
    assert storyline.check(doc) == []
    return doc


def put(root: Path, *docs: dict[str, Any], file: str = "in.json") -> dataset.Stored:
    return dataset.store(root, [(Source(file, f"/{i}"), d) for i, d in enumerate(docs)])


def same(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> bool:
    return [dumps(x) for x in a] == [dumps(x) for x in b]


def latest(root: Path, name: str) -> lance.LanceDataset:
    return lance.dataset(str(root / f"{name}.lance"))


# --- storing and reading ----------------------------------------------------------------------------


def test_store_creates_then_appends_and_reads_back_exactly(tmp_path):
    root = tmp_path / "ds"
    first, second = story("s1", trajectory="t1"), story("s2")
    assert put(root, first) == dataset.Stored(1, 3, 2, {"runs": 1, "steps": 1, "tool_calls": 1})
    put(root, second)
    assert sorted(p.name for p in root.iterdir()) == [
        ".lock",
        "CURRENT",
        "runs.lance",
        "steps.lance",
        "tool_calls.lance",
    ]
    assert same(dataset.read(root), [first, second])
    assert latest(root, "runs").to_table().column("storage_ordinal").to_pylist() == [0, 1]
    assert same(dataset.read(root, session="s2"), [second])
    assert same(dataset.read(root, document="t1"), [first])
    with pytest.raises(MapcError) as err:
        dataset.read(root, document="s1")  # its id is the trajectory
    assert err.value.problems[0].code == "store.not_found"


@pytest.mark.parametrize("path", sorted((FIXTURES / "atif").glob("*.json")), ids=lambda p: p.name)
def test_fixtures_through_lance_and_every_format(tmp_path, path):
    stories = convert.into_storyline("atif", path.read_bytes())
    root = tmp_path / "ds"
    put(root, *stories, file=str(path))
    back = dataset.read(root)
    assert same(back, stories)
    # The store keeps the canonical Storyline (free JSON with sorted keys, as the reference writes it), so
    # what an export shows of key order (openai-chat's `arguments` text) is that of the canonical form.
    canonical = [canonical_storyline(s) for s in stories]
    for fmt in convert.formats():
        assert json_equal(exported(fmt, back), exported(fmt, canonical)), fmt


def exported(fmt, stories):
    """The export, or the codes of the problems it fails with (OpenAI rows cannot end with a user
    turn; an AgenticMD file holds one Storyline): the same either way for equal Storylines."""
    try:
        return json.loads(orjson.dumps(convert.from_storyline(fmt, stories)))
    except MapcError as exc:
        return sorted(p.code for p in exc.problems)


def test_a_directory_without_current_is_read_at_latest_and_adopted(tmp_path):
    root = tmp_path / "ds"
    root.mkdir()
    tables = rows.split([story("s1")])
    for name, table in tables.by_name().items():
        lance.write_dataset(table, str(root / f"{name}.lance"), schema=table.schema)
    assert same(dataset.read(root), [story("s1")])
    put(root, story("s2"))  # adopts the latest versions, then appends
    assert same(dataset.read(root), [story("s1"), story("s2")])
    assert dataset.read_current(root) == {"runs": 2, "steps": 2, "tool_calls": 2}


def test_reading_a_missing_or_empty_dataset(tmp_path):
    with pytest.raises(MapcError) as err:
        dataset.read(tmp_path / "nothing")
    assert err.value.problems[0].code == "store.not_a_dataset"
    (tmp_path / "empty").mkdir()
    with pytest.raises(MapcError) as err:
        dataset.read(tmp_path / "empty")
    assert err.value.problems[0].code == "store.not_a_dataset"


# --- unique document ids ----------------------------------------------------------------------------


def test_duplicate_within_one_import_names_both_inputs_and_writes_nothing(tmp_path):
    root = tmp_path / "ds"
    batches = [(Source("a.json"), story("s1")), (Source("b.json", "/3"), story("s1", calls=0))]
    with pytest.raises(dataset.LocatedError) as err:
        dataset.store(root, batches)
    [(file, problem)] = err.value.located
    assert (file, problem.code, problem.pointer) == ("b.json", "store.duplicate_document_id", "/3")
    assert '"s1"' in problem.message and "a.json" in problem.message
    assert not root.exists()


def test_duplicate_of_a_stored_document_writes_nothing(tmp_path):
    root = tmp_path / "ds"
    put(root, story("s1"))
    before = {name: latest(root, name).version for name in dataset.TABLES}
    with pytest.raises(dataset.LocatedError) as err:
        dataset.store(root, [(Source("new.json", "/0"), story("s2")), (Source("new.json", "/1"), story("s1"))])
    [(file, problem)] = err.value.located
    assert (file, problem.pointer, problem.code) == ("new.json", "/1", "store.duplicate_document_id")
    assert "already stored" in problem.message
    assert {name: latest(root, name).version for name in dataset.TABLES} == before
    assert same(dataset.read(root), [story("s1")])


def test_trajectory_and_session_share_the_id_space(tmp_path):
    root = tmp_path / "ds"
    put(root, story("x"))
    with pytest.raises(dataset.LocatedError):
        put(root, story("other", trajectory="x"))


# --- atomicity ---------------------------------------------------------------------------------------


def fail_on_table(monkeypatch: pytest.MonkeyPatch, failing: str) -> None:
    real = dataset._write_table

    def write(path: Path, table: pa.Table, *, exists: bool) -> int:
        if path.name == f"{failing}.lance":
            raise OSError(f"injected failure writing {path.name}")
        return real(path, table, exists=exists)

    monkeypatch.setattr(dataset, "_write_table", write)


def test_failure_on_the_third_table_rolls_back_the_first_two(tmp_path, monkeypatch):
    root = tmp_path / "ds"
    put(root, story("s1"))
    current = dataset.read_current(root)
    contents = {name: latest(root, name).to_table() for name in dataset.TABLES}
    fail_on_table(monkeypatch, "tool_calls")
    with pytest.raises(OSError, match="injected"):
        put(root, story("s2"))
    monkeypatch.undo()
    assert dataset.read_current(root) == current
    for name in dataset.TABLES:  # the latest version of every table holds the old rows again
        assert latest(root, name).to_table().equals(contents[name])
    assert latest(root, "runs").version > current["runs"]  # rolled back by a restore commit
    assert same(dataset.read(root), [story("s1")])
    put(root, story("s2"))  # and the import goes through afterwards
    assert same(dataset.read(root), [story("s1"), story("s2")])


def test_failure_while_creating_the_dataset_leaves_no_table(tmp_path, monkeypatch):
    root = tmp_path / "ds"
    fail_on_table(monkeypatch, "tool_calls")
    with pytest.raises(OSError, match="injected"):
        put(root, story("s1"))
    monkeypatch.undo()
    assert not any(p.suffix == ".lance" for p in root.iterdir())
    with pytest.raises(MapcError):
        dataset.read(root)
    put(root, story("s1"))
    assert same(dataset.read(root), [story("s1")])


def test_an_interrupted_import_is_invisible_and_undone_by_the_next_writer(tmp_path):
    root = tmp_path / "ds"
    put(root, story("s1"))
    # A writer that died after committing runs and steps, before CURRENT:
    orphan = rows.split([story("s2")], first_ordinal=1)
    lance.write_dataset(orphan.runs, str(root / "runs.lance"), mode="append")
    lance.write_dataset(orphan.steps, str(root / "steps.lance"), mode="append")
    assert same(dataset.read(root), [story("s1")])  # readers follow CURRENT
    put(root, story("s3"))
    assert same(dataset.read(root), [story("s1"), story("s3")])
    assert latest(root, "runs").to_table().column("document_id").to_pylist() == ["s1", "s3"]


# --- concurrency ---------------------------------------------------------------------------------------

WORKER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from mapc.store import dataset
    root, tag, n, go = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
    (go.parent / f"ready-{tag}").touch()
    deadline = time.monotonic() + 60
    while not go.exists() and time.monotonic() < deadline:
        time.sleep(0.005)
    for i in range(n):
        doc = {"schema_version": "storyline/v1", "session": f"{tag}-{i}", "agent": {"id": tag},
               "turns": [{"id": 1, "src": "agent", "msg": i,
                          "tool_calls": [{"tcid": f"{tag}-{i}", "fn": "f", "args": None}]}]}
        dataset.store(root, [(dataset.Source(tag, f"/{i}"), doc)])
    """
)


def test_two_processes_appending_at_once_lose_no_rows(tmp_path):
    root, go, n = tmp_path / "ds", tmp_path / "go", 6
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(root), tag, str(n), str(go)]) for tag in ("a", "b")]
    try:
        for tag in ("a", "b"):
            for _ in range(6000):
                if (tmp_path / f"ready-{tag}").exists():
                    break
                subprocess.run(["sleep", "0.01"], check=True)
        go.touch()
        assert [p.wait(timeout=300) for p in procs] == [0, 0]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    docs = dataset.read(root)
    assert sorted(d["session"] for d in docs) == sorted(f"{t}-{i}" for t in "ab" for i in range(n))
    runs = latest(root, "runs").to_table()
    assert sorted(runs.column("storage_ordinal").to_pylist()) == list(range(2 * n))
    assert latest(root, "tool_calls").count_rows() == 2 * n


# --- invariants on read ----------------------------------------------------------------------------------


@pytest.fixture
def good(tmp_path) -> Path:
    root = tmp_path / "ds"
    put(root, story("s1", trajectory="t1"))
    return root


def corrupt(root: Path, name: str, change: Callable[[pa.Table], pa.Table]) -> None:
    """Rewrite one table with lance directly, and point readers at it (no CURRENT: latest)."""
    table = change(latest(root, name).to_table())
    lance.write_dataset(table, str(root / f"{name}.lance"), schema=table.schema, mode="overwrite")
    (root / "CURRENT").unlink()


def set_cell(column: str, row: int, value: Any) -> Callable[[pa.Table], pa.Table]:
    def change(table: pa.Table) -> pa.Table:
        index = table.schema.get_field_index(column)
        values = table.column(column).to_pylist()
        values[row] = value
        field = table.schema.field(index)
        return table.set_column(index, field, pa.array(values, type=field.type))

    return change


def read_problems(root: Path) -> list[Any]:
    with pytest.raises(MapcError) as err:
        dataset.read(root)
    return list(err.value.problems)


@pytest.mark.parametrize(
    ("table", "change", "code", "pointer"),
    [
        (
            "steps",
            set_cell("turn_ordinal", 2, 3),
            "store.turn_ordinal",
            'steps[document_id="t1"].turn_ordinal',
        ),
        (
            "steps",
            set_cell("turn_ordinal", 2, 1),
            "store.turn_ordinal",
            'steps[document_id="t1"].turn_ordinal',
        ),
        (
            "tool_calls",
            set_cell("call_index", 1, 2),
            "store.call_index",
            'tool_calls[document_id="t1", step_id=6].call_index',
        ),
        (
            "tool_calls",
            set_cell("step_id", 1, 99),
            "store.foreign_key",
            'tool_calls[document_id="t1", step_id=99].step_id',
        ),
        (
            "steps",
            set_cell("had_observation", 1, False),
            "store.observation_flag",
            'steps[document_id="t1", step_id=6].had_observation',
        ),
        (
            "steps",
            set_cell("had_tool_calls", 1, False),
            "store.calls_without_flag",
            'tool_calls[document_id="t1", step_id=6].step_id',
        ),
        (
            "tool_calls",
            set_cell("results_json", 0, "[]"),
            "store.results_mismatch",
            'tool_calls[document_id="t1", step_id=6, call_index=0].results_json',
        ),
        (
            "steps",
            set_cell("message_json", 0, "{"),
            "store.bad_json",
            'steps[document_id="t1", step_id=5].message_json',
        ),
        (
            "steps",
            set_cell("session_id", 0, "other"),
            "store.denormalized_mismatch",
            'steps[document_id="t1", step_id=5].session_id',
        ),
        (
            "steps",
            set_cell("effective_kind", 2, "autonomous"),
            "store.derived_column",
            'steps[document_id="t1", step_id=7].effective_kind',
        ),
        (
            "steps",
            set_cell("timestamp", 0, 1),
            "store.derived_column",
            'steps[document_id="t1", step_id=5].timestamp',
        ),
        ("steps", set_cell("source", 0, ""), "store.invalid_document", 'runs[document_id="t1"]/turns/0/src'),
        (
            "runs",
            set_cell("trajectory_id_explicit", 0, False),
            "store.document_id_mismatch",
            'runs[document_id="t1"].document_id',
        ),
        (
            "runs",
            lambda t: pa.concat_tables([t, t]),
            "store.duplicate_document_id",
            'runs[document_id="t1"].document_id',
        ),
    ],
    ids=lambda v: v if isinstance(v, str) and v.startswith("store.") else None,
)
def test_a_broken_invariant_fails_closed(good, table, change, code, pointer):
    corrupt(good, table, change)
    problems = read_problems(good)
    assert (code, pointer) in [(p.code, p.pointer) for p in problems], problems


def test_rows_without_a_run_break_the_foreign_keys(good):
    corrupt(good, "runs", lambda t: t.slice(0, 0))
    problems = read_problems(good)
    assert {(p.code, p.pointer) for p in problems} == {
        ("store.foreign_key", 'steps[document_id="t1"].document_id'),
        ("store.foreign_key", 'tool_calls[document_id="t1", step_id=6].step_id'),
    }


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda t: t.drop_columns(["results_json"]), id="missing column"),
        pytest.param(lambda t: t.cast(pa.schema([f.with_nullable(True) for f in t.schema])), id="nullable column"),
        pytest.param(lambda t: t.append_column("more", pa.array([1, 2], pa.int64())), id="extra column"),
    ],
)
def test_a_table_with_another_schema_fails_closed(good, change):
    corrupt(good, "tool_calls", change)
    problems = read_problems(good)
    assert {p.code for p in problems} == {"store.schema_mismatch"}
    assert all(p.pointer.startswith("tool_calls") for p in problems)


def test_current_hides_direct_writes_until_it_names_them(good):
    lance.write_dataset(latest(good, "steps").to_table().slice(0, 1), str(good / "steps.lance"), mode="overwrite")
    assert same(dataset.read(good), [story("s1", trajectory="t1")])


# --- indexes and compaction ----------------------------------------------------------------------------


def test_index_and_compact(tmp_path):
    root = tmp_path / "ds"
    for i in range(4):
        put(root, story(f"s{i}"))
    assert dataset.indexed_columns(root) == {"runs": [], "steps": [], "tool_calls": []}
    dataset.create_indexes(root)
    assert dataset.indexed_columns(root) == {
        "runs": ["document_id", "session_id"],
        "steps": ["document_id", "message_json", "observation_json", "session_id"],
        "tool_calls": ["document_id", "function_name", "result_json", "session_id"],
    }
    steps = dataset.open_tables(root)["steps"]
    plan = steps.scanner(filter=pa.compute.field("session_id") == "s2").explain_plan()
    assert "ScalarIndexQuery" in plan
    expected = [story(f"s{i}") for i in range(4)]
    assert same(dataset.read(root), expected)
    assert same(dataset.read(root, session="s2"), [expected[2]])
    assert len(latest(root, "steps").get_fragments()) == 4
    dataset.compact(root, grace=timedelta(0))
    assert len(latest(root, "steps").get_fragments()) == 1
    assert len(latest(root, "steps").versions()) == 1  # older versions dropped (no grace period)
    assert same(dataset.read(root), expected)
    assert same(dataset.read(root, session="s2"), [expected[2]])
    put(root, story("s9"))  # still appendable after compaction
    assert same(dataset.read(root), [*expected, story("s9")])
