"""`mapc view` pages in a real headless Chromium, opened from file://.

Each shipped fixture: the page loads with no console error and no network request, shows every
turn, a tool call expands, and a screenshot is written (test-output/view/, or $MAPC_TEST_OUTPUT).
Then the subagent tree, a directory's list (filters, compare) and hostile content.
"""

# ruff: noqa: F811  (the tests take the fixtures imported from chromium_driver as arguments)
from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from chromium_driver import browser_context, browser_page  # noqa: F401 (fixtures)

import mapc
from mapc.cli.main import cli

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "data" / "fixtures"
SUBAGENTS = ROOT / "tests" / "data" / "viewer" / "subagents.atif.json"
READABLE = sorted(
    p for p in FIXTURES.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl")
)  # the legacy AgenticMD file cannot be read: its refusal is a test of its own


def _page_file(runner, tmp_path: Path, source: Path, *args: str) -> Path:
    out = tmp_path / f"{source.stem}.html"
    result = runner.invoke(cli, ["view", str(source), "-o", str(out), *args])
    assert out.exists(), result.stderr
    return out


def _stories(path: Path):
    from mapc.engine import detect

    data = path.read_bytes()
    return mapc.into_storyline(detect.detect(str(path), data), data, jsonl=path.suffix == ".jsonl")


def _no_trouble(browser_page) -> None:
    assert browser_page.errors == []
    assert all(url.startswith(("file:", "data:", "about:")) for url in browser_page.requests), browser_page.requests


RENDERED_MD = ROOT / "tests" / "data" / "viewer" / "code-repair.md"


@pytest.mark.parametrize("fixture", [*READABLE, SUBAGENTS, RENDERED_MD], ids=lambda p: f"{p.parent.name}/{p.name}")
def test_each_fixture_renders_every_turn_and_its_tool_calls(runner, tmp_path, browser_page, fixture):
    page = browser_page.open(_page_file(runner, tmp_path, fixture))
    first = _stories(fixture)[0]
    turns = page.locator("#turns > .turn")
    assert turns.count() == len(first["turns"])
    assert [int(t) for t in turns.evaluate_all("ns => ns.map(n => n.dataset.turnId)")] == [
        t["id"] for t in first["turns"]
    ]
    assert page.locator("#story-header").inner_text().count(first["session"]) == 1
    calls = page.locator("details.tool-call")
    assert calls.count() == sum(len(t.get("tool_calls") or []) for t in first["turns"])
    if calls.count():
        call = calls.first
        assert call.get_attribute("open") is None
        assert not call.locator("pre").first.is_visible()
        call.locator("summary").click()
        assert call.get_attribute("open") is not None
        assert call.locator("pre").first.is_visible()
        tool = next(c for t in first["turns"] for c in t.get("tool_calls") or [])
        assert tool["fn"] in call.locator("summary").inner_text()
    browser_page.screenshot(f"{fixture.parent.name}--{fixture.stem}")
    _no_trouble(browser_page)


def test_the_subagent_tree_switches_storyline(runner, tmp_path, browser_page):
    page = browser_page.open(_page_file(runner, tmp_path, SUBAGENTS))
    items = page.locator("#tree .tree-item")
    assert items.count() == 2
    assert "review-main" in page.locator("#story-header").inner_text()
    page.locator("button.to-child").click()
    assert "review-sub-1" in page.locator("#story-header").inner_text()
    assert page.locator("#turns > .turn").count() == 3
    assert "IndexError on line 3" in page.locator("#turns").inner_text()
    assert "active" in items.nth(1).get_attribute("class")
    browser_page.screenshot("subagent-child")
    page.locator("button.to-parent").click()
    assert "review-main" in page.locator("#story-header").inner_text()
    items.nth(1).click()
    assert "review-sub-1" in page.locator("#story-header").inner_text()
    _no_trouble(browser_page)


