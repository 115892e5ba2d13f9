"""`mapc convert INPUT [--from FMT] --to FMT [-o OUT]` (INPUT a file or a directory) and `mapc detect INPUT...`."""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import click
import orjson

from mapc.cli import corpus, report, sessions
from mapc.cli.boundary import on_interrupt, options, the_catalog
from mapc.cli.engines import engine_options, open_engine
from mapc.cli.files import (
    document_path,
    input_limit,
    is_jsonl,
    limited_lines,
    open_regular,
    read_bytes,
    shown,
    write_bytes,
    write_chunks,
)
from mapc.cli.output import fail_on, json_chunks, jsonl_chunks, output_bytes, redact_options, redactor_of
from mapc.cli.params import FORMAT_OR_SPEC
from mapc.cli.report import report_options
from mapc.engine import convert, detect, loss
from mapc.engine.problems import MapcError


@click.command("convert")
@click.argument("input", metavar="INPUT")
@click.option(
    "--from",
    "from_fmt",
    metavar="FMT",
    type=FORMAT_OR_SPEC,
    help="Format of INPUT (default: detected from its path or content).",
)
@click.option(
    "--to", "to_fmt", metavar="FMT", type=FORMAT_OR_SPEC, required=True, help="Format to write: storyline, atif, …"
)
@click.option("-o", "--output", metavar="OUT", help="Write here (atomically) instead of stdout; for a DIR, OUTDIR.")
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    metavar="N",
    help="For a DIR: convert in N processes (default: the number of CPUs).",
)
@click.option("--quiet", is_flag=True, help="For a DIR: no progress bar and no summary line (problems still print).")
@click.option(
    "--skip-existing",
    is_flag=True,
    help="For a DIR: leave files whose output is already there (a stopped run goes on where it stopped).",
)
@click.option(
    "--jsonl",
    "jsonl_flag",
    is_flag=True,
    help="INPUT is JSON Lines (one document, or row, a line) whatever its name; for - (stdin) this is "
    "also seen from the content.",
)
@report_options
@redact_options
@engine_options
def convert_command(
    input: str,
    from_fmt: str | None,
    to_fmt: str,
    output: str | None,
    workers: int | None,
    quiet: bool,
    skip_existing: bool = False,
    engine: str = "local",
    address: str | None = None,
    redact: bool = False,
    redact_patterns: tuple[str, ...] = (),
    report_file: str | None = None,
    strict: bool = False,
    no_envelope: bool = False,
    jsonl_flag: bool = False,
) -> None:
    """Convert INPUT (a file, or every file under a directory) from one format to another, through Storyline.

    A directory is converted file by file into OUTDIR (-o), keeping relative paths; each name gets
    the target's suffix (.storyline.json, .actf.json, else .json).  A file of no known format is
    skipped with a warning, a bad file is reported and the others go on (exit 1 if any failed).
    The files are converted by --workers local processes, or by Ray tasks with --engine ray.
    Ctrl-C stops it (exit 130) with a summary; --skip-existing then goes on where it stopped.

    Every conversion is assessed (docs/lossless.md): a file that is not exact (the target cannot
    say all of it natively) gets a warning line saying what was synthesized, carried in the
    _storyline envelope, dropped or lost; --report FILE.json writes every file's report; --strict
    refuses a conversion that is not exact (nothing written for it, exit 1); --no-envelope writes
    the pure target format and reports what that drops.

    \b
    Examples:
      mapc convert tests/data/fixtures/atif/support-ticket.json --to actf
      mapc convert tests/data/fixtures/actf/code-repair.actf.json --to atif -o code-repair.atif.json
      mapc convert tests/data/fixtures/atif --to storyline -o /tmp/stories --workers 2
    """
    redactor = redactor_of(redact, redact_patterns)
    if Path(input).is_dir():
        jobs = workers or os.cpu_count() or 1
        assess = corpus.LossOptions(strict=strict, keep_envelope=not no_envelope, redactor=redactor)
        _convert_directory(
            input, from_fmt, to_fmt, output, jobs, quiet, engine, address, skip_existing, assess, report_file
        )
        return
    if is_jsonl(input) and input != "-" and output not in (None, "-"):
        fmt = from_fmt or detect.detect(input, _first_line(input), catalog=the_catalog())
        if fmt is not None and _streams(fmt, to_fmt):
            _convert_lines(input, fmt, to_fmt, output, strict, not no_envelope, report_file, redactor)
            return
    data = read_bytes(input)
    lines = jsonl_flag or is_jsonl(input) or (input == "-" and looks_like_jsonl(data))
    if from_fmt is None:
        if lines and not is_jsonl(input):  # stdin, or --jsonl: the content's first line says the format
            from_fmt = detect.by_content(data, jsonl=True, catalog=the_catalog()) or detected(input, data)
        else:
            from_fmt = detected(input, data)
    with fail_on(input):
        try:
            stories = _into_storyline(input, from_fmt, data, lines)
        except MapcError:
            _hint_detected(input, data, from_fmt)
            raise
        for message in convert.drift(from_fmt, data, options(), catalog=the_catalog()):
            click.echo(f"{input}: warning: {message}", err=True)
        if redactor is not None:
            stories, counts = redactor.stories(stories)
        result, assessed = convert.from_storyline_reported(
            to_fmt, stories, from_format=from_fmt, keep_envelope=not no_envelope, catalog=the_catalog()
        )
        files = (
            convert.companion_files(to_fmt, result, _stem(output), stories, catalog=the_catalog())
            if output not in (None, "-")
            else None
        )
        main = files[0][1] if files is not None else result  # the input file's own output (beside: its subagents')
        assessed = report.owner_checked(assessed.at(input), to_fmt, result).with_input(data, main, lines=lines)
        if redactor is not None:
            assessed = assessed.with_redacted(counts)
        if strict and not assessed.exact:
            report.write_report(report_file, [assessed], strict=strict)
            raise MapcError([report.refusal(assessed)])
    if files is not None and output is not None:  # a session and its subagents: its file, theirs beside it
        for rel, records in files[1:]:
            target = Path(output).parent / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            write_bytes(str(target), b"".join(jsonl_chunks(iter([records]))))
        result = files[0][1]
        output_data = b"".join(jsonl_chunks(iter([result])))
        write_bytes(output, output_data)
    else:
        if output is not None and is_jsonl(output):
            result = convert.as_lines(
                to_fmt, result, catalog=the_catalog()
            )  # a row corpus: one row a line (the envelope in the first)
        write_bytes(output, output_bytes(output, result))
    report.write_report(report_file, [assessed], strict=strict)
    for line in report.lines([assessed]):
        click.echo(line, err=True)
    if redactor is not None:
        from mapc.engine.redact import summary as redact_summary  # with --redact only

        click.echo(f"{input}: {redact_summary(counts)}", err=True)


