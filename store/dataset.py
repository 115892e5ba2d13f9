"""A Storyline dataset directory: ``runs.lance``, ``steps.lance``, ``tool_calls.lance`` and ``CURRENT``.

Layout (docs/store.md; simplified as issue 7 allows: no ``objects.lance`` for large cells and
no ``generations/`` indirection; every cell is stored inline)::

    DATASET/
      .lock              # fcntl.flock: one writer at a time (store, index, compact)
      .staging/JOB/      # an import's fragments until its commit (left behind only by a killed job)
      .staging/JOB.lock  # flock held by the job while it runs: `compact` removes only unlocked jobs
      CURRENT            # JSON: the Lance version of each table that readers see, and when older ones retired
      runs.lance/  steps.lance/  tool_calls.lance/

**Fragments, then one commit per table.** An import first writes its rows as Lance fragments into
its own staging directory, ``DATASET/.staging/JOB/`` (`Staging`, `stage`): in this process, in a pool
of worker processes or on Ray workers (store/ingest.py), none of them holding the lock.  Then the
driver takes the lock, checks the ids, has the runs rows numbered from the dataset's next
``storage_ordinal`` (in input order) and staged, moves the staged files into the tables and makes
one Lance commit per table (runs, steps, tool_calls, in that order: `commit`); the staging
directory is removed whatever happens.

**Atomic imports.** After its commits an import replaces ``CURRENT`` (a temporary file renamed
over it).  Readers open each table at the version ``CURRENT`` names, so they see all of an import
or none of it, even while it is being written.  If writing a table fails, the tables already
committed are rolled back at once (``restore`` of their previous version; a table the import
created is removed) and ``CURRENT`` is left alone.  If the process dies in between, the next
writer finds tables whose latest version is not the one in ``CURRENT`` and restores them before
it does anything else.  A directory without ``CURRENT`` (tables written by another tool) is read
at the latest versions.  An import that replaces stored documents (``mapc store --replace``) commits
each existing table with one Lance ``merge_insert`` instead of an append (`_merge_table`), under the
same rules: one commit per table, then ``CURRENT``.

**Concurrency.** Writers take an exclusive ``flock`` on ``DATASET/.lock`` around
read-check-commit, so the commits of two ``mapc store`` into one dataset run one after the other
and neither loses rows; the ``document_id`` uniqueness check runs under the same lock.  Staging
needs no lock (each job has its own directory, and only a commit touches the tables).  Readers
take no lock.

**Maintenance** (`compact`, `create_indexes`) is a commit like an import: under the lock it writes
new versions of the tables, then switches ``CURRENT`` to them in one atomic write.  Nothing a
reader may still use is deleted before that switch, so a maintenance step killed at any moment
leaves ``CURRENT`` naming versions that exist.  Each switch records in ``CURRENT`` (``retired``)
the version it replaced and when; a reader that read ``CURRENT`` before the switch may still open
that version.  `compact` removes a version only when the switch that retired it is older than the
grace period (one hour by default), or when no ``CURRENT`` ever named it; and it removes data files
no version references, and the staging directories of killed jobs.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import lance
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from mapc.engine.problems import MapcError, Problem
from mapc.engine.views import document_id
from mapc.store import rows

if TYPE_CHECKING:
    from lance.fragment import FragmentMetadata

TABLES: Final = tuple(rows.SCHEMAS)
CURRENT: Final = "CURRENT"
LOCK: Final = ".lock"
STAGING: Final = ".staging"
LAYOUT_VERSION: Final = 1
DEFAULT_GRACE: Final = timedelta(hours=1)
MAX_RETIRED: Final = 256  # records per table kept in CURRENT; dropping the oldest only delays removals

# §4 "Indexes", restricted to what issue 7 asks for, and the full-text indexes `mapc find` searches
# (messages and tool results; issue 20).
INDEXES: Final = {
    "runs": (("document_id", "BTREE"), ("session_id", "BTREE")),
    "steps": (
        ("document_id", "BTREE"),
        ("session_id", "BTREE"),
        ("message_json", "INVERTED"),
        ("observation_json", "INVERTED"),
    ),
    "tool_calls": (
        ("document_id", "BTREE"),
        ("session_id", "BTREE"),
        ("function_name", "BITMAP"),
        ("result_json", "INVERTED"),
    ),
}


def table_path(root: Path, name: str) -> Path:
    return root / f"{name}.lance"


@dataclass(frozen=True, slots=True)
class Source:
    """Where a document to store came from, to name it in errors: a file and a pointer or line."""

    file: str
    pointer: str = ""

    def __str__(self) -> str:
        return f"{self.file} {self.pointer}" if self.pointer else self.file


class LocatedError(MapcError):
    """Problems of several inputs: `located` pairs each problem with the file it is about."""

    def __init__(self, located: Sequence[tuple[str, Problem]]) -> None:
        self.located: tuple[tuple[str, Problem], ...] = tuple(located)
        super().__init__([p for _, p in self.located])


@dataclass(frozen=True, slots=True)
class Stored:
    """What an import wrote."""

    documents: int
    steps: int
    tool_calls: int
    versions: dict[str, int]
    replaced: int = 0  # of `documents`, how many replaced a stored document of the same id


# --- CURRENT and the lock ---------------------------------------------------------------------------


def read_current(root: Path) -> dict[str, int] | None:
    """The table versions readers see, or None when the directory has no ``CURRENT``."""
    path = root / CURRENT
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        current = orjson.loads(data)
        tables = current["tables"]
        if not all(type(tables.get(name, 0)) is int for name in TABLES):
            raise TypeError
    except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
        raise MapcError.single("store.bad_current", "CURRENT", f"not a CURRENT pointer: {exc}") from None
    return {name: tables[name] for name in TABLES if name in tables}


@dataclass(frozen=True, slots=True)
class Pointer:
    """All of ``CURRENT``: the versions readers see, and per table ``(version, unix_ms)`` retirements.

    A record ``(A, t)`` says: at `t` ``CURRENT`` stopped naming version `A` of the table.  As the
    versions ``CURRENT`` names only grow, no version up to `A` has been named since `t`.
    """

    tables: dict[str, int]
    retired: dict[str, list[tuple[int, int]]]


def _read_pointer(root: Path) -> Pointer | None:
    """``CURRENT`` with its retirement records (a malformed or missing record list counts as none)."""
    tables = read_current(root)
    if tables is None:
        return None
    retired: dict[str, list[tuple[int, int]]] = {}
    raw = orjson.loads((root / CURRENT).read_bytes()).get("retired")
    if isinstance(raw, dict):
        for name, records in raw.items():
            if name in tables and isinstance(records, list):
                good = [r for r in records if isinstance(r, list) and len(r) == 2 and all(type(x) is int for x in r)]
                if len(good) == len(records):
                    retired[name] = [(a, t) for a, t in good]
    return Pointer(tables, retired)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _write_current(root: Path, versions: dict[str, int], *, retire: dict[str, int] | None = None) -> None:
    """Switch ``CURRENT`` to `versions` (under the lock), recording each version it stops naming.

    `retire` adds records for versions retired at an unknown earlier time (a dataset written before
    the records existed): they are dated now, which can only keep them longer.
    """
    previous = _read_pointer(root)
    retired = {name: list(records) for name, records in (previous.retired if previous else {}).items()}
    now = _now_ms()
    for name, old in (previous.tables if previous else {}).items():
        if versions.get(name) != old:
            retired.setdefault(name, []).append((old, now))
    for name, version in (retire or {}).items():
        retired.setdefault(name, []).append((version, now))
    _put_current(root, Pointer(versions, retired))


def _put_current(root: Path, pointer: Pointer) -> None:
    """Replace ``CURRENT`` atomically: a temporary file, fsynced, renamed over it, and the directory fsynced."""
    retired = {
        name: [list(r) for r in sorted(records)[-MAX_RETIRED:]]
        for name, records in sorted(pointer.retired.items())
        if name in pointer.tables and records
    }
    body = orjson.dumps(
        {"layout_version": LAYOUT_VERSION, "tables": pointer.tables, "retired": retired}, option=orjson.OPT_INDENT_2
    )
    tmp = root / f".{CURRENT}.{os.getpid()}.tmp"
    with open(tmp, "wb") as out:
        out.write(body + b"\n")
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, root / CURRENT)
    directory = os.open(root, os.O_RDONLY)
    try:
        os.fsync(directory)  # the rename itself survives a power loss
    finally:
        os.close(directory)


@contextmanager
def locked(root: Path) -> Iterator[None]:
    """Hold the dataset's exclusive write lock (created with the directory if needed)."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / LOCK, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _recover(root: Path) -> dict[str, int]:
    """Under the lock: bring every table back to ``CURRENT`` and return the versions.

    Tables newer than ``CURRENT`` hold a failed or interrupted import and are restored; a table
    ``CURRENT`` does not know is removed.  Without ``CURRENT``, the latest versions are adopted.
    """
    current = read_current(root)
    if current is None:
        adopted = {name: _latest_version(table_path(root, name)) for name in TABLES if table_path(root, name).exists()}
        _write_current(root, adopted)
        return adopted
    changed = False
    for name in TABLES:
        path = table_path(root, name)
        if name not in current:
            if path.exists():
                shutil.rmtree(path)
            continue
        if _latest_version(path) != current[name]:
            restored = _restore(path, current[name])
            current[name] = restored
            changed = True
    if changed:
        _write_current(root, current)
    return current


