"""`mapc store` as a job: chunks of input files staged as Lance fragments by workers, one commit by the driver.

The driver (`stage_inputs`) cuts the inputs, in their order, into chunks of about `chunk_bytes` and hands
them to a scheduler, a callable that runs ``store_chunk`` on each chunk and yields ``(index, result)``
as they finish (cli/engines.py: in this process, in a process pool, or as Ray tasks).  A worker reads
each file's raw bytes, detects its format, converts it through the hub with mapc itself, turns its
Storylines into rows and writes the steps and tool_calls rows as fragments into the job's staging
directory (store/dataset.py); it sends back one small `Outcome` per file and the chunk's runs rows.
The driver puts the chunks back in input order and `Staged.commit` numbers the runs and commits each
table once.  Only scheduling differs between engines, so the rows, their order and the errors are the
same whichever runs the job; the chunks depend on the input sizes alone, so the fragments do too.

Nothing here prints or knows click: cli/store.py reports the outcomes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pyarrow as pa

from mapc.engine import convert, detect
from mapc.engine.problems import MapcError, Problem
from mapc.engine.views import document_id
from mapc.store import dataset, rows

if TYPE_CHECKING:
    from lance.fragment import FragmentMetadata

STORED, SKIPPED, FAILED = "stored", "skipped", "failed"
MIN_CHUNK: Final = 1 << 20
MAX_CHUNK: Final = 32 << 20
FRAGMENT_TABLES: Final = ("steps", "tool_calls")

Scheduler = Callable[[Callable[[Any], Any], Sequence[Any]], Iterator[tuple[int, Any]]]
"""Runs a function on every item, yielding ``(index, result)`` in any order; a result that is an
exception means the worker running that item stopped."""


@dataclass(frozen=True, slots=True)
class Input:
    """One file to store: its name as given (shown in messages, used by detection), the absolute path a
    worker reads, its size, and how to read it; `data` holds stdin's bytes, read by the driver."""

    file: str
    path: str
    size: int = 0
    fmt: str | None = None
    jsonl: bool = False
    document_path: str | None = None
    data: bytes | None = None


@dataclass(frozen=True, slots=True)
class Outcome:
    """What became of one file: stored (its document ids and pointers), skipped, or failed (its problems,
    reported against `source`: the file, or what the error names)."""

    file: str
    status: str
    source: str = ""
    problems: tuple[Problem, ...] = ()
    documents: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Chunk:
    index: int
    inputs: tuple[Input, ...]
    staging: dataset.Staging


@dataclass(frozen=True, slots=True)
class ChunkResult:
    """A chunk's outcomes, its runs rows (not yet numbered), its staged fragments and their row counts;
    `error` when writing a fragment failed."""

    index: int
    outcomes: tuple[Outcome, ...]
    runs: pa.Table | None = None
    fragments: tuple[tuple[str, tuple[FragmentMetadata, ...]], ...] = ()
    counts: tuple[tuple[str, int], ...] = ()
    error: Problem | None = None


