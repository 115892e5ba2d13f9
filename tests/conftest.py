"""Shared fixtures: paths to the shipped test data and a click runner."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

DATA = Path(__file__).parent / "data"
FIXTURES = DATA / "fixtures"


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()
