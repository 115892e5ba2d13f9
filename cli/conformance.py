"""`mapc conformance run [DIR] [--format F] [--impl COMMAND]`: run the language-neutral suite."""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Any

import click
import orjson

from mapc.cli import suite
from mapc.cli.boundary import the_catalog
from mapc.cli.output import fail_on
from mapc.cli.render import report
from mapc.engine.catalog import Catalog
from mapc.engine.problems import MapcError

_SHOWN = 600  # characters of expected/got JSON printed per failure


@click.group("conformance")
def conformance_group() -> None:
    """Run the conformance suite against mapc or another implementation."""


@conformance_group.command("run")
@click.argument("directory", metavar="[DIR]", required=False, type=click.Path(exists=True))
@click.option(
    "--format",
    "formats",
    multiple=True,
    metavar="F",
    help="Only the cases of this format (repeatable): storyline, atif, …",
)
@click.option(
    "--impl",
    metavar="COMMAND",
    help="Run COMMAND (a shell command) once per test instead of mapc itself; see conformance/README.md.",
)
@click.option(
    "--spec",
    "spec",
    metavar="SPEC.yaml",
    type=click.Path(exists=True, dir_okay=False),
    help="Run the cases of the spec's format against this spec file (an edited copy of a built-in) instead.",
)
@click.option("--timeout", default=60.0, show_default=True, metavar="S", help="Seconds per --impl answer.")
@click.option("-j", "--jobs", default=1, show_default=True, metavar="N", help="Tests run at once (--impl).")
def run_command(
    directory: str | None, formats: tuple[str, ...], impl: str | None, spec: str | None, timeout: float, jobs: int
) -> None:
    """Run every case below DIR (default: ./conformance if there is one, else the suite shipped with
    mapc) and print a summary per format.

    Without --impl the cases run in-process against mapc; a case whose format mapc does not
    implement yet is skipped.  With --impl each test's request goes to COMMAND on stdin as
    JSON, and COMMAND answers on stdout.  Exit status 1 when any test fails.

    \b
    Examples:
      mapc conformance run
      mapc conformance run conformance --format atif
      mapc conformance run --impl 'python3 my_impl.py' -j 4
      mapc conformance run --spec ./my-atif.yaml
    """
    root = Path(directory) if directory else _default_suite()
    if spec is not None and impl is not None:
        raise click.UsageError("--spec runs mapc with that spec; --impl runs another implementation: say one")
    target = None
    catalog = the_catalog()
    if spec is not None:
        with fail_on(spec):
            target = catalog.program(spec).spec.name
        formats = formats or (target,)
    try:
        tests = suite.load_suite(root, formats or None)
    except MapcError as exc:
        report(exc.source or str(root), exc.problems)
        sys.exit(1)
    if not tests:
        raise click.BadParameter(f"no test in {root} for format {', '.join(formats)}", param_hint="--format")
    if impl:
        implementation = suite.command_implementation(impl, timeout=timeout)
        known = None
        against = f"`{impl}`"
    else:
        if spec is None:
            implementation = functools.partial(suite.run_in_process, catalog=catalog)
        else:
            implementation = _with_spec(str(target), spec, catalog)
        known = suite.in_process_formats(catalog)
        against = "mapc (in-process)" if spec is None else f"mapc with {spec} for {target}"
    outcomes = suite.run_suite(tests, implementation, known_formats=known, jobs=max(1, jobs))
    _print_report(root, against, outcomes)
    sys.exit(1 if any(o.status == "fail" for o in outcomes) else 0)


def _default_suite() -> Path:
    """./conformance when the working directory has one (a checkout), else the copy in the package."""
    here = Path("conformance")
    if here.is_dir():
        return here
    import importlib.util

    # Installed, the suite is package data (pyproject.toml): a namespace package, whose one folder is
    # its search location (importlib.resources would hand back a MultiplexedPath, not a folder).
    shipped = importlib.util.find_spec("mapc.conformance")
    for location in shipped.submodule_search_locations or () if shipped is not None else ():
        if Path(location).is_dir():
            return Path(location)
    import mapc  # an editable install made before the suite was packaged: the checkout's

    found = Path(mapc.__file__).resolve().parent.parent / "conformance"
    if found.is_dir():
        return found
    raise click.BadParameter("no conformance suite found: give its directory (conformance/ of mapc's repository)")


def _with_spec(name: str, spec: str, catalog: Catalog) -> Any:
    """mapc in-process, with the spec file `spec` standing for format `name` in every request."""

    def run(request: dict[str, Any]) -> Any:
        request = dict(request)
        for key in ("format", "to"):
            if request.get(key) == name:
                request[key] = spec
        return suite.run_in_process(request, catalog)

    return run


def _print_report(root: Path, against: str, outcomes: list[suite.Outcome]) -> None:
    for o in outcomes:
        if o.status == "skip":
            click.echo(f"skip  {o.test.id}: {o.reason}")
    for o in outcomes:
        if o.status == "fail":
            click.echo(f"FAIL  {o.test.id}  ({o.test.file})")
            click.echo(f"      why:      {o.reason}")
            click.echo(f"      expected: {_json(o.expected)}")
            click.echo(f"      got:      {_json(o.got)}")
    counts = suite.tally(outcomes)
    click.echo(f"\n{len(outcomes)} tests from {root} against {against}")
    width = max([len("format"), *(len(f) for f in counts)])
    click.echo(f"{'format':<{width}}  {'pass':>5}  {'fail':>5}  {'skip':>5}")
    for fmt, t in counts.items():
        click.echo(f"{fmt:<{width}}  {t.passed:>5}  {t.failed:>5}  {t.skipped:>5}")
    total = suite.Tally(
        sum(t.passed for t in counts.values()),
        sum(t.failed for t in counts.values()),
        sum(t.skipped for t in counts.values()),
    )
    click.echo(f"{'total':<{width}}  {total.passed:>5}  {total.failed:>5}  {total.skipped:>5}")


def _json(value: Any) -> str:
    try:
        text = orjson.dumps(value).decode()
    except TypeError:
        text = repr(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + " …"
