"""cli/store.py and cli/query.py: mapc store, export, index, compact and query."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest

from mapc.cli.main import cli
from mapc.engine import codecs, convert
from mapc.engine.serialize import canonical_storyline
from mapc.engine.values import json_equal

ATIF = Path(__file__).resolve().parents[1] / "data" / "fixtures" / "atif"


def story(session: str, *, fn: str = "grep") -> dict[str, Any]:
    return {
        "schema_version": "storyline/v1",
        "session": session,
        "agent": {"id": "agent"},
        "turns": [
            {"id": 1, "src": "user", "msg": "find it", "ts": "2026-01-01T00:00:00Z"},
            {
                "id": 2,
                "src": "agent",
                "msg": None,
                "tool_calls": [{"tcid": f"{session}-1", "fn": fn, "args": {"q": 1}}],
            },
        ],
    }


def write(path: Path, value: Any) -> str:
    path.write_bytes(json.dumps(value).encode())
    return str(path)


@pytest.fixture
def corpus(tmp_path, runner) -> Path:
    root = tmp_path / "corpus"
    result = runner.invoke(cli, ["store", "--from", "atif", str(ATIF), "--to", str(root)])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("stored 6 documents (70 steps, 22 tool calls) in ")
    return root


# --- store ------------------------------------------------------------------------------------------


def test_store_files_and_jsonl(tmp_path, runner):
    one = write(tmp_path / "one.json", story("s1"))
    many = write(tmp_path / "many.json", [story("s2"), story("s3")])
    lines = tmp_path / "more.jsonl"
    lines.write_text("\n".join(json.dumps(story(f"s{i}")) for i in (4, 5)) + "\n")
    root = tmp_path / "ds"
    result = runner.invoke(cli, ["store", one, many, str(lines), "--to", str(root)])
    assert result.exit_code == 0, result.output
    assert "stored 5 documents (10 steps, 5 tool calls)" in result.stdout
    out = runner.invoke(cli, ["export", str(root), "--to", "storyline"])
    assert [d["session"] for d in json.loads(out.stdout)] == ["s1", "s2", "s3", "s4", "s5"]


def test_store_a_clash_names_both_inputs_and_writes_nothing(tmp_path, runner):
    root = tmp_path / "ds"
    first = write(tmp_path / "a.json", story("s1"))
    assert runner.invoke(cli, ["store", first, "--to", str(root)]).exit_code == 0
    again = write(tmp_path / "b.json", [story("s2"), story("s1")])
    result = runner.invoke(cli, ["store", again, "--to", str(root)])
    assert result.exit_code == 1
    assert result.stderr == (
        f'{again}: /1: document_id "s1" is already stored in {root}; ids must be unique [store.duplicate_document_id]\n'
    )
    twice = write(tmp_path / "c.json", story("s3"))
    result = runner.invoke(cli, ["store", twice, twice, "--to", str(root)])
    assert result.exit_code == 1
    assert f'{twice}: /: document_id "s3" is also the id of {twice}' in result.stderr
    out = runner.invoke(cli, ["query", str(root), "select count(*) as n from runs", "--json"])
    assert json.loads(out.stdout) == [{"n": 1}]


def test_store_reports_invalid_inputs_and_writes_nothing(tmp_path, runner):
    good = write(tmp_path / "good.json", story("s1"))
    bad = write(tmp_path / "bad.json", {**story("s2"), "session": ""})
    root = tmp_path / "ds"
    result = runner.invoke(cli, ["store", good, bad, "--to", str(root)])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"{bad}: /session: ")
    assert not root.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--from", "events"], "mapc events append"),
        (["--from", "nope"], "'nope' is not a format mapc knows"),
        (["/no/such/file.json"], "no such file"),
    ],
)
def test_store_usage_errors(tmp_path, runner, args, message):
    inputs = [] if any(a.startswith("/") for a in args) else [write(tmp_path / "x.json", story("s"))]
    result = runner.invoke(cli, ["store", *inputs, *args, "--to", str(tmp_path / "ds")])
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.output


# --- export -----------------------------------------------------------------------------------------


def test_export_every_document_in_every_format(corpus, runner, tmp_path):
    # the store keeps the canonical Storyline (free JSON keys sorted): compare with the canonical originals
    originals = [
        canonical_storyline(s)
        for p in sorted(ATIF.glob("*.json"))
        for s in convert.into_storyline("atif", p.read_bytes())
    ]
    for fmt in convert.formats():
        if codecs.lookup(fmt) is not None:
            continue  # a text format of one Storyline per file: test_export_one_document_as_agenticmd
        out = tmp_path / f"all.{fmt}.json"
        result = runner.invoke(cli, ["export", str(corpus), "--to", fmt, "-o", str(out)])
        assert result.exit_code == 0, result.output
        assert result.stdout == ""
        assert json_equal(json.loads(out.read_bytes()), json.loads(json.dumps(convert.from_storyline(fmt, originals))))


def test_a_dataset_export_writes_every_document_that_converts_and_names_the_others(tmp_path, runner):
    """Issue 15 §5: one document OpenAI rows cannot hold (no agent turn with output) does not stop
    the export of the rest; it is named, and the exit status is 1."""
    mute = {**story("mute"), "turns": [{"id": 1, "src": "user", "msg": "anyone?"}]}
    files = [
        write(tmp_path / "a.json", story("a")),
        write(tmp_path / "m.json", mute),
        write(tmp_path / "b.json", story("b")),
    ]
    root = tmp_path / "ds"
    assert runner.invoke(cli, ["store", "--from", "storyline", *files, "--to", str(root)]).exit_code == 0
    out = tmp_path / "rows.json"
    result = runner.invoke(cli, ["export", str(root), "--to", "openai-msg", "-o", str(out)])
    assert result.exit_code == 1
    assert 'runs[document_id="mute"]/0/turns' in result.stderr and "export.unrepresentable" in result.stderr
    rows = json.loads(out.read_bytes())["session_steps"]
    assert sorted({r["session_id"] for r in rows}) == ["a", "b"]


def test_export_one_session_or_document(corpus, runner):
    result = runner.invoke(cli, ["export", str(corpus), "--to", "atif", "--session", "fixture-sparse_13"])
    assert result.exit_code == 0, result.output
    expected = convert.from_storyline("atif", convert.into_storyline("atif", (ATIF / "sparse_13.json").read_bytes()))
    assert json_equal(json.loads(result.stdout), json.loads(json.dumps(expected)))
    result = runner.invoke(cli, ["export", str(corpus), "--to", "storyline", "--document", "run-support-001"])
    assert json.loads(result.stdout)["session"] == "support-001"
    result = runner.invoke(cli, ["export", str(corpus), "--to", "storyline", "--session", "nope"])
    assert result.exit_code == 1
    assert result.stderr == f'{corpus}: /: no document matches session "nope" [store.not_found]\n'


def test_export_one_document_as_agenticmd(corpus, runner, tmp_path):
    out = tmp_path / "support.md"
    args = ["export", str(corpus), "--to", "agenticmd", "--document", "run-support-001", "-o", str(out)]
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, result.output
    expected = convert.into_storyline("atif", (ATIF / "support-ticket.json").read_bytes())
    assert json_equal(convert.into_storyline("agenticmd", out.read_bytes()), expected)
    result = runner.invoke(cli, ["export", str(corpus), "--to", "agenticmd"])
    assert result.exit_code == 1 and "[agenticmd.several_storylines]" in result.stderr


def test_export_of_a_corrupted_dataset_fails_closed(corpus, runner):
    path = corpus / "steps.lance"
    table = lance.dataset(str(path)).to_table()
    ordinals = table.column("turn_ordinal").to_pylist()
    ordinals[0] = 99
    index = table.schema.get_field_index("turn_ordinal")
    table = table.set_column(index, table.schema.field(index), pa.array(ordinals, pa.int64()))
    lance.write_dataset(table, str(path), schema=table.schema, mode="overwrite")
    (corpus / "CURRENT").unlink()
    result = runner.invoke(cli, ["export", str(corpus), "--to", "storyline"])
    assert result.exit_code == 1
    first = result.stderr.splitlines()[0]
    assert first.startswith(f'{corpus}: steps[document_id="') and first.endswith("[store.turn_ordinal]")
    assert ".turn_ordinal: expected 0..11 each once, found 1, 2, 3" in first
    assert "Traceback" not in result.output


@pytest.mark.parametrize("fmt", ["storyline", "atif"])
def test_export_of_an_invalid_rebuilt_document_names_it(corpus, runner, fmt):
    """Export validates the rebuilt Storylines once (in the conversion); a failure names the document."""
    path = corpus / "steps.lance"
    table = lance.dataset(str(path)).to_table()
    sources = table.column("source").to_pylist()
    first_doc = table.column("document_id")[0].as_py()
    sources[0] = ""  # R-SRC: a turn's source must not be empty
    index = table.schema.get_field_index("source")
    table = table.set_column(index, table.schema.field(index), pa.array(sources, pa.string()))
    lance.write_dataset(table, str(path), schema=table.schema, mode="overwrite")
    (corpus / "CURRENT").unlink()
    result = runner.invoke(cli, ["export", str(corpus), "--to", fmt])
    assert result.exit_code == 1 and result.stdout == ""
    turn = table.column("turn_ordinal")[0].as_py()
    expected = f'{corpus}: runs[document_id="{first_doc}"]/turns/{turn}/src: the rebuilt Storyline is invalid'
    assert result.stderr.startswith(expected), result.stderr
    assert "[store.invalid_document]" in result.stderr


def test_export_usage_errors(tmp_path, runner, corpus):
    assert runner.invoke(cli, ["export", str(tmp_path / "none"), "--to", "atif"]).exit_code == 2
    result = runner.invoke(cli, ["export", str(corpus), "--to", "events"])
    assert result.exit_code == 2 and "mapc events project" in result.stderr


# --- index, compact ---------------------------------------------------------------------------------


def test_index_then_compact(corpus, runner):
    result = runner.invoke(cli, ["index", str(corpus)])
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        "runs: document_id, session_id\nsteps: document_id, message_json, observation_json, session_id\n"
        "tool_calls: document_id, function_name, result_json, session_id\n"
    )
    before = runner.invoke(cli, ["export", str(corpus), "--to", "storyline"]).stdout
    result = runner.invoke(cli, ["compact", str(corpus)])
    assert result.exit_code == 0, result.output
    assert [line.split(":")[0] for line in result.stdout.splitlines()] == ["runs", "steps", "tool_calls"]
    assert runner.invoke(cli, ["export", str(corpus), "--to", "storyline"]).stdout == before


def test_index_of_an_empty_directory_is_a_data_error(tmp_path, runner):
    (tmp_path / "empty").mkdir()
    result = runner.invoke(cli, ["index", str(tmp_path / "empty")])
    assert result.exit_code == 1
    assert "[store.not_a_dataset]" in result.stderr


# --- query ------------------------------------------------------------------------------------------


def test_query_text_table(corpus, runner):
    sql = "select function_name, count(*) as n from tool_calls group by 1 order by 2 desc, 1 limit 3"
    result = runner.invoke(cli, ["query", str(corpus), sql])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "function_name     n",
        "----------------  -",
        "knowledge_search  6",
        "Bash              5",
        "Read              4",
        "(3 rows)",
    ]


def test_query_json_joins_the_three_tables(corpus, runner):
    sql = (
        "select r.session_id, count(distinct s.step_id) as steps, count(c.call_index) as calls, "
        "min(s.timestamp) as first from runs r join steps s using (document_id) "
        "left join tool_calls c on c.document_id = s.document_id and c.step_id = s.step_id "
        "where r.session_id = 'fixture-parallel_tools_14' group by 1"
    )
    result = runner.invoke(cli, ["query", str(corpus), sql, "--json"])
    assert result.exit_code == 0, result.output
    [row] = json.loads(result.stdout)
    assert row["session_id"] == "fixture-parallel_tools_14" and row["steps"] == 14 and row["calls"] == 6
    assert row["first"].endswith("+00:00")


def test_query_nulls_and_long_cells_in_text(tmp_path, runner):
    root = tmp_path / "ds"
    long = {**story("s1"), "notes": "x" * 200}
    runner.invoke(cli, ["store", write(tmp_path / "a.json", long), "--to", str(root)])
    result = runner.invoke(cli, ["query", str(root), "select notes, run_id from runs"])
    line = result.stdout.splitlines()[2]
    assert line.startswith("x" * 79 + "…") and line.endswith("NULL")


def test_query_bad_sql_is_a_usage_error(corpus, runner):
    result = runner.invoke(cli, ["query", str(corpus), "select nope from runs"])
    assert result.exit_code == 2
    assert "nope" in result.stderr and "Traceback" not in result.output


# --- the help examples ------------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_ORDER = [
    ("store",),
    ("export",),
    ("index",),
    ("compact",),
    ("query",),
    ("stats",),
    ("find",),
    ("events", "append"),
    ("events", "project"),
    ("events", "synthesize"),
]


def examples(path: tuple[str, ...]) -> list[str]:
    command = cli
    for name in path:
        command = command.get_command(None, name)  # type: ignore[union-attr]
    text = command.help or ""
    block = text.split("\b", 1)[1]
    return [line.strip() for line in block.splitlines() if line.strip().startswith("mapc ")]


def test_help_examples_run_as_written(tmp_path, runner, monkeypatch):
    monkeypatch.chdir(ROOT)  # the examples name the shipped fixtures relative to the repository
    ran = 0
    for path in EXAMPLE_ORDER:
        for line in examples(path):
            argv = shlex.split(line.replace("/tmp/", f"{tmp_path}/"))[1:]
            result = runner.invoke(cli, argv)
            assert result.exit_code == 0, f"{line}\n{result.output}"
            ran += 1
    assert ran == 23
    assert json.loads((tmp_path / "events-atif.json").read_text())["schema_version"] == "ATIF-v1.7"


def test_a_table_that_cannot_be_opened_is_a_data_error(corpus, runner):
    (corpus / "CURRENT").write_text(json.dumps({"layout_version": 1, "tables": {"runs": 99, "steps": 1}}))
    result = runner.invoke(cli, ["export", str(corpus), "--to", "atif"])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"{corpus}: runs: cannot open runs.lance at version 99: ")
    assert result.stderr.rstrip().endswith("[store.bad_table]")
    more = str(ATIF / "sparse_13.json")
    result = runner.invoke(cli, ["store", "--from", "atif", more, "--to", str(corpus)])
    assert result.exit_code == 1 and "[store.bad_table]" in result.stderr


def test_store_into_a_file_is_a_usage_error(tmp_path, runner):
    target = tmp_path / "file"
    target.write_text("")
    result = runner.invoke(cli, ["store", write(tmp_path / "a.json", story("s")), "--to", str(target)])
    assert result.exit_code == 2 and "is not a directory" in result.stderr
