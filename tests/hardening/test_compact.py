"""Maintenance is crash-safe and reader-safe (issue 14 §3).

`mapc compact` writes new table versions, switches ``CURRENT`` atomically, and removes only the
versions no ``CURRENT`` names and no reader that started before the switch can name (after the
grace period).  Killed with SIGKILL at any moment, it leaves a dataset that opens and exports every
document; readers looping while compactions run never fail.
"""

from __future__ import annotations

import json
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

import lance
import orjson
import pytest
from conftest import FIXTURES

from mapc.engine.serialize import dumps
from mapc.store import dataset

MAPC = [sys.executable, "-c", "from mapc.cli.main import main; main()"]
DEFAULT_KILLS = 3
SLOW_KILLS = 30


def imports(tmp_path: Path, root: Path, count: int, first: int = 0) -> None:
    """`count` imports of the ATIF fixtures into `root` (each its own sessions): many small fragments."""
    for k in range(first, first + count):
        src = tmp_path / f"src{k}"
        src.mkdir()
        for path in sorted((FIXTURES / "atif").glob("*.json")):
            doc = json.loads(path.read_bytes())
            doc["session_id"] = f"{doc.get('session_id', 's')}-{k}"
            doc["trajectory_id"] = f"{doc.get('trajectory_id', 't')}-{k}"
            (src / path.name).write_text(json.dumps(doc))
        subprocess.run([*MAPC, "store", str(src), "--to", str(root), "--workers", "1"], check=True, capture_output=True)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("compact")
    root = tmp / "base.ds"
    imports(tmp, root, 4)
    return root


def exported(root: Path) -> list[bytes]:
    return [dumps(doc) for doc in dataset.read(root)]


def versions(root: Path, name: str) -> list[int]:
    return [v["version"] for v in lance.dataset(str(root / f"{name}.lance")).versions()]


def compact(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MAPC, "compact", str(root), *args], capture_output=True, text=True, check=False)


def test_a_reader_that_started_before_compaction_still_reads(base: Path, tmp_path: Path) -> None:
    root = tmp_path / "ds"
    shutil.copytree(base, root)
    expected = exported(root)
    before = dataset.open_tables(root)  # a reader holding the tables CURRENT named before the switch
    assert compact(root).returncode == 0
    for name, ds in before.items():
        assert ds is not None
        assert ds.to_table().num_rows == lance.dataset(str(root / f"{name}.lance")).to_table().num_rows
    assert exported(root) == expected
    assert all(len(versions(root, name)) > 1 for name in dataset.TABLES)  # kept for the grace period


def test_grace_zero_removes_old_versions_and_unreferenced_files(base: Path, tmp_path: Path) -> None:
    root = tmp_path / "ds"
    shutil.copytree(base, root)
    expected = exported(root)
    junk = root / "steps.lance" / "data" / "0000000000000000000000000000000000000000000000000.lance"
    junk.write_bytes(b"left by a killed writer")
    result = compact(root, "--grace", "0s")
    assert result.returncode == 0, result.stderr
    assert not junk.exists()
    current = dataset.read_current(root)
    assert current is not None
    for name in dataset.TABLES:
        assert versions(root, name) == [current[name]]
    assert exported(root) == expected


def test_old_versions_go_at_the_next_run_after_the_grace_period(base: Path, tmp_path: Path) -> None:
    root = tmp_path / "ds"
    shutil.copytree(base, root)
    dataset.compact(root)  # default grace: nothing removed
    kept = {name: versions(root, name) for name in dataset.TABLES}
    assert all(len(v) > 1 for v in kept.values())
    dataset.compact(root, grace=timedelta(hours=1))
    assert {name: versions(root, name) for name in dataset.TABLES} == kept
    time.sleep(0.05)
    dataset.compact(root, grace=timedelta(milliseconds=10))  # the retirement is now older than the grace
    current = dataset.read_current(root)
    assert current is not None
    assert {name: versions(root, name) for name in dataset.TABLES} == {n: [current[n]] for n in dataset.TABLES}


def test_compact_removes_dead_staging_but_not_a_live_job(base: Path, tmp_path: Path) -> None:
    root = tmp_path / "ds"
    shutil.copytree(base, root)
    dead = root / ".staging" / "0123456789abcdef"
    (dead / "steps.lance" / "data").mkdir(parents=True)
    (dead / "steps.lance" / "data" / "x.lance").write_bytes(b"x")
    live = dataset.Staging.open(root)
    try:
        assert compact(root, "--grace", "0s").returncode == 0
        assert not dead.exists()
        assert Path(live.directory).is_dir()
    finally:
        live.discard()


