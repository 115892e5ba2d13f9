"""`mapc store` as a job: chunks of input files staged as Lance fragments by workers, one commit by the driver.

The driver (`staged`) cuts the inputs, in their order, into chunks of about `chunk_bytes` and hands them
to a scheduler, a callable that runs a function on each item and yields ``(index, result)`` as they finish
(cli/engines.py: in this process, in a process pool, or as Ray tasks).  A worker (`store_chunk`) reads
each file's raw bytes, detects its format, converts it through the hub with mapc itself, turns its
Storylines into rows, writes the steps and tool_calls rows as Lance fragments into the job's staging
directory (store/dataset.py) and the runs rows as an Arrow file beside them; it sends back one small
`Outcome` per file (its document ids, or its problems) and the fragments' metadata.  The driver puts the
chunks back in input order; `Staged.commit` checks the ids, takes the lock, learns the dataset's next
``storage_ordinal``, has every chunk's runs rows numbered from its place in the input and staged by a
second, short round of tasks (`stage_runs`), and commits each table once.  The driver never holds rows.

With ``--skip-existing`` the driver first writes the ids the dataset holds into the staging directory and the
workers leave those documents out (counted per file); with ``--replace`` the commit merges instead of
appending (store/dataset.py).

Only scheduling differs between engines, so the rows, their order and the errors are the same
whichever runs the job; the chunks depend on the input sizes alone, so the fragments do too.

Nothing here prints or knows click: cli/store.py reports the outcomes.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pyarrow as pa

from mapc.engine import convert, detect
from mapc.engine.catalog import Catalog
from mapc.engine.inputs import read_input
from mapc.engine.options import DEFAULT, Options
from mapc.engine.problems import MapcError, Problem
from mapc.store import dataset, rows
from mapc.store.identity import by_session, file_document_ids

if TYPE_CHECKING:
    from lance.fragment import FragmentMetadata

STORED, SKIPPED, FAILED = "stored", "skipped", "failed"
ERROR, SKIP_EXISTING, REPLACE = "error", "skip", "replace"
EXISTING_MODES: Final = (ERROR, SKIP_EXISTING, REPLACE)
"""What `mapc store` does with a document whose id is already stored: fail (nothing written), skip it, or
replace the stored one."""
MIN_CHUNK: Final = 1 << 20
MAX_CHUNK: Final = 32 << 20
FRAGMENT_TABLES: Final = ("steps", "tool_calls")

Scheduler = Callable[[Callable[[Any], Any], Sequence[Any]], Iterator[tuple[int, Any]]]
"""Runs a function on every item, yielding ``(index, result)`` in any order; a result that is an
exception means the worker running that item stopped."""


@dataclass(frozen=True, slots=True)
class Input:
    """One file to store: its name as given (shown in messages, used by detection), the absolute path a
    worker reads, its size, and how to read it; `data` holds stdin's bytes, read by the driver; a file
    `refused` fails with those problems unread."""

    file: str
    path: str
    size: int = 0
    fmt: str | None = None
    jsonl: bool = False
    document_path: str | None = None
    data: bytes | None = None
    refused: tuple[Problem, ...] = ()  # the driver's reasons not to read it (over --max-input-bytes)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What became of one file: stored (its document ids and pointers), skipped, or failed (its problems,
    reported against `source`: the file, or what the error names)."""

    file: str
    status: str
    source: str = ""
    problems: tuple[Problem, ...] = ()
    documents: tuple[tuple[str, str], ...] = ()
    existing: int = 0  # documents left out because their id is already stored (--skip-existing)
    sessions: tuple[str, ...] = ()  # its ids that are a bare session, which another file may take too


@dataclass(frozen=True, slots=True)
class Chunk:
    """Consecutive inputs for one worker, and the job's settings (engine/options.py), pickled with them."""

    index: int
    inputs: tuple[Input, ...]
    staging: dataset.Staging
    skip: str = ""  # an Arrow file of the ids already stored, whose documents are left out (--skip-existing)
    options: Options = DEFAULT
    qualify: frozenset[str] = frozenset()  # sessions several files hold: named by path (store/identity.py)
    catalog: Catalog | None = None  # the formats (None: the one `import mapc` built); pickled as its description


