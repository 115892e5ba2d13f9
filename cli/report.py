"""The loss report of `mapc convert` (engine/loss.py): its options, its lines, and `--report FILE.json`.

Every conversion is assessed.  A file that is not exact gets one line on stderr saying what was
synthesized, carried in `_storyline` (or dropped, with `--no-envelope`) or lost; `--report FILE.json`
writes every file's report as data; `--strict` refuses a conversion that is not exact (its output
is not written, exit 1).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import click

from mapc.cli.files import shown, write_bytes
from mapc.cli.output import dump_json
from mapc.engine import loss
from mapc.engine.problems import Problem

NOT_EXACT = "convert.not_exact"


def report_options(fn: Any) -> Any:
    """`--report FILE.json`, `--strict` and `--no-envelope`."""
    fn = click.option(
        "--no-envelope",
        is_flag=True,
        help="Write the pure target format, without the _storyline envelope; the report says what that drops.",
    )(fn)
    fn = click.option(
        "--strict",
        is_flag=True,
        help="Refuse any conversion that is not exact (nothing written for it, exit 1).",
    )(fn)
    return click.option(
        "--report",
        "report_file",
        metavar="FILE.json",
        help="Write the loss report of every file converted here, as JSON.",
    )(fn)


def refusal(report: loss.Report) -> Problem:
    """The problem `--strict` makes of a conversion that is not exact."""
    return Problem(NOT_EXACT, "", f"the conversion is not exact ({report.summary()}); --strict refuses it")


def lines(reports: Iterable[loss.Report]) -> list[str]:
    """One warning line per report that is not exact (issue 15 §4).  An exact conversion prints
    nothing, even when its output is one its format's owner refuses (an ATIF input that already
    carried keys Harbor forbids, written back as it was): `--report` says that (`invalid`)."""
    return [shown(f"warning: {r.line()}") for r in reports if not r.exact]


def owner_checked(report: loss.Report, fmt: str, output: Any) -> loss.Report:
    """`report` with what the validator of `fmt`'s owner (Harbor, for ATIF) says of `output`."""
    from mapc.mappings.owners import OWNERS

    owner = OWNERS.get(fmt)
    if owner is None or isinstance(output, str):
        return report
    documents = output if type(output) is list else [output]
    prefix = len(documents) > 1
    invalid = tuple(p.within(f"/{k}") if prefix else p for k, doc in enumerate(documents) for p in owner.problems(doc))
    return report.checked(owner.name, invalid)


def report_data(reports: Iterable[loss.Report], *, strict: bool = False) -> dict[str, Any]:
    """The `--report` document: a version, counts and every file's report, in path order."""
    files = sorted(reports, key=lambda r: r.path or "")
    exact = sum(1 for r in files if r.exact)
    return {
        "version": loss.VERSION,
        "strict": strict,
        "files": len(files),
        "exact": exact,
        "not_exact": len(files) - exact,
        "invalid_for_owner": sum(1 for r in files if r.invalid),
        "reports": [r.as_dict() for r in files],
    }


def write_report(path: str | None, reports: Iterable[loss.Report], *, strict: bool = False) -> None:
    """Write the `--report` file (atomically; `-` is stdout)."""
    if path is not None:
        write_bytes(path, dump_json(report_data(reports, strict=strict)))
