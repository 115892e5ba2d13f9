"""The spec author's tools: `mapc spec lint|table|coverage` and `mapc explain`."""

from __future__ import annotations

import importlib.resources
import sys
from pathlib import Path
from typing import Any

import click
import orjson

from mapc.cli.boundary import the_catalog
from mapc.cli.files import is_jsonl, read_bytes
from mapc.cli.output import dump_json, fail_on
from mapc.cli.params import canonical_format, resolve_spec
from mapc.cli.render import report
from mapc.engine.problems import MapcError, Problem
from mapc.engine.spec import read_spec_text
from mapc.engine.values import MISSING


def _spec_text(spec: str) -> tuple[str, str]:
    """(file name, YAML text) of a built-in spec name or a spec path; unreadable is a usage error."""
    spec = resolve_spec(spec)
    if spec in the_catalog().shipped_names() and not Path(spec).is_file():
        return f"{spec}.yaml", the_catalog().spec_text(spec)
    try:
        return spec, read_spec_text(Path(spec))
    except MapcError as exc:
        if exc.problems[0].code != "spec.not_found":  # readable, but not UTF-8: a data problem
            report(spec, exc.problems)
            sys.exit(1)
        known = ", ".join(the_catalog().shipped_names())
        raise click.BadParameter(f"{exc.problems[0].message} (built-in specs: {known})", param_hint="SPEC") from None


def _shipped(name: str) -> Any:
    return importlib.resources.files("mapc.mappings").joinpath(f"{name}.yaml")


def _trace_spec(spec: str) -> tuple[str, str] | None:
    """(file name, YAML text) of a span-tree spec SPEC names: a built-in's (`mappings/traces/`) or a
    file of that kind; None: SPEC is no span-tree spec."""
    from mapc.engine import spans
    from mapc.engine.spec import parse_yaml

    if Path(spec).is_file():
        try:
            text = read_spec_text(Path(spec))
            data = parse_yaml(Path(spec).name, text)[0]
        except MapcError:
            return None
        return (spec, text) if spans.is_span_tree(data) else None
    fmt = canonical_format(spec)
    text = the_catalog().trace_spec_text(fmt) if fmt is not None else None
    return None if text is None else (f"mappings/traces/{fmt}.yaml", text)


def _lint_line(problem: Problem, file: str) -> str:
    at = problem.spec_at
    name = file if at and at.file == Path(file).name else (at.file if at else file)
    where = f"{name}:{at.line}:{at.column}" if at else name
    rule = f" {at.rule}:" if at and at.rule else ""
    pointer = f" {problem.pointer}:" if problem.pointer and not (at and at.rule) else ""
    return f"{where}:{rule}{pointer} {problem.message} [{problem.code}]"


@click.group("spec")
def spec_group() -> None:
    """Check a mapping spec, print its table, measure it over a corpus."""


@spec_group.command("lint")
@click.argument("spec")
@click.option("--json", "as_json", is_flag=True, help="Print the problems as a JSON array.")
def lint_command(spec: str, as_json: bool) -> None:
    """Check SPEC: its shape, then unknown functions and variables, bad or unknown pointers,
    rows that collide, never fire or cannot be reversed, and Storyline keys no row writes.

    SPEC may also be a wire table (a protocol of `mapc events project`, or such a YAML file): its
    rules are checked against what the projector can do.  Exit status 1 when there is any problem.

    \b
    Examples:
      mapc spec lint atif
      mapc spec lint openai-responses
      mapc spec lint mappings/atif.yaml --json
    """
    from mapc.engine.lint import lint_path, lint_span_tree
    from mapc.store import wire, wire_table

    protocol = wire.table_named(spec) if not Path(spec).is_file() and canonical_format(spec) is None else None
    traced = _trace_spec(spec) if protocol is None else None
    if protocol is not None:  # a wire protocol's table (mappings/wire/, `mapc events project`)
        name, text = f"mappings/wire/{protocol.protocol}.yaml", wire.table_text(protocol.protocol)
    elif traced is not None:  # a span-tree spec (mappings/traces/, engine/spans.py)
        name, text = traced
    else:
        name, text = _spec_text(spec)
    if traced is not None:
        problems = lint_span_tree(name, text)
    else:
        problems = wire_table.lint(text, name) if wire_table.is_table(text) else lint_path(name, text)
    if as_json:
        click.echo(orjson.dumps([p.as_dict() for p in problems], option=orjson.OPT_INDENT_2).decode())
    else:
        for p in problems:
            click.echo(_lint_line(p, name))
        if not problems:
            click.echo(f"{name}: no problems")
    sys.exit(1 if problems else 0)


