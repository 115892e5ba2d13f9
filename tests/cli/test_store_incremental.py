"""`mapc store --skip-existing` and `--replace`: a growing folder stored by re-running one command.

Also: long problem lists are summarised (all of them with --json), and a replace killed half-way leaves
the stored data whole (readers see CURRENT; the next writer restores the tables).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from engine_corpus import snapshot

from mapc.cli.main import cli
from mapc.store import dataset

ATIF = Path(__file__).resolve().parents[1] / "data" / "fixtures" / "atif"


def story(session: str, *, calls: int = 1, text: str = "find it") -> dict[str, Any]:
    turns: list[dict[str, Any]] = [{"id": 1, "src": "user", "msg": text}]
    for i in range(calls):
        turns.append(
            {
                "id": 2 + i,
                "src": "agent",
                "msg": None,
                "tool_calls": [{"tcid": f"{session}-{i}", "fn": f"fn{i}", "args": {"q": i}}],
            }
        )
    return {"schema_version": "storyline/v1", "session": session, "agent": {"id": "agent"}, "turns": turns}


def write(path: Path, value: Any) -> str:
    path.write_bytes(json.dumps(value).encode())
    return str(path)


def export(runner, root: Path) -> list[dict[str, Any]]:
    out = runner.invoke(cli, ["export", str(root), "--to", "storyline"])
    assert out.exit_code == 0, out.output
    value = json.loads(out.stdout)
    return value if isinstance(value, list) else [value]


def count(runner, root: Path, sql: str) -> Any:
    out = runner.invoke(cli, ["query", str(root), sql, "--json"])
    assert out.exit_code == 0, out.output
    return next(iter(json.loads(out.stdout)[0].values()))


def test_skip_existing_stores_only_the_new_files_of_a_folder(tmp_path, runner):
    folder = tmp_path / "in"
    shutil.copytree(ATIF, folder)
    root = tmp_path / "ds"
    assert runner.invoke(cli, ["store", str(folder), "--to", str(root)]).exit_code == 0
    before = export(runner, root)
    write(folder / "zz-new.json", [story("new-1"), story("new-2", calls=2)])
    again = runner.invoke(cli, ["store", str(folder), "--to", str(root)])
    assert again.exit_code == 1 and "is already stored" in again.stderr  # the default still fails whole
    result = runner.invoke(cli, ["store", str(folder), "--to", str(root), "--skip-existing"])
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        f"stored 2 documents (5 steps, 3 tool calls) in {root}; {len(before)} already stored, skipped\n"
    )
    after = export(runner, root)
    assert after[: len(before)] == before
    assert [d["session"] for d in after[len(before) :]] == ["new-1", "new-2"]
    ordinals = runner.invoke(cli, ["query", str(root), "select storage_ordinal from runs order by 1", "--json"])
    assert [r["storage_ordinal"] for r in json.loads(ordinals.stdout)] == list(range(len(after)))
    # nothing new: nothing committed, the tables keep their versions
    current = (root / "CURRENT").read_bytes()
    result = runner.invoke(cli, ["store", str(folder), "--to", str(root), "--skip-existing"])
    assert result.exit_code == 0
    assert result.stdout.endswith(f"; {len(after)} already stored, skipped\n")
    assert result.stdout.startswith("stored 0 documents (0 steps, 0 tool calls)")
    assert (root / "CURRENT").read_bytes() == current


def test_skip_existing_into_a_new_dataset_and_ids_given_twice(tmp_path, runner):
    root = tmp_path / "ds"
    one = write(tmp_path / "a.json", story("s1"))
    result = runner.invoke(cli, ["store", one, "--to", str(root), "--skip-existing"])
    assert result.exit_code == 0 and "; 0 already stored, skipped" in result.stdout
    # two files holding one session without a trajectory id (issue 15 §6): segments of it, each named by
    # its file and position (tests/store/test_identity.py), both stored; skipped when stored again
    first, second = write(tmp_path / "b.json", story("s2")), write(tmp_path / "c.json", story("s2"))
    result = runner.invoke(cli, ["store", first, second, "--to", str(root), "--skip-existing"])
    assert result.exit_code == 0 and "stored 2 documents" in result.stdout, result.output
    ids = runner.invoke(cli, ["query", str(root), "select document_id from runs order by 1", "--format", "jsonl"])
    stored = [json.loads(line)["document_id"] for line in ids.stdout.splitlines()]
    assert stored == ["s1", "s2#b.json#1", "s2#c.json#1"]
    result = runner.invoke(cli, ["store", first, second, "--to", str(root), "--skip-existing"])
    assert result.exit_code == 0 and "; 2 already stored, skipped" in result.stdout, result.output


def test_replace_swaps_every_row_of_a_stored_document(tmp_path, runner):
    root = tmp_path / "ds"
    first = write(tmp_path / "a.json", [story("s1", calls=3), story("s2"), story("it's \\ odd", calls=2)])
    assert runner.invoke(cli, ["store", first, "--to", str(root)]).exit_code == 0
    newer = [story("s1", calls=1, text="again"), story("it's \\ odd", calls=0), story("s3")]
    second = write(tmp_path / "b.json", newer)
    result = runner.invoke(cli, ["store", second, "--to", str(root), "--replace"])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"stored 3 documents (5 steps, 2 tool calls) in {root}, 2 of them replacing stored ones\n"
    # the replaced documents come after the others, in input order; s2 is untouched
    assert export(runner, root) == [story("s2"), *newer]
    assert count(runner, root, "select count(*) from tool_calls where session_id = 's1'") == 1
    assert count(runner, root, "select count(*) from steps where session_id = 'it''s \\ odd'") == 1
    assert count(runner, root, "select count(*) from tool_calls where session_id = 'it''s \\ odd'") == 0
    ordinals = runner.invoke(cli, ["query", str(root), "select storage_ordinal from runs order by 1", "--json"])
    assert [r["storage_ordinal"] for r in json.loads(ordinals.stdout)] == [1, 3, 4, 5]
    # --replace of documents not stored yet is a plain append
    result = runner.invoke(cli, ["store", write(tmp_path / "c.json", story("s4")), "--to", str(root), "--replace"])
    assert result.exit_code == 0 and result.stdout.endswith(", 0 of them replacing stored ones\n")


def test_skip_existing_and_replace_exclude_each_other(tmp_path, runner):
    one = write(tmp_path / "a.json", story("s1"))
    result = runner.invoke(cli, ["store", one, "--to", str(tmp_path / "ds"), "--skip-existing", "--replace"])
    assert result.exit_code == 2 and "exclude each other" in result.stderr


def test_sql_in_quotes_values_as_literals():
    assert dataset.sql_in("document_id", ["a", "it's", "x') OR (1=1"]) == (
        "document_id IN ('a', 'it''s', 'x'') OR (1=1')"
    )


def test_long_problem_lists_are_summarised_and_listed_whole_with_json(tmp_path, runner):
    root = tmp_path / "ds"
    docs = [story(f"s{i}") for i in range(25)]
    assert runner.invoke(cli, ["store", write(tmp_path / "a.json", docs), "--to", str(root)]).exit_code == 0
    again = write(tmp_path / "b.json", docs)
    result = runner.invoke(cli, ["store", again, "--to", str(root)])
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 21 and all("is already stored" in line for line in lines[:20])
    assert lines[20] == "… and 5 more problems (--json lists them all)"
    result = runner.invoke(cli, ["store", again, "--to", str(root), "--json"])
    assert result.exit_code == 1
    listed = json.loads(result.stderr)
    assert len(listed) == 25 and {p["code"] for p in listed} == {"store.duplicate_document_id"}
    assert listed[0]["file"] == again and listed[0]["pointer"] == "/0"


KILLER = """
import os, sys
from mapc.store import dataset
merge = dataset._merge_table
def killed(ds, staging, name, fragments, replaced):
    version = merge(ds, staging, name, fragments, replaced)
    if name == sys.argv[1]:
        os._exit(9)  # killed: no rollback, no cleanup
    return version
