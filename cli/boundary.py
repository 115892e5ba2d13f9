"""The one place where what went wrong in a command becomes text and an exit status.

Commands raise; they do not print errors or exit.  `guarded` (wrapped around every command by the
root group, cli/main.py) turns what they raise into the documented exit statuses (docs/cli.md):

- `MapcError` (invalid data) → its problems as ``FILE: POINTER: message [code]`` lines, exit 1;
- a click usage error → click's message, exit 2;
- an `OSError` (a location that cannot be read or written: ``-o /sys/out``, ``--to /sys/ds``) →
  ``mapc: cannot use PATH: reason``, exit 2, without a traceback;
- Ctrl-C → ``mapc: interrupted``, what the command had done (`on_interrupt`), exit 130;
- a closed stdout (``mapc … | head``) → quiet, exit 141, as a shell reports a SIGPIPE.

It also holds the job's `Options` (engine/options.py), set by the root options wherever they are
written on the command line, and passed explicitly to the engine and to workers.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import fields, replace
from typing import Any

import click

from mapc.cli.render import report
from mapc.engine.catalog import Catalog
from mapc.engine.options import DEFAULT, Options
from mapc.engine.problems import MapcError

INTERRUPTED = 130
BROKEN_PIPE = 141
_OPTIONS = "mapc.options"
_CATALOG = "mapc.catalog"
_SUMMARY = "mapc.on_interrupt"
_FILE = "mapc.file"
_JSON = "mapc.json"


def options(ctx: click.Context | None = None) -> Options:
    """The options of the command running now (the defaults outside a command)."""
    ctx = ctx or click.get_current_context(silent=True)
    if ctx is None:
        return DEFAULT
    found: Options = ctx.find_root().meta.get(_OPTIONS, DEFAULT)
    return found


def set_catalog(ctx: click.Context, catalog: Catalog) -> None:
    """Give the command the catalog of formats it runs (the root group sets it, once, at the top)."""
    ctx.find_root().meta[_CATALOG] = catalog


def the_catalog(ctx: click.Context | None = None) -> Catalog:
    """The catalog of the command running now, as the root group set it, passed down from there to the
    engine; outside a command (a library caller of the CLI's modules) the one ``import mapc`` built."""
    ctx = ctx or click.get_current_context(silent=True)
    found: Catalog | None = ctx.find_root().meta.get(_CATALOG) if ctx is not None else None
    if found is None:
        from mapc.engine.convert import resolved

        return resolved(None)
    return found


def set_options(ctx: click.Context, **values: Any) -> None:
    """Set some of the job's options (None leaves one as it is): the root group's options, and the same
    options written after the subcommand."""
    root = ctx.find_root()
    current = root.meta.get(_OPTIONS, DEFAULT)
    known = {f.name for f in fields(Options)}
    given = {k: v for k, v in values.items() if k in known and v is not None and v is not False}
    if given:
        root.meta[_OPTIONS] = replace(current, **given)


def on_interrupt(summary: Callable[[], Iterable[str]]) -> None:
    """Have Ctrl-C print `summary()`'s lines after ``mapc: interrupted`` (the last one registered wins)."""
    ctx = click.get_current_context()
    ctx.find_root().meta[_SUMMARY] = summary


def about(file: str) -> None:
    """Name the file a MapcError raised from now on is about (when the error does not say it itself)."""
    click.get_current_context().find_root().meta[_FILE] = file


@contextmanager
def file_context(file: str, *, as_json: bool = False) -> Iterator[None]:
    """Problems raised inside are problems of `file` (unless the error names its own source); with
    `as_json` the boundary prints them as a JSON array (a command's ``--json``)."""
    try:
        yield
    except MapcError as exc:
        if exc.source is None:
            exc.source = file
        if as_json:
            ctx = click.get_current_context(silent=True)
            if ctx is not None:
                ctx.find_root().meta[_JSON] = True
        raise


def _location(exc: BaseException) -> OSError | None:
    """The OSError `exc` was raised from (``raise … from``, explicitly: an error met while handling
    another may be a bug of its own) that names a path, if any."""
    seen: set[int] = set()
    node: BaseException | None = exc
    first: OSError | None = None
    while node is not None and id(node) not in seen:
        seen.add(id(node))
        if isinstance(node, OSError):
            if node.filename is not None:
                return node
            first = first or node
        node = node.__cause__
    return first


def _unusable(exc: OSError) -> str:
    reason = exc.strerror or str(exc) or type(exc).__name__
    if exc.filename is None:
        return f"mapc: {reason}"
    return f"mapc: cannot use {os.fsdecode(exc.filename)}: {reason}"


@contextmanager
def guarded(ctx: click.Context) -> Iterator[None]:
    """Run a command, turning what it raises into text on stderr and an exit status (module docstring)."""
    try:
        yield
    except (click.exceptions.Exit, click.ClickException, click.exceptions.Abort, SystemExit):
        raise
    except MapcError as exc:
        meta = ctx.find_root().meta
        report(exc.source or meta.get(_FILE) or "mapc", exc.problems, as_json=bool(meta.get(_JSON)))
        ctx.exit(1)
    except KeyboardInterrupt:
        _interrupted(ctx)
    except BrokenPipeError:
        _quiet_stdout()
        ctx.exit(BROKEN_PIPE)
    except OSError as exc:
        click.echo(_unusable(exc), err=True)
        ctx.exit(2)
    except Exception as exc:
        where = _location(exc)
        if where is None:
            raise  # a bug in mapc: its traceback is what a report needs
        click.echo(_unusable(where), err=True)
        ctx.exit(2)


def _interrupted(ctx: click.Context) -> None:
    summary = ctx.find_root().meta.get(_SUMMARY)
    lines = ["mapc: interrupted"]
    if summary is not None:
        try:
            lines.extend(summary())
        except Exception as exc:  # the summary must not hide the interruption
            lines.append(f"mapc: (no summary: {type(exc).__name__}: {exc})")
    for line in lines:
        click.echo(line, err=True)
    ctx.exit(INTERRUPTED)


def _quiet_stdout() -> None:
    # Python flushes stdout at exit and would complain about the closed pipe a second time.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
