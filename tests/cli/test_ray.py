"""`--engine ray` gives what `--engine local` gives: the same rows in the same order, the same errors, the same files.

A local Ray of 2 CPUs is started once for the module; the commands run in this process (they join that
Ray) and once in a subprocess through ``--address``.  Skipped only when Ray is not installed.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from engine_corpus import mixed_corpus, snapshot

from mapc.cli.main import cli
from mapc.store import ingest

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # the module's Ray on 127.0.0.1 only (read on import)
ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'mapc[ray]' for the ray engine tests")
pytestmark = pytest.mark.filterwarnings("ignore:lance is not fork-safe")  # Ray forks and execs its helpers


@pytest.fixture(scope="module")
def cluster():
    """A local Ray for the module (this process's, if one is running); its GCS address, on 127.0.0.1."""
    started = not ray.is_initialized()
    if started:
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            logging_level=logging.ERROR,
            log_to_driver=False,
        )
    yield ray.get_runtime_context().gcs_address
    if started:
        ray.shutdown()


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ingest, "MIN_CHUNK", 6_000)  # many tasks, finishing out of order


def both(runner, command: list[str], out: dict[str, Path]):
    """Run `command` with --engine local (2 workers) and --engine ray; `out` names the target per engine."""
    results = {}
    for engine in ("local", "ray"):
        args = [a.replace("{OUT}", str(out[engine])) for a in command]
        results[engine] = runner.invoke(cli, [*args, "--engine", engine, "--workers", "2"])
    return results["local"], results["ray"]


def test_store_on_ray_gives_the_rows_and_errors_of_the_local_engine(tmp_path, runner, cluster, small_chunks):
    out = {"local": tmp_path / "local", "ray": tmp_path / "ray"}
    # a new dataset, from many chunks
    corpus = mixed_corpus(tmp_path / "a")
    local, on_ray = both(runner, ["store", str(corpus), "--to", "{OUT}"], out)
    assert local.exit_code == on_ray.exit_code == 0, on_ray.output
    assert on_ray.stdout == local.stdout.replace(str(out["local"]), str(out["ray"]))
    assert local.stderr == on_ray.stderr == ""
    assert snapshot(out["local"]) == snapshot(out["ray"])
    runs = snapshot(out["ray"])["tables"]["runs"]
    assert [r["storage_ordinal"] for r in runs] == list(range(len(runs)))
    # an append
    more = mixed_corpus(tmp_path / "b", tag="b") / "stories"
    local, on_ray = both(runner, ["store", str(more), "--to", "{OUT}"], out)
    assert local.exit_code == on_ray.exit_code == 0, on_ray.output
    assert snapshot(out["local"]) == snapshot(out["ray"])
    before = snapshot(out["ray"])
    # bad files: the same problems in the same order, nothing written
    bad = mixed_corpus(tmp_path / "c", bad=True, tag="c")
    local, on_ray = both(runner, ["store", str(bad), "--to", "{OUT}"], out)
    assert local.exit_code == on_ray.exit_code == 1
    assert local.stderr == on_ray.stderr and local.stderr.count("\n") == 5
    assert snapshot(out["local"]) == snapshot(out["ray"]) == before
    # ids already stored: the same report, nothing written
    local, on_ray = both(runner, ["store", str(more), "--to", "{OUT}"], out)
    assert local.exit_code == on_ray.exit_code == 1
    assert on_ray.stderr == local.stderr.replace(str(out["local"]), str(out["ray"]))
    assert "already stored" in local.stderr
    assert snapshot(out["ray"]) == before


def _summary_without_time(stderr: str) -> str:
    return re.sub(r"input bytes in .*$", "input bytes", stderr, flags=re.M)


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("to", ["actf", "storyline"])
def test_convert_on_ray_writes_the_files_of_the_local_engine(tmp_path, runner, cluster, to):
    corpus = mixed_corpus(tmp_path / "in", bad=True)
    out = {"local": tmp_path / "local", "ray": tmp_path / "ray"}
    local, on_ray = both(runner, ["convert", str(corpus), "--to", to, "-o", "{OUT}"], out)
    assert local.exit_code == on_ray.exit_code == 1
    assert _summary_without_time(local.stderr) == _summary_without_time(on_ray.stderr)
    assert "converted 24 files (30 documents), 4 failed, 1 skipped" in local.stderr
    assert _files(out["local"]) == _files(out["ray"]) and len(_files(out["ray"])) == 24


def test_store_on_a_running_cluster_by_its_address(tmp_path, runner, cluster):
    corpus = mixed_corpus(tmp_path / "in")
    local = runner.invoke(cli, ["store", str(corpus), "--to", str(tmp_path / "local")])
    assert local.exit_code == 0, local.output
    mapc = Path(sys.executable).parent / "mapc"
    argv = [str(mapc), "store", str(corpus), "--to", str(tmp_path / "ray"), "--engine", "ray", "--address", cluster]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == local.stdout.replace(str(tmp_path / "local"), str(tmp_path / "ray"))
    assert snapshot(tmp_path / "local") == snapshot(tmp_path / "ray")


def _rows(root: Path) -> dict[str, list[dict]]:
    """Every row of each table at CURRENT, sorted (a merge commit's row order is Lance's own)."""
    tables = snapshot(root)["tables"]
    return {
        name: sorted(rows, key=lambda r: sorted((k, str(v)) for k, v in r.items())) for name, rows in tables.items()
    }


def test_skip_existing_and_replace_on_ray_give_the_datasets_of_the_local_engine(
    tmp_path, runner, cluster, small_chunks
):
    out = {"local": tmp_path / "local", "ray": tmp_path / "ray"}
    first = mixed_corpus(tmp_path / "a")
    local, on_ray = both(runner, ["store", str(first / "stories"), "--to", "{OUT}"], out)
    assert local.exit_code == on_ray.exit_code == 0, on_ray.output
    local, on_ray = both(runner, ["store", str(first), "--to", "{OUT}", "--skip-existing"], out)
    assert local.exit_code == on_ray.exit_code == 0, on_ray.output
    assert on_ray.stdout == local.stdout.replace(str(out["local"]), str(out["ray"]))
    assert local.stdout.endswith("; 19 already stored, skipped\n")
    assert snapshot(out["local"]) == snapshot(out["ray"])
    local, on_ray = both(runner, ["store", str(first / "stories"), "--to", "{OUT}", "--replace"], out)
    assert local.exit_code == on_ray.exit_code == 0, on_ray.output
    assert on_ray.stdout == local.stdout.replace(str(out["local"]), str(out["ray"]))
    assert "19 of them replacing stored ones" in local.stdout
    assert _rows(out["local"]) == _rows(out["ray"])
