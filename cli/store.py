"""`mapc store`, `mapc export`, `mapc index`, `mapc compact`: Storylines in a Lance dataset.

pyarrow and lance are imported inside the commands (through `mapc.store`), never at import time,
so listing commands or running `mapc run` does not pay for them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from mapc.cli.boundary import on_interrupt, options
from mapc.cli.engines import engine_options, open_engine
from mapc.cli.files import input_limit, is_jsonl, read_bytes, read_limited, write_bytes
from mapc.cli.output import document_bytes, fail_on
from mapc.cli.params import FORMAT
from mapc.cli.render import report
from mapc.engine import convert
from mapc.engine.problems import MapcError

SUFFIXES = (".json", ".jsonl", ".ndjson")


def input_files(paths: tuple[str, ...]) -> list[str]:
    """The files to import: each file as given, and each directory's .json/.jsonl/.ndjson files
    (recursively, sorted, skipping hidden entries and ``*.lance`` tables)."""
    files: list[str] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            found = sorted(
                str(p)
                for p in path.rglob("*")
                if p.is_file()
                and p.suffix in SUFFIXES
                and not any(part.startswith(".") or part.endswith(".lance") for part in p.relative_to(path).parts)
            )
            if not found:
                raise click.BadParameter(f"{given} holds no {'/'.join(SUFFIXES)} file", param_hint="INPUT")
            files.extend(found)
        elif path.is_file() or given == "-":
            files.append(given)
        else:
            raise click.BadParameter(f"cannot read {given}: no such file or directory", param_hint="INPUT")
    return files


def _input(file: str, fmt: str | None) -> Any:
    """The job's `Input` for `file`: checked readable here, read by a worker (stdin by this process)."""
    from mapc.store.ingest import Input

    if file == "-":
        data = read_bytes(file)
        return Input(file, "", len(data), fmt, False, None, data)
    try:
        with open(file, "rb"):
            pass
        size = os.stat(file).st_size
    except OSError as exc:
        raise click.BadParameter(f"cannot read {file}: {exc.strerror or exc}", param_hint="INPUT") from None
    refused: tuple[Any, ...] = ()
    limit = input_limit()
    if limit is not None and size > limit:  # fails like any bad file, unread (read_limited refuses it by size)
        try:
            read_limited(file, limit)
        except MapcError as exc:
            refused = exc.problems
    return Input(file, os.path.abspath(file), size, fmt, is_jsonl(file), refused=refused)


@click.command("store")
@click.argument("inputs", nargs=-1, required=True, metavar="INPUT...")
@click.option("--to", "to", required=True, metavar="DATASET", help="Dataset directory (created if needed).")
@click.option(
    "--from",
    "fmt",
    default=None,
    metavar="FMT",
    type=FORMAT,
    help="Format of every input (storyline, atif, actf, …); default: detected per file.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    metavar="N",
    help="Worker processes (--engine local), or the CPUs of a local Ray (default: the number of CPUs).",
)
@engine_options
def store_command(
    inputs: tuple[str, ...], to: str, fmt: str, workers: int | None, engine: str, address: str | None
) -> None:
    """Import files or directories into a Lance dataset.

    Every input goes through the Storyline hub and is validated first; DATASET is
    appended to, or created.  A document_id already stored, or given twice, is an error
    naming both, and nothing is written.  Without --from each file's format is detected
    from its path, then its content; a file of no known format is skipped with a warning.
    Workers (processes, or Ray tasks with --engine ray) convert the files and write the
    rows; the tables are then committed once each.

    \b
    Examples:
      mapc store --from atif tests/data/fixtures/atif --to /tmp/corpus
      mapc store --from atif tests/data/fixtures/atif/sparse_13.json --to /tmp/one
    """
    from mapc.store import dataset, ingest

    if Path(to).exists() and not Path(to).is_dir():
        raise click.BadParameter(f"{to} exists and is not a directory", param_hint="--to")
    files = input_files(inputs)
    items = [_input(f, fmt) for f in files]  # unreadable files: usage error before any work
    on_interrupt(lambda: [f"nothing stored: {to} is as it was"])  # one commit per table, made last
    with (
        open_engine(engine, address, workers) as runner,
        ingest.staged(Path(to), items, runner.map, options()) as job,
    ):
        for outcome in job.outcomes:
            if outcome.status == ingest.SKIPPED:
                click.echo(f"warning: skipped {outcome.file}: not a known format", err=True)
            elif outcome.status == ingest.FAILED:
                report(outcome.source, outcome.problems)
        if job.failed:
            sys.exit(1)
        try:
            stored = job.commit()
        except dataset.LocatedError as exc:
            for file, problem in exc.located:
                report(file, [problem])
            sys.exit(1)
        except MapcError as exc:
            report(exc.source or to, exc.problems)
            sys.exit(1)
    click.echo(
        f"stored {stored.documents} document{'s' if stored.documents != 1 else ''} "
        f"({stored.steps} steps, {stored.tool_calls} tool calls) in {to}"
    )


_DATASET = click.Path(exists=True, file_okay=False)


@click.command("export")
@click.argument("dataset_dir", metavar="DATASET", type=_DATASET)
@click.option("--to", "fmt", required=True, metavar="FMT", type=FORMAT, help="Output format (storyline, atif, …).")
@click.option("-o", "--output", metavar="OUT", help="Write here (atomically) instead of stdout.")
@click.option("--session", metavar="ID", help="Only the documents of this session.")
@click.option("--document", metavar="ID", help="Only the document with this document_id.")
def export_command(dataset_dir: str, fmt: str, output: str | None, session: str | None, document: str | None) -> None:
    """Rebuild documents from a dataset, in any format.

    Reading checks the table invariants (ordinals, foreign keys, results_json) and fails closed.

    \b
    Examples:
      mapc export /tmp/corpus --to storyline -o /tmp/corpus.json
      mapc export /tmp/corpus --to atif --session fixture-sparse_13
    """
    from mapc.store import dataset

    with fail_on(dataset_dir):
        stories = dataset.read(Path(dataset_dir), session=session, document=document)
        result = convert.from_storyline(fmt, stories)
    write_bytes(output, document_bytes(result))


@click.command("index")
@click.argument("dataset_dir", metavar="DATASET", type=_DATASET)
def index_command(dataset_dir: str) -> None:
    """Create (or rebuild) the scalar indexes.

    BTree on document_id and session_id of runs, steps and tool_calls; Bitmap on
    tool_calls.function_name.

    \b
    Example:
      mapc index /tmp/corpus
    """
    from mapc.store import dataset

    with fail_on(dataset_dir):
        dataset.create_indexes(Path(dataset_dir))
        indexed = dataset.indexed_columns(Path(dataset_dir))
    for table, columns in indexed.items():
        click.echo(f"{table}: {', '.join(columns) or '(no rows, no index)'}")


@click.command("compact")
@click.argument("dataset_dir", metavar="DATASET", type=_DATASET)
def compact_command(dataset_dir: str) -> None:
    """Compact each table and drop older versions.

    Small fragments are merged, then the versions older than the result are deleted.

    \b
    Example:
      mapc compact /tmp/corpus
    """
    from mapc.store import dataset

    with fail_on(dataset_dir):
        versions = dataset.compact(Path(dataset_dir))
    for table, version in versions.items():
        click.echo(f"{table}: version {version}")
