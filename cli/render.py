"""Turning problems into text (``FILE: POINTER: message [code]``) or JSON on stderr."""

from __future__ import annotations

from collections.abc import Iterable

import click
import orjson

from mapc.engine.problems import Problem


def problem_line(file: str, problem: Problem) -> str:
    """One problem as a line: ``FILE: [line N: ]POINTER: message [code] (spec place)``."""
    return f"{file}: {problem}"


def report(file: str, problems: Iterable[Problem], *, as_json: bool = False) -> None:
    """Print problems of `file` to stderr."""
    problems = list(problems)
    if as_json:
        rows = [{"file": file, **p.as_dict()} for p in problems]
        click.echo(orjson.dumps(rows, option=orjson.OPT_INDENT_2).decode(), err=True)
        return
    for p in problems:
        click.echo(problem_line(file, p), err=True)