def test_compact_removes_a_killed_jobs_staging_at_once(base: Path, tmp_path: Path) -> None:
    root = tmp_path / "ds"
    shutil.copytree(base, root)
    script = "import os, sys; from pathlib import Path; from mapc.store import dataset; "
    script += "s = dataset.Staging.open(Path(sys.argv[1])); print(s.directory, flush=True); os._exit(0)"
    directory = subprocess.run(
        [sys.executable, "-c", script, str(root)], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert Path(directory).is_dir() and Path(f"{directory}.lock").exists()  # what a SIGKILL leaves
    assert compact(root).returncode == 0  # the default grace: the free lock says the job is gone
    assert not (root / ".staging").exists()


def test_a_dataset_written_before_the_retirement_records_reads_and_compacts(base: Path, tmp_path: Path) -> None:
    root = tmp_path / "ds"
    shutil.copytree(base, root)
    current = dataset.read_current(root)
    (root / "CURRENT").write_bytes(orjson.dumps({"layout_version": 1, "tables": current}))  # today's format
    expected = exported(root)
    dataset.compact(root)
    assert exported(root) == expected
    dataset.compact(root, grace=timedelta(0))
    assert exported(root) == expected
    assert all(len(versions(root, name)) == 1 for name in dataset.TABLES)


def test_compact_grace_is_a_duration(base: Path, tmp_path: Path) -> None:
    result = compact(base, "--grace", "soon")
    assert result.returncode == 2
    assert "--grace" in result.stderr


def _kill_rounds(base: Path, tmp_path: Path, kills: int, seed: int) -> int:
    """Kill `mapc compact --grace 0s` at random moments; every round the dataset opens and exports all.

    The kill times are drawn between the start-up of the command (``mapc compact --help``: Python
    and the imports, when nothing is touched yet) and the end of an uninterrupted compaction, both
    measured first, so the signals land while the tables are compacted, switched and cleaned.
    Returns the number of compactions actually killed (not finished before the signal).
    """
    expected = exported(base)
    timing = tmp_path / "timing.ds"
    shutil.copytree(base, timing)
    started = time.monotonic()
    assert compact(timing, "--help").returncode == 0
    startup = time.monotonic() - started
    started = time.monotonic()
    assert compact(timing, "--grace", "0s").returncode == 0
    length = time.monotonic() - started
    rng = random.Random(seed)
    killed = 0
    round_ = 0
    while killed < kills and round_ < kills * 4:
        root = tmp_path / f"round{round_}.ds"
        shutil.copytree(base, root)
        proc = subprocess.Popen(
            [*MAPC, "compact", str(root), "--grace", "0s"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        time.sleep(rng.uniform(min(startup, 0.9 * length), length))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            killed += 1
        proc.wait(timeout=120)
        assert exported(root) == expected, f"round {round_}"
        result = compact(root, "--grace", "0s")  # the next run finishes the job
        assert result.returncode == 0, result.stderr
        assert exported(root) == expected, f"round {round_} after a full compaction"
        assert not (root / ".staging").exists() or not any((root / ".staging").iterdir())
        shutil.rmtree(root)
        round_ += 1
    assert killed >= kills, f"only {killed} of {round_} compactions were still running at the signal"
    print(f"\ncompact: {killed} kills in {round_} rounds survived ({startup:.2f} s start-up of {length:.2f} s)")
    return killed


def test_a_killed_compaction_leaves_every_document_readable(base: Path, tmp_path: Path) -> None:
    _kill_rounds(base, tmp_path, DEFAULT_KILLS, seed=3)


@pytest.mark.slow
def test_thirty_killed_compactions_leave_every_document_readable(base: Path, tmp_path: Path) -> None:
    _kill_rounds(base, tmp_path, SLOW_KILLS, seed=14)


def _readers_during(base: Path, tmp_path: Path, rounds: int) -> None:
    """A reader loops over `dataset.read` while `rounds` compactions, each followed by an import, run
    in other processes (then one more compaction): not one of its reads may fail."""
    root = tmp_path / "ds"
    shutil.copytree(base, root)
    counts: set[int] = set()
    failures: list[str] = []
    reads = 0
    stop = threading.Event()

    def reader() -> None:
        nonlocal reads
        while not stop.is_set():
            try:
                counts.add(len(dataset.read(root)))
            except Exception as exc:  # any failure of a read is what this test counts
                failures.append(repr(exc))
            reads += 1

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for k in range(rounds):
            assert compact(root).returncode == 0
            imports(tmp_path, root, 1, first=10 + k)
        assert compact(root).returncode == 0
    finally:
        stop.set()
        thread.join()
    print(f"\ncompact: {reads} reads during {rounds + 1} compactions and {rounds} imports, {len(failures)} failed")
    assert failures == []
    assert reads > 0
    assert min(counts) == len(exported(base))
    assert max(counts) == len(exported(root))


def test_readers_never_fail_while_compactions_and_imports_run(base: Path, tmp_path: Path) -> None:
    _readers_during(base, tmp_path, 1)


@pytest.mark.slow
def test_readers_never_fail_during_many_compactions_and_imports(base: Path, tmp_path: Path) -> None:
    _readers_during(base, tmp_path, 6)
