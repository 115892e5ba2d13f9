"""`--redact` on the commands that export (convert, export): engine/redact.py over the Storylines."""

from __future__ import annotations

import json
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
