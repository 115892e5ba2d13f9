"""The root `mapc` command group."""

import click

from mapc import __version__


@click.group()
@click.version_option(__version__, prog_name="mapc")
def cli() -> None:
    """Convert, validate and store AI-agent trajectories through the Storyline hub."""


def main() -> None:
    """Console-script entry point."""
    cli()
