"""The conformance suite (conformance/*/*.json) run in-process: one pytest test per suite test,
named ``format > case > test``; and the suite's own promises (schema, generator, catalogue)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from mapc.cli import suite
from mapc.engine.problems import MapcError

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "conformance"
TESTS = suite.load_suite(SUITE)
KNOWN = suite.in_process_formats()


@pytest.mark.parametrize("test", TESTS, ids=[t.id for t in TESTS])
def test_suite(test: suite.Test):
    [outcome] = suite.run_suite([test], suite.run_in_process, known_formats=KNOWN)
    if outcome.status == "skip":
        pytest.skip(outcome.reason)
    assert outcome.status == "pass", (
        f"{test.file}: {outcome.reason}\nexpected: {json.dumps(outcome.expected)[:2000]}\n"
        f"got:      {json.dumps(outcome.got)[:2000]}"
    )


def test_the_suite_is_large_and_names_its_tests_uniquely():
    assert len(TESTS) >= 500
    ids = [t.id for t in TESTS]
    assert len(ids) == len(set(ids)), [i for i in ids if ids.count(i) > 1][:5]


@pytest.mark.parametrize("path", suite.case_files(SUITE), ids=lambda p: p.relative_to(SUITE).as_posix())
def test_case_files_match_the_case_schema(path: Path):
    schema = json.loads((SUITE / "case.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    errors = sorted(
        jsonschema.Draft202012Validator(schema).iter_errors(json.loads(path.read_text(encoding="utf-8"))),
        key=lambda e: list(e.absolute_path),
    )
    assert not errors, "\n".join(f"/{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}" for e in errors[:5])


def test_the_case_schema_rejects_what_the_loader_rejects(tmp_path: Path):
    schema = json.loads((SUITE / "case.schema.json").read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    good = {
        "description": "d",
        "format": "storyline",
        "operation": "validate",
        "tests": [{"description": "t", "input": 1, "valid": True}],
    }
    detect = {"description": "d", "format": "atif", "operation": "detect", "tests": good["tests"]}
    bad_cases = [
        {**good, "operation": "convert"},  # convert needs `to`
        {**good, "to": "atif"},  # only convert has `to`
        {**good, "tests": [{"description": "t", "input": 1}]},  # no expectation
        {**good, "tests": [{"description": "t", "valid": True}]},  # no input
        {**good, "tests": [{"description": "t", "input": 1, "error": {"code": "x.y", "pointer": "a"}}]},
        {**good, "tests": [{"description": "t", "input": 1, "assertions": [{"pointer": "/a"}]}]},
        {**good, "tests": [{"description": "t", "path": "x.json", "input": 1, "valid": True}]},  # path: detect only
        {**detect, "tests": [{"description": "t", "input": 1, "output": "atif"}]},  # detect needs a path
        {**detect, "tests": [{"description": "t", "path": "x.json", "input": 1, "valid": True}]},  # an output
        {**detect, "tests": [{"description": "t", "path": "x.json", "input": 1, "output": 1}]},  # a name or null
        {**detect, "tests": [{"description": "t", "path": "x.jsonl", "input_text": "{}", "output": None}]},
        {
            **detect,
            "tests": [{"description": "t", "path": "x.json", "input_text": "{}", "jsonl": True, "output": None}],
        },
    ]
    assert validator.is_valid([good])
    assert validator.is_valid(
        [{**detect, "tests": [{"description": "t", "path": "x.json", "input": 1, "output": None}]}]
    )
    for case in bad_cases:
        assert not validator.is_valid([case]), case
        path = tmp_path / "case.json"
        path.write_text(json.dumps([case]))
        with pytest.raises(MapcError):
            suite.load_suite(path)


def test_generated_files_are_up_to_date():
    done = subprocess.run(
        [sys.executable, str(SUITE / "tools" / "generate.py"), "--check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def test_every_case_and_fixture_reference_resolves():
    for path in suite.case_files(SUITE):
        for case in json.loads(path.read_text(encoding="utf-8")):
            for test in case["tests"]:
                for key in ("input_file", "output_file"):
                    if key in test:
                        assert (path.parent / test[key]).is_file(), f"{path}: {test[key]}"


# --- the error-code catalogue in conformance/README.md --------------------------------------

README = (SUITE / "README.md").read_text(encoding="utf-8")
CATALOGUE = set(re.findall(r"^\| `([a-z_]+\.[A-Za-z_.<>]+)` \|", README, flags=re.MULTILINE))
_CODE = re.compile(
    r"""["']((?:schema|storyline|check|envelope|residual|tree|input|json|spec|export|explain|lint|conformance)\.[a-z_]+)["']"""
)


def _documented(code: str) -> bool:
    if code in CATALOGUE:
        return True
    family = code.split(".", 1)[0]
    return family == "schema" and "schema.<keyword>" in CATALOGUE


def test_every_code_a_case_expects_is_in_the_catalogue():
    used = {t.expect.value["code"] for t in TESTS if t.expect.kind == "error"}
    missing = sorted(c for c in used if not _documented(c))
    assert not missing, f"add these to the catalogue in conformance/README.md: {missing}"


def test_every_code_the_engine_emits_is_in_the_catalogue():
    found: set[str] = set()
    for folder in ("engine", "mappings", "cli", "api"):
        for path in sorted((ROOT / folder).glob("*.py")):
            found.update(_CODE.findall(path.read_text(encoding="utf-8")))
    missing = sorted(c for c in found if not _documented(c))
    assert not missing, f"add these to the catalogue in conformance/README.md: {missing}"


# A `call` check function returns (pointer, code, message) triples; the problem's code is check.<code>.
_CHECK_TRIPLE = re.compile(r"""\(\s*f?["'][/{][^"']*["'],\s*["']([a-z_]+)["'],""")


def test_every_code_a_check_function_returns_is_in_the_catalogue():
    found = set()
    for path in sorted((ROOT / "mappings").glob("*.py")):
        found.update(f"check.{code}" for code in _CHECK_TRIPLE.findall(path.read_text(encoding="utf-8")))
    assert {"check.duplicate_tool_id", "check.unknown_tool_reference"} <= found
    missing = sorted(c for c in found if c not in CATALOGUE)
    assert not missing, f"add these to the catalogue in conformance/README.md: {missing}"


def test_every_schema_keyword_code_is_named():
    from mapc.engine.schema import SUPPORTED

    # if/then/else never fail themselves: the keywords inside `then`/`else` do
    failing = SUPPORTED - {"$ref", "properties", "patternProperties", "prefixItems", "if", "then", "else"}
    missing = sorted(f"schema.{k}" for k in failing if f"schema.{k}" not in CATALOGUE)
    assert not missing, missing
