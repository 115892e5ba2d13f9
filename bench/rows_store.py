"""Lance storage rows: storing and exporting a Storyline corpus, against the floor and Parquet.

The data set ``storyline-corpus`` is a JSON array of bench/generate.py Storylines of about 0.5 MB each
(``--mb`` is the total; ~627 turns per MB, so ``--mb 320`` gives the ≥ 200,000 turns of issue 7):

    .venv/bin/python bench/run.py --only store --mb 320 --repeat 1

Group ``store`` (baseline: one ``lance.write_dataset`` per table, the floor):
- the floor, and the same three tables written as Parquet with pyarrow (both from rows split beforehand);
- ``dataset.store`` from parsed documents (split + checks + three commits + CURRENT), and ``mapc store
  --from storyline FILE`` itself (parse + validate + split + commit), run in this process by click's runner;
- export: reading the three tables into Arrow (the floor of export), that plus ``orjson.dumps`` of the
  documents (issue 20's export floor, the baseline of ``mapc export``), ``dataset.read`` (read + invariant
  checks + rebuild + re-validation), and the command ``mapc export --to storyline`` (read + checks + rebuild,
  the hub's own validation, and the indented JSON bytes it prints);
- one session read back with ``dataset.read(session=…)``, without and with the scalar indexes.

Every timed write goes to a new directory under one temporary root, removed when the process exits.
"""

from __future__ import annotations

import atexit
import math
import shutil
import tempfile
from pathlib import Path
from typing import Any

import generate
import orjson
from harness import Sample, Work, bench, dataset

from mapc.engine import storyline

DOC_BYTES = 500_000
_dirs: list[Path] = []  # [the temporary root], made on first use and removed at exit


def _fresh(name: str) -> Path:
    """A new, not yet existing directory under the temporary root."""
    if not _dirs:
        _dirs.append(Path(tempfile.mkdtemp(prefix="mapc-bench-store-")))
        atexit.register(shutil.rmtree, _dirs[0], ignore_errors=True)
    _dirs.append(_dirs[0] / f"{name}-{len(_dirs)}")
    return _dirs[-1]


@dataset("storyline-corpus")
def _corpus(mb: float, data_dir: Path) -> bytes:
    """Many Storylines (seeds 0, 1, …; unique sessions and trajectories) totalling about `mb` MB."""
    count = max(1, math.ceil(mb * generate.MB / DOC_BYTES))
    return orjson.dumps([generate.storyline(DOC_BYTES, seed) for seed in range(count)])


_cache: dict[str, Any] = {}


def _docs(sample: Sample) -> list[dict[str, Any]]:
    key = f"docs:{sample.path}"
    if key not in _cache:
        _cache[key] = storyline.documents(orjson.loads(sample.data))
    return _cache[key]


def _tables(sample: Sample) -> Any:
    from mapc.store import rows

    key = f"tables:{sample.path}"
    if key not in _cache:
        _cache[key] = rows.split(_docs(sample))
    return _cache[key]


def _stored(sample: Sample, *, indexed: bool) -> Path:
    """The corpus stored once (untimed), then copied and indexed for the indexed rows."""
    from mapc.store import dataset as store_dataset

    key = f"stored:{sample.path}:{indexed}"
    if key not in _cache:
        if indexed:
            root = _fresh("indexed")
            shutil.copytree(_stored(sample, indexed=False), root)
            store_dataset.create_indexes(root)
        else:
            root = _fresh("stored")
            store_dataset.store(
                root, [(store_dataset.Source("corpus", f"/{i}"), d) for i, d in enumerate(_docs(sample))]
            )
        _cache[key] = root
    return _cache[key]


