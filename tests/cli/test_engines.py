"""cli/engines.py and store/ingest.py: one job, any scheduler; the local engine in one process and in a pool.

The same comparisons against Ray are in test_ray.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from engine_corpus import mixed_corpus, snapshot, story

from mapc.cli import corpus
from mapc.cli.main import cli
from mapc.cli.store import input_files
from mapc.engine import convert, detect
from mapc.engine.problems import MapcError
from mapc.engine.views import document_id
from mapc.store import dataset, ingest


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of a few files (the driver cuts them), so a small corpus still makes many tasks and fragments."""
    monkeypatch.setattr(ingest, "MIN_CHUNK", 6_000)


def store(runner, corpus: Path, to: Path, *args: str):
    return runner.invoke(cli, ["store", str(corpus), "--to", str(to), *args])


def expected_ids(corpus: Path) -> list[str]:
    """The document ids in input order: files sorted, documents in file order."""
    ids = []
    for file in input_files((str(corpus),)):
        data = Path(file).read_bytes()
        fmt = detect.detect(file, data)
        if fmt is not None:
            ids += [document_id(s) for s in convert.into_storyline(fmt, data, jsonl=file.endswith(".jsonl"))]
    return ids


def test_one_process_and_a_pool_store_the_same_rows_in_input_order(tmp_path, runner, small_chunks):
    corpus = mixed_corpus(tmp_path / "in")
    one, pool = tmp_path / "one", tmp_path / "pool"
    first = store(runner, corpus, one, "--workers", "1")
    assert first.exit_code == 0, first.output
    second = store(runner, corpus, pool, "--workers", "2")
    assert (second.exit_code, second.stdout, second.stderr) == (0, first.stdout.replace(str(one), str(pool)), "")
    assert snapshot(one) == snapshot(pool)
    runs = snapshot(one)["tables"]["runs"]
    assert [r["storage_ordinal"] for r in runs] == list(range(len(runs)))
    assert [r["document_id"] for r in runs] == expected_ids(corpus)
    assert len(list((pool / "steps.lance" / "data").iterdir())) > 3  # several chunks, several fragments
    more = mixed_corpus(tmp_path / "more", tag="b")
    for root, workers in ((one, "1"), (pool, "2")):
        assert store(runner, more / "stories", root, "--workers", workers).exit_code == 0
    assert snapshot(one) == snapshot(pool)
    assert [r["storage_ordinal"] for r in snapshot(one)["tables"]["runs"]] == list(range(len(runs) + 19))


def test_bad_files_give_the_same_errors_and_write_nothing(tmp_path, runner, small_chunks):
    corpus = mixed_corpus(tmp_path / "in", bad=True)
    one = store(runner, corpus, tmp_path / "one", "--workers", "1")
    pool = store(runner, corpus, tmp_path / "pool", "--workers", "2")
    assert one.exit_code == pool.exit_code == 1
    assert one.stdout == pool.stdout == ""
    assert one.stderr == pool.stderr
    lines = one.stderr.splitlines()
    assert [line.removeprefix("warning: ").split(": ")[0] for line in lines] == [
        f"{corpus}/fixtures/atif/m-broken.json",
        f"skipped {corpus}/stories/0/garbage.json",
        f"{corpus}/stories/1/s04b-invalid.storyline.json",
        f"{corpus}/stories/2/s08b-lines.jsonl",
        f"skipped {corpus}/stories/unknown.json",
    ]
    assert "[schema.type]" in lines[0] and ": /1/turns: " in lines[3]
    assert not (tmp_path / "one").exists() and not (tmp_path / "pool").exists()
    # into an existing dataset: unchanged, and no staging left behind
    good = tmp_path / "good"
    assert store(runner, mixed_corpus(tmp_path / "g", tag="g"), good, "--workers", "2").exit_code == 0
    before = snapshot(good)
    assert store(runner, corpus, good, "--workers", "2").stderr == one.stderr
    assert snapshot(good) == before and ".staging" not in before["entries"]


def test_duplicates_across_chunks_are_reported_alike_and_write_nothing(tmp_path, runner, small_chunks):
    corpus = mixed_corpus(tmp_path / "in")
    (corpus / "stories" / "zz").mkdir()
    # A copy naming its trajectory "a-one-1", the id of s01 (its bare session): the same id twice.  (A
    # copy without a trajectory would be a second segment of that session, named by its file:
    # store/identity.py.)
    again = json.loads((corpus / "stories" / "0" / "s01.storyline.json").read_bytes())
    assert "trajectory" not in again and again["session"] == "a-one-1"
    (corpus / "stories" / "zz" / "again.json").write_text(json.dumps({**again, "trajectory": "a-one-1"}))
    results = [store(runner, corpus, tmp_path / w, "--workers", w) for w in ("1", "2")]
    assert [r.exit_code for r in results] == [1, 1]
    assert (
        results[0].stderr
        == results[1].stderr
        == (
            f'{corpus}/stories/zz/again.json: /: document_id "a-one-1" is also the id of '
            f"{corpus}/stories/0/s01.storyline.json; ids must be unique [store.duplicate_document_id]\n"
        )
    )
    assert not (tmp_path / "1").exists() and not (tmp_path / "2").exists()


