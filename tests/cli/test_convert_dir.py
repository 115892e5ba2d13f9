"""cli/convert.py with a directory INPUT: whole-corpus conversion (the logic is cli/corpus.py)."""

from __future__ import annotations

import copy
import os
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from conftest import FIXTURES, PROBLEM_LINE, problem_lines, write

from mapc.cli import corpus
from mapc.cli.main import cli
from mapc.engine import convert

ATIF = FIXTURES / "atif"
ACTF = FIXTURES / "actf"
SUMMARY = re.compile(
    r"^converted (\d+) files? \((\d+) documents?\), (\d+) failed, (\d+) skipped; "
    r"(\d+) input bytes in \d+\.\d\d s \(\d+\.\d\d MB/s\)$"
)

# input (relative to DIR) → output (relative to OUTDIR) for --to storyline
GOOD = {
    "dialogue_10.json": "dialogue_10.storyline.json",
    "support-ticket.json": "support-ticket.storyline.json",
    "runs.jsonl": "runs.storyline.json",
    "nested/deeper/code-repair.actf.json": "nested/deeper/code-repair.storyline.json",
    "nested/sparse_13.json": "nested/sparse_13.storyline.json",
}


def _corpus(root: Path, *, bad: bool = True) -> Path:
    """A mixed corpus: ATIF, ACTF in a nested directory, JSONL, and (with `bad`) a broken file, a file of no
    known format, symbolic links and a hidden file."""
    (root / "nested" / "deeper").mkdir(parents=True)
    write(root / "dialogue_10.json", (ATIF / "dialogue_10.json").read_bytes())
    write(root / "support-ticket.json", (ATIF / "support-ticket.json").read_bytes())
    write(root / "nested" / "sparse_13.json", (ATIF / "sparse_13.json").read_bytes())
    write(root / "nested" / "deeper" / "code-repair.actf.json", (ACTF / "code-repair.actf.json").read_bytes())
    lines = [orjson.dumps(orjson.loads((ATIF / name).read_bytes())) for name in ("dialogue_10.json", "sparse_13.json")]
    write(root / "runs.jsonl", b"\n".join(lines) + b"\n")
    if bad:
        write(root / "broken.json", b'{"schema_version": "ATIF-v1.7", "steps": [')
        write(root / "nested" / "odd.json", {"hello": "world"})
        os.symlink(root / "dialogue_10.json", root / "nested" / "link.json")
        os.symlink(root / "nested", root / "linked-dir")
        write(root / ".hidden.json", b"not json, never read")
        write(root / "notes.txt", b"not a corpus file")
    return root


def _convert(runner, src: Path, out: Path, *extra: str):
    return runner.invoke(cli, ["convert", str(src), "--to", "storyline", "-o", str(out), *extra])


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_every_file_is_converted_like_single_file_convert(runner, tmp_path):
    src, out = _corpus(tmp_path / "in"), tmp_path / "out"
    result = _convert(runner, src, out, "--workers", "1")
    assert result.exit_code == 1, result.stderr  # broken.json failed; the others were converted
    assert set(_files(out)) == set(GOOD.values())
    for rel_in, rel_out in GOOD.items():
        single = runner.invoke(cli, ["convert", str(src / rel_in), "--to", "storyline"])
        assert single.exit_code == 0, single.stderr
        assert (out / rel_out).read_bytes() == single.stdout_bytes, rel_in
    assert isinstance(orjson.loads((out / "runs.storyline.json").read_bytes()), list)  # two JSONL lines


def test_a_failed_file_is_reported_with_its_first_error_and_leaves_no_output(runner, tmp_path):
    src, out = _corpus(tmp_path / "in"), tmp_path / "out"
    result = _convert(runner, src, out)
    assert result.exit_code == 1
    failed = [line for line in result.stderr.splitlines() if PROBLEM_LINE.match(line)]
    assert problem_lines("\n".join(failed), str(src / "broken.json")) == [(None, "/", "json.invalid")]
    assert not list(out.glob("broken*")) and not list(out.rglob(".*"))  # no output, no temporary file
    summary = SUMMARY.match(result.stderr.splitlines()[-1])
    assert summary, result.stderr
    converted, documents, failed_n, skipped = (int(summary[i]) for i in range(1, 5))
    assert (converted, documents, failed_n, skipped) == (5, 6, 1, 3)
    read = sum(p.stat().st_size for p in src.rglob("*.json*") if not p.is_symlink() and not p.name.startswith("."))
    assert int(summary[5]) == read