@dataclass(frozen=True, slots=True)
class ChunkResult:
    """A chunk's outcomes, its staged fragments, where its runs rows wait to be numbered, and the rows of
    each table; `error` when writing a fragment failed."""

    index: int
    outcomes: tuple[Outcome, ...]
    fragments: tuple[tuple[str, tuple[FragmentMetadata, ...]], ...] = ()
    runs: str = ""
    counts: tuple[tuple[str, int], ...] = ()
    error: Problem | None = None


@dataclass(frozen=True, slots=True)
class RunsTask:
    """Number a chunk's runs rows from `first` and stage them: the second, short round, under the lock."""

    staging: dataset.Staging
    runs: str
    first: int


def chunk_bytes(total: int) -> int:
    """The input bytes of a chunk: about 1/64 of the job, between 1 MiB and 32 MiB."""
    return min(MAX_CHUNK, max(MIN_CHUNK, total // 64))


def chunks(
    inputs: Sequence[Input],
    staging: dataset.Staging,
    skip: str = "",
    options: Options = DEFAULT,
    catalog: Catalog | None = None,
) -> list[Chunk]:
    """Consecutive runs of `inputs`, each closed once it holds `chunk_bytes` of input."""
    limit = chunk_bytes(sum(i.size for i in inputs))
    out: list[Chunk] = []
    current: list[Input] = []
    size = 0
    for item in inputs:
        current.append(item)
        size += item.size
        if size >= limit:
            out.append(Chunk(len(out), tuple(current), staging, skip, options, catalog=catalog))
            current, size = [], 0
    if current or not out:
        out.append(Chunk(len(out), tuple(current), staging, skip, options, catalog=catalog))
    return out


# -- a worker ---------------------------------------------------------------------------------------------


def _read(item: Input, limit: int | None) -> bytes:
    if item.data is not None:
        return item.data
    return read_input(item.path, limit)  # a regular file only, and the limit counts the bytes read


_SKIP_SETS: dict[str, frozenset[str]] = {}


def _skip_set(path: str) -> frozenset[str]:
    """The ids in the job's file of ids already stored (read once per worker process)."""
    if not path:
        return frozenset()
    found = _SKIP_SETS.get(path)
    if found is None:
        with pa.OSFile(path, "rb") as source:
            ids = pa.ipc.open_file(source).read_all().column("document_id")
        found = _SKIP_SETS[path] = frozenset(ids.to_pylist())
        while len(_SKIP_SETS) > 4:  # a long-lived Ray worker serves many jobs
            del _SKIP_SETS[next(iter(_SKIP_SETS))]
    return found


def _store_file(
    item: Input,
    builder: rows.Builder,
    skip: frozenset[str] = frozenset(),
    options: Options = DEFAULT,
    qualify: frozenset[str] = frozenset(),
    catalog: Catalog | None = None,
) -> Outcome:
    """Read, detect, convert and split one file into `builder`; every outcome, errors included, is returned.

    Documents whose id is in `skip` are left out and counted; `qualify` are the sessions whose
    documents without a trajectory are named by the file's path (store/identity.py)."""
    if item.refused:
        return Outcome(item.file, FAILED, item.file, item.refused)
    try:
        data = _read(item, options.max_input_bytes)
    except MapcError as exc:  # over --max-input-bytes once read (it grew after the driver looked)
        return Outcome(item.file, FAILED, item.file, exc.problems)
    except OSError as exc:
        problem = Problem("file.unreadable", "", f"cannot read the file: {exc.strerror or exc}")
        return Outcome(item.file, FAILED, item.file, (problem,))
    mark = builder.mark()
    try:
        fmt = item.fmt or detect.detect(item.file, data, catalog=catalog)
        if fmt is None:
            return Outcome(item.file, SKIPPED)
        stories = convert.into_storyline(
            fmt, data, jsonl=item.jsonl, path=item.document_path, options=options, catalog=catalog
        )
        pointers = [f"/{i}" if len(stories) > 1 else "" for i in range(len(stories))]
        documents = []
        ids = file_document_ids(stories, item.document_path or item.file, qualify)
        for story, pointer, doc_id in zip(stories, pointers, ids, strict=True):
            if doc_id in skip:
                continue
            builder.add(story, doc_id)
            documents.append((doc_id, pointer))
    except MapcError as exc:
        builder.truncate(mark)
        return Outcome(item.file, FAILED, exc.source or item.file, exc.problems)
    except Exception as exc:  # a bug in mapc: this file fails, the job reports it
        builder.truncate(mark)
        problem = Problem("internal.error", "", f"{type(exc).__name__}: {exc}")
        return Outcome(item.file, FAILED, item.file, (problem,))
    sessions = by_session(stories, ids)
    return Outcome(
        item.file, STORED, documents=tuple(documents), existing=len(stories) - len(documents), sessions=sessions
    )


def store_chunk(chunk: Chunk) -> ChunkResult:
    """The worker's job: every file of `chunk`, then its steps and tool_calls staged as fragments.

    A chunk with a failed file stages nothing: the job will not be committed."""
    builder = rows.Builder()
    skip = _skip_set(chunk.skip)
    with rows.paused_gc():  # parsing, checking and splitting make no cycles (rows.paused_gc)
        outcomes = tuple(
            _store_file(item, builder, skip, chunk.options, chunk.qualify, chunk.catalog) for item in chunk.inputs
        )
        tables = builder.tables()
    if any(o.status == FAILED for o in outcomes):
        return ChunkResult(chunk.index, outcomes)
    by_name = tables.by_name()
    staged = []
    runs = ""
    try:
        for name in FRAGMENT_TABLES:
            staged.append((name, tuple(dataset.stage(chunk.staging, name, by_name[name]))))
        if tables.runs.num_rows:
            runs = os.path.join(chunk.staging.directory, f"runs-{chunk.index:06d}.arrow")
            with pa.OSFile(runs, "wb") as sink, pa.ipc.new_file(sink, rows.RUNS_SCHEMA) as writer:
                writer.write_table(tables.runs)
    except (OSError, ValueError, RuntimeError) as exc:
        return ChunkResult(chunk.index, outcomes, error=_write_failed(exc))
    counts = tuple((name, table.num_rows) for name, table in by_name.items())
    return ChunkResult(chunk.index, outcomes, tuple(staged), runs, counts)


def stage_runs(task: RunsTask) -> list[FragmentMetadata] | Problem:
    """The worker's second job: the chunk's runs rows with their ``storage_ordinal``, staged as fragments."""
    try:
        with pa.OSFile(task.runs, "rb") as source:
            runs = pa.ipc.open_file(source).read_all()
        return dataset.stage(task.staging, "runs", dataset.numbered(runs, task.first))
    except (OSError, ValueError, RuntimeError) as exc:
        return _write_failed(exc)


def _write_failed(exc: BaseException) -> Problem:
    return Problem("store.write_failed", "", f"cannot write a fragment: {type(exc).__name__}: {exc}")


# -- the driver -------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Staged:
    """A job whose files have all been read: the outcomes in input order, ready to commit (or not)."""

    staging: dataset.Staging
    outcomes: list[Outcome]
    results: list[ChunkResult]
    schedule: Scheduler
    existing: str = ERROR

    @property
    def skipped_existing(self) -> int:
        """Documents left out because their id was already stored (--skip-existing)."""
        return sum(o.existing for o in self.outcomes)

    @property
    def failed(self) -> bool:
        return any(o.status == FAILED for o in self.outcomes)

    def commit(self) -> dataset.Stored:
        """The one commit per table (see `dataset.commit`); the ids are checked first.

        Raises `LocatedError` for ids given twice, or already stored when neither skipping nor replacing
        (or stored by another job since this one started), `MapcError` for a fragment that could not be
        written or a dataset that cannot be committed to."""
        if self.failed:
            raise ValueError("a job with failed files is not committed")
        seen = dataset.unique_ids(
            (dataset.Source(o.file, pointer), doc_id) for o in self.outcomes for doc_id, pointer in o.documents
        )
        errors = [r.error for r in self.results if r.error is not None]
        if errors:
            raise MapcError(errors[:1], source=self.staging.root)
        fragments: dict[str, list[FragmentMetadata]] = {name: [] for name in FRAGMENT_TABLES}
        counts = dict.fromkeys(dataset.TABLES, 0)
        for r in self.results:
            for name, staged in r.fragments:
                fragments[name].extend(staged)
            for name, n in r.counts:
                counts[name] += n
        return dataset.commit(self.staging, self._stage_runs, fragments, counts, seen, replace=self.existing == REPLACE)

    def _stage_runs(self, first: int) -> list[FragmentMetadata]:
        """Number every chunk's runs rows from `first` on, in input order, on the workers (one task a chunk)."""
        tasks = []
        for r in self.results:
            if r.runs:
                tasks.append(RunsTask(self.staging, r.runs, first))
                first += dict(r.counts)["runs"]
        staged: list[list[FragmentMetadata]] = [[] for _ in tasks]
        for index, result in self.schedule(stage_runs, tasks):
            if isinstance(result, BaseException):
                result = _write_failed(result)
            if isinstance(result, Problem):
                raise MapcError([result], source=self.staging.root)
            staged[index] = result
        return [fragment for chunk in staged for fragment in chunk]


def _stopped(chunk: Chunk, exc: BaseException) -> ChunkResult:
    message = f"the worker storing it stopped: {type(exc).__name__}: {exc}"
    outcomes = tuple(Outcome(i.file, FAILED, i.file, (Problem("internal.error", "", message),)) for i in chunk.inputs)
    return ChunkResult(chunk.index, outcomes)


@contextmanager
def staged(
    root: Path,
    inputs: Sequence[Input],
    schedule: Scheduler,
    existing: str = ERROR,
    options: Options = DEFAULT,
    catalog: Catalog | None = None,
) -> Iterator[Staged]:
    """Run the workers over `inputs` and yield the `Staged` job; its staging directory is removed on leaving.

    `existing` says what becomes of a document whose id is already stored: `ERROR` (the commit fails),
    `SKIP_EXISTING` (the workers leave it out, counted in its file's `Outcome.existing`; the ids are read
    before the workers start, and one stored meanwhile by another job is still an error at the commit) or
    `REPLACE` (the commit replaces the stored document).
    The caller reports the outcomes and, if no file failed, calls `Staged.commit`."""
    if existing not in EXISTING_MODES:
        raise ValueError(f"existing must be one of {EXISTING_MODES}, not {existing!r}")
    staging = dataset.Staging.open(root)
    try:
        skip = _write_skip_file(root, staging) if existing == SKIP_EXISTING else ""
        work = chunks(inputs, staging, skip, options, catalog)
        results: list[ChunkResult | None] = [None] * len(work)
        for index, result in schedule(store_chunk, work):
            results[index] = _stopped(work[index], result) if isinstance(result, BaseException) else result
        shared = _shared_sessions(results)
        if shared:  # segments of one session in several files: those files again, named by path
            again = [dataclasses.replace(work[i], qualify=shared) for i in sorted(_holding(results, shared))]
            for index, result in schedule(store_chunk, again):
                chunk = again[index]
                results[chunk.index] = _stopped(chunk, result) if isinstance(result, BaseException) else result
        done = [r for r in results if r is not None]
        yield Staged(staging, [o for r in done for o in r.outcomes], done, schedule, existing)
    finally:
        staging.discard()


def _shared_sessions(results: Sequence[ChunkResult | None]) -> frozenset[str]:
    """The sessions that more than one file of the job took as a document id (store/identity.py)."""
    files: dict[str, set[str]] = {}
    for r in results:
        for o in r.outcomes if r is not None else ():
            for session in o.sessions:
                files.setdefault(session, set()).add(o.file)
    return frozenset(s for s, holders in files.items() if len(holders) > 1)


def _holding(results: Sequence[ChunkResult | None], sessions: frozenset[str]) -> set[int]:
    """The indexes of the chunks with a file that took one of `sessions` as an id."""
    return {i for i, r in enumerate(results) if r is not None and any(set(o.sessions) & sessions for o in r.outcomes)}


def _write_skip_file(root: Path, staging: dataset.Staging) -> str:
    """The ids the dataset holds, in an Arrow file of the job's staging directory for the workers to read."""
    ids = dataset.stored_ids(root)
    path = os.path.join(staging.directory, "existing-ids.arrow")
    table = pa.table({"document_id": ids})
    with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return path
