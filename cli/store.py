"""`mapc store`, `mapc export`, `mapc index`, `mapc compact`: Storylines in a Lance dataset.

pyarrow and lance are imported inside the commands (through `mapc.store`), never at import time,
so listing commands or running `mapc run` does not pay for them.
"""

from __future__ import annotations

import os
import re
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any, Final

import click
import orjson

from mapc.cli import report as loss_report
from mapc.cli.boundary import on_interrupt, options, the_catalog
from mapc.cli.engines import engine_options, open_engine
from mapc.cli.files import (
    document_path,
    input_limit,
    is_jsonl,
    open_regular,
    read_bytes,
    read_limited,
    shown,
    walk,
    write_bytes,
)
from mapc.cli.output import dump_json, fail_on, output_bytes, redact_options, redactor_of
from mapc.cli.params import FORMAT
from mapc.cli.render import report
from mapc.cli.report import report_options
from mapc.engine import convert, views
from mapc.engine.problems import MapcError, Problem
from mapc.engine.redact import summary as redact_summary

SUFFIXES = (".json", ".jsonl", ".ndjson")


def input_files(paths: tuple[str, ...], rels: dict[str, str] | None = None) -> list[str]:
    """The files to import: each file as given, and each directory's .json/.jsonl/.ndjson files
    (recursively, sorted), walked as ``mapc convert DIR`` walks (`mapc.cli.files.walk`): hidden
    entries and ``*.lance`` tables are passed over, a symbolic link is not followed (a warning says
    so), and a FIFO, device or socket is a usage error, as it is when named.  `rels`, when given,
    gets each walked file's path relative to its directory (formats that name documents by path
    use it, as ``mapc convert DIR`` does)."""
    files: list[str] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            errors: list[OSError] = []
            found = list(walk(given, SUFFIXES, errors))
            for exc in errors:
                raise click.BadParameter(f"cannot list {exc.filename}: {exc.strerror or exc}", param_hint="INPUT")
            for entry in found:
                if entry.link:
                    click.echo(f"warning: skipped {shown(entry.path)}: a symbolic link (not followed)", err=True)
                elif entry.other is not None:
                    raise click.BadParameter(
                        f"{shown(entry.path)} is not a regular file ({entry.other}); mapc reads only files",
                        param_hint="INPUT",
                    )
            regular = sorted(entry.path for entry in found if entry.size is not None)
            if rels is not None:
                rels.update((entry.path, entry.rel) for entry in found if entry.size is not None)
            if not regular:
                raise click.BadParameter(f"{given} holds no {'/'.join(SUFFIXES)} file", param_hint="INPUT")
            files.extend(regular)
        elif path.exists() or path.is_symlink() or given == "-":
            files.append(given)
        else:
            raise click.BadParameter(f"cannot read {given}: no such file or directory", param_hint="INPUT")
    return files


def _input(file: str, fmt: str | None, rel: str | None = None) -> Any:
    """The job's `Input` for `file`: checked readable here, read by a worker (stdin by this process).
    Its document path is `rel` (its path under a walked directory), else as `mapc convert` names a
    file: relative to the working directory when inside it, else its name."""
    from mapc.store.ingest import Input

    if file == "-":
        data = read_bytes(file)
        return Input(file, "", len(data), fmt, False, None, data)
    try:
        with open_regular(file) as handle:  # a FIFO or a device is refused here, unopened for reading
            size = os.fstat(handle.fileno()).st_size
    except OSError as exc:
        raise click.BadParameter(f"cannot read {shown(file)}: {exc.strerror or exc}", param_hint="INPUT") from None
    refused: tuple[Any, ...] = ()
    limit = input_limit()
    if limit is not None and size > limit:  # fails like any bad file, unread (read_limited refuses it by size)
        try:
            read_limited(file, limit)
        except MapcError as exc:
            refused = exc.problems
    path = rel if rel is not None else document_path(file)
    return Input(file, os.path.abspath(file), size, fmt, is_jsonl(file), path, refused=refused)


