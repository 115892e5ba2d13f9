"""`mapc convert INPUT [--from FMT] --to FMT [-o OUT]` and `mapc detect FILE...`."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from mapc.cli.files import is_jsonl, read_bytes, write_bytes
from mapc.cli.output import dump_json, fail_on
from mapc.engine import convert, detect


@click.command("convert")
@click.argument("input", metavar="INPUT")
@click.option("--from", "from_fmt", metavar="FMT", help="Format of INPUT (default: detected from its path or content).")
@click.option("--to", "to_fmt", metavar="FMT", required=True, help="Format to write: storyline, atif, actf, …")
@click.option("-o", "--output", metavar="OUT", help="Write here (atomically) instead of stdout.")
def convert_command(input: str, from_fmt: str | None, to_fmt: str, output: str | None) -> None:
    """Convert INPUT from one format to another, always through Storyline.

    \b
    Examples:
      mapc convert tests/data/fixtures/atif/support-ticket.json --to actf
      mapc convert tests/data/fixtures/actf/code-repair.actf.json --to atif -o code-repair.atif.json
    """
    if Path(input).is_dir():
        raise click.BadParameter(
            "INPUT is a directory: whole-corpus conversion is not implemented yet", param_hint="INPUT"
        )
    data = read_bytes(input)
    if from_fmt is None:
        from_fmt = detect.detect(input, data)
        if from_fmt is None:
            raise click.BadParameter(
                f"cannot tell the format of {input} from its name or content; say it with --from", param_hint="INPUT"
            )
    with fail_on(input):
        result = convert.convert(from_fmt, to_fmt, data, jsonl=is_jsonl(input))
    write_bytes(output, dump_json(result))


@click.command("detect")
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
def detect_command(files: tuple[str, ...]) -> None:
    """Print FILE<TAB>format for each file (path first, then content); exit 1 if any is unknown.

    \b
    Example:
      mapc detect tests/data/fixtures/atif/dialogue_10.json tests/data/fixtures/actf/code-repair.actf.json
    """
    unknown = False
    for file in files:
        data = read_bytes(file)
        fmt = detect.detect(file, data)
        unknown |= fmt is None
        click.echo(f"{file}\t{fmt or 'unknown'}")
    sys.exit(1 if unknown else 0)
