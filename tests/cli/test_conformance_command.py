"""`mapc conformance run`: in-process, and against other implementations through the protocol.

The toy implementations below are Python scripts written into tmp_path: deliberately wrong ones
the runner must catch, and a correct wrapper over mapc's API that must pass.
"""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path

import pytest

from mapc.cli import suite
from mapc.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "conformance"
SLOW = pytest.mark.slow  # each case a process that imports mapc: ~0.5 CPU s a case

STORY = {"schema_version": "storyline/v1", "session": "s1", "agent": {"id": "a"}, "turns": []}
ATIF = {
    "schema_version": "ATIF-v1.7",
    "session_id": "s1",
    "agent": {"name": "bot", "version": "1"},
    "steps": [],
}

# A small suite: a valid and an invalid Storyline, an ATIF residual, a JSONL input, a round trip,
# and detection (path before content, content, unknown, a JSONL file's first line).
CASES = [
    {
        "description": "validate",
        "format": "storyline",
        "operation": "validate",
        "tests": [
            {"description": "valid", "input": STORY, "valid": True},
            {
                "description": "empty session",
                "input": {**STORY, "session": ""},
                "error": {"code": "schema.minLength", "pointer": "/session"},
            },
        ],
    },
    {
        "description": "forward keeps unknown keys",
        "format": "atif",
        "operation": "forward",
        "tests": [
            {
                "description": "a vendor key",
                "input": {**ATIF, "vendor": 1},
                "assertions": [{"pointer": "/0/unknown_fields/sources/atif/fields/~1vendor", "value": 1}],
            },
            {
                "description": "JSONL",
                "input_text": json.dumps(ATIF) + "\n" + json.dumps({**ATIF, "session_id": "s2"}),
                "jsonl": True,
                "assertions": [{"pointer": "/1/session", "value": "s2"}],
            },
        ],
    },
    {
        "description": "round trip",
        "format": "atif",
        "operation": "convert",
        "to": "atif",
        "tests": [
            {
                "description": "vendor key back",
                "input": {**ATIF, "vendor": 1},
                "output": {**ATIF, "vendor": 1},
            }
        ],
    },
    {
        "description": "reverse",
        "format": "atif",
        "operation": "reverse",
        "tests": [
            {
                "description": "minimal",
                "input": STORY,
                "assertions": [{"pointer": "/session_id", "value": "s1"}],
            }
        ],
    },
    {
        "description": "detect",
        "format": "atif",
        "operation": "detect",
        "requires": ["actf"],
        "tests": [
            {"description": "path before content", "path": "run.actf.json", "input": ATIF, "output": "actf"},
            {"description": "content", "path": "run.json", "input": ATIF, "output": "atif"},
            {"description": "unknown", "path": "run.json", "input": {"x": 1}, "output": None},
            {
                "description": "JSONL",
                "path": "runs.jsonl",
                "input_text": "\n" + json.dumps(ATIF) + "\nnot json\n",
                "jsonl": True,
                "output": "atif",
            },
        ],
    },
]
N_TESTS = sum(len(case["tests"]) for case in CASES)

CORRECT = """
import json, sys
from mapc.engine import convert, detect, storyline
from mapc.engine.problems import MapcError

req = json.load(sys.stdin)
data = req["input_text"].encode() if "input_text" in req else json.dumps(req["input"]).encode()
jsonl = req.get("jsonl", False)
try:
    op = req["operation"]
    if op == "detect":
        out = detect.detect(req["path"], data)
    elif op == "validate":
        convert.into_storyline(req["format"], data, jsonl=jsonl)
        out = True
    elif op == "forward":
        out = convert.into_storyline(req["format"], data, jsonl=jsonl)
    elif op == "reverse":
        out = convert.from_storyline(req["format"], storyline.documents(storyline.loads(data)))
    else:
        out = convert.convert(req["format"], req["to"], data, jsonl=jsonl)
except MapcError as e:
    p = e.problems[0]
    print(json.dumps({"error": {"code": p.code, "pointer": p.pointer},
                      "errors": [{"code": q.code, "pointer": q.pointer} for q in e.problems]}))
    sys.exit(1)
print(json.dumps({"output": out}))
"""