def _with_descendants(root: Path, stories: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`stories` and, after them, every stored document their `children` name, and theirs (issue 15
    §6: a selected trajectory is exported with its subagents, whatever their sessions)."""
    from mapc.engine.views import document_id
    from mapc.store import dataset

    have = {document_id(s) for s in stories}
    out = list(stories)
    wanted = _children(stories) - have
    while wanted:
        try:
            found = dataset.read(root, documents=sorted(wanted), validate=False)
        except MapcError as exc:
            if exc.problems[0].code != "store.not_found":
                raise
            break  # a child that is not stored: the export says which (tree.unknown_child)
        found = [s for s in found if document_id(s) not in have]
        if not found:
            break  # a child that is not stored: the export says which (tree.unknown_child)
        have |= {document_id(s) for s in found}
        out += found
        wanted = _children(found) - have
    return out


def _children(stories: list[dict[str, Any]]) -> set[str]:
    return {c for s in stories for c in (s.get("children") or []) if type(c) is str}


SHOWN: int = 20
"""Problem (and warning) lines `mapc store` prints before summarising the rest; --json lists them all."""


def report_many(located: list[tuple[str, Any]], *, as_json: bool) -> None:
    """Problems of many files on stderr: the first `SHOWN` lines and ``… and N more``, or all as JSON."""
    if as_json:
        rows = [{"file": file, **problem.as_dict()} for file, problem in located]
        click.echo(dump_json(rows).decode(), err=True, nl=False)
        return
    for file, problem in located[:SHOWN]:
        report(file, [problem])
    if len(located) > SHOWN:
        click.echo(f"… and {len(located) - SHOWN:,} more problems (--json lists them all)", err=True)


def _report_outcomes(outcomes: list[Any], *, as_json: bool) -> bool:
    """Files skipped (warnings) and failed (problems), in input order, each kind cut after `SHOWN` lines;
    True when a file failed."""
    from mapc.store import ingest

    skipped = 0
    failed: list[tuple[str, Any]] = []
    for outcome in outcomes:
        if outcome.status == ingest.SKIPPED:
            if skipped < SHOWN:
                click.echo(f"warning: skipped {shown(outcome.file)}: not a known format", err=True)
            skipped += 1
        elif outcome.status == ingest.FAILED:
            if not as_json:
                for problem in outcome.problems[: max(0, SHOWN - len(failed))]:
                    report(outcome.source, [problem])
            failed.extend((outcome.source, p) for p in outcome.problems)
    if skipped > SHOWN:
        click.echo(f"warning: … and {skipped - SHOWN:,} more files of no known format skipped", err=True)
    if as_json and failed:
        report_many(failed, as_json=True)
    elif len(failed) > SHOWN:
        click.echo(f"… and {len(failed) - SHOWN:,} more problems (--json lists them all)", err=True)
    return bool(failed)


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
@click.option(
    "--skip-existing",
    is_flag=True,
    help="Leave out documents whose document_id is already stored (counted), instead of failing.",
)
@click.option(
    "--replace",
    is_flag=True,
    help="Replace stored documents of the same document_id (one merge commit per table), instead of failing.",
)
@click.option("--json", "as_json", is_flag=True, help="Report problems as one JSON array on stderr, all of them.")
@engine_options
def store_command(
    inputs: tuple[str, ...],
    to: str,
    fmt: str,
    workers: int | None,
    skip_existing: bool,
    replace: bool,
    as_json: bool,
    engine: str,
    address: str | None,
) -> None:
    """Import files or directories into a Lance dataset.

    Every input goes through the Storyline hub and is validated first; DATASET is
    appended to, or created.  A document_id given twice is an error naming both, and
    nothing is written; so is one already stored, unless --skip-existing (the stored
    document stays, the new one is counted and left out) or --replace (the new one takes
    the stored one's place in every table, at the end of the storage order).  So a growing
    folder is stored by re-running one command.  Without --from each file's format is
    detected from its path, then its content; a file of no known format is skipped with a
    warning.  Workers (processes, or Ray tasks with --engine ray) convert the files and
    write the rows; the tables are then committed once each.  Past 20 problems the rest
    are counted (--json lists them all).

    \b
    Examples:
      mapc store --from atif tests/data/fixtures/atif --to /tmp/corpus
      mapc store --from atif tests/data/fixtures/atif --to /tmp/corpus --skip-existing
      mapc store --from atif tests/data/fixtures/atif/sparse_13.json --to /tmp/one
    """
    from mapc.store import dataset, ingest

    if skip_existing and replace:
        raise click.UsageError("--skip-existing and --replace exclude each other")
    if Path(to).exists() and not Path(to).is_dir():
        raise click.BadParameter(f"{to} exists and is not a directory", param_hint="--to")
    existing = ingest.SKIP_EXISTING if skip_existing else ingest.REPLACE if replace else ingest.ERROR
    rels: dict[str, str] = {}
    files = input_files(inputs, rels)
    items = [_input(f, fmt, rels.get(f)) for f in files]  # unreadable files: usage error before any work
    on_interrupt(lambda: [f"nothing stored: {to} is as it was"])  # one commit per table, made last
    with (
        open_engine(engine, address, workers) as runner,
        fail_on(to, as_json=as_json),
        ingest.staged(Path(to), items, runner.map, existing, options(), the_catalog()) as job,
    ):
        if _report_outcomes(job.outcomes, as_json=as_json):
            sys.exit(1)
        try:
            stored = job.commit()
        except dataset.LocatedError as exc:
            report_many(list(exc.located), as_json=as_json)
            sys.exit(1)
        skipped = job.skipped_existing
    summary = (
        f"stored {stored.documents} document{'s' if stored.documents != 1 else ''} "
        f"({stored.steps} steps, {stored.tool_calls} tool calls) in {to}"
    )
    if replace:
        summary += f", {stored.replaced} of them replacing stored ones"
    if skip_existing:
        summary += f"; {skipped} already stored, skipped"
    click.echo(summary)


_DATASET = click.Path(exists=True, file_okay=False)


@click.command("export")
@click.argument("dataset_dir", metavar="DATASET", type=_DATASET)
@click.option("--to", "fmt", required=True, metavar="FMT", type=FORMAT, help="Output format (storyline, atif, …).")
@click.option("-o", "--output", metavar="OUT", help="Write here (atomically) instead of stdout.")
@click.option("--session", metavar="ID", help="Only the documents of this session.")
@click.option("--document", metavar="ID", help="Only the document with this document_id.")
@click.option(
    "--where",
    "predicate",
    metavar="SQL",
    help="Only the documents whose runs row satisfies this SQL predicate (DuckDB; see mapc query).",
)
@report_options
@redact_options
def export_command(
    dataset_dir: str,
    fmt: str,
    output: str | None,
    session: str | None,
    document: str | None,
    predicate: str | None,
    redact: bool = False,
    redact_patterns: tuple[str, ...] = (),
    report_file: str | None = None,
    strict: bool = False,
    no_envelope: bool = False,
) -> None:
    """Rebuild documents from a dataset, in any format.

    The export is assessed as `mapc convert` assesses a file (docs/lossless.md): a line when it is
    not exact, --report FILE.json, --strict and --no-envelope.

    Reading checks the table invariants (ordinals, foreign keys, results_json) and fails closed.
    --where keeps the documents whose runs row satisfies a SQL predicate: any column of
    runs, its convenience columns (correct, score, reward, …) or a subquery on steps and
    tool_calls; so a corpus becomes a training set in one command.

    \b
    Examples:
      mapc export /tmp/corpus --to storyline -o /tmp/corpus.json
      mapc export /tmp/corpus --to atif --session fixture-sparse_13
      mapc export /tmp/corpus --to openai-msg --where "total_prompt_tokens > 100000"
      mapc export /tmp/corpus --to atif --where "session_id in (select session_id from steps where ttft_ms > 5)"
    """
    from mapc.store import dataset, query, rows

    redactor = redactor_of(redact, redact_patterns)
    root = Path(dataset_dir)
    with fail_on(dataset_dir):
        documents = None
        if predicate is not None:
            try:
                documents = query.matching_documents(root, predicate)
            except query.QueryError as exc:  # bad SQL is a usage mistake (exit 2), not bad data
                raise click.BadParameter(exc.problems[0].message, param_hint="--where") from None
        described = f"--where {predicate}"
        with rows.paused_gc():  # rebuilding, checking and writing make no cycles (store/rows.py)
            stories = dataset.read(
                root, session=session, document=document, documents=documents, described=described, validate=False
            )
            if session is not None or document is not None or documents is not None:
                stories = _with_descendants(root, stories)
            if redactor is not None:
                stories, counts = redactor.stories(stories)
            failed: list[Problem] = []
            # Rebuilt from rows, the Storylines are parsed JSON values: written as Storyline they read back
            # as themselves (engine/convert.py), so the loss report need not read them back.
            settings = {"keep_envelope": not no_envelope, "parsed": redactor is None}
            try:  # from_storyline validates the Storylines: once, not twice
                result, assessed = convert.from_storyline_reported(fmt, stories, **settings, catalog=the_catalog())
            except MapcError:
                rows.validated(stories)  # an invalid rebuilt document: named by its document_id
                stories, failed = _convertible(fmt, stories)  # issue 15 §5: the rest is still written
                result, assessed = convert.from_storyline_reported(fmt, stories, **settings, catalog=the_catalog())
            assessed = loss_report.owner_checked(assessed.at(dataset_dir), fmt, result)
            if strict and not assessed.exact:
                loss_report.write_report(report_file, [assessed], strict=strict)
                raise MapcError([loss_report.refusal(assessed)])
            if output is not None and is_jsonl(output):
                result = convert.as_lines(
                    fmt, result, catalog=the_catalog()
                )  # a row corpus: one row a line (the envelope in the first)
            data = output_bytes(output, result)
    write_bytes(output, data)
    loss_report.write_report(report_file, [assessed], strict=strict)
    for line in loss_report.lines([assessed]):
        click.echo(line, err=True)
    if redactor is not None:
        click.echo(f"{dataset_dir}: {redact_summary(counts)}", err=True)
    if failed:
        raise MapcError(failed)  # printed per document after the others were written; exit 1


def _convertible(fmt: str, stories: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[Problem]]:
    """Try `stories` tree by tree (a document and its subagents go together): the Storylines of the
    trees that convert, and the problems of those that do not, each named by its document.  When
    none converts (or there is one tree), the error is raised as it is."""
    trees = _trees(stories)
    good: list[dict[str, Any]] = []
    problems: list[Problem] = []
    for tree in trees:
        try:
            convert.from_storyline(fmt, tree, catalog=the_catalog())
        except MapcError as exc:
            where = f"runs[document_id={orjson.dumps(views.document_id(tree[0])).decode()}]"
            problems.extend(Problem(p.code, where + p.pointer, p.message) for p in exc.problems)
            continue
        good.extend(tree)
    if not good or len(trees) == 1:
        raise MapcError(problems)
    return good, problems


def _trees(stories: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """`stories` grouped into trees (parent links and children ids), in first order."""
    ids = {views.document_id(s): n for n, s in enumerate(stories)}
    root = list(range(len(stories)))

    def find(n: int) -> int:
        while root[n] != n:
            root[n] = root[root[n]]
            n = root[n]
        return n

    for n, story in enumerate(stories):
        parent = story.get("parent")
        linked = [parent.get("psid")] if type(parent) is dict else []
        linked += [c for c in story.get("children") or () if type(c) is str]
        for other in (ids.get(i) for i in linked if type(i) is str):
            if other is not None:
                root[find(n)] = find(other)
    groups: dict[int, list[dict[str, Any]]] = {}
    for n, story in enumerate(stories):
        groups.setdefault(find(n), []).append(story)
    return list(groups.values())


@click.command("index")
@click.argument("dataset_dir", metavar="DATASET", type=_DATASET)
def index_command(dataset_dir: str) -> None:
    """Create (or rebuild) the scalar and full-text indexes.

    BTree on document_id and session_id of runs, steps and tool_calls; Bitmap on
    tool_calls.function_name; full-text (what mapc find searches) on steps.message_json,
    steps.observation_json and tool_calls.result_json.  Rows stored later are still
    searched, unindexed, until the next mapc index.

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


class Duration(click.ParamType):
    """A duration such as ``0s``, ``90s``, ``30m``, ``1h`` or ``2d`` (a bare number is seconds)."""

    name = "DURATION"
    UNITS: Final = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> timedelta:
        if isinstance(value, timedelta):
            return value
        match = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)?", str(value).strip())
        if match is None:
            self.fail(f"{value!r} is not a duration such as 0s, 30m, 1h or 2d", param, ctx)
        return timedelta(seconds=float(match[1]) * self.UNITS[match[2] or "s"])


@click.command("compact")
@click.argument("dataset_dir", metavar="DATASET", type=_DATASET)
@click.option(
    "--grace",
    type=Duration(),
    default="1h",
    show_default=True,
    help="Keep versions retired less than this long ago (readers that started before may still use them).",
)
def compact_command(dataset_dir: str, grace: timedelta) -> None:
    """Compact each table, then remove what no reader can still use.

    Small fragments are merged into new versions, and CURRENT is switched to them in one
    atomic step.  Then compact removes the versions retired more than --grace ago (the
    versions this run retired go at a later run, unless --grace 0s), data files no version
    references, and the staging directories of killed jobs.  A compact killed at any moment
    leaves a dataset that reads as before.

    \b
    Examples:
      mapc compact /tmp/corpus
      mapc compact /tmp/corpus --grace 0s
    """
    from mapc.store import dataset

    removed = dataset.Removed()
    with fail_on(dataset_dir):
        versions = dataset.compact(Path(dataset_dir), grace=grace, removed=removed)
    for table, version in versions.items():
        click.echo(f"{table}: version {version}")
    click.echo(
        f"removed {removed.versions} old version{'s' if removed.versions != 1 else ''} and "
        f"{removed.staging} staging leftover{'s' if removed.staging != 1 else ''}",
        err=True,
    )
