"""The benchmark registry, data sets, timing and the Markdown table; `run.py` is its command line.

A row is a factory registered with `@bench`: it receives the input `Sample` once (untimed setup) and returns
the zero-argument callable that is timed, parse + transform + serialize, like bench/README.md says:

    @bench("mapc atif forward", group="atif", data="atif", baseline="handwritten forward")
    def _mapc_forward(sample: Sample) -> Work:
        program = compile_spec(...)                  # setup, not timed
        return lambda: convert_bytes(program, sample.data)

Put new rows in a ``bench/rows_*.py`` module; `run.py` imports every such module. A row that needs a tool
which is not installed raises `Unavailable` from its factory and is reported as skipped.

In-process rows are timed in CPU seconds (`time.process_time`); subprocess rows (``subprocess=True``) in the
CPU seconds of the finished children (`RUSAGE_CHILDREN`). Wall seconds are reported beside both.
"""

from __future__ import annotations

import gc
import os
import resource
import shutil
import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import generate
import handwritten_atif

BENCH_DIR = Path(__file__).resolve().parent
DATA_DIR = BENCH_DIR / "data"
OUT_DIR = BENCH_DIR / "out"

Work = Callable[[], object]


class Unavailable(Exception):
    """Raised by a row factory when the row cannot run here (a tool or module is missing)."""


@dataclass(frozen=True, slots=True)
class Sample:
    """One input file, read into memory before timing starts; or a directory of files (`size` bytes, no data)."""

    dataset: str
    path: Path
    data: bytes
    size: int | None = None

    @property
    def mb(self) -> float:
        """Size in MB of 10^6 bytes."""
        return (len(self.data) if self.size is None else self.size) / generate.MB


@dataclass(frozen=True, slots=True)
class Row:
    """A registered benchmark row; `baseline` names a row of the same group to compare with."""

    name: str
    group: str
    data: str
    factory: Callable[[Sample], Work]
    baseline: str | None = None
    subprocess: bool = False
    wall: bool = False  # MB/s and the ratio from wall seconds (rows that run in parallel)


@dataclass(frozen=True, slots=True)
class Result:
    """Timings of one row: CPU and wall seconds per repeat, or the reason it was skipped."""

    row: Row
    mb: float
    cpu: tuple[float, ...] = ()
    wall: tuple[float, ...] = ()
    skipped: str = ""


ROWS: dict[str, Row] = {}
DATASETS: dict[str, Callable[[float, Path], bytes]] = {}
DIRECTORY_DATASETS: dict[str, Callable[[float, Path], None]] = {}


def bench(
    name: str,
    *,
    group: str,
    data: str,
    baseline: str | None = None,
    subprocess: bool = False,
    wall: bool = False,
) -> Callable[[Callable[[Sample], Work]], Callable[[Sample], Work]]:
    """Register a row factory under `name` (unique) in `group`, fed with the data set `data`."""

    def register(factory: Callable[[Sample], Work]) -> Callable[[Sample], Work]:
        if name in ROWS:
            raise ValueError(f"benchmark row {name!r} is registered twice")
        ROWS[name] = Row(name, group, data, factory, baseline, subprocess, wall)
        return factory

    return register


def dataset(name: str) -> Callable[[Callable[[float, Path], bytes]], Callable[[float, Path], bytes]]:
    """Register a data set maker: ``maker(mb, data_dir) -> bytes`` (it may load other data sets)."""

    def register(maker: Callable[[float, Path], bytes]) -> Callable[[float, Path], bytes]:
        DATASETS[name] = maker
        return maker

    return register


def directory_dataset(name: str) -> Callable[[Callable[[float, Path], None]], Callable[[float, Path], None]]:
    """Register a directory data set maker: ``maker(mb, directory)`` fills the new `directory` with files."""

    def register(maker: Callable[[float, Path], None]) -> Callable[[float, Path], None]:
        DIRECTORY_DATASETS[name] = maker
        return maker

    return register


def data_path(name: str, mb: float, data_dir: Path) -> Path:
    """Where data set `name` at `mb` MB is cached; the generator version is in the name."""
    if name in DIRECTORY_DATASETS:
        return data_dir / f"{name}-{mb:g}mb-v{generate.VERSION}"
    return data_dir / f"{name}-{mb:g}mb-v{generate.VERSION}.json"


def _load_directory(name: str, mb: float, data_dir: Path) -> Sample:
    """A directory data set, generated first if missing (into a temporary directory, renamed into place)."""
    path = data_path(name, mb, data_dir)
    if not path.exists():
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        DIRECTORY_DATASETS[name](mb, tmp)
        os.replace(tmp, path)
    size = sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return Sample(name, path, b"", size)