@spec_group.command("show")
@click.argument("spec")
def show_command(spec: str) -> None:
    """Print SPEC's YAML: a built-in's shipped text, to copy and edit (mapc spec show atif > my-atif.yaml).

    \b
    Examples:
      mapc spec show atif
      mapc spec show openai-messages
    """
    fmt = canonical_format(spec) if not Path(spec).is_file() else None
    traced = the_catalog().trace_spec_text(fmt) if fmt is not None else None
    _, text = ("", traced) if traced is not None else _spec_text(spec)
    click.echo(text, nl=not text.endswith("\n"))


@spec_group.command("path")
@click.argument("spec")
def path_command(spec: str) -> None:
    """Print where SPEC's YAML file is (a built-in's file inside the installed package).

    \b
    Example:
      cp "$(mapc spec path atif)" my-atif.yaml
    """
    resolved = resolve_spec(spec)
    if resolved in the_catalog().shipped_names() and not Path(resolved).is_file():
        click.echo(str(_shipped(resolved)))
    else:
        click.echo(str(Path(resolved).resolve()))


@spec_group.command("upgrade")
@click.argument("spec", type=click.Path(exists=True, dir_okay=False))
@click.option("--stdout", "to_stdout", is_flag=True, help="Print the upgraded spec instead of rewriting SPEC.")
def upgrade_command(spec: str, to_stdout: bool) -> None:
    """Rewrite SPEC (a YAML file) from the first rule vocabulary into the current one.

    Old rule keys become one `back:` block (`reverse_default` -> `back: {default}`, ...),
    `forward: none` (was `reverse_only`), `back: none` (was `derived`), `when: nonempty` and
    `args`; comments and all other lines stay.  The rewrite is checked to load into the same
    rules before the file is replaced (atomically).  Exit status 1 when a rule has no new form.

    \b
    Examples:
      mapc spec upgrade my-format.yaml
      mapc spec upgrade my-format.yaml --stdout > new.yaml
    """
    import os
    import tempfile

    from mapc.engine.upgrade import upgrade_text

    name, text = _spec_text(spec)
    with fail_on(name):
        upgraded, count = upgrade_text(Path(name).name, text)
    if to_stdout:
        click.echo(upgraded, nl=False)
        return
    if count:
        target = Path(spec)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
                out.write(upgraded)
            os.replace(tmp, target)
        except BaseException:  # any failure, Ctrl-C included: no temporary file left behind, then re-raised
            Path(tmp).unlink(missing_ok=True)
            raise
    click.echo(f"{spec}: {count} rule(s) upgraded" if count else f"{spec}: already in the current vocabulary", err=True)


def _load(spec: str) -> Any:
    from mapc.engine.spec import load_spec

    name, text = _spec_text(spec)
    with fail_on(name):
        return load_spec(name, text)


@spec_group.command("table")
@click.argument("spec")
def table_command(spec: str) -> None:
    """Print SPEC's mapping table as Markdown: source pointer | Storyline pointer(s).

    SPEC may also be a wire protocol of `mapc events project` (anthropic-messages,
    openai-chat-completions, openai-responses, gemini-generate-content).

    \b
    Examples:
      mapc spec table atif
      mapc spec table actf
      mapc spec table openai-responses
    """
    from mapc.engine.table import markdown
    from mapc.store import wire

    # a wire protocol's table (mappings/wire/, `mapc events project`); where a hint of one is also a
    # spec's name ("openai-chat"), the spec wins
    protocol = wire.table_named(spec)
    if protocol is not None and (protocol.protocol == spec or canonical_format(spec) is None):
        click.echo(wire.markdown(protocol), nl=False)
        return
    traced = _trace_spec(spec)
    if traced is not None:  # a span-tree spec: attribute | Storyline pointer(s)
        from mapc.engine import spans
        from mapc.engine.spec import parse_yaml

        name, text = traced
        with fail_on(name):
            data = parse_yaml(Path(name).name, text)[0]
            parsed = spans.parse(data, data.get("tables") or {})
        click.echo(spans.markdown(parsed), nl=False)
        return
    click.echo(markdown(_load(spec)), nl=False)


