"""Every command answers --help (commands load lazily, so each import is exercised here)."""

from __future__ import annotations

import pytest

from mapc.cli.main import COMMANDS, cli


def test_root_help_lists_every_command(runner):
    result = runner.invoke(cli, ["--help"])
    assert result.exit_code == 0
    for name in COMMANDS:
        assert name in result.output


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_command_help(runner, name):
    result = runner.invoke(cli, [name, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output


def test_unknown_command_is_a_usage_error(runner):
    assert runner.invoke(cli, ["no-such-command"]).exit_code == 2
