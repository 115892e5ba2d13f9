"""`mapc validate INPUT... [--format FMT] [--json]`: check files, report every problem."""

from __future__ import annotations

import sys

import click

from mapc.cli.boundary import options
from mapc.cli.convert import walked_inputs
from mapc.cli.files import document_path, is_jsonl, read_bytes
from mapc.cli.params import FORMAT_OR_SPEC
from mapc.cli.render import report
from mapc.engine import convert, detect
from mapc.engine.problems import MapcError, Problem


@click.command("validate")
@click.argument("inputs", nargs=-1, required=True, metavar="INPUT...")
@click.option(
    "--format",
    "fmt",
    default=None,
    type=FORMAT_OR_SPEC,
    metavar="FMT",
    help="Format of the files (storyline, atif, …, any case or alias); default: detected per file, else storyline.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the problems as a JSON array.")
def validate_command(inputs: tuple[str, ...], fmt: str | None, as_json: bool) -> None:
    """Validate INPUT files (and every file under a directory INPUT); exit 0 when all are valid,
    1 when any is invalid, 2 for usage errors.

    Without --format each file's format is detected as `mapc convert` detects it (its name, then its
    content); a file detected as another format than Storyline is named on stderr with the format it
    was checked as.  JSON of no known format is checked as Storyline.

    \b
    Examples:
      mapc validate story.json
      mapc validate tests/data/fixtures/atif/dialogue_10.json
      mapc validate --format ATIF tests/data/fixtures/atif
    """
    files = walked_inputs(inputs)
    datas = [(f, read_bytes(f)) for f in files]  # unreadable files: usage error before any output
    found: list[dict[str, object]] = []
    invalid = False
    for file, data in datas:
        problems: tuple[Problem, ...] = ()
        as_fmt = fmt
        if as_fmt is None:
            as_fmt = detect.detect(file, data) or convert.STORYLINE
            if as_fmt != convert.STORYLINE and not as_json:
                click.echo(f"note: {file}: checked as {as_fmt} (detected; say another with --format)", err=True)
        try:
            convert.into_storyline(as_fmt, data, jsonl=is_jsonl(file), path=document_path(file), options=options())
        except MapcError as exc:
            problems = exc.problems
        if problems:
            invalid = True
            if as_json:
                found.extend({"file": file, "format": as_fmt, **p.as_dict()} for p in problems)
            else:
                report(file, problems)
    if as_json:
        import orjson

        click.echo(orjson.dumps(found, option=orjson.OPT_INDENT_2).decode())
    sys.exit(1 if invalid else 0)
