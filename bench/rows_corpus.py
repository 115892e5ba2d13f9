"""Whole-corpus conversion: `mapc convert DIR --to storyline -o OUTDIR` with 1 and with 2 worker processes.

The data set ``corpus`` is a directory of generate.py documents, a third each ATIF, ACTF and Storyline
(``*.json``, ``*.actf.json``, ``*.storyline.json``), in nested directories, of about 0.07–0.5 MB each; ``--mb``
is the total (``--mb 300`` gives 1,072 files):

    .venv/bin/python bench/run.py --only corpus --mb 300 --repeat 1

Each row runs the real command in a subprocess (start-up, walk, detection, conversion, atomic writes and the
unknown-field warnings included) into a new output directory, removed when the process exits.  MB/s and the
ratio are of wall seconds: the point is the speed-up of two workers over one (on a machine with two free
cores at best 2×).  The CPU columns are the command's and its worker processes' (spawned children, waited for).
"""

from __future__ import annotations

import atexit
import math
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import generate
from harness import Sample, Work, bench, directory_dataset

FILE_BYTES = 280_000
SCALES = (0.25, 0.5, 1.0, 1.5, 1.75)  # mean 1.0: files of 70–490 kB
KINDS = (("atif", ".json"), ("actf", ".actf.json"), ("storyline", ".storyline.json"))
MAPC = Path(sys.executable).parent / "mapc"
_roots: list[Path] = []


@directory_dataset("corpus")
def _corpus(mb: float, directory: Path) -> None:
    """``{kind}/{group}/run-{i}{suffix}``: documents of every kind, seeds 0, 1, …, sizes cycling over SCALES."""
    count = max(3, math.ceil(mb * generate.MB / FILE_BYTES))
    for i in range(count):
        kind, suffix = KINDS[i % len(KINDS)]
        size = int(FILE_BYTES * SCALES[i % len(SCALES)])
        path = directory / kind / f"{i // 100:02d}" / f"run-{i:05d}{suffix}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(generate.generate_bytes(kind, size / generate.MB, seed=i))


def _fresh() -> Path:
    if not _roots:
        _roots.append(Path(tempfile.mkdtemp(prefix="mapc-bench-corpus-")))
        atexit.register(shutil.rmtree, _roots[0], ignore_errors=True)
    return Path(tempfile.mkdtemp(dir=_roots[0]))


def _convert(sample: Sample, workers: int) -> Work:
    def work() -> None:
        out = _fresh()
        argv = [str(MAPC), "convert", str(sample.path), "--to", "storyline", "-o", str(out)]
        done = subprocess.run([*argv, "--workers", str(workers), "--quiet"], capture_output=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed:\n{done.stderr.decode()[-2000:]}")

    return work


@bench("mapc convert DIR --workers 1", group="corpus", data="corpus", baseline="mapc convert DIR --workers 1",
       subprocess=True, wall=True)  # fmt: skip
def _one_worker(sample: Sample) -> Work:
    return _convert(sample, 1)


@bench("mapc convert DIR --workers 2", group="corpus", data="corpus", baseline="mapc convert DIR --workers 1",
       subprocess=True, wall=True)  # fmt: skip
def _two_workers(sample: Sample) -> Work:
    return _convert(sample, 2)
