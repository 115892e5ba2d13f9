"""A real headless Chromium (Debian's `chromium` package) driven by Playwright's Python package.

Playwright cannot download its own browser here, so it is pointed at the system one.  Without a
Chromium (or without Playwright) the browser tests are skipped on a developer's machine, but fail
in CI (``CI=true``), where `.ci/run` installs it: a missing browser must never pass quietly.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Screenshots for people to look at (not committed): MAPC_TEST_OUTPUT, else test-output/ at the root.
OUTPUT = Path(os.environ.get("MAPC_TEST_OUTPUT") or ROOT / "test-output") / "view"
FULL_PAGE_MAX_PX = 30_000  # taller pages are captured by their top (Page.screenshot)
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str | None:
    """The system Chromium, if installed."""
    return os.environ.get("MAPC_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


def _missing(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason}: in CI the browser tests must run (.ci/run installs chromium)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def browser_context(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One Chromium for the session, with a fresh user-data-dir and no network features."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("the playwright package is not installed (pip install '.[dev]')")
    executable = chromium_path()
    if executable is None:
        _missing("no chromium on PATH (apt-get install chromium)")
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path=executable,
            headless=True,
            args=FLAGS,
            viewport={"width": 1280, "height": 900},
            offline=True,
        )
        try:
            yield context
        finally:
            context.close()


class Page:
    """A page of the context that records console errors, page errors and every network request."""

    def __init__(self, context: Any) -> None:
        self.page = context.new_page()
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on(
            "console",
            lambda m: self.errors.append(f"console.{m.type}: {m.text}") if m.type in ("error", "warning") else None,
        )
        self.page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        self.page.on("request", lambda r: self.requests.append(r.url))

    def open(self, path: Path) -> Any:
        self.page.goto(path.resolve().as_uri(), wait_until="load", timeout=30_000)
        self.page.wait_for_selector("body[data-ready='1']", state="attached", timeout=30_000)
        return self.page

    def screenshot(self, name: str) -> Path:
        OUTPUT.mkdir(parents=True, exist_ok=True)
        target = OUTPUT / f"{name}.png"
        # the whole page, unless it is very tall (a real session of 1,800 turns): a full-page capture
        # of that takes Chromium longer than the timeout, so its top is kept
        tall = self.page.evaluate("document.documentElement.scrollHeight") > FULL_PAGE_MAX_PX
        self.page.screenshot(path=str(target), full_page=not tall)
        return target


@pytest.fixture
def browser_page(browser_context: Any) -> Iterator[Page]:
    page = Page(browser_context)
    try:
        yield page
    finally:
        page.page.close()
