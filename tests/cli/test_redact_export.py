"""`--redact` on the commands that export (convert, export): engine/redact.py over the Storylines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
from conftest import SECRET_CHAT

import mapc
from mapc.cli.main import cli

SECRETS = ("sk-proj-abcdefghijklmnopqrstuvwx", "AKIAABCDEFGHIJKLMNOP", "abc.def.ghi12345", "hunter2hunter2")


def test_convert_redacts_text_and_residuals_and_says_so(runner: Any, tmp_path: Path) -> None:
    src = tmp_path / "secret.jsonl"
    src.write_bytes(orjson.dumps(SECRET_CHAT) + b"\n")
    out = tmp_path / "clean.jsonl"
    result = runner.invoke(cli, ["convert", str(src), "--to", "openai-chat", "--redact", "-o", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    # The arguments text is also kept as a residual (it is spaced JSON): both copies are redacted.
    assert not any(s in text for s in SECRETS) and "[REDACTED:api_key]" in text
    (line,) = [json.loads(x) for x in text.splitlines()]
    assert line["messages"][-1] == SECRET_CHAT["messages"][-1]  # what holds no secret is as it was
    assert f"{src}: redacted " in result.stderr
    bad = runner.invoke(cli, ["convert", str(src), "--to", "atif", "--redact-pattern", "("])
    assert bad.exit_code == 2
    plain = runner.invoke(cli, ["convert", str(src), "--to", "openai-chat"])
    assert all(s in plain.output for s in SECRETS) and "redacted" not in plain.stderr
    user = runner.invoke(cli, ["convert", str(src), "--to", "atif", "--redact-pattern", "nothing secret"])
    assert "Done; [REDACTED:" in user.output


def test_export_redacts(runner: Any, tmp_path: Path) -> None:
    src = tmp_path / "secret.jsonl"
    src.write_bytes(orjson.dumps(SECRET_CHAT) + b"\n")
    root = tmp_path / "ds"
    assert runner.invoke(cli, ["store", str(src), "--to", str(root)]).exit_code == 0
    result = runner.invoke(cli, ["export", str(root), "--to", "otel-genai", "--redact"])
    assert result.exit_code == 0, result.output
    assert not any(s in result.stdout for s in SECRETS)
    assert mapc.into_storyline("otel-genai", result.stdout.encode())  # still a valid trace


def _secret_dir(root: Path) -> Path:
    """A directory of two chat JSONL files (one holding secrets on two lines, one clean) and an ATIF file."""
    (root / "sub").mkdir(parents=True)
    again = {"messages": [*SECRET_CHAT["messages"], {"role": "user", "content": "again"}]}
    (root / "secret.jsonl").write_bytes(orjson.dumps(SECRET_CHAT) + b"\n" + orjson.dumps(again) + b"\n")
    clean = {"messages": [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]}
    (root / "sub" / "clean.jsonl").write_bytes(orjson.dumps(clean) + b"\n")
    (root / "sub" / "ticket.json").write_bytes(
        (Path(__file__).parents[1] / "data" / "fixtures" / "atif" / "support-ticket.json").read_bytes()
    )
    return root


def _check_redacted_dir(out: Path, report: Path, src: Path, stderr: str) -> None:
    written = {p.relative_to(out).as_posix(): p.read_text() for p in out.rglob("*") if p.is_file()}
    assert set(written) == {"secret.json", "sub/clean.json", "sub/ticket.json"}  # a JSONL file's lines as one array
    assert not any(s in text for text in written.values() for s in SECRETS)
    assert written["secret.json"].count("[REDACTED:api_key]") >= 2  # both lines
    by_path = {r["path"]: r for r in orjson.loads(report.read_bytes())["reports"]}
    secret = by_path[str(src / "secret.jsonl")]
    # Per file, as for one file: what each pattern replaced (two conversations: every count even).
    assert secret["redacted"] and all(n % 2 == 0 for n in secret["redacted"].values()), secret
    assert secret["exact"] is False
    assert set(secret["redacted"]) >= {"api_key", "bearer_token", "auth_header"}
    assert by_path[str(src / "sub" / "clean.jsonl")]["redacted"] == {}
    total = sum(secret["redacted"].values()) + sum(by_path[str(src / "sub" / "ticket.json")]["redacted"].values())
    assert f"{src}: redacted {total} values" in stderr
    assert f"{src / 'secret.jsonl'}: not exact" in stderr and "redacted (" in stderr


def test_convert_dir_redacts_every_file_and_reports_each(runner: Any, tmp_path: Path) -> None:
    src = _secret_dir(tmp_path / "in")
    out, report = tmp_path / "out", tmp_path / "report.json"
    argv = ["convert", str(src), "--to", "openai-chat", "-o", str(out), "--workers", "1", "--redact"]
    result = runner.invoke(cli, [*argv, "--report", str(report)])
    assert result.exit_code == 0, result.output
    _check_redacted_dir(out, report, src, result.stderr)
    # --strict refuses a redacted file (it is not exact) and writes the clean one.
    strict = runner.invoke(cli, [*argv[:5], str(tmp_path / "strict"), *argv[6:], "--strict"])
    assert strict.exit_code == 1
    assert not (tmp_path / "strict" / "secret.json").exists() and (tmp_path / "strict" / "sub" / "clean.json").exists()


def test_convert_dir_redacts_in_worker_processes(tmp_path: Path) -> None:
    """Two worker processes (a real `mapc` process): the patterns, the user's too, travel with the jobs."""
    src = _secret_dir(tmp_path / "in")
    out, report = tmp_path / "out", tmp_path / "report.json"
    mapc_bin = Path(sys.executable).parent / "mapc"
    argv = [str(mapc_bin), "convert", str(src), "--to", "openai-chat", "-o", str(out), "--workers", "2"]
    done = subprocess.run(
        [*argv, "--redact-pattern", "Done; nothing", "--report", str(report)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={k: v for k, v in os.environ.items() if not k.startswith("MAPC")},
    )
    assert done.returncode == 0, done.stderr
    _check_redacted_dir(out, report, src, done.stderr)
    assert "[REDACTED:user1] secret here." in (out / "secret.json").read_text()  # the user's pattern, in a worker
    entry = {r["path"]: r for r in orjson.loads(report.read_bytes())["reports"]}[str(src / "secret.jsonl")]
    assert entry["redacted"]["user1"] == 2


def test_convert_jsonl_streamed_redacts_each_line(runner: Any, tmp_path: Path) -> None:
    """A JSONL file written to a JSONL file streams line by line; --redact redacts every line and the
    report sums the lines' counts."""
    src = _secret_dir(tmp_path / "in") / "secret.jsonl"
    out, report = tmp_path / "out.jsonl", tmp_path / "report.json"
    result = runner.invoke(
        cli, ["convert", str(src), "--to", "openai-chat", "--redact", "-o", str(out), "--report", str(report)]
    )
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert len(text.splitlines()) == 2 and not any(s in text for s in SECRETS)
    (entry,) = orjson.loads(report.read_bytes())["reports"]
    single = runner.invoke(
        cli, ["convert", str(src), "--to", "storyline", "--redact", "--report", str(tmp_path / "one.json")]
    )
    (whole,) = orjson.loads((tmp_path / "one.json").read_bytes())["reports"]
    assert entry["redacted"] == whole["redacted"] and sum(entry["redacted"].values()) > 0
    assert f"{src}: redacted {sum(entry['redacted'].values())} values" in result.stderr
    assert f"{src}: redacted " in single.stderr
