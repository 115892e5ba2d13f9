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
# schema oracle, Ray and the test generators.
HEAVY = ("jsonschema", "lance", "duckdb", "pyarrow", "ray", "rich", "hypothesis", "pandas", "numpy")

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
        assert not set(HEAVY) & set(report["modules"]), report["modules"]
        assert not [m for m in report["modules"] if m.startswith("mapc.store")]
        assert "mapc.mappings.agenticmd" not in report["modules"]  # no codec is imported to run a spec
    assert "yaml" not in again["modules"]  # the spec's data comes from the cache: no YAML parser
    assert (tmp_path / ("out.json" if reverse else "story.json")).stat().st_size > 0


def test_a_run_compiles_only_its_own_spec(tmp_path):
    report = _run(["run", "atif", str(SUPPORT)], str(tmp_path / "cache"))
    assert report["programs"] == 1  # not every shipped spec, for aliases or count trees


def test_without_the_cache_the_run_still_imports_no_heavy_module(tmp_path):
    report = _run(["run", "atif", str(SUPPORT), "--no-cache"], str(tmp_path / "cache"))
    assert not set(HEAVY) & set(report["modules"])
    assert not (tmp_path / "cache").exists()