dataset._merge_table = killed
from mapc.cli.main import cli
cli(sys.argv[2:])
"""


def test_a_killed_replace_leaves_the_old_data_whole(tmp_path, runner):
    root = tmp_path / "ds"
    first = write(tmp_path / "a.json", [story("s1", calls=3), story("s2")])
    assert runner.invoke(cli, ["store", first, "--to", str(root)]).exit_code == 0
    before = snapshot(root)
    old = export(runner, root)
    second = write(tmp_path / "b.json", [story("s1", calls=1, text="again")])
    for table in ("runs", "steps"):  # killed after the first, then the second of the three merges
        argv = [sys.executable, "-c", KILLER, table, "store", second, "--to", str(root), "--replace"]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False, env=os.environ)
        assert done.returncode == 9, done.stderr
        if table == "runs":  # (the second run first restored runs.lance, a new version of the same rows)
            assert json.loads((root / "CURRENT").read_bytes())["tables"] == before["current"]
        assert snapshot(root)["tables"] == before["tables"]
        assert export(runner, root) == old  # readers see CURRENT: the old data, whole
    # the next writer restores the tables, then replaces
    result = runner.invoke(cli, ["store", second, "--to", str(root), "--replace"])
    assert result.exit_code == 0, result.output
    assert export(runner, root) == [story("s2"), story("s1", calls=1, text="again")]


def test_many_bad_files_are_summarised_in_input_order(tmp_path, runner):
    folder = tmp_path / "in"
    folder.mkdir()
    for i in range(23):
        write(folder / f"bad{i:02d}.json", {**story(f"s{i}"), "session": ""})
    for i in range(22):
        write(folder / f"odd{i:02d}.json", {"hello": i})  # of no known format: skipped with a warning
    root = tmp_path / "ds"
    result = runner.invoke(cli, ["store", str(folder), "--to", str(root)])
    assert result.exit_code == 1 and not root.exists()
    lines = result.stderr.splitlines()
    problems = [line for line in lines if not line.startswith("warning: ")]
    warnings = [line for line in lines if line.startswith("warning: ")]
    assert [p.split(":")[0] for p in problems[:20]] == [str(folder / f"bad{i:02d}.json") for i in range(20)]
    assert problems[20:] == ["… and 3 more problems (--json lists them all)"]
    assert len(warnings) == 21 and warnings[-1] == "warning: … and 2 more files of no known format skipped"
    result = runner.invoke(cli, ["store", str(folder), "--to", str(root), "--json"])
    listed = json.loads(result.stderr[result.stderr.index("[") :])
    assert [p["file"] for p in listed] == [str(folder / f"bad{i:02d}.json") for i in range(23)]
