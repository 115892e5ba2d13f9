"""The README's promises: CI runs its set-up commands, and its first example works as written."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _block_after(heading: str) -> list[str]:
    section = README.split(heading, 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block, f"no sh block after {heading}"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_ci_runs_exactly_the_readme_setup_commands():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    install, test = _block_after("## Set-up")
    assert install in ci and test in ci


def test_first_example_runs_as_written(tmp_path):
    bindir = Path(sys.executable).parent
    for line in _block_after("## A first example"):
        argv = shlex.split(line.replace("/tmp/story.json", str(tmp_path / "story.json")))
        argv[0] = str(bindir / Path(argv[0]).name)  # .venv/bin/mapc → the mapc of this environment
        done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
        assert done.returncode == 0, f"{line}\n{done.stderr}"
    assert '"schema_version": "ATIF-v1.7"' in done.stdout


def test_python_example_runs_as_written():
    block = re.search(r"```python\n(.*?)```", README.split("## From Python", 1)[1], re.S)
    assert block
    fixture = str(ROOT / "tests" / "data" / "fixtures" / "atif" / "support-ticket.json")
    namespace: dict[str, object] = {}
    exec(block.group(1).replace('"trajectory.json"', repr(fixture)), namespace)
    assert namespace["problems"] == []
    assert namespace["actf"] == namespace["same"]
