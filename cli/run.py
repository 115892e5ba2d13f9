"""`mapc run SPEC INPUT [-o OUT] [--reverse]`: run one mapping spec over one file."""

from __future__ import annotations

import click

from mapc.cli.boundary import options, the_catalog
from mapc.cli.files import document_path, is_jsonl, read_bytes, write_bytes
from mapc.cli.output import dump_json, fail_on, spec_program
from mapc.cli.params import resolve_spec
from mapc.engine import convert, storyline


@click.command("run")
@click.argument("spec")
@click.argument("input", metavar="INPUT")
@click.option("-o", "--output", metavar="OUT", help="Write here (atomically) instead of stdout.")
@click.option("--reverse", is_flag=True, help="Read Storyline JSON and write the spec's format.")
def run_command(spec: str, input: str, output: str | None, reverse: bool) -> None:
    """Map INPUT with SPEC (a built-in name such as `atif`, or a YAML spec path) to Storyline.

    A SPEC ending in .yaml that is no file here but names a built-in (atif.yaml) runs the built-in,
    said on stderr; `mapc spec path atif` shows where it is, to copy and edit.

    \b
    Examples:
      mapc run atif tests/data/fixtures/atif/support-ticket.json
      mapc run ./my-atif.yaml trajectory.json -o story.json
      mapc run atif story.json --reverse
    """
    spec = resolve_spec(spec)
    spec_program(spec)
    data = read_bytes(input)
    with fail_on(input):
        if reverse:
            loaded = storyline.loads(data, allow_duplicate_keys=options().allow_duplicate_keys)
            result = convert.from_storyline(spec, storyline.documents(loaded), catalog=the_catalog())
        else:
            stories = convert.into_storyline(
                spec, data, jsonl=is_jsonl(input), path=document_path(input), options=options(), catalog=the_catalog()
            )
            result = stories[0] if len(stories) == 1 else stories
    write_bytes(output, dump_json(result))
