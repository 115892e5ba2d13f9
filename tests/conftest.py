"""Shared fixtures: paths to the shipped test data, a click runner, and the test tiers of hypothesis laws."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from hypothesis import settings

# The CLI's spec cache (engine/cache.py) goes to a directory of this test run, never the user's.
os.environ.setdefault("MAPC_CACHE_DIR", tempfile.mkdtemp(prefix="mapc-test-cache-"))

DATA = Path(__file__).parent / "data"
FIXTURES = DATA / "fixtures"
# A chat conversation with a secret in every place redaction looks (tests of engine/redact.py and --redact).
SECRET_CHAT = {
    "messages": [
        {"role": "system", "content": "Use the key sk-proj-abcdefghijklmnopqrstuvwx for the API."},
        {"role": "user", "content": [{"type": "text", "text": "AWS id AKIAABCDEFGHIJKLMNOP please"}]},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "curl", "arguments": '{"header": "Authorization: Bearer abc.def.ghi12345"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "x-api-key: hunter2hunter2 ok"},
        {"role": "assistant", "content": "Done; nothing secret here."},
    ]
}


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


# -- Test tiers of the hypothesis laws -------------------------------------------------------------------------------
# A law (a test under @given) runs twice as two tests: `[quick]`, in the default tier, with a fifth of its examples
# (at least QUICK_EXAMPLES), and `[full]`, marked slow, with the count its own settings give.  `-m "not slow"` runs
# the quick ones; CI's plain `pytest` selects both, and then only the full one runs (it covers what the quick one
# would), so CI tries every example it always did.  Nothing else about a law changes: same strategies, same checks.
QUICK_SHARE = 5
QUICK_EXAMPLES = 10
TIER = "_law_tier"  # the autouse fixture below; parametrized only for laws


def quick_examples(full: int) -> int:
    """How many examples the quick tier tries of a law that tries `full` in the slow tier."""
    return min(full, max(QUICK_EXAMPLES, full // QUICK_SHARE))


def _law(function: Any) -> Any:
    """The function hypothesis reads a law's settings from; None if `function` is not a law."""
    function = getattr(function, "__func__", function)  # a method of a test class
    return function if getattr(function, "is_hypothesis_test", False) else None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    law = _law(metafunc.function)
    if law is None:
        return
    full = law._hypothesis_internal_use_settings.max_examples
    if quick_examples(full) < full:
        metafunc.parametrize(
            TIER,
            [pytest.param("quick", id="quick"), pytest.param("full", id="full", marks=pytest.mark.slow)],
            indirect=True,
        )


@pytest.fixture(autouse=True)
def _law_tier(request: pytest.FixtureRequest):
    """In a `[quick]` law, hypothesis's settings with fewer examples, for this test only."""
    if getattr(request, "param", "full") == "full":
        yield
        return
    law = _law(request.function)
    full = law._hypothesis_internal_use_settings
    # hypothesis reads this attribute when the test is called (its pytest plugin sets it the same way)
    law._hypothesis_internal_use_settings = settings(full, max_examples=quick_examples(full.max_examples))
    try:
        yield
    finally:
        law._hypothesis_internal_use_settings = full


_TIER_ID = re.compile(r"(?<=[\[-])(quick|full)(?=[\]-])")


@pytest.hookimpl(trylast=True)  # after -m and -k have deselected
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    def key(item: pytest.Item) -> str:
        return _TIER_ID.sub("", item.nodeid, count=1)

    tier = {item: getattr(getattr(item, "callspec", None), "params", {}).get(TIER) for item in items}
    full = {key(item) for item in items if tier[item] == "full"}
    covered = [item for item in items if tier[item] == "quick" and key(item) in full]
    if covered:
        config.hook.pytest_deselected(items=covered)
        dropped = set(covered)
        items[:] = [item for item in items if item not in dropped]


# One problem line of the CLI: FILE: [line N: ]POINTER: message [code] (spec place)
PROBLEM_LINE = re.compile(
    r"^(?P<file>.+?): (?:line (?P<line>\d+): )?(?P<pointer>/\S*): (?P<message>.+) \[(?P<code>[A-Za-z_.]+)\]"
    r"(?: \((?P<spec_at>.+)\))?$"
)


def problem_lines(stderr: str, file: str) -> list[tuple[str | None, str, str]]:
    """(line, pointer, code) of every stderr line; each must be a problem line about `file`."""
    out = []
    for text in stderr.splitlines():
        m = PROBLEM_LINE.match(text)
        assert m, f"not a problem line: {text!r}"
        assert m["file"] == file, text
        out.append((m["line"], m["pointer"], m["code"]))
    return out


def write(path: Path, value: Any) -> Path:
    """Write `value` (bytes, or JSON) to `path`."""
    path.write_bytes(value if isinstance(value, bytes) else orjson.dumps(value))
    return path


def kept_for_the_way_back(story: dict[str, Any], source: str) -> dict[str, Any]:
    """Every value `story` keeps for its own format's way back, by pointer: its unknown fields of
    `source` and the values of keys the format defines that no Storyline field says (origin.kept,
    engine/known.py: issue 15 §7 keeps those apart from the unknown ones)."""
    unknown = ((story.get("unknown_fields") or {}).get("sources") or {}).get(source) or {}
    kept = (story.get("origin") or {}).get("kept") or {}
    return {**(kept.get("fields") or {}), **(unknown.get("fields") or {})}