def test_files_over_the_input_limit_fail_unread_and_nothing_is_written(tmp_path, runner, monkeypatch, small_chunks):
    corpus = mixed_corpus(tmp_path / "in")
    big = corpus / "fixtures" / "atif" / "multimodal_18.json"
    limit = str(big.stat().st_size - 1)
    monkeypatch.setenv("MAPC_MAX_INPUT_BYTES", limit)  # the option sets it for the process: undone after the test
    args = ["--max-input-bytes", limit, "store", str(corpus), "--to"]
    results = [runner.invoke(cli, [*args, str(tmp_path / w), "--workers", w]) for w in ("1", "2")]
    assert [r.exit_code for r in results] == [1, 1]
    assert results[0].stderr == results[1].stderr
    assert f"{big}: /: the input is {big.stat().st_size} bytes, over the limit of {limit}" in results[0].stderr
    assert "[input.too_large]" in results[0].stderr
    assert not (tmp_path / "1").exists() and not (tmp_path / "2").exists()


def test_a_stopped_worker_fails_its_files(tmp_path):
    files = [tmp_path / f"f{i}.json" for i in range(3)]
    for i, f in enumerate(files):
        f.write_text(json.dumps(story(f"s{i}")))
    inputs = [ingest.Input(str(f), str(f), 2 << 20) for f in files]  # 2 MiB each: one file per chunk

    def schedule(fn, items):
        for i, item in enumerate(items):
            yield i, (MemoryError("killed") if i == 1 else fn(item))

    with ingest.staged(tmp_path / "ds", inputs, schedule) as job:
        assert job.failed
        assert [(o.file, o.status) for o in job.outcomes] == [
            (str(files[0]), "stored"),
            (str(files[1]), "failed"),
            (str(files[2]), "stored"),
        ]
        assert job.outcomes[1].problems[0].message == "the worker storing it stopped: MemoryError: killed"
    assert not (tmp_path / "ds").exists()


def test_a_lost_numbering_task_fails_the_job_and_writes_nothing(tmp_path):
    files = [tmp_path / f"f{i}.json" for i in range(2)]
    for i, f in enumerate(files):
        f.write_text(json.dumps(story(f"s{i}")))
    inputs = [ingest.Input(str(f), str(f), 2 << 20) for f in files]

    def schedule(fn, items):
        for i, item in enumerate(items):
            yield i, (ConnectionError("node lost") if fn is ingest.stage_runs and i == 1 else fn(item))

    root = tmp_path / "ds"
    with ingest.staged(root, inputs, schedule) as job:
        assert not job.failed
        with pytest.raises(MapcError) as err:
            job.commit()
    [problem] = err.value.problems
    assert problem.code == "store.write_failed" and "ConnectionError: node lost" in problem.message
    assert err.value.source == str(root)
    assert sorted(p.name for p in root.iterdir()) == [".lock", "CURRENT"]  # no table, no staging
    assert dataset.read_current(root) == {}


def test_chunks_follow_the_input_order():
    staging = dataset.Staging("ds", "ds/.staging/x", False)
    inputs = [ingest.Input(f"f{i}", f"/f{i}", size) for i, size in enumerate([5, 1 << 20, 3, 3, 2 << 20, 7])]
    chunks = ingest.chunks(inputs, staging)
    assert [[i.file for i in c.inputs] for c in chunks] == [["f0", "f1"], ["f2", "f3", "f4"], ["f5"]]
    assert [c.index for c in chunks] == [0, 1, 2]
    assert ingest.chunk_bytes(10**12) == ingest.MAX_CHUNK and ingest.chunk_bytes(10) == ingest.MIN_CHUNK


def test_convert_batches_keep_the_planned_order():
    sizes = [90, 50, 4, 4, 1]  # largest first, as planned; 149 bytes over 2 workers: batches of 9 bytes
    jobs = [corpus.Job(f"f{i}", f"f{i}", f"o{i}", "o", "storyline", size=size) for i, size in enumerate(sizes)]
    assert corpus.batches(jobs, 1) == [(j,) for j in jobs]
    assert [[j.path for j in b] for b in corpus.batches(jobs, 2)] == [["f0"], ["f1"], ["f2", "f3", "f4"]]
    many = [corpus.Job(f"f{i}", f"f{i}", f"o{i}", "o", "storyline", size=0) for i in range(130)]
    assert [len(b) for b in corpus.batches(many, 2)] == [64, 64, 2]


@pytest.mark.parametrize("command", ["store", "convert"])
def test_ray_engine_without_ray_names_the_extra(tmp_path, runner, monkeypatch, command):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray → ImportError
    corpus = mixed_corpus(tmp_path / "in")
    args = ["--to", str(tmp_path / "ds")] if command == "store" else ["--to", "storyline", "-o", str(tmp_path / "o")]
    result = runner.invoke(cli, [command, str(corpus), *args, "--engine", "ray"])
    assert result.exit_code == 2
    assert "the ray engine needs Ray, which is not installed: pip install 'mapc[ray]'" in result.stderr
    assert "Traceback" not in result.output
    assert not (tmp_path / "ds").exists() and not (tmp_path / "o").exists()


@pytest.mark.parametrize("command", ["store", "convert"])
def test_an_address_needs_the_ray_engine(tmp_path, runner, command):
    corpus = mixed_corpus(tmp_path / "in")
    args = ["--to", str(tmp_path / "ds")] if command == "store" else ["--to", "storyline", "-o", str(tmp_path / "o")]
    result = runner.invoke(cli, [command, str(corpus), *args, "--address", "127.0.0.1:1"])
    assert result.exit_code == 2
    assert "only the ray engine has an address: add --engine ray" in result.stderr
