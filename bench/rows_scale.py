"""Scaling out: `mapc store DIR` and `mapc convert DIR` over ≥ 5,000 files with ``--engine local`` and ``--engine ray``.

The data set ``many-files`` is a directory of small generate.py documents, a third each ATIF, ACTF and
Storyline, in nested directories (every ATIF file gets its own trajectory and session ids, so the whole
directory stores as one dataset); ``--mb`` sets the count, one file per 30,000 bytes of it (``--mb 150``
gives 5,000 files; ATIF and ACTF documents are larger than asked, so the directory is bigger than --mb):

    .venv/bin/python bench/run.py --only scale --mb 150 --repeat 1

Each row runs the real command in a subprocess (start-up, walk, detection, conversion, fragments and the
commit, or the atomic output files), into a new directory removed when the process exits.  MB/s and the
ratio are of wall seconds; the CPU column counts the command and its local worker processes, not Ray's
workers (they are children of Ray's own processes).  The ray rows run on a Ray of 2 CPUs started once by
this process (untimed, on this machine only) and reached through ``--address``, as a job on an existing
cluster is; the row "… (Ray started by the command)" pays for a Ray started and stopped by the command.
Without Ray installed, the ray rows are skipped.
"""

from __future__ import annotations

import atexit
import logging
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import generate
from harness import Sample, Unavailable, Work, bench, directory_dataset

FILE_BYTES = 30_000
SCALES = (0.25, 0.5, 1.0, 1.5, 1.75)
KINDS = (("atif", ".json"), ("actf", ".actf.json"), ("storyline", ".storyline.json"))
MAPC = Path(sys.executable).parent / "mapc"
_roots: list[Path] = []
_ray: list[str] = []  # the address of the Ray this process started


@directory_dataset("many-files")
def _many_files(mb: float, directory: Path) -> None:
    """``{kind}/{group}/f-{i}{suffix}``: 50 files a directory, seeds 0, 1, …, sizes cycling over SCALES."""
    count = max(3, math.ceil(mb * generate.MB / FILE_BYTES))
    for i in range(count):
        kind, suffix = KINDS[i % len(KINDS)]
        data = generate.generate_bytes(kind, FILE_BYTES * SCALES[i % len(SCALES)] / generate.MB, seed=i)
        if kind == "atif":  # the generator's trajectory and session ids are fixed: make them this file's
            data = re.sub(rb'"(traj|session)-', rb'"\1-f' + str(i).encode() + b"-", data)
        path = directory / kind / f"{i // 50:03d}" / f"f-{i:05d}{suffix}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def _fresh() -> Path:
    """A new, not yet existing path under the temporary root."""
    if not _roots:
        _roots.append(Path(tempfile.mkdtemp(prefix="mapc-bench-scale-")))
        atexit.register(shutil.rmtree, _roots[0], ignore_errors=True)
    return Path(tempfile.mkdtemp(dir=_roots[0])) / "out"


def _cluster() -> str:
    """A Ray of 2 CPUs on this machine, started once (untimed); its address."""
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # on 127.0.0.1 only (read when Ray is imported)
    try:
        import ray
    except ImportError:
        raise Unavailable("Ray is not installed: pip install 'mapc[ray]'") from None
    if not _ray:
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            logging_level=logging.ERROR,
            log_to_driver=False,
        )
        atexit.register(ray.shutdown)
        _ray.append(ray.get_runtime_context().gcs_address)
    return _ray[0]


def _command(sample: Sample, argv: list[str]) -> Work:
    def work() -> None:
        out = _fresh()
        args = [str(MAPC), *(str(out) if a == "{OUT}" else a for a in argv)]
        done = subprocess.run(args, capture_output=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed:\n{done.stderr.decode()[-2000:]}")

    return work


def _store(sample: Sample, *engine: str) -> Work:
    return _command(sample, ["store", str(sample.path), "--to", "{OUT}", *engine])


def _convert(sample: Sample, *engine: str) -> Work:
    return _command(sample, ["convert", str(sample.path), "--to", "storyline", "-o", "{OUT}", "--quiet", *engine])


STORE_BASE = "mapc store DIR --engine local --workers 1"
CONVERT_BASE = "mapc convert DIR --engine local --workers 1"


@bench(STORE_BASE, group="scale", data="many-files", baseline=STORE_BASE, subprocess=True, wall=True)
def _store_one(sample: Sample) -> Work:
    return _store(sample, "--engine", "local", "--workers", "1")


@bench("mapc store DIR --engine local --workers 2", group="scale", data="many-files", baseline=STORE_BASE,
       subprocess=True, wall=True)  # fmt: skip
def _store_two(sample: Sample) -> Work:
    return _store(sample, "--engine", "local", "--workers", "2")


@bench("mapc store DIR --engine ray --workers 2 (Ray started by the command)", group="scale", data="many-files",
       baseline=STORE_BASE, subprocess=True, wall=True)  # fmt: skip
def _store_ray_own(sample: Sample) -> Work:
    try:
        import ray  # noqa: F401
    except ImportError:
        raise Unavailable("Ray is not installed: pip install 'mapc[ray]'") from None
    return _store(sample, "--engine", "ray", "--workers", "2")


@bench("mapc store DIR --engine ray (2 CPUs, --address)", group="scale", data="many-files", baseline=STORE_BASE,
       subprocess=True, wall=True)  # fmt: skip
def _store_ray(sample: Sample) -> Work:
    return _store(sample, "--engine", "ray", "--address", _cluster())


@bench(CONVERT_BASE, group="scale", data="many-files", baseline=CONVERT_BASE, subprocess=True, wall=True)
def _convert_one(sample: Sample) -> Work:
    return _convert(sample, "--engine", "local", "--workers", "1")


@bench("mapc convert DIR --engine local --workers 2", group="scale", data="many-files", baseline=CONVERT_BASE,
       subprocess=True, wall=True)  # fmt: skip
def _convert_two(sample: Sample) -> Work:
    return _convert(sample, "--engine", "local", "--workers", "2")


@bench("mapc convert DIR --engine ray (2 CPUs, --address)", group="scale", data="many-files",
       baseline=CONVERT_BASE, subprocess=True, wall=True)  # fmt: skip
def _convert_ray(sample: Sample) -> Work:
    return _convert(sample, "--engine", "ray", "--address", _cluster())