# Wrong in one way each: the runner must report the tests that show it.
ALWAYS_VALID = CORRECT.replace(
    'convert.into_storyline(req["format"], data, jsonl=jsonl)\n        out = True',
    "out = True",
)
DROPS_UNKNOWN_FIELDS = CORRECT.replace(
    'print(json.dumps({"output": out}))',
    'if op == "forward":\n'
    "    for s in out:\n"
    '        s.pop("unknown_fields", None)\n'
    '        s.pop("unknown_key_counts", None)\n'
    'print(json.dumps({"output": out}))',
)
CONTENT_BEFORE_PATH = CORRECT.replace(
    'detect.detect(req["path"], data)', 'detect.by_content(data, jsonl=jsonl) or detect.by_path(req["path"])'
)
UNKNOWN_AS_TEXT = CORRECT.replace('detect.detect(req["path"], data)', 'detect.detect(req["path"], data) or "unknown"')
WRONG_CODE = CORRECT.replace("p.code", '"storyline.invalid"').replace("q.code", '"storyline.invalid"')
GARBAGE = "import sys\nsys.stdin.read()\nprint('not json')\n"
BAD_STATUS = "import sys\nsys.stdin.read()\nprint('{\"output\": true}')\nsys.exit(3)\n"


@pytest.fixture
def cases(tmp_path: Path) -> Path:
    path = tmp_path / "suite" / "mixed.json"
    path.parent.mkdir()
    path.write_text(json.dumps(CASES))
    return path.parent


def _impl(tmp_path: Path, name: str, code: str) -> str:
    script = tmp_path / name
    script.write_text(textwrap.dedent(code))
    return f"{sys.executable} {script}"


def test_in_process_run_of_the_whole_suite_passes(runner):
    result = runner.invoke(cli, ["conformance", "run", str(SUITE)])
    assert result.exit_code == 0, result.output[-3000:]
    assert "FAIL" not in result.output
    lines = result.output.splitlines()
    assert any(line.startswith("atif ") for line in lines)
    assert any(line.startswith("storyline ") for line in lines)
    assert any(line.startswith("total ") for line in lines)
    assert "skip  " in result.output and "disabled:" in result.output  # skips are shown with reasons


def test_format_filter(runner, cases):
    result = runner.invoke(cli, ["conformance", "run", str(cases), "--format", "storyline"])
    assert result.exit_code == 0, result.output
    assert "2 tests" in result.output and "atif" not in result.output


def test_a_correct_wrapper_passes(runner, cases, tmp_path):
    result = runner.invoke(
        cli, ["conformance", "run", str(cases), "--impl", _impl(tmp_path, "ok.py", CORRECT), "-j", "2"]
    )
    assert result.exit_code == 0, result.output
    assert "FAIL" not in result.output


@pytest.mark.slow  # a process per case of the pointer suite; the small suite above runs in the default tier
def test_a_correct_wrapper_passes_a_real_subset(runner, tmp_path):
    result = runner.invoke(
        cli,
        [
            "conformance",
            "run",
            str(SUITE / "pointer"),
            "--impl",
            _impl(tmp_path, "ok.py", CORRECT),
            "-j",
            "4",
        ],
    )
    assert result.exit_code == 0, result.output[-2000:]


@pytest.mark.parametrize(
    ("name", "code", "caught"),
    [
        ("always_valid", ALWAYS_VALID, "validate > empty session"),
        ("drops_unknown_fields", DROPS_UNKNOWN_FIELDS, "forward keeps unknown keys > a vendor key"),
        ("wrong_code", WRONG_CODE, "validate > empty session"),
        # the default tier catches these two in test_a_wrong_detect_answer_fails_exactly_its_test
        pytest.param("content_before_path", CONTENT_BEFORE_PATH, "detect > path before content", marks=SLOW),
        pytest.param("unknown_as_text", UNKNOWN_AS_TEXT, "detect > unknown", marks=SLOW),
    ],
)
def test_a_wrong_implementation_is_caught(runner, cases, tmp_path, name, code, caught):
    result = runner.invoke(cli, ["conformance", "run", str(cases), "--impl", _impl(tmp_path, f"{name}.py", code)])
    assert result.exit_code == 1, result.output
    fails = [line for line in result.output.splitlines() if line.startswith("FAIL")]
    assert any(caught in line for line in fails), result.output
    assert "expected:" in result.output and "got:" in result.output


