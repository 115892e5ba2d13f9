"""Start-up: a plain `mapc run` loads what converting one file needs, and nothing else.

Timings are for bench/ (`bench/run.py --only startup`); what is asserted here is what a run imports
and compiles, read from `sys.modules` and the catalog in a fresh interpreter, as a user's shell starts one.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import FIXTURES

SUPPORT = FIXTURES / "atif" / "support-ticket.json"

# Modules a plain conversion never needs: the store, the query engine, the terminal renderer, the
# schema oracle, Ray, the capture proxy's HTTP stack, process pools and the test generators.
HEAVY = (
    "jsonschema",
    "lance",
    "duckdb",
    "pyarrow",
    "ray",
    "rich",
    "aiohttp",
    "hypothesis",
    "pandas",
    "numpy",
    "multiprocessing",
    "concurrent",
    "socket",
    "subprocess",
    "logging",
)
# The engine's modules for spec constructs ATIF does not use (row corpora, event streams, folds,
# group/spread/select), the other formats' modules, and the commands a run is not.
UNUSED_BY_ATIF = (
    "mapc.engine.rows",
    "mapc.engine.group",
    "mapc.engine.spread",
    "mapc.engine.select",
    "mapc.engine.fold",
    "mapc.engine.stream",
    "mapc.engine.loss",
    "mapc.engine.detect",
    "mapc.mappings.agenticmd",
    "mapc.mappings.otel_genai",
    "mapc.mappings.openai_msg",
    "mapc.mappings.openai_chat",
    "mapc.mappings.codex",
    "mapc.mappings.claude_code",
    "mapc.cli.convert",
    "mapc.cli.corpus",
    "mapc.cli.engines",
    "mapc.cli.store",
    "mapc.cli.query",
    "mapc.cli.events",
    "mapc.cli.spec",
    "mapc.cli.view",
    "mapc.cli.show",
)

# Run `mapc ARGS` in this interpreter and report what it loaded, as JSON on stderr's last line.
SCRIPT = """
import json, sys
sys.argv = ["mapc", *json.loads(sys.argv[1])]
from mapc.cli.main import main
try:
    main()
except SystemExit as exc:
    code = exc.code
else:
    code = 0
from mapc.engine import catalog
loaded = sorted({name.split(".")[0] for name in sys.modules} | {n for n in sys.modules if n.startswith("mapc.")})
print(json.dumps({"code": code, "modules": loaded, "programs": len(catalog.installed().compiled())}), file=sys.stderr)
"""


def _run(args: list[str], cache_dir: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(args)],
        capture_output=True,
        text=True,
        env={"MAPC_CACHE_DIR": cache_dir, "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["code"] in (0, None), done.stderr
    return report


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
def test_a_plain_run_imports_no_heavy_module(tmp_path, reverse):
    story = tmp_path / "story.json"
    args = ["run", "atif", str(SUPPORT), "-o", str(story)]
    if reverse:
        _run(args, str(tmp_path / "cache"))
        args = ["run", "atif", str(story), "--reverse", "-o", str(tmp_path / "out.json")]
    first = _run(args, str(tmp_path / "cache"))  # fills the spec cache
    again = _run(args, str(tmp_path / "cache"))
    for report in (first, again):
        assert not set(HEAVY) & set(report["modules"]), set(HEAVY) & set(report["modules"])
        assert not [m for m in report["modules"] if m.startswith("mapc.store")]
        assert not set(UNUSED_BY_ATIF) & set(report["modules"])  # no codec, no other format, no other command
        assert report["programs"] == 1  # a reverse too compiles its own spec only
    assert "yaml" not in again["modules"]  # the spec's data comes from the cache: no YAML parser
    assert "tempfile" not in again["modules"]  # only filling the cache makes temporary files with it
    # The compiled program comes from the cache (engine/stored.py): no spec compiler, no code writer.
    assert not {"mapc.engine.compile", "mapc.engine.codegen"} & set(again["modules"])
    assert (tmp_path / ("out.json" if reverse else "story.json")).stat().st_size > 0


@pytest.mark.parametrize("command", ["validate", "convert"])
def test_a_small_validate_or_convert_imports_no_heavy_module_and_compiles_one_spec(tmp_path, command):
    """Detection reads each spec's `detect:` from its data: a detected file compiles only its own spec."""
    args = [command, str(SUPPORT)] + (["--to", "storyline"] if command == "convert" else [])
    _run(args, str(tmp_path / "cache"))
    report = _run(args, str(tmp_path / "cache"))
    assert not set(HEAVY) & set(report["modules"]), report["modules"]
    assert not [m for m in report["modules"] if m.startswith("mapc.store")]
    assert not {"mapc.engine.rows", "mapc.engine.stream", "mapc.mappings.openai_msg", "yaml"} & set(report["modules"])
    assert report["programs"] == 1


def test_a_run_compiles_only_its_own_spec(tmp_path):
    report = _run(["run", "atif", str(SUPPORT)], str(tmp_path / "cache"))
    assert report["programs"] == 1  # not every shipped spec, for aliases or count trees


def test_without_the_cache_the_run_still_imports_no_heavy_module(tmp_path):
    report = _run(["run", "atif", str(SUPPORT), "--no-cache"], str(tmp_path / "cache"))
    assert not set(HEAVY) & set(report["modules"])
    assert not (tmp_path / "cache").exists()
