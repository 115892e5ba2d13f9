"""A Storyline dataset directory: ``runs.lance``, ``steps.lance``, ``tool_calls.lance`` and ``CURRENT``.

Layout (REFERENCE.md §4, simplified as issue 7 allows: no ``objects.lance`` for large cells and
no ``generations/`` indirection; every cell is stored inline)::

    DATASET/
      .lock              # fcntl.flock: one writer at a time (store, index, compact)
      CURRENT            # JSON: the Lance version of each table that readers see
      runs.lance/  steps.lance/  tool_calls.lance/

**Atomic imports.** An import makes one Lance commit per table (runs, steps, tool_calls, in that
order) and then replaces ``CURRENT`` (a temporary file renamed over it).  Readers open each table
at the version ``CURRENT`` names, so they see all of an import or none of it, even while it is
being written.  If writing a table fails, the tables already committed are rolled back at once
(``restore`` of their previous version; a table the import created is removed) and ``CURRENT``
is left alone.  If the process dies in between, the next writer finds tables whose latest
version is not the one in ``CURRENT`` and restores them before it does anything else.  A
directory without ``CURRENT`` (tables written by another tool) is read at the latest versions.

**Concurrency.** Writers take an exclusive ``flock`` on ``DATASET/.lock`` around
read-check-write, so two ``mapc store`` into one dataset run one after the other and neither loses
rows; the ``document_id`` uniqueness check runs under the same lock.  Readers take no lock.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Final

import lance
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from mapc.engine.problems import MapcError, Problem
from mapc.engine.views import document_id
from mapc.store import rows

TABLES: Final = tuple(rows.SCHEMAS)
CURRENT: Final = "CURRENT"
LOCK: Final = ".lock"
LAYOUT_VERSION: Final = 1

# §4 "Indexes", restricted to what issue 7 asks for.
INDEXES: Final = {
    "runs": (("document_id", "BTREE"), ("session_id", "BTREE")),
    "steps": (("document_id", "BTREE"), ("session_id", "BTREE")),
    "tool_calls": (("document_id", "BTREE"), ("session_id", "BTREE"), ("function_name", "BITMAP")),
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


def _write_current(root: Path, versions: dict[str, int]) -> None:
    body = orjson.dumps({"layout_version": LAYOUT_VERSION, "tables": versions}, option=orjson.OPT_INDENT_2)
    tmp = root / f".{CURRENT}.{os.getpid()}.tmp"
    with open(tmp, "wb") as out:
        out.write(body + b"\n")
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, root / CURRENT)


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


# --- writing ----------------------------------------------------------------------------------------


def _write_table(path: Path, table: pa.Table, *, exists: bool) -> int:
    """One Lance commit of `table` (append, or create the table); returns the new version."""
    ds = lance.write_dataset(table, str(path), schema=table.schema, mode="append" if exists else "create")
    return ds.version


def _commit(root: Path, current: dict[str, int], tables: dict[str, pa.Table]) -> dict[str, int]:
    """Append each table (one commit each), then CURRENT; on any failure undo what was done."""
    done: list[tuple[str, int | None]] = []
    versions = dict(current)
    try:
        for name in TABLES:
            table = tables[name]
            previous = current.get(name)
            if previous is not None and table.num_rows == 0:
                continue  # nothing to add: no commit
            versions[name] = _write_table(table_path(root, name), table, exists=previous is not None)
            done.append((name, previous))
        _write_current(root, versions)
    except BaseException:
        _rollback(root, done)
        raise
    return versions


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


def store(root: Path, batches: Sequence[tuple[Source, dict[str, Any]]]) -> Stored:
    """Append validated Storylines to the dataset at `root`, creating it if needed.

    `batches` pairs each document with where it came from.  A ``document_id`` already stored, or
    given twice in `batches`, is an error naming both places (`LocatedError`), and nothing is
    written.  One commit per table, then ``CURRENT``; see the module docstring for atomicity.
    """
    seen: dict[str, Source] = {}
    clashes: list[tuple[str, Problem]] = []
    for source, doc in batches:
        doc_id = document_id(doc)
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
    tables = rows.split(doc for _, doc in batches)
    with locked(root):
        current = _recover(root)
        runs = _open(root, "runs", current)
        if runs is not None:
            stored = runs.to_table(columns=["document_id"]).column("document_id")
            found = pc.is_in(stored, value_set=pa.array(list(seen), type=pa.string()))
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
            first = _next_ordinal(runs)
            if first:
                ordinals = pc.add(tables.runs.column("storage_ordinal"), pa.scalar(first, pa.int64()))
                index = tables.runs.schema.get_field_index("storage_ordinal")
                tables = rows.Tables(
                    tables.runs.set_column(index, rows.RUNS_SCHEMA.field(index), ordinals),
                    tables.steps,
                    tables.tool_calls,
                )
        versions = _commit(root, current, tables.by_name())
    return Stored(tables.runs.num_rows, tables.steps.num_rows, tables.tool_calls.num_rows, versions)


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


def read(root: Path, *, session: str | None = None, document: str | None = None) -> list[dict[str, Any]]:
    """The Storylines of the dataset (or of one session or document), in storage order.

    Raises `MapcError` when the rows break a §4 invariant (see `rows.rebuild`), or when the
    filter matches nothing (``store.not_found``).
    """
    where = None
    if session is not None:
        where = pc.field("session_id") == session
    if document is not None:
        match = pc.field("document_id") == document
        where = match if where is None else where & match
    t = arrow_tables(root, where)
    stories = rows.rebuild(t["runs"], t["steps"], t["tool_calls"])
    if not stories:
        what = "the dataset holds no document"
        if session is not None or document is not None:
            what = "no document matches " + " and ".join(
                f"{k} {_q(v)}" for k, v in (("session", session), ("document", document)) if v is not None
            )
        raise MapcError.single("store.not_found", "", what)
    return stories


# --- maintenance ------------------------------------------------------------------------------------


def _maintain(root: Path, work: Callable[[str, lance.LanceDataset], None]) -> dict[str, int]:
    if not root.is_dir():
        raise MapcError.single("store.not_a_dataset", "", f"{root} is not a dataset directory")
    with locked(root):
        current = _recover(root)
        if not current:
            raise MapcError.single("store.not_a_dataset", "", f"{root} holds no table")
        for name in TABLES:
            if name in current:
                ds = lance.dataset(str(table_path(root, name)), version=current[name])
                work(name, ds)
                current[name] = lance.dataset(str(table_path(root, name))).version
        _write_current(root, current)
    return current


def create_indexes(root: Path) -> dict[str, int]:
    """Scalar indexes: BTree on ``document_id`` and ``session_id`` of all three tables, Bitmap on
    ``tool_calls.function_name``; an existing index is rebuilt over all rows."""

    def work(name: str, ds: lance.LanceDataset) -> None:
        if ds.count_rows() == 0:
            return
        for column, kind in INDEXES[name]:
            ds.create_scalar_index(column, kind, name=f"{column}_idx", replace=True)

    return _maintain(root, work)


def compact(root: Path) -> dict[str, int]:
    """Merge small fragments of each table, then delete the versions older than the compacted one."""

    def work(name: str, ds: lance.LanceDataset) -> None:
        ds = lance.dataset(ds.uri)  # latest == CURRENT after recovery
        ds.optimize.compact_files()
        lance.dataset(ds.uri).cleanup_old_versions(older_than=timedelta(0))

    return _maintain(root, work)


def indexed_columns(root: Path) -> dict[str, list[str]]:
    """The columns of each table that have a scalar index."""
    out: dict[str, list[str]] = {}
    for name, ds in open_tables(root).items():
        if ds is None:
            continue
        out[name] = sorted(field for index in ds.describe_indices() for field in index.field_names)
    return out