def chunk_bytes(total: int) -> int:
    """The input bytes of a chunk: about 1/64 of the job, between 1 MiB and 32 MiB."""
    return min(MAX_CHUNK, max(MIN_CHUNK, total // 64))


def chunks(inputs: Sequence[Input], staging: dataset.Staging) -> list[Chunk]:
    """Consecutive runs of `inputs`, each closed once it holds `chunk_bytes` of input."""
    limit = chunk_bytes(sum(i.size for i in inputs))
    out: list[Chunk] = []
    current: list[Input] = []
    size = 0
    for item in inputs:
        current.append(item)
        size += item.size
        if size >= limit:
            out.append(Chunk(len(out), tuple(current), staging))
            current, size = [], 0
    if current or not out:
        out.append(Chunk(len(out), tuple(current), staging))
    return out


# -- a worker ---------------------------------------------------------------------------------------------


def _read(item: Input) -> bytes:
    if item.data is not None:
        return item.data
    with open(item.path, "rb") as handle:
        return handle.read()


def _store_file(item: Input, builder: rows.Builder) -> Outcome:
    """Read, detect, convert and split one file into `builder`; every outcome, errors included, is returned."""
    try:
        data = _read(item)
    except OSError as exc:
        problem = Problem("file.unreadable", "", f"cannot read the file: {exc.strerror or exc}")
        return Outcome(item.file, FAILED, item.file, (problem,))
    mark = builder.mark()
    try:
        fmt = item.fmt or detect.detect(item.file, data)
        if fmt is None:
            return Outcome(item.file, SKIPPED)
        stories = convert.into_storyline(fmt, data, jsonl=item.jsonl, path=item.document_path)
        for story in stories:
            builder.add(story)
    except MapcError as exc:
        builder.truncate(mark)
        return Outcome(item.file, FAILED, exc.source or item.file, exc.problems)
    except Exception as exc:  # a bug in mapc: this file fails, the job reports it
        builder.truncate(mark)
        problem = Problem("internal.error", "", f"{type(exc).__name__}: {exc}")
        return Outcome(item.file, FAILED, item.file, (problem,))
    pointers = [f"/{i}" if len(stories) > 1 else "" for i in range(len(stories))]
    documents = tuple((document_id(s), p) for s, p in zip(stories, pointers, strict=True))
    return Outcome(item.file, STORED, documents=documents)


def store_chunk(chunk: Chunk) -> ChunkResult:
    """The worker's job: every file of `chunk`, then its steps and tool_calls staged as fragments.

    A chunk with a failed file stages nothing: the job will not be committed."""
    builder = rows.Builder()
    outcomes = tuple(_store_file(item, builder) for item in chunk.inputs)
    tables = builder.tables()
    if any(o.status == FAILED for o in outcomes):
        return ChunkResult(chunk.index, outcomes)
    by_name = tables.by_name()
    staged = []
    for name in FRAGMENT_TABLES:
        try:
            staged.append((name, tuple(dataset.stage(chunk.staging, name, by_name[name]))))
        except (OSError, ValueError, RuntimeError) as exc:
            problem = Problem("store.write_failed", name, f"cannot write a fragment of {name}.lance: {exc}")
            return ChunkResult(chunk.index, outcomes, error=problem)
    counts = tuple((name, by_name[name].num_rows) for name in FRAGMENT_TABLES)
    return ChunkResult(chunk.index, outcomes, tables.runs, tuple(staged), counts)


# -- the driver -------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Staged:
    """A job whose files have all been read: the outcomes in input order, ready to commit (or not)."""

    staging: dataset.Staging
    outcomes: list[Outcome]
    results: list[ChunkResult]

    @property
    def failed(self) -> bool:
        return any(o.status == FAILED for o in self.outcomes)

    def commit(self) -> dataset.Stored:
        """The one commit per table (see `dataset.commit`); the ids are checked first.

        Raises `LocatedError` for ids given twice or already stored, `MapcError` for a fragment that
        could not be written or a dataset that cannot be committed to."""
        if self.failed:
            raise ValueError("a job with failed files is not committed")
        seen = dataset.unique_ids(
            (dataset.Source(o.file, pointer), doc_id) for o in self.outcomes for doc_id, pointer in o.documents
        )
        errors = [r.error for r in self.results if r.error is not None]
        if errors:
            raise MapcError(errors[:1], source=self.staging.root)
        runs = [r.runs for r in self.results if r.runs is not None]
        fragments: dict[str, list[FragmentMetadata]] = {name: [] for name in FRAGMENT_TABLES}
        counts = dict.fromkeys(FRAGMENT_TABLES, 0)
        for r in self.results:
            for name, staged in r.fragments:
                fragments[name].extend(staged)
            for name, n in r.counts:
                counts[name] += n
        all_runs = pa.concat_tables(runs) if runs else rows.RUNS_SCHEMA.empty_table()
        return dataset.commit(self.staging, all_runs, fragments, counts, seen)


def _stopped(chunk: Chunk, exc: BaseException) -> ChunkResult:
    message = f"the worker storing it stopped: {type(exc).__name__}: {exc}"
    outcomes = tuple(Outcome(i.file, FAILED, i.file, (Problem("internal.error", "", message),)) for i in chunk.inputs)
    return ChunkResult(chunk.index, outcomes)


@contextmanager
def staged(root: Path, inputs: Sequence[Input], schedule: Scheduler) -> Iterator[Staged]:
    """Run the workers over `inputs` and yield the `Staged` job; its staging directory is removed on leaving.

    The caller reports the outcomes and, if no file failed, calls `Staged.commit`."""
    staging = dataset.Staging.open(root)
    try:
        work = chunks(inputs, staging)
        results: list[ChunkResult | None] = [None] * len(work)
        for index, result in schedule(store_chunk, work):
            results[index] = _stopped(work[index], result) if isinstance(result, BaseException) else result
        done = [r for r in results if r is not None]
        yield Staged(staging, [o for r in done for o in r.outcomes], done)
    finally:
        staging.discard()