def _into_storyline(input: str, fmt: str, data: bytes, lines: bool = False) -> list[dict[str, Any]]:
    """The Storylines of INPUT (JSON Lines with `lines`); an event stream with companion files beside
    it (a Claude Code session's subagent transcripts) is read with them, as one tree."""
    pattern = convert.companions_pattern(fmt, catalog=the_catalog()) if input != "-" else None
    if pattern is None:
        return convert.into_storyline(
            fmt, data, jsonl=lines, path=document_path(input), options=options(), catalog=the_catalog()
        )
    base = Path(input).parent
    found = [(Path(c).relative_to(base).as_posix(), read_bytes(c)) for c in sessions.companions(pattern, input)]
    return convert.into_storyline_with(
        fmt, data, found, path=document_path(input), options=options(), catalog=the_catalog()
    )


def _stem(path: str | None) -> str:
    name = Path(path or "").name
    return name.rsplit(".", 1)[0] if "." in name else name


def _hint_detected(input: str, data: bytes, from_fmt: str) -> None:
    """When INPUT fails as --from FMT but its name or content says another format, say which."""
    try:
        guess = detect.detect(input, data, catalog=the_catalog())
    except MapcError:
        return
    if guess is not None and guess != from_fmt and the_catalog().aliases().get(from_fmt) != guess:
        click.echo(f"{input}: note: its content reads as {guess} (mapc detect); try --from {guess}", err=True)


