"""Start-up rows (issue 22): `mapc run atif` on a 5-step file, in a fresh interpreter each time.

    python bench/run.py --only startup --repeat 11

Every row is a subprocess timed in its CPU seconds (wall beside it): the interpreter alone (the floor),
jq on the same file (the issue's reference), mapc with and without the spec cache, and the same
command run by mapc as it was before the start-up work (commit `BEFORE`, unpacked with `git archive`
into bench/out/ and imported from there), so both figures come from one run on one machine.

Children run with bytecode allowed (PYTHONDONTWRITEBYTECODE unset), as an installed package runs: a
checkout's modules would otherwise be compiled from source on every start.  Each command runs once
untimed first, which fills its own spec cache and writes the bytecode.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from harness import BENCH_DIR, Sample, Unavailable, Work, bench, dataset

REPO = BENCH_DIR.parent
BEFORE = "0707724"  # main before the start-up work (issue 22 "Left: start-up is 0.22 s")
FIXTURE = REPO / "tests" / "data" / "fixtures" / "atif" / "support-ticket.json"
# How the installed `mapc` package is laid out from the repository (pyproject's package-dir).
PACKAGES = ("engine", "cli", "store", "mappings", "schemas", "conformance")
MAIN = "import sys; sys.argv[0] = 'mapc'; from mapc.cli.main import main; main()"


@dataset("support-ticket")
def _support_ticket(mb: float, data_dir: Path) -> bytes:
    return FIXTURE.read_bytes()  # a 5-step ATIF file: its size is not --mb's


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    env.update(extra)
    return env


def _timed(command: list[str], env: dict[str, str]) -> Work:
    def run() -> None:
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env)

    run()  # untimed: bytecode written, spec cache filled
    return run


def _cache_dir(name: str) -> str:
    return tempfile.mkdtemp(prefix=f"mapc-bench-{name}-")


def _before_tree(rev: str) -> Path:
    """A directory to put on PYTHONPATH that imports as `mapc` at commit `rev` (made once, in bench/out/)."""
    root = BENCH_DIR / "out" / f"startup-{rev}"
    farm = root / "path"
    if (farm / "mapc" / "__init__.py").exists():
        return farm
    try:
        command = ["git", "-C", str(REPO), "archive", "--format=tar", rev]
        archive = subprocess.run(command, capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        raise Unavailable(f"cannot unpack commit {rev} with git archive ({exc})") from None
    tmp = root.with_name(f".{root.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    source = tmp / "src"
    source.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(source, filter="data")
    package = tmp / "path" / "mapc"
    package.mkdir(parents=True)
    for item in (source / "api").iterdir():
        (package / item.name).symlink_to(Path("..", "..", "src", "api", item.name))
    for name in PACKAGES:
        (package / name).symlink_to(Path("..", "..", "src", name))
    shutil.rmtree(root, ignore_errors=True)
    os.replace(tmp, root)
    return farm


@bench("python -c pass", group="startup", data="support-ticket", subprocess=True)
def _python(sample: Sample) -> Work:
    return _timed([sys.executable, "-c", "pass"], _env())


@bench("jq forward (the issue's reference)", group="startup", data="support-ticket", subprocess=True)
def _jq(sample: Sample) -> Work:
    jq = shutil.which("jq")
    if jq is None:
        raise Unavailable("jq is not installed")
    return _timed([jq, "-c", "-f", str(BENCH_DIR / "atif.jq"), str(sample.path)], _env())


@bench(f"mapc run atif, before ({BEFORE}, spec cache)", group="startup", data="support-ticket", subprocess=True)
def _before(sample: Sample) -> Work:
    farm = _before_tree(BEFORE)
    env = _env(PYTHONPATH=str(farm), MAPC_CACHE_DIR=_cache_dir("before"))
    return _timed([sys.executable, "-c", MAIN, "run", "atif", str(sample.path)], env)


@bench(
    "mapc run atif (spec cache)",
    group="startup",
    data="support-ticket",
    baseline=f"mapc run atif, before ({BEFORE}, spec cache)",
    subprocess=True,
)
def _now(sample: Sample) -> Work:
    env = _env(MAPC_CACHE_DIR=_cache_dir("now"))
    return _timed([sys.executable, "-c", MAIN, "run", "atif", str(sample.path)], env)


@bench(
    "mapc run atif --no-cache",
    group="startup",
    data="support-ticket",
    baseline=f"mapc run atif, before ({BEFORE}, spec cache)",
    subprocess=True,
)
def _now_no_cache(sample: Sample) -> Work:
    return _timed([sys.executable, "-c", MAIN, "run", "atif", str(sample.path), "--no-cache"], _env())