@pytest.mark.parametrize(
    ("name", "code", "caught", "got"),
    [
        ("content_before_path", CONTENT_BEFORE_PATH, "detect > path before content", '{"output":"atif"}'),
        ("unknown_as_text", UNKNOWN_AS_TEXT, "detect > unknown", '{"output":"unknown"}'),
    ],
)
def test_a_wrong_detect_answer_fails_exactly_its_test(runner, cases, tmp_path, name, code, caught, got):
    result = runner.invoke(cli, ["conformance", "run", str(cases), "--impl", _impl(tmp_path, f"{name}.py", code)])
    assert result.exit_code == 1
    fails = [line for line in result.output.splitlines() if line.startswith("FAIL")]
    assert len(fails) == 1 and caught in fails[0], result.output
    assert f"got:      {got}" in result.output


def test_the_readme_implementation_passes(runner, cases, tmp_path):
    readme = (SUITE / "README.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)```", readme.split("### The command protocol", 1)[1], re.S)
    assert code
    result = runner.invoke(cli, ["conformance", "run", str(cases), "--impl", _impl(tmp_path, "readme.py", code[1])])
    assert result.exit_code == 0, result.output
    assert f"{N_TESTS} tests" in result.output


@pytest.mark.parametrize(
    ("name", "code", "says"),
    [("garbage", GARBAGE, "not one JSON object"), ("status", BAD_STATUS, "exit status 3")],
)
def test_protocol_breaches_fail_every_test(runner, cases, tmp_path, name, code, says):
    result = runner.invoke(cli, ["conformance", "run", str(cases), "--impl", _impl(tmp_path, f"{name}.py", code)])
    assert result.exit_code == 1
    fails = [line for line in result.output.splitlines() if line.startswith("FAIL")]
    assert len(fails) == N_TESTS
    assert "protocol:" in result.output and says in result.output


def test_a_disabled_test_is_skipped_visibly(runner, tmp_path):
    path = tmp_path / "s" / "c.json"
    path.parent.mkdir()
    case = {**CASES[0], "tests": [{**CASES[0]["tests"][1], "disabled": "known gap #12"}]}
    path.write_text(json.dumps([case]))
    result = runner.invoke(cli, ["conformance", "run", str(path.parent)])
    assert result.exit_code == 0
    assert "skip  storyline > validate > empty session: disabled: known gap #12" in result.output


def test_a_format_mapc_lacks_is_skipped(runner, tmp_path):
    path = tmp_path / "s" / "c.json"
    path.parent.mkdir()
    path.write_text(json.dumps([{**CASES[0], "format": "no-such-format"}]))
    result = runner.invoke(cli, ["conformance", "run", str(path.parent)])
    assert result.exit_code == 0
    assert "format no-such-format is not yet implemented" in result.output


def test_a_broken_case_file_is_reported(runner, tmp_path):
    path = tmp_path / "s" / "c.json"
    path.parent.mkdir()
    path.write_text(json.dumps([{"description": "x", "format": "storyline", "operation": "guess", "tests": []}]))
    result = runner.invoke(cli, ["conformance", "run", str(path.parent)])
    assert result.exit_code == 1
    assert "conformance.bad_case" in result.stderr


def test_outside_a_checkout_the_shipped_suite_runs(runner, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no ./conformance here: the suite that ships with mapc
    result = runner.invoke(cli, ["conformance", "run", "--format", "sharegpt"])
    assert result.exit_code == 0, result.output
    assert "against mapc (in-process)" in result.stdout
    assert "sharegpt" in result.stdout


def test_parse_answer_protocol_rules():
    assert suite.parse_answer(0, b'{"output": [1]}').output == [1]
    assert suite.parse_answer(1, b'{"error": {"code": "a.b", "pointer": "/x"}}').errors == (("a.b", "/x"),)
    assert suite.parse_answer(0, b'{"error": {"code": "a.b", "pointer": ""}}').protocol
    assert suite.parse_answer(1, b'{"output": 1}').protocol
    assert suite.parse_answer(1, b'{"error": {"code": 1, "pointer": ""}}').protocol
    assert suite.parse_answer(2, b"").protocol