def test_unknown_formats_and_symbolic_links_are_skipped_with_a_warning(runner, tmp_path):
    src, out = _corpus(tmp_path / "in"), tmp_path / "out"
    result = _convert(runner, src, out)
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning: skipped")]
    assert warnings == [
        f"warning: skipped {src / 'linked-dir'}: a symbolic link (not followed)",
        f"warning: skipped {src / 'nested' / 'link.json'}: a symbolic link (not followed)",
        f"warning: skipped {src / 'nested' / 'odd.json'}: not a known format",
    ]
    assert "hidden" not in result.stderr and "notes" not in result.stderr
    assert not (out / "linked-dir").exists() and not (out / "nested" / "link.storyline.json").exists()


def test_a_clean_corpus_exits_0(runner, tmp_path):
    result = _convert(runner, _corpus(tmp_path / "in", bad=False), tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    assert set(_files(tmp_path / "out")) == set(GOOD.values())


def test_one_and_two_workers_write_the_same_files_and_report_the_same(runner, tmp_path):
    src = _corpus(tmp_path / "in")
    one = _convert(runner, src, tmp_path / "one", "--workers", "1")
    two = _convert(runner, src, tmp_path / "two", "--workers", "2")
    assert one.exit_code == two.exit_code == 1
    assert _files(tmp_path / "one") == _files(tmp_path / "two")
    assert one.stderr.splitlines()[:-1] == two.stderr.splitlines()[:-1]  # all but the timing line
    assert SUMMARY.match(one.stderr.splitlines()[-1]).groups() == SUMMARY.match(two.stderr.splitlines()[-1]).groups()


def test_no_progress_bar_unless_stderr_is_a_terminal_and_quiet_drops_the_summary(runner, tmp_path):
    src = _corpus(tmp_path / "in")
    result = _convert(runner, src, tmp_path / "out")
    for line in result.stderr.splitlines():  # CliRunner's stderr is no terminal: nothing but these lines
        assert line.startswith("warning: ") or PROBLEM_LINE.match(line) or SUMMARY.match(line), line
    quiet = _convert(runner, src, tmp_path / "out2", "--quiet")
    assert quiet.stderr.splitlines() == result.stderr.splitlines()[:-1]


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_a_terminal_gets_a_progress_bar(tmp_path):
    src = _corpus(tmp_path / "in", bad=False)
    mapc = Path(sys.executable).parent / "mapc"
    argv = [str(mapc), "convert", str(src), "--to", "storyline", "-o", str(tmp_path / "out"), "--workers", "1"]
    chunks = []
    for extra in ([], ["--quiet"]):
        main, secondary = os.openpty()
        done = subprocess.run([*argv, *extra], stderr=secondary, stdout=subprocess.DEVNULL, check=False)
        os.close(secondary)
        text = b""
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # EIO: the terminal's other side is closed and everything was read
                break
            if not chunk:
                break
            text += chunk
        os.close(main)
        assert done.returncode == 0
        chunks.append(text.decode())
    assert "100%" in chunks[0] and "converted 5 files" in chunks[0]
    assert chunks[1] == ""


def test_unknown_fields_are_counted_over_the_whole_command(runner, tmp_path):
    src = tmp_path / "in"
    (src / "b").mkdir(parents=True)
    atif = orjson.loads((ATIF / "dialogue_10.json").read_bytes())
    for step in atif["steps"][:2]:
        step["vendor_x"] = 1
    atif['odd"key'] = True
    write(src / "a.json", atif)
    atif = copy.deepcopy(atif)
    atif["steps"][2]["vendor_x"] = 3
    write(src / "b" / "a.json", atif)
    actf = orjson.loads((ACTF / "code-repair.actf.json").read_bytes())
    actf["attempts"]["2"] = copy.deepcopy(actf["attempts"]["1"])
    actf["attempts_tried"] = actf["k"] = 2
    actf["vendor~root"] = {"x": 1}  # copied into both attempts' Storylines: counted once for the file
    write(src / "task.actf.json", actf)
    result = _convert(runner, src, tmp_path / "out", "--workers", "2")
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines()[:-1] == [
        "warning: unknown field source=actf key=/vendor~0root occurrences=1",
        'warning: unknown field source=atif key=/odd\\"key occurrences=2',
        "warning: unknown field source=atif key=/steps/*/vendor_x occurrences=5",
    ]


def test_outputs_with_one_name_fail_all_but_the_first(runner, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    write(src / "x.json", (ATIF / "dialogue_10.json").read_bytes())
    write(src / "x.jsonl", orjson.dumps(orjson.loads((ATIF / "sparse_13.json").read_bytes())) + b"\n")
    result = _convert(runner, src, tmp_path / "out")
    assert result.exit_code == 1
    failed = [line for line in result.stderr.splitlines() if PROBLEM_LINE.match(line)]
    assert problem_lines("\n".join(failed), str(src / "x.jsonl")) == [(None, "/", "file.output_collision")]
    story = orjson.loads((tmp_path / "out" / "x.storyline.json").read_bytes())
    assert story["session"] == orjson.loads((src / "x.json").read_bytes())["session_id"]


def test_an_outdir_inside_dir_is_not_read_back(runner, tmp_path):
    src = _corpus(tmp_path / "in", bad=False)
    for _ in range(2):
        result = _convert(runner, src, src / "out")
        assert result.exit_code == 0, result.stderr
        assert SUMMARY.match(result.stderr.splitlines()[-1])[1] == "5"
    assert set(_files(src / "out")) == set(GOOD.values())


def test_from_forces_the_format_and_to_picks_the_suffix(runner, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    write(src / "trajectory.data.json", (ATIF / "sparse_13.json").read_bytes())
    write(src / "story.storyline.json", b"[]")  # read as ATIF: an empty array is no ATIF document
    result = runner.invoke(cli, ["convert", str(src), "--from", "atif", "--to", "actf", "-o", str(tmp_path / "o")])
    assert result.exit_code == 1
    assert sorted(_files(tmp_path / "o")) == ["trajectory.data.actf.json"]
    assert f"{src / 'story.storyline.json'}: /: " in result.stderr and "[input.empty]" in result.stderr


def test_an_output_directory_that_is_a_symbolic_link_is_not_written_through(runner, tmp_path):
    src = _corpus(tmp_path / "in", bad=False)
    elsewhere, out = tmp_path / "elsewhere", tmp_path / "out"
    elsewhere.mkdir()
    out.mkdir()
    os.symlink(elsewhere, out / "nested")
    result = _convert(runner, src, out)
    assert result.exit_code == 1
    assert not list(elsewhere.iterdir())
    failed = [PROBLEM_LINE.match(line) for line in result.stderr.splitlines() if PROBLEM_LINE.match(line)]
    nested = src / "nested"
    assert sorted(m["file"] for m in failed) == [
        str(nested / "deeper" / "code-repair.actf.json"),
        str(nested / "sparse_13.json"),
    ]
    assert {m["code"] for m in failed} == {"file.output_outside"}


def test_a_symbolic_link_made_after_planning_is_not_written_through(tmp_path):
    elsewhere, out = tmp_path / "elsewhere", tmp_path / "out"
    elsewhere.mkdir()
    (out / "a").mkdir(parents=True)
    write(tmp_path / "x.json", (ATIF / "sparse_13.json").read_bytes())
    job = corpus.Job(str(tmp_path / "x.json"), "a/b/x.json", str(out / "a" / "b" / "x.json"), str(out), "storyline")
    os.symlink(elsewhere, out / "a" / "b")
    result = corpus.convert_file(job)
    assert result.status == corpus.FAILED and result.problem.code == "file.unwritable"
    assert "symbolic link" in result.problem.message
    assert not list(elsewhere.iterdir())


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (["--to", "storyline"], "-o"),  # a directory needs OUTDIR
        (["--to", "storyline", "-o", "-"], "-o"),
        (["--to", "storyline", "-o", "{src}"], "DIR itself"),
        (["--to", "storyline", "-o", "{src}/dialogue_10.json"], "not a directory"),
        (["--to", "nope", "-o", "{tmp}/o"], "--to"),
        (["--to", "events", "-o", "{tmp}/o"], "mapc events append"),
        (["--from", "nope", "--to", "atif", "-o", "{tmp}/o"], "--from"),
        (["--to", "storyline", "-o", "{tmp}/o", "--workers", "0"], "--workers"),
    ],
    ids=["no -o", "stdout", "outdir is dir", "outdir is a file", "bad --to", "events", "bad --from", "0 workers"],
)
def test_usage_errors_exit_2(runner, tmp_path, args, hint):
    src = _corpus(tmp_path / "in", bad=False)
    args = [a.format(src=src, tmp=tmp_path) for a in args]
    result = runner.invoke(cli, ["convert", str(src), *args])
    assert result.exit_code == 2, result.stderr
    assert hint in result.stderr
    assert not (tmp_path / "o").exists()


def test_a_directory_without_corpus_files_is_a_usage_error(runner, tmp_path):
    (tmp_path / "in").mkdir()
    write(tmp_path / "in" / "notes.txt", b"hello")
    result = _convert(runner, tmp_path / "in", tmp_path / "out")
    assert result.exit_code == 2
    assert "holds no .json/.jsonl/.ndjson" in result.stderr


def test_the_readme_and_help_examples_run(runner, tmp_path):
    root = Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text(encoding="utf-8")
    help_text = runner.invoke(cli, ["convert", "--help"]).output
    for text in (readme, help_text):
        line = next(ln for ln in text.splitlines() if "mapc convert tests/data/fixtures/atif --to" in ln)
        argv = line.split("mapc ", 1)[1].replace("/tmp/stories", str(tmp_path / "stories")).split()
        argv[1] = str(root / argv[1])  # the examples run from the repository root
        result = runner.invoke(cli, argv)
        assert result.exit_code == 0, result.stderr
        assert sorted(p.name for p in (tmp_path / "stories").iterdir()) == sorted(
            p.name.replace(".json", ".storyline.json") for p in (FIXTURES / "atif").iterdir()
        )


def test_formats_that_name_documents_by_path_get_the_path_relative_to_dir(runner, tmp_path):
    src = tmp_path / "in"
    (src / "sub").mkdir(parents=True)
    write(src / "sub" / "training.json", (FIXTURES / "openai-msg" / "training.json").read_bytes())
    result = _convert(runner, src, tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    stories = orjson.loads((tmp_path / "out" / "sub" / "training.storyline.json").read_bytes())
    stories = stories if isinstance(stories, list) else [stories]
    assert {story["origin"]["document_id"] for story in stories} == {"sub/training.json"}


def test_a_text_format_is_written_and_walked_by_its_own_suffix(runner, tmp_path):
    src = _corpus(tmp_path / "in", bad=False)
    result = runner.invoke(cli, ["convert", str(src), "--to", "agenticmd", "-o", str(tmp_path / "md")])
    assert result.exit_code == 1  # one Markdown file holds one Storyline: the two-line JSONL file cannot
    failed = [line for line in result.stderr.splitlines() if PROBLEM_LINE.match(line)]
    assert problem_lines("\n".join(failed), str(src / "runs.jsonl")) == [(None, "/", "agenticmd.several_storylines")]
    written = {rel.replace(".storyline.json", ".md") for rel in GOOD.values()} - {"runs.md"}
    assert set(_files(tmp_path / "md")) == written
    text = convert.convert("atif", "agenticmd", (src / "dialogue_10.json").read_bytes(), path="dialogue_10.json")
    assert (tmp_path / "md" / "dialogue_10.md").read_text(encoding="utf-8") == text
    back = _convert(runner, tmp_path / "md", tmp_path / "back")  # *.md files are picked up and detected
    assert back.exit_code == 0, back.stderr
    assert set(_files(tmp_path / "back")) == set(GOOD.values()) - {"runs.storyline.json"}


def test_a_markdown_file_that_is_not_agenticmd_is_skipped(runner, tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    (src / "README.md").write_text("# notes about this corpus\n")
    legacy = FIXTURES / "agenticmd" / "legacy-demo-run-001.md"
    (src / "legacy.md").write_bytes(legacy.read_bytes())  # AgenticMD without Storyline metadata: a failure
    (src / "run.json").write_bytes((FIXTURES / "atif" / "sparse_13.json").read_bytes())
    result = runner.invoke(
        cli, ["convert", str(src), "--to", "storyline", "-o", str(tmp_path / "out"), "--workers", "1"]
    )
    assert result.exit_code == 1
    assert f"warning: skipped {src / 'README.md'}: not agenticmd content" in result.stderr
    assert "agenticmd.no_storyline" in result.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["run.storyline.json"]
