"""`mapc validate FILE... [--format FMT] [--json]`: check files, report every problem."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from typing import Any

import click

from mapc.cli.files import document_path, is_jsonl, read_bytes
from mapc.cli.render import report
from mapc.engine import convert
from mapc.engine.problems import MapcError, Problem
from mapc.mappings.owners import OWNERS


def _format_choice() -> click.Choice:
    return click.Choice(convert.formats())


@click.command("validate")
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@click.option(
    "--format",
    "fmt",
    default="storyline",
    show_default=True,
    type=click.UNPROCESSED,
    help="Format of the files: storyline, or a spec name such as atif.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the problems as a JSON array.")
@click.option(
    "--strict",
    is_flag=True,
    help="Exactly the format owner's rules (atif: Harbor 0.26's Trajectory model: closed objects, "
    "step ids 1, 2, 3…, ATIF-v1.0–v1.8 only); formats whose owner publishes no validator: the default rules.",
)
def validate_command(files: tuple[str, ...], fmt: str, as_json: bool, strict: bool) -> None:
    """Validate FILEs; exit 0 when all are valid, 1 when any is invalid, 2 for usage errors.

    The default level follows REFERENCE.md (what mapc reads and converts: unknown keys kept, any
    schema_version, step ids unique); an ATIF version mapc does not know is a warning.

    \b
    Examples:
      mapc validate story.json
      mapc validate --format atif tests/data/fixtures/atif/dialogue_10.json
      mapc validate --format atif --strict trajectory.json
    """
    if fmt not in convert.formats():
        raise click.BadParameter(f"{fmt!r} is not one of {', '.join(convert.formats())}", param_hint="--format")
    datas = [(f, read_bytes(f)) for f in files]  # unreadable files: usage error before any output
    found: list[dict[str, object]] = []
    invalid = False
    for file, data in datas:
        problems: tuple[Problem, ...] = ()
        owner = OWNERS.get(fmt)
        try:
            if strict and owner is not None:
                problems = tuple(_each_unit(data, file, owner.problems))
            else:
                convert.into_storyline(fmt, data, jsonl=is_jsonl(file), path=document_path(file))
                if owner is not None:
                    for w in _each_unit(data, file, owner.warnings):
                        click.echo(f"warning: {file}: {w}", err=True)
        except MapcError as exc:
            problems = exc.problems
        if problems:
            invalid = True
            if as_json:
                found.extend({"file": file, **p.as_dict()} for p in problems)
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
