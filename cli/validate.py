"""`mapc validate INPUT... [--format FMT] [--json]`: check files, report every problem."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from typing import Any

import click

from mapc.cli.boundary import options, the_catalog
from mapc.cli.convert import walked_inputs
from mapc.cli.files import document_path, is_jsonl, read_bytes
from mapc.cli.params import FORMAT_OR_SPEC
from mapc.cli.render import report
from mapc.engine import convert, detect
from mapc.engine.problems import MapcError, Problem
from mapc.mappings.owners import OWNERS


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
@click.option(
    "--strict",
    is_flag=True,
    help="Exactly the format owner's rules (atif: Harbor 0.26's Trajectory model: closed objects, "
    "step ids 1, 2, 3…, ATIF-v1.0–v1.8 only); formats whose owner publishes no validator: the default rules.",
)
def validate_command(inputs: tuple[str, ...], fmt: str | None, as_json: bool, strict: bool) -> None:
    """Validate INPUT files (and every file under a directory INPUT); exit 0 when all are valid,
    1 when any is invalid, 2 for usage errors.

    Without --format each file's format is detected as `mapc convert` detects it (its name, then its
    content); a file detected as another format than Storyline is named on stderr with the format it
    was checked as.  JSON of no known format is checked as Storyline.

    The default level is mapc's reading (docs/formats.md, "Reading levels": unknown keys kept, any
    schema_version, step ids unique); an ATIF version mapc does not know is a warning.

    \b
    Examples:
      mapc validate story.json
      mapc validate tests/data/fixtures/atif/dialogue_10.json
      mapc validate --format ATIF tests/data/fixtures/atif
      mapc validate --format atif --strict trajectory.json
    """
    files = walked_inputs(inputs)
    datas = [(f, read_bytes(f)) for f in files]  # unreadable files: usage error before any output
    found: list[dict[str, object]] = []
    invalid = False
    for file, data in datas:
        problems: tuple[Problem, ...] = ()
        as_fmt = fmt
        if as_fmt is None:
            as_fmt = detect.detect(file, data, catalog=the_catalog()) or convert.STORYLINE
            if as_fmt != convert.STORYLINE and not as_json:
                click.echo(f"note: {file}: checked as {as_fmt} (detected; say another with --format)", err=True)
        owner = OWNERS.get(as_fmt)
        try:
            if strict and owner is not None:
                problems = tuple(_each_unit(data, file, owner.problems))
            else:
                convert.into_storyline(
                    as_fmt,
                    data,
                    jsonl=is_jsonl(file),
                    path=document_path(file),
                    options=options(),
                    catalog=the_catalog(),
                )
                if owner is not None:
                    for w in _each_unit(data, file, owner.warnings):
                        click.echo(f"warning: {file}: {w}", err=True)
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


def _each_unit(data: bytes, file: str, check: Callable[[Any], list[Problem]]) -> Iterator[Problem]:
    """`check` of every top-level document of the file (an object, array elements, JSONL lines), located."""
    for unit in convert.read_units(data, jsonl=is_jsonl(file)):
        yield from (unit.locate(p) for p in check(unit.document))