def test_markdown_code_reasoning_and_timeline(runner, tmp_path, browser_page):
    page = browser_page.open(_page_file(runner, tmp_path, SUBAGENTS))
    first = page.locator("#turns > .turn").first
    assert first.locator("strong").inner_text() == "crash"
    assert first.locator("code").first.inner_text() == "parse.py"
    assert first.locator("a").count() == 1  # the https link; the javascript: one stays text
    assert first.locator("a").get_attribute("href") == "https://example.invalid/guide"
    assert "[bad](javascript:alert(1))" in first.inner_text()
    assert "<script>alert(1)</script>" in first.inner_text()  # shown, not run
    assert page.locator("#turns script").count() == 0
    code = page.locator("#turns pre code.lang-python")
    assert code.locator(".hl-k").first.inner_text() == "def"
    assert code.locator(".hl-c").inner_text() == "# empty input has no first item"
    reasoning = page.locator("details.reasoning")
    assert not reasoning.locator(".inner").is_visible()
    reasoning.locator("summary").click()
    assert "Delegate the reading" in reasoning.locator(".inner").inner_text()
    assert page.locator("#timeline rect.lat").count() == 2 and page.locator("#timeline rect.tok").count() == 2
    _no_trouble(browser_page)


def test_unknown_fields_show_on_their_turn(runner, tmp_path, browser_page):
    page = browser_page.open(_page_file(runner, tmp_path, FIXTURES / "actf" / "make-doom-for-mips_trimmed.actf.json"))
    unknown = page.locator("#turns > .turn").nth(1).locator("details.unknown")
    assert "/attempts/1/trajectory/steps/1/fixture_extension" in unknown.inner_text()
    assert page.locator("#turns > .turn").nth(0).locator("details.unknown").count() == 0
    _no_trouble(browser_page)


def test_a_directory_filters_and_compares(runner, tmp_path, browser_page):
    page = browser_page.open(_page_file(runner, tmp_path, FIXTURES))
    entries = page.locator("#entries .entry")
    total = entries.count()
    files = [p for p in FIXTURES.rglob("*") if p.suffix in (".json", ".jsonl", ".md")]
    assert total == len(files) >= 12  # every file, the unreadable ones (the READMEs, legacy AgenticMD) marked
    assert page.locator("#entries .entry.failed").count() == 4  # 3 READMEs (top, codex, otel-genai), legacy AgenticMD
    page.select_option("#f-agent", "ACTF Agent")
    assert page.locator("#entries .entry:visible").count() == 2
    assert page.locator("#count").inner_text() == f"2 of {total} trajectories"
    page.select_option("#f-agent", "")
    page.select_option("#f-result", "completed")
    assert page.locator("#entries .entry:visible").count() == 2
    page.select_option("#f-result", "")
    page.locator('#entries .entry[data-id="0005"]').click()  # atif/claude-code-harbor.json
    assert "claude-code-harbor.json" in page.locator("#main h2").inner_text()
    page.locator('#entries .entry[data-id="0002"] input.cmp').check()
    page.locator('#entries .entry[data-id="0003"] input.cmp').check()
    page.locator("#compare").click()
    columns = page.locator("#compare-view .cmp-col")
    assert columns.count() == 2
    assert "example-code-repair" in columns.nth(0).inner_text()
    assert "make-doom-for-mips-trimmed" in columns.nth(1).inner_text()
    assert "Bash" in columns.nth(0).inner_text()
    browser_page.screenshot("directory-compare")
    _no_trouble(browser_page)


HOSTILE = [
    '<img src=x onerror="window.pwned=1">',
    "[click](javascript:window.pwned=1)",
    "[data](data:text/html,<script>window.pwned=1</script>)",
    "</script><script>window.pwned=1</script>",
    "**<b onclick=window.pwned=1>bold</b>**",
]


def _tiny_wav() -> str:
    """A tenth of a second of silence as base64 WAV."""
    import base64
    import io
    import wave

    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(b"\0\0" * 800)
    return base64.b64encode(out.getvalue()).decode()