def _program(spec: str) -> Any:
    spec = resolve_spec(spec)
    with fail_on(spec):
        return the_catalog().program(spec)


@spec_group.command("coverage")
@click.argument("spec")
@click.argument("inputs", nargs=-1, required=True, metavar="FILE...")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def coverage_command(spec: str, inputs: tuple[str, ...], as_json: bool) -> None:
    """Run SPEC over a corpus of FILEs (or directories): how often each row fired, which keys
    went to unknown_fields (normalized) and how often, which rows never fired.

    \b
    Examples:
      mapc spec coverage atif tests/data/fixtures/atif
      mapc spec coverage mappings/atif.yaml runs/*.json --json
    """
    from mapc.cli.store import input_files
    from mapc.engine import coverage

    program = _program(spec)
    files = input_files(inputs)
    report = coverage.measure(program, ((f, read_bytes(f), is_jsonl(f)) for f in files))
    if as_json:
        sys.stdout.buffer.write(dump_json(coverage.as_json(report)))
    else:
        click.echo(coverage.markdown(report), nl=False)


def _storyline_root() -> frozenset[str]:
    """The keys of a Storyline's root object (a POINTER under one names a Storyline value)."""
    from mapc.engine.schema import load_schema

    return frozenset(load_schema("storyline-v1").get("properties") or ())


@click.command("explain")
@click.argument("spec")
@click.argument("input", metavar="INPUT")
@click.argument("pointer", metavar="POINTER")
@click.option(
    "--storyline",
    "index",
    type=int,
    default=None,
    metavar="K",
    help="Explain POINTER in the K-th Storyline (where it came from), not in INPUT.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
def explain_command(spec: str, input: str, pointer: str, index: int | None, as_json: bool) -> None:
    """Say where the value at POINTER in INPUT went (rule, YAML line, Storyline pointers), or,
    for a Storyline pointer (POINTER under /turns, a Storyline INPUT, or --storyline K), where
    that Storyline value came from.

    In an array or JSONL INPUT, POINTER starts with the document's position (/0/steps/1).

    \b
    Examples:
      mapc explain atif tests/data/fixtures/atif/support-ticket.json /steps/1/tool_calls/0/arguments
      mapc explain atif tests/data/fixtures/atif/support-ticket.json /turns/1/kind
      mapc explain atif story.json /turns/0/msg
      mapc explain actf tests/data/fixtures/actf/code-repair.actf.json /task_id
    """
    from mapc.engine import convert, explain
    from mapc.engine import pointer as jp

    program = _program(spec)
    data = read_bytes(input)
    with fail_on(input):
        try:
            tokens = jp.parse(pointer)
        except jp.PointerSyntaxError:
            raise click.BadParameter(f"{pointer!r} is not a JSON Pointer", param_hint="POINTER") from None
        stream = program.spec.stream is not None  # an event stream: the file is one document (/N: record N)
        units = convert.read_units(data, jsonl=is_jsonl(input) or stream, rows=stream)
        several = not stream and (len(units) > 1 or type(units[0].document) is list or is_jsonl(input))
        if several:
            if not tokens or not tokens[0].isdigit() or int(tokens[0]) >= len(units):
                raise click.BadParameter(
                    f"INPUT holds {len(units)} documents: start POINTER with one's position (/0/…)",
                    param_hint="POINTER",
                )
            unit = units[int(tokens[0])]
            tokens = tokens[1:]
        else:
            unit = units[0]
        doc = unit.document
        rel = jp.format(tokens)
        if _is_storyline(doc):
            stories = [doc]
            findings = explain.explain_target(program, stories, 0, rel)
            what = f"Storyline {input}"
        else:
            target = index is not None or (
                tokens[:1] and tokens[0] in _storyline_root() and jp.resolve(doc, tokens) is MISSING
            )
            if target:
                stories = convert.forward_unit(program, unit, catalog=the_catalog())
                findings = explain.explain_target(program, stories, index or 0, rel, doc)
                what = f"Storyline {index or 0} made from {input}"
            else:
                findings = explain.explain_source(program, doc, rel)
                what = input
    if as_json:
        sys.stdout.buffer.write(dump_json([f.as_dict() for f in findings]))
        return
    click.echo(f"{pointer or '/'} in {what}:")
    for f in findings:
        click.echo(f"- {f.message}")


def _is_storyline(doc: Any) -> bool:
    version = doc.get("schema_version") if type(doc) is dict else None
    return type(version) is str and version.startswith("storyline/")
