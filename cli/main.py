"""The root `mapc` command group: it only assembles the commands, loading each on first use."""

from __future__ import annotations

import importlib
import os
import warnings

import click

from mapc import __version__
from mapc.cli.files import LIMIT_ENV
from mapc.engine.duplicates import ENV as DUPLICATES_ENV
from mapc.engine.limits import BYTES_ENV, FIELDS_ENV

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


class LazyGroup(click.Group):
    """A group whose commands are imported when asked for (click's documented LazyGroup)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = COMMANDS.get(name)
        if target is None:
            return None
        module, attr = target.split(":")
        command: click.Command = getattr(importlib.import_module(module), attr)
        return command


@click.group(cls=LazyGroup)
@click.version_option(__version__, prog_name="mapc")
@click.option(
    "--max-input-bytes",
    type=click.IntRange(min=1),
    envvar=LIMIT_ENV,
    metavar="N",
    help=f"Refuse any input file larger than N bytes (exit 1, code input.too_large). Env: {LIMIT_ENV}.",
)
@click.option(
    "--max-unknown-fields",
    type=click.IntRange(min=1),
    envvar=FIELDS_ENV,
    metavar="N",
    help=f"Refuse a Storyline carrying more than N unknown fields (code unknown_fields.limit). Env: {FIELDS_ENV}.",
)
@click.option(
    "--max-unknown-bytes",
    type=click.IntRange(min=1),
    envvar=BYTES_ENV,
    metavar="N",
    help=f"Refuse a Storyline whose unknown fields exceed N bytes (REFERENCE §3). Env: {BYTES_ENV}.",
)
@click.option(
    "--allow-duplicate-keys",
    is_flag=True,
    help="Keep the last value of a key repeated in one object, instead of refusing the input"
    f" (json.duplicate_key, the default). Env: {DUPLICATES_ENV}=1.",
)
@click.option(
    "--reject-duplicate-keys",
    is_flag=True,
    hidden=True,
    help="Deprecated: refusing repeated keys is the default.",
)
def cli(
    max_input_bytes: int | None,
    max_unknown_fields: int | None,
    max_unknown_bytes: int | None,
    allow_duplicate_keys: bool,
    reject_duplicate_keys: bool,
) -> None:
    """Convert, validate and store AI-agent trajectories through the Storyline hub."""
    settings = {
        LIMIT_ENV: max_input_bytes,
        FIELDS_ENV: max_unknown_fields,
        BYTES_ENV: max_unknown_bytes,
        DUPLICATES_ENV: 1 if allow_duplicate_keys and not reject_duplicate_keys else None,
    }
    # The settings travel in the environment, so worker processes of corpus jobs apply them too;
    # they are put back when the command ends (a caller running several commands in one process).
    saved = {env: os.environ.get(env) for env in settings}
    for env, value in settings.items():
        if value is not None:
            os.environ[env] = str(value)
    click.get_current_context().call_on_close(lambda: _restore(saved))


def _restore(saved: dict[str, str | None]) -> None:
    for env, value in saved.items():
        if value is None:
            os.environ.pop(env, None)
        else:
            os.environ[env] = value


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
    cli()
