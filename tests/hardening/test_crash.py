"""Crash consistency: a `mapc store` or `mapc convert` killed with SIGKILL at any moment leaves no
partial document — the dataset opens at a version with all of a job's rows or none of them, and every
output file is whole (issue 10; SECURITY.md)."""

from __future__ import annotations

import json
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import FIXTURES

from mapc.engine import convert
from mapc.engine.problems import MapcError
from mapc.store import dataset

MAPC = [sys.executable, "-c", "from mapc.cli.main import main; main()"]
ROUNDS = 6


def corpus(tmp_path: Path, copies: int, tag: str = "") -> Path:
    """A directory of ATIF files: the fixtures `copies` times, each copy its own session and document."""
    src = tmp_path / f"corpus{tag}"
    src.mkdir()
    for k in range(copies):
        for path in sorted((FIXTURES / "atif").glob("*.json")):
            doc = json.loads(path.read_bytes())
            doc["session_id"] = f"{doc.get('session_id', 's')}-{tag}{k}"
            doc["trajectory_id"] = f"{doc.get('trajectory_id', 't')}-{tag}{k}"
            (src / f"{k}-{path.name}").write_text(json.dumps(doc))
    return src


def stored(src: Path, root: Path) -> None:
    subprocess.run([*MAPC, "store", str(src), "--to", str(root), "--workers", "1"], check=True, capture_output=True)


def killed(args: list[str], after: float) -> None:
    """Run mapc with `args` and SIGKILL it after `after` seconds (if it is still running)."""
    proc = subprocess.Popen([*MAPC, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(after)
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)


def documents(root: Path) -> int:
    try:
        return len(dataset.read(root))
    except MapcError as exc:
        assert exc.problems[0].code == "store.not_a_dataset"
        return 0


def test_a_killed_store_leaves_all_of_a_job_or_none(tmp_path: Path) -> None:
    base = tmp_path / "base.ds"
    stored(corpus(tmp_path, 1, "base"), base)
    before = documents(base)
    rng = random.Random(11)
    for round_ in range(ROUNDS):
        src = corpus(tmp_path, 3, f"r{round_}")
        new = sum(len(convert.into_storyline("atif", p.read_bytes())) for p in src.iterdir())
        root = tmp_path / f"round{round_}.ds"
        shutil.copytree(base, root)
        killed(["store", str(src), "--to", str(root), "--workers", "1"], rng.uniform(0.0, 2.5))
        after = documents(root)
        assert after in (before, before + new), f"round {round_}: {after} documents"
        if after == before:  # the dataset takes the job again after the kill (leftover staging is no obstacle)
            stored(src, root)
            assert documents(root) == before + new


def test_a_killed_convert_leaves_only_whole_files(tmp_path: Path) -> None:
    src = corpus(tmp_path, 3)
    expected = {p.name.removesuffix(".json"): convert.into_storyline("atif", p.read_bytes()) for p in src.iterdir()}
    rng = random.Random(5)
    for round_ in range(ROUNDS):
        out = tmp_path / f"out{round_}"
        killed(["convert", str(src), "--to", "storyline", "-o", str(out), "--workers", "2"], rng.uniform(0.0, 2.0))
        for path in out.rglob("*") if out.exists() else ():
            if path.name.startswith("."):  # a temporary file a killed write left (never an output name)
                assert path.name.endswith(".tmp")
                continue
            stem = path.name.removesuffix(".storyline.json")
            written = json.loads(path.read_bytes())
            assert (written if isinstance(written, list) else [written]) == expected[stem], path


@pytest.fixture(autouse=True)
def _no_ray_address(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