def _latest_version(path: Path) -> int:
    try:
        return lance.dataset(str(path)).version
    except (OSError, ValueError) as exc:
        raise MapcError.single("store.bad_table", path.stem, f"cannot open {path.name}: {exc}") from None


def _restore(path: Path, version: int) -> int:
    try:
        ds = lance.dataset(str(path), version=version)
    except (OSError, ValueError) as exc:
        raise MapcError.single(
            "store.bad_table", path.stem, f"cannot open {path.name} at version {version}: {exc}"
        ) from None
    ds.restore()
    return lance.dataset(str(path)).version


# --- writing: fragments first, then one commit per table -------------------------------------------


@dataclass(frozen=True, slots=True)
class Staging:
    """Where one import writes its Lance fragments before the commit: ``DATASET/.staging/JOB/TABLE.lance``.

    Workers, in this process, in a process pool or on the nodes of a Ray cluster that see DATASET at
    the same path, write the fragments of their rows here (`stage`); nothing here belongs to a
    table until `commit` moves the fragments' files into the tables and commits them, under the
    lock.  `discard` removes the job's directory (and DATASET itself when the job made it and
    nothing else is in it), whether the import was committed or failed.
    """

    root: str
    directory: str
    created_root: bool
    versions: tuple[tuple[str, str], ...] = ()  # (table, Lance data storage version) of tables that exist

    @classmethod
    def open(cls, root: Path) -> Staging:
        created = not root.exists()
        directory = Path(os.path.abspath(root)) / STAGING / uuid.uuid4().hex
        directory.parent.mkdir(parents=True, exist_ok=True)
        _hold_job_lock(directory)  # before the directory exists: `compact` never sees it unlocked
        directory.mkdir()
        versions = []
        for name in TABLES:
            path = table_path(root, name)
            if path.exists():
                with contextlib.suppress(OSError, ValueError):  # the commit reports a table it cannot open
                    versions.append((name, lance.dataset(str(path)).data_storage_version))
        return cls(str(root), str(directory), created, tuple(versions))

    def table_uri(self, name: str) -> str:
        return os.path.join(self.directory, f"{name}.lance")

    def discard(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)
        _release_job_lock(self.directory)
        for leftover in (os.path.dirname(self.directory), *((self.root,) if self.created_root else ())):
            with contextlib.suppress(OSError):
                os.rmdir(leftover)  # only when empty: another job's staging, or the dataset, stays


