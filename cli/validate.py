"""`mapc validate FILE... [--format FMT] [--json]`: check files, report every problem."""

from __future__ import annotations

import sys

import click

from mapc.cli.files import document_path, is_jsonl, read_bytes
from mapc.cli.render import report
from mapc.engine import convert
from mapc.engine.problems import MapcError, Problem


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
def validate_command(files: tuple[str, ...], fmt: str, as_json: bool) -> None:
    """Validate FILEs; exit 0 when all are valid, 1 when any is invalid, 2 for usage errors.

    \b
    Examples:
      mapc validate story.json
      mapc validate --format atif tests/data/fixtures/atif/dialogue_10.json
    """
    if fmt not in convert.formats():
        raise click.BadParameter(f"{fmt!r} is not one of {', '.join(convert.formats())}", param_hint="--format")
    datas = [(f, read_bytes(f)) for f in files]  # unreadable files: usage error before any output
    found: list[dict[str, object]] = []
    invalid = False
    for file, data in datas:
        problems: tuple[Problem, ...] = ()
        try:
            convert.into_storyline(fmt, data, jsonl=is_jsonl(file), path=document_path(file))
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
