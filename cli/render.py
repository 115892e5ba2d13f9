"""Turning problems into text (``FILE: POINTER: message [code]``) or JSON on stderr."""

from __future__ import annotations

from collections.abc import Iterable

import click
import orjson

from mapc.cli.files import shown
from mapc.engine.problems import Problem


def problem_line(file: str, problem: Problem) -> str:
    """One problem as a line: ``FILE: [line N: ]POINTER: message [code] (spec place)``, escaped so that
    a file name (or a message quoting one) cannot break it into several lines."""
    return shown(f"{file}: {problem}")


def report(file: str, problems: Iterable[Problem], *, as_json: bool = False) -> None:
    """Print problems of `file` to stderr."""
    problems = list(problems)
    if as_json:
        rows = [{"file": file, **p.as_dict()} for p in problems]
        click.echo(orjson.dumps(rows, option=orjson.OPT_INDENT_2).decode(), err=True)
        return
    for p in problems:
        click.echo(problem_line(file, p), err=True)


def warning_line(file: str, warning: Warning) -> str:
    """A located warning (with ``pointer``, ``message`` and ``code``): ``warning: FILE: POINTER: message [code]``."""
    pointer, message, code = (getattr(warning, k) for k in ("pointer", "message", "code"))
    return f"warning: {file}: {pointer}: {message} [{code}]"


def unknown_field_line(source: str, key: str, occurrences: int) -> str:
    """docs/envelope.md: ``warning: unknown field source=S key=K occurrences=N``, S and K JSON-string-escaped."""
    return f"warning: unknown field source={_escaped(source)} key={_escaped(key)} occurrences={occurrences}"


def _escaped(text: str) -> str:
    return orjson.dumps(text).decode()[1:-1]
