"""The root `mapc` command group: it only assembles the commands, loading each on first use."""

from __future__ import annotations

import importlib
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from mapc import __version__, shipped_catalog
from mapc.cli import boundary
from mapc.cli.params import COUNT, SIZE

# command name -> "module:attribute"; imported only when the command runs, so `mapc run`
# never pays for pyarrow or lance.
COMMANDS = {
    "run": "mapc.cli.run:run_command",
    "validate": "mapc.cli.validate:validate_command",
    "convert": "mapc.cli.convert:convert_command",
    "detect": "mapc.cli.convert:detect_command",
    "store": "mapc.cli.store:store_command",
    "export": "mapc.cli.store:export_command",
    "index": "mapc.cli.store:index_command",
    "compact": "mapc.cli.store:compact_command",
    "query": "mapc.cli.query:query_command",
    "stats": "mapc.cli.query:stats_command",
    "find": "mapc.cli.query:find_command",
    "events": "mapc.cli.events:events_group",
    "spec": "mapc.cli.spec:spec_group",
    "explain": "mapc.cli.spec:explain_command",
    "conformance": "mapc.cli.conformance:conformance_group",
    "show": "mapc.cli.show:show_command",
    "view": "mapc.cli.view:view_command",
}


# The root options: (name, envvar, type, help).  They set the job's `Options` (engine/options.py) and
# may be written before the subcommand or after it (`mapc convert … --max-input-bytes 10MB`).  The
# environment variables are read here only, as another way to give these options; the engine and the
# workers get the settings as a value, never from the environment.
ROOT_OPTIONS: tuple[tuple[str, str | None, Any, str], ...] = (
    (
        "--max-input-bytes",
        "MAPC_MAX_INPUT_BYTES",
        SIZE,
        "Refuse any input file larger than SIZE (100, 10k = 10,000, 1KiB = 1,024, 10MB; exit 1, input.too_large).",
    ),
    (
        "--max-unknown-fields",
        "MAPC_MAX_UNKNOWN_FIELDS",
        COUNT,
        "Refuse a Storyline carrying more than N unknown fields (unknown_fields.limit).",
    ),
    (
        "--max-unknown-bytes",
        "MAPC_MAX_UNKNOWN_BYTES",
        SIZE,
        "Refuse a Storyline whose unknown fields take more than SIZE bytes (unknown_fields.limit).",
    ),
    (
        "--allow-duplicate-keys",
        "MAPC_ALLOW_DUPLICATE_KEYS",
        None,
        "Keep the last value of a key repeated in one object, instead of refusing the input"
        " (json.duplicate_key, the default).",
    ),
    (
        "--reject-duplicate-keys",
        None,
        None,
        "Deprecated: refusing repeated keys is the default.",
    ),
    (
        "--no-cache",
        "MAPC_NO_CACHE",
        None,
        "Do not use the spec cache (parsed specs and their compiled code, in MAPC_CACHE_DIR or ~/.cache/mapc).",
    ),
)


def _kind(kind: Any) -> dict[str, Any]:
    return {"is_flag": True} if kind is None else {"type": kind, "metavar": "N" if kind is COUNT else "SIZE"}


def _root_option(name: str, kind: Any, help: str) -> click.Option:
    """The copy of a root option a subcommand takes: it sets the job's option when written there."""
    hidden = name == "--reject-duplicate-keys"
    return click.Option([name], help=help, expose_value=False, callback=_set_option, hidden=hidden, **_kind(kind))


def _set_option(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    if param.name == "no_cache":
        if value:
            _spec_cache(None, no_cache=True)
    elif param.name is not None:
        boundary.set_options(ctx, **{param.name: value})
    return value


def cache_directory(no_cache: bool = False) -> Path | None:
    """Where the spec cache lives (engine/cache.py): MAPC_CACHE_DIR, else $XDG_CACHE_HOME/mapc, else
    ~/.cache/mapc; None with --no-cache (or MAPC_NO_CACHE=1)."""
    if no_cache:
        return None
    given = os.environ.get("MAPC_CACHE_DIR")
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mapc"


def _spec_cache(ctx: click.Context | None, *, no_cache: bool) -> None:
    from mapc.engine import cache

    cache.use(cache_directory(no_cache))
    if ctx is not None:
        ctx.call_on_close(lambda: cache.use(None))  # a caller running commands in one process: as it was


def _with_root_options(command: click.Command) -> click.Command:
    """Give `command` (and, for a group, every command below it) the root options, once."""
    if getattr(command, "_mapc_root_options", False):
        return command
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            _with_root_options(sub)
    else:
        taken = {opt for p in command.params for opt in getattr(p, "opts", ())}
        command.params.extend(
            _root_option(name, kind, help) for name, _, kind, help in ROOT_OPTIONS if name not in taken
        )
    command._mapc_root_options = True  # type: ignore[attr-defined]
    return command


class LazyGroup(click.Group):
    """A group whose commands are imported when asked for (click's documented LazyGroup), each taking the
    root options too, and each run inside the one error boundary (cli/boundary.py)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = COMMANDS.get(name)
        if target is None:
            return None
        module, attr = target.split(":")
        command: click.Command = getattr(importlib.import_module(module), attr)
        return _with_root_options(command)

    def invoke(self, ctx: click.Context) -> Any:
        with boundary.guarded(ctx):
            return super().invoke(ctx)


def _root_options(command: Callable[..., Any]) -> Callable[..., Any]:
    for name, envvar, kind, help in reversed(ROOT_OPTIONS):
        more = f" Env: {envvar}." if envvar else ""
        command = click.option(name, envvar=envvar, help=help + more, hidden=envvar is None, **_kind(kind))(command)
    return command


@click.group(cls=LazyGroup)
@click.version_option(__version__, prog_name="mapc")
@_root_options
@click.pass_context
def cli(ctx: click.Context, **options: Any) -> None:
    """Convert, validate and store AI-agent trajectories through the Storyline hub.

    The options above may also follow the command (mapc convert IN --to atif --max-input-bytes 10MB).
    Exit status: 0 success, 1 invalid data, 2 usage (bad options, unusable files), 130 interrupted.
    Shell completion: eval "$(_MAPC_COMPLETE=bash_source mapc)" (docs/cli.md).
    """
    _spec_cache(ctx, no_cache=bool(options.pop("no_cache", False)))
    boundary.set_catalog(ctx, shipped_catalog())  # the one catalog of this command, passed down from here
    if options.pop("reject_duplicate_keys", False):  # the old flag: what it asked for is the default
        options["allow_duplicate_keys"] = None
    boundary.set_options(ctx, **options)


def _show_warning(message: Warning | str, category: type[Warning], *args: object, **kwargs: object) -> None:
    """A spec's deprecation notice is one line for its author, not a Python warning with source."""
    if category.__name__ == "SpecDeprecationWarning":
        click.echo(f"mapc: warning: {message}", err=True)
    else:
        _python_show_warning(message, category, *args, **kwargs)  # type: ignore[arg-type]


_python_show_warning = warnings.showwarning


def main() -> None:
    """Console-script entry point."""
    warnings.showwarning = _show_warning
    try:
        cli()
    finally:
        # The process ends here: the collector's last pass over every module's objects at exit would
        # be a sixth of a small `mapc run` (bench/rows_startup.py).  Frozen, they are left to the OS.
        import gc

        gc.freeze()
