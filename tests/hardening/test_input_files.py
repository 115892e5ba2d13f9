"""Inputs that are not regular files, and limits that hold (issue 14 §5).

A FIFO, a device or a socket is refused, in a walk and by name, before it is opened for reading
(a FIFO would block forever, ``/dev/zero`` never ends); the byte limit counts the bytes read; the
walk of ``convert DIR`` and ``store DIR`` is one walk; the residual limits hold for Storyline
inputs; file names are printed escaped.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIXTURES

from mapc.cli.files import Found, shown, walk
from mapc.cli.main import cli
from mapc.engine import convert
from mapc.engine.inputs import read_input
from mapc.engine.problems import MapcError

MAPC = [sys.executable, "-c", "from mapc.cli.main import main; main()"]
TIMEOUT = 120  # a hang is what these tests catch: far more than any of these commands takes


def mapc(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MAPC, *args], capture_output=True, text=True, timeout=TIMEOUT, env={**os.environ, **(env or {})}
    )


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """Two ATIF files, a FIFO named like one, and symbolic links to a file and to a directory."""
    root = tmp_path / "corpus"
    (root / "sub").mkdir(parents=True)
    shutil.copy(FIXTURES / "atif" / "sparse_13.json", root / "a.json")
    shutil.copy(FIXTURES / "atif" / "dialogue_10.json", root / "sub" / "b.json")
    os.mkfifo(root / "pipe.json")
    (root / "link.json").symlink_to(root / "a.json")
    (root / "linked").symlink_to(root / "sub")
    return root


def test_convert_dir_refuses_a_fifo_and_goes_on(corpus: Path, tmp_path: Path) -> None:
    result = mapc("convert", str(corpus), "--to", "storyline", "-o", str(tmp_path / "out"), "--workers", "1")
    assert result.returncode == 1, result.stderr
    lines = result.stderr.splitlines()
    assert f"{corpus}/pipe.json: /: not a regular file (a FIFO); mapc reads only files [file.not_regular]" in lines
    assert f"warning: skipped {corpus}/link.json: a symbolic link (not followed)" in lines
    assert lines[-1].startswith("converted 2 files (2 documents), 1 failed, 2 skipped")
    assert sorted(p.relative_to(tmp_path / "out").as_posix() for p in (tmp_path / "out").rglob("*.json")) == [
        "a.storyline.json",
        "sub/b.storyline.json",
    ]


@pytest.mark.parametrize(
    "command",
    [
        ["convert", "{}", "--to", "storyline"],
        ["convert", "{}", "--from", "atif", "--to", "storyline", "-o", "{out}"],
        ["validate", "--format", "atif", "{}"],
        ["detect", "{}"],
        ["store", "{}", "--to", "{out}"],
    ],
    ids=["convert", "convert-from", "validate", "detect", "store"],
)
@pytest.mark.parametrize("name", ["fifo", "/dev/zero"])
def test_a_named_file_that_is_not_regular_is_a_usage_error(tmp_path: Path, command: list[str], name: str) -> None:
    target = name
    if name == "fifo":
        target = str(tmp_path / "pipe.json")
        os.mkfifo(target)
    args = [a.replace("{}", target).replace("{out}", str(tmp_path / "out")) for a in command]
    result = mapc("--max-input-bytes", "1000", *args)
    assert result.returncode == 2, result.stderr
    kind = "a FIFO" if name == "fifo" else "a character device"
    assert f"not a regular file ({kind})" in result.stderr
    assert "Traceback" not in result.stderr


def test_store_dir_refuses_a_fifo_in_the_walk(corpus: Path, tmp_path: Path) -> None:
    result = mapc("store", str(corpus), "--to", str(tmp_path / "ds"), "--workers", "1")
    assert result.returncode == 2, result.stderr
    assert f"{corpus}/pipe.json is not a regular file (a FIFO)" in result.stderr
    assert not (tmp_path / "ds").exists()


def test_store_and_convert_walk_alike_and_follow_no_link(corpus: Path, tmp_path: Path) -> None:
    (corpus / "pipe.json").unlink()
    converted = mapc("convert", str(corpus), "--to", "storyline", "-o", str(tmp_path / "out"), "--workers", "1")
    assert converted.returncode == 0, converted.stderr
    stored = mapc("store", str(corpus), "--to", str(tmp_path / "ds"), "--workers", "1")
    assert stored.returncode == 0, stored.stderr
    assert stored.stdout.startswith("stored 2 documents")
    warnings = {line for line in stored.stderr.splitlines() if line.startswith("warning: skipped")}
    assert warnings == {
        f"warning: skipped {corpus}/link.json: a symbolic link (not followed)",
        f"warning: skipped {corpus}/linked: a symbolic link (not followed)",
    }
    assert warnings <= set(converted.stderr.splitlines())


def test_the_walk_names_links_and_other_files(corpus: Path) -> None:
    errors: list[OSError] = []
    found = list(walk(str(corpus), (".json",), errors))
    assert errors == []
    assert sorted(found, key=lambda f: f.rel) == [
        Found(str(corpus / "a.json"), "a.json", (corpus / "a.json").stat().st_size),
        Found(str(corpus / "link.json"), "link.json", None, link=True),
        Found(str(corpus / "linked"), "linked", None, link=True),
        Found(str(corpus / "pipe.json"), "pipe.json", None, other="a FIFO"),
        Found(str(corpus / "sub" / "b.json"), "sub/b.json", (corpus / "sub" / "b.json").stat().st_size),
    ]


def test_the_byte_limit_counts_the_bytes_read_not_the_size() -> None:
    """/proc files are regular files whose st_size is 0, whatever they hold."""
    proc = "/proc/self/maps"
    assert os.stat(proc).st_size == 0 and len(Path(proc).read_bytes()) > 100
    with pytest.raises(MapcError) as err:
        read_input(proc, 100)
    assert [p.code for p in err.value.problems] == ["input.too_large"]
    assert "more than 100" in err.value.problems[0].message
    result = mapc("--max-input-bytes", "100", "validate", proc)
    assert result.returncode == 1 and "[input.too_large]" in result.stderr


def test_a_jsonl_stream_stops_at_the_limit(tmp_path: Path) -> None:
    line = json.dumps(json.loads((FIXTURES / "atif" / "sparse_13.json").read_bytes())) + "\n"
    src = tmp_path / "many.jsonl"
    src.write_text(line * 5)
    out = tmp_path / "out.json"
    limit = str(len(line) * 2)
    result = mapc(
        "--max-input-bytes", limit, "convert", str(src), "--from", "atif", "--to", "storyline", "-o", str(out)
    )
    assert result.returncode == 1 and "[input.too_large]" in result.stderr
    assert not out.exists()


def _storyline_with_unknown_fields(tmp_path: Path, n: int) -> Path:
    doc = json.loads((FIXTURES / "atif" / "sparse_13.json").read_bytes())
    doc.update({f"vendor_{i}": "x" * 10 for i in range(n)})
    [story] = convert.into_storyline("atif", json.dumps(doc).encode())
    path = tmp_path / "story.storyline.json"
    path.write_text(json.dumps(story))
    return path


@pytest.mark.parametrize(
    "command",
    [["validate", "{}"], ["convert", "{}", "--to", "atif"], ["store", "{}", "--to", "{out}"]],
    ids=["validate", "convert", "store"],
)
def test_unknown_field_limits_hold_for_storyline_inputs(tmp_path: Path, runner: CliRunner, command: list[str]) -> None:
    path = _storyline_with_unknown_fields(tmp_path, 3)
    args = [a.replace("{}", str(path)).replace("{out}", str(tmp_path / "ds")) for a in command]
    assert runner.invoke(cli, ["--max-unknown-fields", "3", *args]).exit_code == 0
    result = runner.invoke(cli, ["--max-unknown-fields", "2", *args])
    assert result.exit_code == 1, result.output
    assert "[unknown_fields.limit]" in result.stderr
    result = runner.invoke(cli, ["--max-unknown-bytes", "20", *args])
    assert result.exit_code == 1 and "--max-unknown-bytes" in result.stderr


def test_a_file_name_cannot_forge_a_line(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    root.mkdir()
    forged = "x.json\nconverted 99 files (99 documents), 0 failed, 0 skipped; .json"
    (root / forged).write_text("{not json")
    (root / "skip\r\x1b[2K.json").write_text(json.dumps({"a": 1}))
    result = mapc("convert", str(root), "--to", "storyline", "-o", str(tmp_path / "out"), "--workers", "1")
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert not any(line.startswith("converted 99") for line in lines)
    assert sum(line.startswith("converted ") for line in lines) == 1
    assert any(line.startswith(f"{root}/x.json\\x0aconverted 99 files") for line in lines), lines
    assert f"warning: skipped {root}/skip\\x0d\\x1b[2K.json: not a known format" in lines
    assert "\r" not in result.stderr and "\x1b" not in result.stderr


def test_shown_escapes_what_breaks_a_line() -> None:
    assert shown("a\nb\r\x00\x7f\u2028\udce9.json") == "a\\x0ab\\x0d\\x00\\x7f\\u2028\\udce9.json"
    assert shown("plain/ünï\\code.json") == "plain/ünï\\code.json"
