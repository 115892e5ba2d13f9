"""What every command shares (cli/boundary.py, cli/main.py, cli/params.py): the one error boundary, Ctrl-C,
the root options anywhere on the line, sizes with units, format names in any case and by alias, and the
job's `Options` handed to workers as a value."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import orjson
import pytest
from conftest import FIXTURES, write

from mapc.cli import corpus
from mapc.cli.main import cli
from mapc.cli.params import parse_size
from mapc.engine.options import Options

ATIF = FIXTURES / "atif"
SUPPORT = ATIF / "support-ticket.json"


def _atif_dir(root: Path, n: int = 4) -> Path:
    root.mkdir(parents=True)
    for i in range(n):
        (root / f"t{i}.json").write_bytes(SUPPORT.read_bytes())
    return root


# -- locations that cannot be used: a message and exit 2, never a traceback ----------------------------------


def _unusable_dirs(tmp_path: Path) -> list[str]:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    places = [str(blocker / "out")]  # below a regular file: NotADirectoryError on any system
    if Path("/sys").is_dir() and not os.access("/sys", os.W_OK):
        places.append("/sys/outdir")  # the case as reported (read-only sysfs)
    return places


def test_convert_dir_into_an_unusable_outdir_is_exit_2(runner, tmp_path):
    src = _atif_dir(tmp_path / "in", 2)
    for out in _unusable_dirs(tmp_path):
        result = runner.invoke(cli, ["convert", str(src), "--to", "storyline", "-o", out, "--workers", "1"])
        assert result.exit_code == 2, (out, result.output)
        assert result.stderr.startswith(f"mapc: cannot use {out}: "), result.stderr
        assert isinstance(result.exception, SystemExit)  # exited, no exception escaped


def test_store_into_an_unusable_dataset_is_exit_2(runner, tmp_path):
    for out in _unusable_dirs(tmp_path):
        result = runner.invoke(cli, ["store", str(SUPPORT), "--to", f"{out}/ds", "--workers", "1"])
        assert result.exit_code == 2, (out, result.output)
        assert "mapc: cannot use " in result.stderr and out in result.stderr, result.stderr
        assert isinstance(result.exception, SystemExit)


def test_a_single_output_that_cannot_be_written_is_exit_2(runner, tmp_path):
    blocker = write(tmp_path / "f", b"x")
    result = runner.invoke(cli, ["convert", str(SUPPORT), "--to", "actf", "-o", str(blocker / "x.json")])
    assert result.exit_code == 2
    assert "cannot write" in result.stderr and isinstance(result.exception, SystemExit)


# -- Ctrl-C --------------------------------------------------------------------------------------------------


def test_ctrl_c_is_exit_130_with_a_summary_and_skip_existing_goes_on(runner, tmp_path, monkeypatch):
    src = _atif_dir(tmp_path / "in", 4)
    out = tmp_path / "out"
    real = corpus.convert_file
    done: list[str] = []

    def interrupted_after_two(job):
        if len(done) == 2:
            raise KeyboardInterrupt
        done.append(job.path)
        return real(job)

    monkeypatch.setattr(corpus, "convert_file", interrupted_after_two)
    args = ["convert", str(src), "--to", "storyline", "-o", str(out), "--workers", "1"]
    result = runner.invoke(cli, args)
    assert result.exit_code == 130
    lines = result.stderr.splitlines()
    assert lines[0] == "mapc: interrupted"
    assert lines[1].startswith("converted 2 files (2 documents), 0 failed, 0 skipped; ")
    assert lines[2] == "2 files not converted; the same command with --skip-existing goes on"
    assert sorted(p.name for p in out.iterdir()) == sorted(Path(p).stem + ".storyline.json" for p in done)

    monkeypatch.setattr(corpus, "convert_file", real)
    resumed = runner.invoke(cli, [*args, "--skip-existing"])
    assert resumed.exit_code == 0, resumed.stderr
    assert resumed.stderr.startswith("converted 2 files (2 documents), 0 failed, 0 skipped, 2 already converted; ")
    assert len(list(out.iterdir())) == 4
    again = runner.invoke(cli, args)  # without the flag, everything is converted again
    assert again.stderr.startswith("converted 4 files")


def test_ctrl_c_in_store_says_nothing_was_stored(runner, tmp_path, monkeypatch):
    from mapc.store import ingest

    def stop(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(ingest, "store_chunk", stop)
    result = runner.invoke(cli, ["store", str(SUPPORT), "--to", str(tmp_path / "ds"), "--workers", "1"])
    assert result.exit_code == 130
    assert result.stderr == f"mapc: interrupted\nnothing stored: {tmp_path / 'ds'} is as it was\n"
    assert not (tmp_path / "ds").exists()


# -- root options after the subcommand; sizes ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("100", 100),
        ("1k", 1_000),
        ("1K", 1_000),
        ("1kB", 1_000),
        ("1KiB", 1_024),
        ("10MB", 10_000_000),
        ("10mib", 10 * 2**20),
        ("1.5G", 1_500_000_000),
        (" 2 GiB ", 2 * 2**30),
    ],
)
def test_sizes_take_units(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["0", "-1", "1.5", "ten", "10 parsecs", "1e3", ""])
def test_sizes_that_are_not(text):
    with pytest.raises(ValueError):
        parse_size(text)


@pytest.mark.parametrize("where", ["before", "after"])
def test_root_options_work_before_or_after_the_subcommand(runner, where):
    size = SUPPORT.stat().st_size
    option = ["--max-input-bytes", "1k"]
    command = ["validate", "--format", "atif", str(SUPPORT)]
    args = [*option, *command] if where == "before" else [*command, *option]
    result = runner.invoke(cli, args)
    assert size > 1000
    assert result.exit_code == 1
    assert f"the input is {size} bytes, over the limit of 1000" in result.stderr
    ok = runner.invoke(cli, [*command, "--max-input-bytes", "1MiB"])
    assert ok.exit_code == 0, ok.stderr


def test_a_flag_after_a_nested_subcommand(runner, tmp_path):
    path = write(tmp_path / "dup.json", b'{"schema_version":"storyline/v1","session":"a","session":"b"}')
    result = runner.invoke(cli, ["events", "synthesize", str(path), "--to", str(tmp_path / "e")])
    assert result.exit_code == 1
    assert "[json.duplicate_key]" in result.stderr
    allowed = runner.invoke(
        cli, ["events", "synthesize", str(path), "--to", str(tmp_path / "e"), "--allow-duplicate-keys"]
    )
    assert "[json.duplicate_key]" not in allowed.stderr


def test_a_bad_size_is_a_usage_error(runner):
    result = runner.invoke(cli, ["run", "atif", str(SUPPORT), "--max-input-bytes", "lots"])
    assert result.exit_code == 2
    assert "'lots' is not a size" in result.stderr


def test_the_environment_still_sets_the_root_options(runner):
    result = runner.invoke(cli, ["run", "atif", str(SUPPORT)], env={"MAPC_MAX_INPUT_BYTES": "1k"})
    assert result.exit_code == 1 and "[input.too_large]" in result.stderr
    written = runner.invoke(
        cli, ["run", "atif", str(SUPPORT), "--max-input-bytes", "1M"], env={"MAPC_MAX_INPUT_BYTES": "1k"}
    )
    assert written.exit_code == 0, written.stderr  # what is written on the line wins


# -- format names ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["ACTF", "Actf", "actf"])
def test_format_names_are_case_insensitive(runner, name):
    result = runner.invoke(cli, ["convert", str(SUPPORT), "--from", "ATIF", "--to", name])
    assert result.exit_code == 0, result.stderr
    assert orjson.loads(result.stdout)["task_id"] == "support-001"


def test_aliases_work_in_validate_too(runner, tmp_path):
    rows = [
        {
            "session_id": "s",
            "step": 0,
            "messages": [{"role": "user", "content": "hi"}],
            "response": {"role": "assistant", "content": "yo"},
        }
    ]
    path = write(tmp_path / "rows.json", rows)
    by_name = runner.invoke(cli, ["validate", "--format", "openai-msg", str(path)])
    by_alias = runner.invoke(cli, ["validate", "--format", "OpenAI-Messages", str(path)])
    assert by_alias.exit_code == by_name.exit_code
    assert by_alias.stderr == by_name.stderr
    assert "is not a format" not in by_alias.stderr


def test_an_unknown_target_is_a_usage_error_listing_every_format(runner):
    result = runner.invoke(cli, ["convert", str(SUPPORT), "--to", "foo"])
    assert result.exit_code == 2
    for name in ("storyline", "atif", "actf", "openai-msg", "openai-messages", "agenticmd"):
        assert name in result.stderr


# -- Options: one value, passed to workers, never the environment ---------------------------------------------


def test_options_pickle_and_check_their_values():
    options = Options(max_input_bytes=10, max_unknown_fields=2, allow_duplicate_keys=True)
    assert pickle.loads(pickle.dumps(options)) == options
    with pytest.raises(TypeError, match="max_input_bytes must be a positive int"):
        Options(max_input_bytes=0)
    with pytest.raises(TypeError, match="allow_duplicate_keys must be a bool"):
        Options(allow_duplicate_keys="yes")  # type: ignore[arg-type]


def test_worker_processes_get_the_options_without_the_environment(runner, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "small.json").write_bytes(SUPPORT.read_bytes())
    big = src / "big.json"
    big.write_bytes((ATIF / "multimodal_18.json").read_bytes())
    limit = str(SUPPORT.stat().st_size)
    before = {k: v for k, v in os.environ.items() if k.startswith("MAPC_")}
    args = ["convert", str(src), "--to", "storyline", "-o", str(tmp_path / "out"), "--workers", "2"]
    result = runner.invoke(cli, [*args, "--max-input-bytes", limit])
    assert result.exit_code == 1
    assert f"{big}: /: the input is" in result.stderr and "[input.too_large]" in result.stderr
    assert (tmp_path / "out" / "small.storyline.json").is_file()
    assert {k: v for k, v in os.environ.items() if k.startswith("MAPC_")} == before  # nothing set for the workers
