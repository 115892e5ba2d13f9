"""The browser tests' own rule: skipped without Chromium on a developer's machine, failed in CI."""

from __future__ import annotations

import pytest
from chromium_driver import FLAGS, _missing


def test_a_missing_browser_fails_in_ci_and_skips_elsewhere(monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="in CI the browser tests must run"):
        _missing("no chromium")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception):
        _missing("no chromium")


def test_the_launch_flags_keep_the_browser_off_the_network():
    for flag in ("--headless", "--no-sandbox", "--disable-quic", "--disable-background-networking", "--disable-sync"):
        assert flag in FLAGS