def test_hostile_messages_stay_text(runner, tmp_path, browser_page):
    parts = [{"type": "text", "text": h} for h in HOSTILE]
    parts.append({"type": "image_url", "image_url": {"url": "https://example.invalid/x.png"}})
    parts.append({"type": "image_url", "image_url": {"url": "javascript:window.pwned=1"}})
    tiny_png = "data:image/png;base64," + (
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    )
    parts.append({"type": "image_url", "image_url": {"url": tiny_png}})
    parts.append({"type": "input_audio", "input_audio": {"data": _tiny_wav(), "format": "wav"}})
    story = {
        "schema_version": "storyline/v1",
        "session": "hostile",
        "agent": {"id": "a"},
        "turns": [
            {"id": 1, "src": "user", "msg": "\n\n".join(HOSTILE)},
            {"id": 2, "src": "agent", "msg": parts},
        ],
    }
    source = tmp_path / "hostile.storyline.json"
    source.write_bytes(orjson.dumps(story))
    page = browser_page.open(_page_file(runner, tmp_path, source))
    assert page.evaluate("window.pwned") is None
    assert page.locator("#turns > .turn").count() == 2
    assert page.locator("#turns a[href^='javascript'], #turns a[href^='data']").count() == 0
    assert page.locator("#turns [onerror], #turns [onclick], #turns script, #turns b").count() == 0
    images = page.locator("#turns img")
    assert images.count() == 1 and images.get_attribute("src") == tiny_png
    assert page.locator("#turns .remote").count() == 2  # shown as addresses, not loaded
    audio = page.locator("#turns audio")
    assert audio.count() == 1 and audio.get_attribute("src").startswith("data:audio/wav;base64,")
    assert audio.get_attribute("controls") is not None
    for text in HOSTILE:
        assert text.replace("**", "") in page.locator("#turns").inner_text() or "bold" in text
    browser_page.screenshot("hostile")
    _no_trouble(browser_page)


def test_a_paged_set_links_index_and_pages(runner, tmp_path, browser_page, monkeypatch):
    from mapc.cli import view

    monkeypatch.setattr(view, "PAGE_AFTER", 2)
    out = tmp_path / "set.html"
    runner.invoke(cli, ["view", str(FIXTURES / "atif"), "-o", str(out)])
    page = browser_page.open(tmp_path / "set" / "index.html")
    assert page.locator("#entries .entry").count() == 6
    page.locator('#entries .entry[data-id="0006"]').click()
    page.wait_for_selector("body[data-ready='1'] #turns", timeout=30_000)
    assert page.url.endswith("/t/0006.html")
    assert page.locator("#turns > .turn").count() == 3  # support-ticket.json
    page.locator("#back").click()
    page.wait_for_selector("#entries", timeout=30_000)
    assert page.url.endswith("/index.html")
    _no_trouble(browser_page)


def test_a_subagent_opens_from_the_turn_that_spawned_it(runner, tmp_path, browser_page):
    lead = {
        "schema_version": "storyline/v1",
        "session": "lead",
        "agent": {"id": "a"},
        "turns": [
            {"id": 1, "src": "user", "msg": "go"},
            {"id": 7, "src": "agent", "msg": "spawning", "tool_calls": [{"tcid": "t1", "fn": "Task", "args": {}}]},
        ],
    }
    helper = {
        "schema_version": "storyline/v1",
        "session": "helper",
        "agent": {"id": "b"},
        "parent": {"psid": "lead", "ptid": 7},
        "turns": [{"id": 1, "src": "agent", "msg": "helping"}],
    }
    source = tmp_path / "tree.storyline.json"
    source.write_bytes(orjson.dumps([lead, helper]))
    page = browser_page.open(_page_file(runner, tmp_path, source))
    spawned = page.locator('#turns > .turn[data-turn-id="7"] button.spawned')
    assert spawned.count() == 1 and page.locator("#turns button.spawned").count() == 1
    spawned.click()
    assert "helper" in page.locator("#story-header").inner_text()
    header = page.locator("#story-header").inner_text().lower()  # the labels are upper-case by style
    assert "parent\nlead turn 7" in header
    _no_trouble(browser_page)