def _session(sample: Sample) -> str:
    docs = _docs(sample)
    return docs[len(docs) // 2]["session"]


@bench("lance.write_dataset ×3 (floor)", group="store", data="storyline-corpus",
       baseline="lance.write_dataset ×3 (floor)")  # fmt: skip
def _lance_floor(sample: Sample) -> Work:
    import lance

    tables = _tables(sample).by_name()

    def work() -> None:
        root = _fresh("floor")
        for name, table in tables.items():
            lance.write_dataset(table, str(root / f"{name}.lance"), schema=table.schema, mode="create")

    return work


@bench(
    "parquet via pyarrow ×3",
    group="store",
    data="storyline-corpus",
    baseline="lance.write_dataset ×3 (floor)",
)
def _parquet(sample: Sample) -> Work:
    import pyarrow.parquet as pq

    tables = _tables(sample).by_name()

    def work() -> None:
        root = _fresh("parquet")
        root.mkdir()
        for name, table in tables.items():
            pq.write_table(table, root / f"{name}.parquet")

    return work


@bench("dataset.store (split + commit, parsed docs)", group="store", data="storyline-corpus",
       baseline="lance.write_dataset ×3 (floor)")  # fmt: skip
def _dataset_store(sample: Sample) -> Work:
    from mapc.store import dataset as store_dataset

    batches = [(store_dataset.Source("corpus", f"/{i}"), d) for i, d in enumerate(_docs(sample))]
    return lambda: store_dataset.store(_fresh("store"), batches)


def _mapc(*args: str) -> bytes:
    """`mapc ARGS` in this process (click's runner: the command as a user runs it, output kept in memory)."""
    from click.testing import CliRunner

    from mapc.cli.main import cli

    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    if result.exit_code != 0:
        raise RuntimeError(f"mapc {' '.join(args)} exited {result.exit_code}: {result.stderr[-2000:]}")
    return result.stdout_bytes


@bench("mapc store (parse + validate + split + commit)", group="store", data="storyline-corpus",
       baseline="lance.write_dataset ×3 (floor)")  # fmt: skip
def _mapc_store(sample: Sample) -> Work:
    # The command itself on the corpus file (one file: its one chunk runs in this process).
    return lambda: _mapc("store", "--from", "storyline", str(sample.path), "--to", str(_fresh("mapc")))


@bench("lance to_table ×3 (export floor)", group="store", data="storyline-corpus",
       baseline="lance to_table ×3 (export floor)")  # fmt: skip
def _read_floor(sample: Sample) -> Work:
    import lance

    root = _stored(sample, indexed=False)
    return lambda: [lance.dataset(str(root / f"{n}.lance")).to_table() for n in ("runs", "steps", "tool_calls")]


@bench("parquet read ×3", group="store", data="storyline-corpus", baseline="lance to_table ×3 (export floor)")
def _parquet_read(sample: Sample) -> Work:
    import pyarrow.parquet as pq

    root = _fresh("parquet-read")
    root.mkdir()
    for name, table in _tables(sample).by_name().items():
        pq.write_table(table, root / f"{name}.parquet")
    return lambda: [pq.read_table(root / f"{n}.parquet") for n in ("runs", "steps", "tool_calls")]


@bench("dataset.read (checks + rebuild + validate)", group="store", data="storyline-corpus",
       baseline="lance to_table ×3 (export floor)")  # fmt: skip
def _dataset_read(sample: Sample) -> Work:
    from mapc.store import dataset as store_dataset

    root = _stored(sample, indexed=False)
    return lambda: store_dataset.read(root)


@bench("to_table ×3 + orjson.dumps (export floor, issue 20)", group="store", data="storyline-corpus",
       baseline="lance to_table ×3 (export floor)")  # fmt: skip
def _export_floor(sample: Sample) -> Work:
    import lance

    root, docs = _stored(sample, indexed=False), _docs(sample)

    def work() -> None:
        [lance.dataset(str(root / f"{n}.lance")).to_table() for n in ("runs", "steps", "tool_calls")]
        orjson.dumps(docs)

    return work


@bench("mapc export --to storyline", group="store", data="storyline-corpus",
       baseline="to_table ×3 + orjson.dumps (export floor, issue 20)")  # fmt: skip
def _mapc_export(sample: Sample) -> Work:
    root = _stored(sample, indexed=False)
    # The command itself: read + invariant checks + rebuild, the hub's validation, the JSON bytes (to memory).
    return lambda: _mapc("export", str(root), "--to", "storyline")


@bench("read one session, no index", group="store", data="storyline-corpus",
       baseline="lance to_table ×3 (export floor)")  # fmt: skip
def _session_scan(sample: Sample) -> Work:
    from mapc.store import dataset as store_dataset

    root, session = _stored(sample, indexed=False), _session(sample)
    return lambda: store_dataset.read(root, session=session)


@bench("read one session, indexed", group="store", data="storyline-corpus",
       baseline="read one session, no index")  # fmt: skip
def _session_indexed(sample: Sample) -> Work:
    from mapc.store import dataset as store_dataset

    root, session = _stored(sample, indexed=True), _session(sample)
    return lambda: store_dataset.read(root, session=session)