def detected(input: str, data: bytes) -> str:
    """The format of `input` by its path, then its content.  Input that is not JSON (nor a codec's
    text) is invalid data, said with the parser's line and column (exit 1); JSON of no known format
    is a usage error asking for --from (exit 2)."""
    fmt = detect.detect(input, data, catalog=the_catalog())
    if fmt is not None:
        return fmt
    with fail_on(input):
        convert.read_units(data, jsonl=is_jsonl(input))  # raises json.invalid, with the place
    raise click.BadParameter(
        f"cannot tell the format of {input} from its name or content; say it with --from", param_hint="INPUT"
    )


def looks_like_jsonl(data: bytes) -> bool:
    """Whether stdin's `data` is JSON Lines: several non-empty lines, the first a whole JSON value
    by itself (a pretty-printed document's first line is not)."""
    lines = [line for line in data.splitlines() if line.strip()]
    if len(lines) < 2:
        return False
    try:
        orjson.loads(lines[0])
    except orjson.JSONDecodeError:
        return False
    return True


def _streams(from_fmt: str, to_fmt: str) -> bool:
    try:
        return convert.streamable(from_fmt, to_fmt, catalog=the_catalog())
    except MapcError:
        return False  # an unknown format name: the usual path says so


def _first_line(path: str) -> bytes:
    try:
        with open_regular(path) as lines:  # a FIFO is not opened (read_bytes then says what it is)
            return next((line for line in lines if line.strip()), b"")
    except OSError:
        return b""


def _convert_lines(
    input: str,
    from_fmt: str,
    to_fmt: str,
    output: str,
    strict: bool = False,
    keep_envelope: bool = True,
    report_file: str | None = None,
    redactor: Any = None,
) -> None:
    """A JSONL file converted line by line into `output`: memory holds one line, not the file; with
    `redactor` (engine/redact.py) each line's Storylines are redacted, and the report counts it."""
    reports: list[loss.Report] = []
    with fail_on(input):
        try:
            with open_regular(input) as handle:  # the limit counts the bytes read, line by line
                lines = limited_lines(handle, input_limit())
                documents = convert.convert_lines(
                    from_fmt,
                    to_fmt,
                    lines,
                    path=document_path(input),
                    options=options(),
                    reports=reports,
                    strict=strict,
                    keep_envelope=keep_envelope,
                    redactor=redactor,
                    catalog=the_catalog(),
                )
                write_chunks(output, jsonl_chunks(documents) if is_jsonl(output) else json_chunks(documents))
        except OSError as exc:
            raise click.BadParameter(f"cannot read {input}: {exc.strerror or exc}", param_hint="INPUT") from None
        finally:
            if reports:
                whole = loss.combined(reports, from_fmt, to_fmt).at(input)
                report.write_report(report_file, [whole], strict=strict)
                for line in report.lines([whole]):
                    click.echo(line, err=True)
                if redactor is not None:
                    click.echo(f"{input}: {_redacted_line(whole.redacted)}", err=True)


def _redacted_line(redacted: Iterable[tuple[str, int]]) -> str:
    from mapc.engine.redact import summary as redact_summary  # with --redact only

    return redact_summary(Counter(dict(redacted)))


