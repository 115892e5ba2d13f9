"""AgenticMD frontmatter is untrusted YAML (issue 14 §2): it is read with the spec reader's limits
(engine/plainyaml.py): alias expansion and nesting capped, plain data only, integers within 64 bits,
no alias cycles, no repeated keys.  Each hostile file is an ``agenticmd.*`` error at a pointer into
``/frontmatter``, and memory stays bounded (measured with tracemalloc, not with a clock)."""

from __future__ import annotations

import tracemalloc

import pytest
from click.testing import CliRunner

from mapc.cli.main import cli
from mapc.engine.convert import into_storyline
from mapc.engine.problems import MapcError
from mapc.mappings import agenticmd

STORY = "format: persisting\nstoryline:\n  schema_version: storyline/v1\n  session: s\n  agent:\n    id: a\n"
BLOCK = (
    '<!-- persisting:block:user {"type":"text","length":2,"message_encoding":"text","source":"user",'
    '"step_id":1,"storyline":{"id":1,"src":"user"}} -->\n\nhi\n'
)


def _file(front: str) -> bytes:
    return f"---\n{front}---\n\n{BLOCK}".encode()


def _bomb(levels: int = 9, width: int = 10) -> str:
    """Nested aliases: `width ** levels` values from about 1.6 KB of text."""
    lines = [f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


HOSTILE = {
    "nested-alias bomb": (STORY + _bomb(), "agenticmd.yaml", "/frontmatter/l"),
    "alias bomb inside the Storyline": (
        STORY.replace(
            "    id: a\n", "    id: a\n  extra:\n" + "".join("    " + x + "\n" for x in _bomb().splitlines())
        ),
        "agenticmd.yaml",
        "/frontmatter/storyline/extra/l",
    ),
    "alias cycle": (STORY + "loop: &loop [*loop]\n", "agenticmd.yaml", "/frontmatter/loop/0"),
    "mapping alias cycle": (STORY + "loop: &loop {self: *loop}\n", "agenticmd.yaml", "/frontmatter/loop/self"),
    "deep flow nesting": (STORY + "x: " + "[" * 100_000 + "]" * 100_000 + "\n", "agenticmd.yaml", "/frontmatter"),
    "deep block nesting": (
        STORY + "x:\n" + "".join(" " * i + "- \n" for i in range(0, 1000, 2)),
        "agenticmd.yaml",
        "/frontmatter",
    ),
    "python tag": (STORY + "x: !!python/object/apply:os.system [id]\n", "agenticmd.yaml", "/frontmatter/x"),
    "custom tag": (STORY + "x: !shell id\n", "agenticmd.yaml", "/frontmatter/x"),
    "explicit timestamp": (STORY + "x: !!timestamp 2024-01-01\n", "agenticmd.yaml", "/frontmatter/x"),
    "set": (STORY + "x: !!set {a, b}\n", "agenticmd.yaml", "/frontmatter/x"),
    "integer past 64 bits": (STORY + "x: 18446744073709551616\n", "agenticmd.yaml", "/frontmatter/x"),
    "5,000 digits": (STORY + "x: " + "9" * 5000 + "\n", "agenticmd.yaml", "/frontmatter/x"),
    "long hex": (STORY + "x: 0x" + "f" * 5000 + "\n", "agenticmd.yaml", "/frontmatter/x"),
    "repeated session": (
        STORY.replace("  session: s\n", "  session: s\n  session: t\n"),
        "agenticmd.duplicate_key",
        "/frontmatter/storyline/session",
    ),
    "repeated top key": (STORY + "format: other\n", "agenticmd.duplicate_key", "/frontmatter/format"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_frontmatter_is_an_agenticmd_error_in_bounded_memory(case: str) -> None:
    front, code, where = HOSTILE[case]
    tracemalloc.start()
    try:
        with pytest.raises(MapcError) as info:
            into_storyline("agenticmd", _file(front))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    [problem] = info.value.problems
    assert problem.code == code, problem
    assert problem.pointer.startswith(where), problem
    assert "line " in problem.message and "column " in problem.message
    assert peak < 400 * 2**20  # the bomb alone would need gigabytes


def test_the_bomb_is_small_and_would_expand_past_the_cap() -> None:
    text = _bomb()
    assert len(text) < 1700
    assert 100 * (agenticmd.MAX_YAML_VALUES + len(text)) < 10**9


def test_the_cli_reports_the_bomb_without_a_traceback(tmp_path) -> None:
    path = tmp_path / "bomb.md"
    path.write_bytes(_file(STORY + _bomb()))
    result = CliRunner().invoke(cli, ["convert", str(path), "--from", "agenticmd", "--to", "storyline"])
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert "[agenticmd.yaml]" in result.output


def test_plain_frontmatter_still_reads() -> None:
    """Anchors within the cap, merge keys, unquoted dates as text, and 64-bit integers are data."""
    front = STORY.replace(
        "    id: a\n", "    id: a\n  extra: {a: &x [1, 2], b: *x, d: 2024-01-01, n: 18446744073709551615}\n"
    )
    [story] = into_storyline("agenticmd", _file(front))
    assert story["extra"] == {"a": [1, 2], "b": [1, 2], "d": "2024-01-01", "n": 2**64 - 1}