def load(name: str, mb: float, data_dir: Path = DATA_DIR) -> Sample:
    """The cached data set, generated first if missing (written atomically)."""
    if name in DIRECTORY_DATASETS:
        return _load_directory(name, mb, data_dir)
    path = data_path(name, mb, data_dir)
    if not path.exists():
        data = DATASETS[name](mb, data_dir)
        data_dir.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    return Sample(name, path, path.read_bytes())


@dataset("atif")
def _atif(mb: float, data_dir: Path) -> bytes:
    return generate.generate_bytes("atif", mb)


@dataset("storyline")
def _storyline(mb: float, data_dir: Path) -> bytes:
    return generate.generate_bytes("storyline", mb)


@dataset("atif-storyline")
def _atif_storyline(mb: float, data_dir: Path) -> bytes:
    """The Storylines of the `atif` data set: the input of reverse converters."""
    return handwritten_atif.forward_bytes(load("atif", mb, data_dir).data)


def measure(work: Work, *, children: bool) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one call; `children` counts finished subprocesses' CPU instead."""
    gc.collect()  # start every repeat from the same heap, so one run's garbage is not billed to the next
    if children:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        w0 = time.perf_counter()
        work()
        wall = time.perf_counter() - w0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall
    c0, w0 = time.process_time(), time.perf_counter()
    out = work()
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    del out  # freed after the clock stops: the output is the row's product, not its garbage
    return cpu, wall


def run_row(row: Row, sample: Sample, repeat: int) -> Result:
    """Set the row up once, then time it `repeat` times."""
    try:
        work = row.factory(sample)
    except Unavailable as exc:
        return Result(row, sample.mb, skipped=str(exc))
    timings = [measure(work, children=row.subprocess) for _ in range(repeat)]
    return Result(row, sample.mb, tuple(c for c, _ in timings), tuple(w for _, w in timings))


def select(names: Iterable[str]) -> list[Row]:
    """Rows named (or in groups named) in `names` (all if none), plus the baselines they compare with.

    Rows of a group stay together, groups in the order they were first registered, rows in registry order.
    """
    wanted = set(names)
    unknown = wanted - set(ROWS) - {row.group for row in ROWS.values()}
    if unknown:
        raise KeyError(f"no benchmark row or group named {sorted(unknown)}; try --list")
    chosen = {name for name, row in ROWS.items() if not wanted or name in wanted or row.group in wanted}
    chosen |= {ROWS[name].baseline for name in chosen if ROWS[name].baseline in ROWS}
    groups = list(dict.fromkeys(row.group for row in ROWS.values()))
    rows = [row for name, row in ROWS.items() if name in chosen]
    return sorted(rows, key=lambda row: groups.index(row.group))  # stable: registry order within a group


def _seconds(x: float) -> str:
    return f"{x:.3f}" if x < 10 else f"{x:.1f}"


def table(results: list[Result]) -> str:
    """The Markdown table: medians of CPU seconds, their min, throughput and the ratio to the baseline.

    For `wall` rows, MB/s and the ratio come from wall seconds (their CPU is spread over processes).
    """
    medians = {r.row.name: statistics.median(r.wall if r.row.wall else r.cpu) for r in results if r.cpu}
    lines = [
        "| group | row | input MB | CPU s (median) | CPU s (min) | MB/s | ratio | wall s (median) |",
        "|---|---|---:|---:|---:|---:|---|---:|",
    ]
    for r in results:
        head = f"| {r.row.group} | {r.row.name} | {r.mb:.1f} |"
        if r.skipped:
            lines.append(f"{head} — | — | — | skipped: {r.skipped} | — |")
            continue
        median = medians[r.row.name]
        base = medians.get(r.row.baseline or "")
        ratio = f"{median / base:.2f}× {r.row.baseline}" if base else "—"
        mbps = f"{r.mb / median:.1f}" if median > 0 else "—"
        if r.row.wall:  # MB/s and the ratio are of wall seconds: the CPU of parallel workers adds up
            ratio += f" (wall; {base / median:.2f}× as fast)" if base else " (wall)"
            mbps += " (wall)"
        lines.append(
            f"{head} {_seconds(statistics.median(r.cpu))} | {_seconds(min(r.cpu))} | {mbps} | {ratio} | "
            f"{_seconds(statistics.median(r.wall))} |"
        )
    return "\n".join(lines)