def _convert_directory(
    root: str,
    from_fmt: str | None,
    to_fmt: str,
    outdir: str | None,
    workers: int,
    quiet: bool,
    engine: str = "local",
    address: str | None = None,
    skip_existing: bool = False,
    loss_options: corpus.LossOptions | None = None,
    report_file: str | None = None,
) -> None:
    """`mapc convert DIR`: plan, convert behind a progress bar (a terminal only), report; see cli/corpus.py."""
    if outdir is None or outdir == "-":
        raise click.BadParameter("INPUT is a directory: name the output directory with -o OUTDIR", param_hint="-o")
    for fmt, param in ((from_fmt, "--from"), (to_fmt, "--to")):
        try:  # a spec file given by path: its mistakes are a usage error before any work
            if fmt is not None and fmt not in convert.formats(catalog=the_catalog()):
                convert.program_for(fmt, catalog=the_catalog())
        except MapcError as exc:
            raise click.BadParameter(exc.problems[0].message if exc.problems else str(exc), param_hint=param) from None
    started = time.perf_counter()
    try:
        plan = corpus.plan(
            root,
            outdir,
            to_fmt,
            from_fmt,
            skip_existing=skip_existing,
            options=options(),
            loss=loss_options,
            catalog=the_catalog(),
        )
    except corpus.PlanError as exc:
        raise click.BadParameter(exc.message, param_hint=exc.param) from None
    if not plan.jobs and not plan.settled:
        suffixes = "/".join(corpus.walked_suffixes(from_fmt, the_catalog()))
        raise click.BadParameter(f"{root} holds no {suffixes} file", param_hint="INPUT")
    results = list(plan.settled)

    def interrupted() -> list[str]:  # Ctrl-C: what is done is done (every output is whole), the rest is not
        summary = corpus.summarize(results, time.perf_counter() - started)
        left = len(plan.jobs) - (len(results) - len(plan.settled))
        return [
            summary.line(),
            f"{left} file{'s' if left != 1 else ''} not converted; the same command with --skip-existing goes on",
        ]

    on_interrupt(interrupted)
    with open_engine(engine, address, workers) as runner:  # --engine, --address: cli/engines.py
        Path(outdir).mkdir(parents=True, exist_ok=True)
        converted = corpus.run(plan.jobs, workers, runner)
        if sys.stderr.isatty() and not quiet:
            with click.progressbar(converted, length=len(plan.jobs), file=sys.stderr) as bar:
                for result in bar:
                    results.append(result)
        else:
            for result in converted:
                results.append(result)
    summary = corpus.summarize(results, time.perf_counter() - started)
    for line in corpus.report_lines(summary):
        click.echo(line, err=True)
    strict = loss_options is not None and loss_options.strict
    if loss_options is not None and loss_options.redactor is not None:  # each file's count is in its report
        total: Counter[str] = Counter()
        for r in results:
            total.update(dict(r.loss.redacted) if r.loss is not None else {})
        click.echo(f"{root}: {_redacted_line(total.items())}", err=True)
    report.write_report(report_file, [r.loss for r in results if r.loss is not None], strict=strict)
    if not quiet:
        click.echo(summary.line(), err=True)
    sys.exit(1 if summary.failed else 0)


@click.command("detect")
@click.argument("inputs", nargs=-1, required=True, metavar="INPUT...")
def detect_command(inputs: tuple[str, ...]) -> None:
    """Print FILE<TAB>format for each file, and for each file under a directory INPUT (path first,
    then content); exit 1 if any is unknown.

    \b
    Examples:
      mapc detect tests/data/fixtures/atif/dialogue_10.json tests/data/fixtures/actf/code-repair.actf.json
      mapc detect tests/data/fixtures
    """
    unknown = False
    for file in walked_inputs(inputs):
        data = read_bytes(file)
        fmt = detect.detect(file, data, catalog=the_catalog())
        unknown |= fmt is None
        click.echo(f"{shown(file)}\t{fmt or 'unknown'}")
    sys.exit(1 if unknown else 0)


def walked_inputs(inputs: tuple[str, ...], from_fmt: str | None = None) -> list[str]:
    """The files of INPUT... (directories walked as `mapc convert DIR` walks them); a usage error for a
    path that is neither a file nor a directory."""
    try:
        return corpus.input_files(inputs, from_fmt, the_catalog())
    except corpus.PlanError as exc:
        raise click.BadParameter(exc.message, param_hint=exc.param) from None