_JOB_LOCKS: dict[str, int] = {}  # staging directory -> the descriptor whose flock marks the job alive


def _hold_job_lock(directory: Path) -> None:
    fd = os.open(f"{directory}.lock", os.O_CREAT | os.O_RDWR, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    _JOB_LOCKS[str(directory)] = fd


def _release_job_lock(directory: str) -> None:
    fd = _JOB_LOCKS.pop(directory, None)
    if fd is not None:
        with contextlib.suppress(OSError):
            os.unlink(f"{directory}.lock")
        os.close(fd)


def stage(staging: Staging, name: str, table: pa.Table) -> list[FragmentMetadata]:
    """Write `table`'s rows as Lance fragments of table `name` under `staging`; not yet visible."""
    if table.num_rows == 0:
        return []
    from lance.fragment import write_fragments

    return write_fragments(
        table,
        staging.table_uri(name),
        schema=rows.SCHEMAS[name],
        mode="create",
        data_storage_version=dict(staging.versions).get(name),
    )


def unique_ids(documents: Iterable[tuple[Source, str]]) -> dict[str, Source]:
    """Each ``document_id`` with where it comes from; an id given twice is a `LocatedError` naming both."""
    seen: dict[str, Source] = {}
    clashes: list[tuple[str, Problem]] = []
    for source, doc_id in documents:
        first = seen.get(doc_id)
        if first is not None:
            clashes.append(
                (
                    source.file,
                    Problem(
                        "store.duplicate_document_id",
                        source.pointer,
                        f"document_id {_q(doc_id)} is also the id of {first}; ids must be unique",
                    ),
                )
            )
        else:
            seen[doc_id] = source
    if clashes:
        raise LocatedError(clashes)
    return seen


def store(root: Path, batches: Sequence[tuple[Source, dict[str, Any]]]) -> Stored:
    """Append validated Storylines to the dataset at `root`, creating it if needed.

    `batches` pairs each document with where it came from.  A ``document_id`` already stored, or
    given twice in `batches`, is an error naming both places (`LocatedError`), and nothing is
    written.  The rows are staged as fragments in this process, then `commit`ted: the same path
    as `mapc store` with its workers (store/ingest.py).
    """
    seen = unique_ids((source, document_id(doc)) for source, doc in batches)
    tables = rows.split(doc for _, doc in batches)
    staging = Staging.open(root)
    try:
        fragments = {name: stage(staging, name, tables.by_name()[name]) for name in ("steps", "tool_calls")}
        counts = {name: table.num_rows for name, table in tables.by_name().items()}
        return commit(
            staging, lambda first: stage(staging, "runs", numbered(tables.runs, first)), fragments, counts, seen
        )
    finally:
        staging.discard()


def numbered(runs: pa.Table, first: int) -> pa.Table:
    """`runs` with ``storage_ordinal`` counting from `first`, in row order."""
    index = runs.schema.get_field_index("storage_ordinal")
    ordinals = pa.array(range(first, first + runs.num_rows), type=pa.int64())
    return runs.set_column(index, rows.RUNS_SCHEMA.field(index), ordinals)


def commit(
    staging: Staging,
    stage_runs: Callable[[int], list[FragmentMetadata]],
    fragments: dict[str, list[FragmentMetadata]],
    counts: dict[str, int],
    seen: dict[str, Source],
    *,
    replace: bool = False,
) -> Stored:
    """Under the lock: check the ids against the dataset, stage the numbered runs, commit every table, then CURRENT.

    `stage_runs(first)` stages the runs rows of the import, one per document in input order, with
    ``storage_ordinal`` counting from `first` (the dataset's next ordinal, known only under the lock);
    `fragments` holds the staged steps and tool_calls, `counts` the rows of each table, `seen` every
    ``document_id`` of the import with its source.  A ``document_id`` already stored is a
    `LocatedError` and nothing is committed, unless `replace`: then the stored document's rows in
    every table give way to the import's (`_merge_table`).  One commit per table, then ``CURRENT``;
    see the module docstring for atomicity.
    """
    root = Path(staging.root)
    with locked(root):
        current = _recover(root)
        stored_runs = _open(root, "runs", current)
        first = 0
        replaced: list[str] = []
        if stored_runs is not None:
            stored = stored_runs.to_table(columns=["document_id"]).column("document_id")
            found = pc.is_in(stored, value_set=pa.array(list(seen), type=pa.string()))
            clashes = []
            if replace:
                replaced = pc.filter(stored, found).to_pylist()
                found = pa.array([False] * len(stored), type=pa.bool_())
            for doc_id in pc.filter(stored, found).to_pylist():
                source = seen[doc_id]
                clashes.append(
                    (
                        source.file,
                        Problem(
                            "store.duplicate_document_id",
                            source.pointer,
                            f"document_id {_q(doc_id)} is already stored in {root}; ids must be unique",
                        ),
                    )
                )
            if clashes:
                raise LocatedError(sorted(clashes, key=lambda c: (c[0], c[1].pointer)))
            first = _next_ordinal(stored_runs)
        staged = {"runs": stage_runs(first), **fragments}
        versions = _commit(root, staging, current, staged, replaced)
    return Stored(counts.get("runs", 0), counts.get("steps", 0), counts.get("tool_calls", 0), versions, len(replaced))


def _write_table(path: Path, fragments: list[FragmentMetadata], *, exists: bool) -> int:
    """One Lance commit of the staged `fragments` (append, or create the table); returns the new version."""
    if exists:
        operation = lance.LanceOperation.Append(fragments)
        return lance.LanceDataset.commit(str(path), operation, read_version=lance.dataset(str(path)).version).version
    operation = lance.LanceOperation.Overwrite(rows.SCHEMAS[path.name.removesuffix(".lance")], fragments)
    return lance.LanceDataset.commit(str(path), operation).version


def _move(staging: Staging, name: str, fragments: list[FragmentMetadata], path: Path) -> list[Path]:
    """Move the staged fragments' data files into the table's ``data/`` (same file system: renames)."""
    source = Path(staging.table_uri(name)) / "data"
    target = path / "data"
    target.mkdir(parents=True, exist_ok=True)
    moved = []
    for fragment in fragments:
        for data_file in fragment.files:
            os.replace(source / data_file.path, target / data_file.path)
            moved.append(target / data_file.path)
    return moved


def _commit(
    root: Path,
    staging: Staging,
    current: dict[str, int],
    staged: dict[str, list[FragmentMetadata]],
    replaced: Sequence[str] = (),
) -> dict[str, int]:
    """Commit each table's fragments (one commit each), then CURRENT; on any failure undo what was done.

    With `replaced` ids, a table that exists is merged instead (`_merge_table`), still one commit."""
    done: list[tuple[str, int | None]] = []
    versions = dict(current)
    try:
        for name in TABLES:
            fragments = staged.get(name, [])
            previous = current.get(name)
            if previous is not None and not fragments and not replaced:
                continue  # nothing to add: no commit
            path = table_path(root, name)
            if previous is not None:
                ds = _open(root, name, current)
                problems = [] if ds is None else rows.schema_problems(name, ds.schema)
                if problems:
                    raise MapcError(problems)
                if replaced and ds is not None:
                    versions[name] = _merge_table(ds, staging, name, fragments, replaced)
                    done.append((name, previous))
                    continue
            moved = _move(staging, name, fragments, path)
            try:
                versions[name] = _write_table(path, fragments, exists=previous is not None)
            except BaseException:  # undo this table's files whatever failed (Ctrl-C too), then re-raise
                if previous is None:
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    for file in moved:
                        file.unlink(missing_ok=True)
                raise
            done.append((name, previous))
        _write_current(root, versions)
    except BaseException:  # roll the finished tables back whatever failed, then re-raise
        _rollback(root, done)
        raise
    return versions


MERGE_KEYS: Final = {
    "runs": ["document_id"],
    "steps": ["document_id", "step_id"],
    "tool_calls": ["document_id", "step_id", "call_index"],
}
"""The key of a row within its table, on which `--replace` merges."""


def sql_in(column: str, values: Sequence[str]) -> str:
    """A Lance (DataFusion SQL) predicate ``column IN ('a', 'b')``: each value a string literal, quotes doubled.

    Document ids come from the data, so they reach SQL only as escaped literals, never as SQL."""
    literals = ", ".join("'" + value.replace("'", "''") + "'" for value in values)
    return f"{column} IN ({literals})"


def _merge_table(
    ds: lance.LanceDataset, staging: Staging, name: str, fragments: list[FragmentMetadata], replaced: Sequence[str]
) -> int:
    """One Lance commit that replaces the rows of the `replaced` documents by the staged rows.

    ``merge_insert`` on the table's key (`MERGE_KEYS`): a staged row updates the stored row of the
    same key or is inserted, and a stored row of a replaced document that no staged row matches
    (a step or a call the new version no longer has) is deleted.  With nothing staged for this
    table the replaced documents' rows are only deleted.  Returns the new version."""
    gone = sql_in("document_id", replaced)
    if not fragments:
        ds.delete(gone)
        return lance.dataset(ds.uri).version
    uri = staging.table_uri(name)
    source = lance.LanceDataset.commit(uri, lance.LanceOperation.Overwrite(rows.SCHEMAS[name], fragments))
    merge = ds.merge_insert(MERGE_KEYS[name]).when_matched_update_all().when_not_matched_insert_all()
    merge.when_not_matched_by_source_delete(gone).execute(source.scanner().to_reader())
    return lance.dataset(ds.uri).version


def _rollback(root: Path, done: list[tuple[str, int | None]]) -> None:
    for name, previous in reversed(done):
        path = table_path(root, name)
        try:
            if previous is None:
                shutil.rmtree(path, ignore_errors=True)
            else:
                _restore(path, previous)
        except Exception:  # CURRENT still names the old versions: the next writer's _recover finishes this
            continue


def _next_ordinal(runs: lance.LanceDataset) -> int:
    column = runs.to_table(columns=["storage_ordinal"]).column("storage_ordinal")
    top = pc.max(column).as_py()
    return 0 if top is None else top + 1


def _q(text: str) -> str:
    return orjson.dumps(text).decode()


# --- reading ----------------------------------------------------------------------------------------


def _open(root: Path, name: str, current: dict[str, int] | None) -> lance.LanceDataset | None:
    path = table_path(root, name)
    if current is None:
        if not path.exists():
            return None
        try:
            return lance.dataset(str(path))
        except (OSError, ValueError) as exc:
            raise MapcError.single("store.bad_table", name, f"cannot open {path.name}: {exc}") from None
    version = current.get(name)
    if version is None:
        return None
    if not path.exists():
        raise MapcError.single("store.missing_table", name, f"CURRENT names {path.name}, which is missing")
    try:
        return lance.dataset(str(path), version=version)
    except (OSError, ValueError) as exc:
        raise MapcError.single(
            "store.bad_table", name, f"cannot open {path.name} at version {version}: {exc}"
        ) from None


def open_tables(root: Path) -> dict[str, lance.LanceDataset | None]:
    """Each table at the version readers see (None for a table not written yet)."""
    if not root.is_dir():
        raise MapcError.single("store.not_a_dataset", "", f"{root} is not a dataset directory")
    current = read_current(root)
    tables = {name: _open(root, name, current) for name in TABLES}
    if all(t is None for t in tables.values()):
        raise MapcError.single("store.not_a_dataset", "", f"{root} holds no runs, steps or tool_calls table")
    return tables


def stored_ids(root: Path) -> pa.Array:
    """The ``document_id`` of every document readers see (none for a directory with no runs table yet)."""
    if not table_path(root, "runs").exists():
        return pa.array([], type=pa.string())
    ds = _open(root, "runs", read_current(root))
    if ds is None:
        return pa.array([], type=pa.string())
    return ds.to_table(columns=["document_id"]).column("document_id").combine_chunks()


def arrow_tables(root: Path, where: Any = None) -> dict[str, pa.Table]:
    """The rows readers see, as Arrow tables (all columns), filtered by the expression `where`."""
    out = {}
    for name, ds in open_tables(root).items():
        schema = rows.SCHEMAS[name]
        if ds is None:
            out[name] = schema.empty_table()
            continue
        problems = rows.schema_problems(name, ds.schema)
        if problems:
            raise MapcError(problems)
        out[name] = ds.to_table(filter=where)
    return out


def read(
    root: Path,
    *,
    session: str | None = None,
    document: str | None = None,
    documents: Sequence[str] | None = None,
    described: str = "",
    validate: bool = True,
) -> list[dict[str, Any]]:
    """The Storylines of the dataset (or of one session, one document, the `documents` ids), in storage order.

    Raises `MapcError` when the rows break a §4 invariant (see `rows.rebuild`), or when the
    filter matches nothing (``store.not_found``; `described` says what `documents` came from).
    Without `validate` the rebuilt Storylines are not re-validated (see `rows.rebuild`).
    """
    where = None
    if session is not None:
        where = pc.field("session_id") == session
    if document is not None:
        match = pc.field("document_id") == document
        where = match if where is None else where & match
    if documents is not None:
        match = pc.field("document_id").isin(pa.array(list(documents), type=pa.string()))
        where = match if where is None else where & match
    t = arrow_tables(root, where)
    stories = rows.rebuild(t["runs"], t["steps"], t["tool_calls"], validate=validate)
    if not stories:
        what = "the dataset holds no document"
        if session is not None or document is not None or documents is not None:
            what = "no document matches " + " and ".join(
                [
                    *(f"{k} {_q(v)}" for k, v in (("session", session), ("document", document)) if v is not None),
                    *([described or "the given ids"] if documents is not None else []),
                ]
            )
        raise MapcError.single("store.not_found", "", what)
    return stories


# --- maintenance ------------------------------------------------------------------------------------


def _maintain(
    root: Path, work: Callable[[str, lance.LanceDataset], None], after: Callable[[], None] | None = None
) -> dict[str, int]:
    """Under the lock: `work` makes new versions of each table, then one switch of ``CURRENT`` names them all.

    `after` runs under the same lock once ``CURRENT`` names the new versions (the removals of `compact`).
    """
    if not root.is_dir():
        raise MapcError.single("store.not_a_dataset", "", f"{root} is not a dataset directory")
    with locked(root):
        current = _recover(root)
        if not current:
            raise MapcError.single("store.not_a_dataset", "", f"{root} holds no table")
        new = dict(current)
        for name in TABLES:
            if name in current:
                ds = lance.dataset(str(table_path(root, name)), version=current[name])
                work(name, ds)
                new[name] = lance.dataset(str(table_path(root, name))).version
        _write_current(root, new)  # the switch: until here readers and a restart see the old versions
        if after is not None:
            after()
    return new


def create_indexes(root: Path) -> dict[str, int]:
    """Scalar indexes: BTree on ``document_id`` and ``session_id`` of all three tables, Bitmap on
    ``tool_calls.function_name``; full-text (Lance INVERTED) on ``steps.message_json``,
    ``steps.observation_json`` and ``tool_calls.result_json``; an existing index is rebuilt over all rows."""

    def work(name: str, ds: lance.LanceDataset) -> None:
        if ds.count_rows() == 0:
            return
        for column, kind in INDEXES[name]:
            ds.create_scalar_index(column, kind, name=f"{column}_idx", replace=True)

    return _maintain(root, work)


@dataclass(slots=True)
class Removed:
    """What one `compact` removed: old table versions, and staging directories of killed jobs."""

    versions: int = 0
    staging: int = 0


def compact(root: Path, *, grace: timedelta = DEFAULT_GRACE, removed: Removed | None = None) -> dict[str, int]:
    """Merge small fragments of each table, switch ``CURRENT``, then remove what nothing can name.

    Removed: table versions retired longer than `grace` ago (or never named by ``CURRENT``), data
    files no remaining version references, staging directories of killed jobs (older than `grace`
    when they predate job locks) and temporary ``CURRENT`` files.  A reader that read ``CURRENT``
    less than `grace` before a switch can still open the version it names.  `removed`, when given,
    is filled with the counts.
    """
    tally = removed if removed is not None else Removed()

    def work(name: str, ds: lance.LanceDataset) -> None:
        lance.dataset(ds.uri).optimize.compact_files()  # latest == CURRENT after recovery

    def after() -> None:
        tally.versions += _remove_retired(root, grace)
        tally.staging += _remove_staging_leftovers(root, grace)

    return _maintain(root, work, after)


def _removable(versions: list[int], named: int, records: list[tuple[int, int]], cutoff_ms: int) -> list[int]:
    """The versions of a table no reader can name: retired before `cutoff_ms`, or never named.

    A version up to a record's `A` retired no later than that record's time; a version above every
    record's `A` and below `named` was committed after the last switch and never named.
    """
    expired = [a for a, at in records if at <= cutoff_ms]
    upto = max(expired, default=-1)
    top = max((a for a, _ in records), default=None)
    out = []
    for v in versions:
        if v == named:
            continue
        if v <= upto or (top is not None and top < v < named):
            out.append(v)
    return out


def _remove_retired(root: Path, grace: timedelta) -> int:
    """Under the lock, after the switch: remove the removable versions and unreferenced files of each table."""
    pointer = _read_pointer(root)
    if pointer is None:
        return 0
    now = _now_ms()
    cutoff = now - grace // timedelta(milliseconds=1)
    count = 0
    kept: dict[str, list[tuple[int, int]]] = {}
    for name, named in pointer.tables.items():
        ds = lance.dataset(str(table_path(root, name)))
        if ds.version != named:  # never after recovery; Lance's cleanup keeps its latest, not CURRENT's
            raise MapcError.single("store.bad_table", name, f"latest version {ds.version}, CURRENT names {named}")
        existing = [v["version"] for v in ds.versions()]
        records = list(pointer.retired.get(name, []))
        if not records and min(existing) < named:
            records.append((named - 1, now))  # retired at an unknown time (an older mapc): now at the latest
        old = _removable(existing, named, records, cutoff)
        if old:
            ds.cleanup_old_versions(versions=old, delete_unverified=True, error_if_tagged_old_versions=False)
        else:  # no version to remove: still remove data files no version references (killed writers')
            ds.cleanup_old_versions(older_than=timedelta(days=36500), delete_unverified=True)
        count += len(old)
        left = [v for v in existing if v not in old]
        kept[name] = [(a, t) for a, t in records if a >= min(left) and a < named]
    kept = {name: records for name, records in kept.items() if records}
    if kept != {name: records for name, records in pointer.retired.items() if records}:
        _put_current(root, Pointer(pointer.tables, kept))
    for tmp in root.glob(f".{CURRENT}.*.tmp"):  # a writer killed while writing CURRENT (we hold the lock)
        tmp.unlink(missing_ok=True)
    return count


def _remove_staging_leftovers(root: Path, grace: timedelta) -> int:
    """Remove the staging directories whose job is gone: its lock is free, or (no lock) it is older than `grace`."""
    staging = root / STAGING
    if not staging.is_dir():
        return 0
    count = 0
    cutoff = time.time() - grace.total_seconds()
    for entry in sorted(staging.iterdir()):
        try:
            mtime = entry.lstat().st_mtime
        except FileNotFoundError:
            continue  # the lock of a job directory removed just before
        if entry.suffix == ".lock":
            if not (staging / entry.stem).exists() and mtime <= cutoff and _dead(entry):
                entry.unlink(missing_ok=True)
            continue
        lock = staging / f"{entry.name}.lock"
        if lock.exists():
            if not _dead(lock):
                continue
        elif mtime > cutoff:
            continue  # a job of an older mapc (no lock) may still be running
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
        lock.unlink(missing_ok=True)
        count += 1
    with contextlib.suppress(OSError):
        staging.rmdir()  # only when empty
    return count


def _dead(lock: Path) -> bool:
    """Whether no process holds the job lock `lock` (it can be taken without waiting)."""
    try:
        fd = os.open(lock, os.O_RDWR)
    except FileNotFoundError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)  # closing releases a lock taken here
    return True


def indexed_columns(root: Path) -> dict[str, list[str]]:
    """The columns of each table that have a scalar index."""
    out: dict[str, list[str]] = {}
    for name, ds in open_tables(root).items():
        if ds is None:
            continue
        out[name] = sorted(field for index in ds.describe_indices() for field in index.field_names)
    return out
