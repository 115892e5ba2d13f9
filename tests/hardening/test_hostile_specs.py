"""More malicious mapping specs than test_spec_safety.py: tags in every position, values that are
not JSON, aliases that contain themselves, nesting past the composer's stack, calls in every place a
spec names a function, files that are not UTF-8, `input_schema` paths and `..` in pointers.

Each is a located mapc error, exits 1 or 2 without a traceback, and runs nothing (SECURITY.md): the
specs that would run a command try to create a marker file, and the tests check it never appears,
through `mapc spec lint`, `mapc run SPEC INPUT` and loading itself.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mapc.cli.main import cli
from mapc.engine.catalog import program
from mapc.engine.problems import MapcError
from mapc.engine.spec import MAX_SPEC_DEPTH, MAX_SPEC_NODES, load_spec

HEAD = "name: evil\nsource: evil\n"
RULES = "rules:\n  - {from: /session_id, to: /session}\n  - {from: /agent, to: /agent/id}\n"
LOCATED = re.compile(r"\.yaml:\d+:\d+")  # file:line:column


def _tags(marker: Path) -> list[tuple[str, str]]:
    """(id, spec text) of specs whose YAML tags would run a command that creates `marker`."""
    touch = f"touch {marker}"
    return [
        ("object/apply in a rule", HEAD + f"rules:\n  - !!python/object/apply:os.system [{touch!r}]\n"),
        ("object/apply as a key", HEAD + RULES + f"? !!python/object/apply:os.system [{touch!r}]\n: 1\n"),
        ("object/new", HEAD + RULES + f"title: !!python/object/new:subprocess.Popen [[sh, -c, {touch!r}]]\n"),
        ("object", HEAD + RULES + "title: !!python/object:subprocess.Popen {args: [true]}\n"),
        ("exec", HEAD + RULES + f"title: !!python/object/apply:builtins.exec [\"open({str(marker)!r}, 'w')\"]\n"),
        ("full tag", HEAD + RULES + f"title: !<tag:yaml.org,2002:python/object/apply:os.system> [{touch!r}]\n"),
        ("binary", HEAD + RULES + "title: !!binary aGVsbG8=\n"),
        ("set", HEAD + RULES + "title: !!set {a, b}\n"),
        ("NaN", HEAD + "rules:\n  - {const: .nan, to: /notes}\n  - {from: /session_id, to: /session}\n"),
        ("infinity", HEAD + RULES + "title: -.inf\n"),
        ("lone surrogate", HEAD + RULES + 'title: "\\ud800"\n'),
    ]


def _bombs() -> list[tuple[str, str]]:
    """(id, spec text) of specs that would take time or stack without limits."""
    laughs = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    laughs += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]  # 10**10 nodes
    return [
        ("billion laughs", HEAD + RULES + "\n".join(laughs) + "\n"),
        ("recursive alias", HEAD + RULES + "loop: &loop [*loop]\n"),
        ("recursive mapping alias", HEAD + RULES + "loop: &loop {self: *loop}\n"),
        ("deep flow nesting", HEAD + RULES + "title: " + "[" * 100_000 + "]" * 100_000 + "\n"),
        ("deep block nesting", HEAD + RULES + "title:\n" + "".join(" " * i + "- \n" for i in range(0, 400, 2))),
    ]


def _calls() -> list[tuple[str, str]]:
    """(id, spec text) of specs that call something that is not a registered function."""
    return [
        ("the registry's own entry", HEAD + RULES + "  - {from: /x, to: /notes, call: __formats_loaded__}\n"),
        ("unregistered", HEAD + RULES + "  - {from: /x, to: /notes, call: no_such_function, derived: true}\n"),
        ("reverse_call", HEAD + RULES + "  - {from: /x, to: /notes, reverse_call: os.system}\n"),
        ("a call as args", HEAD + RULES + "  - {call: int_ms, args: [{call: os.system, args: [/x]}], to: /notes}\n"),
        ("a check", HEAD + RULES + "checks:\n  - {call: subprocess.run, at: /x}\n"),
        ("a call that is a list", HEAD + RULES + "  - {from: /x, to: /notes, call: [os, system]}\n"),
    ]


def _all(marker: Path) -> list[tuple[str, str]]:
    return _tags(marker) + _bombs()[1:] + _calls()  # the billion laughs: test_spec_safety.py


IDS = [i for i, _ in _all(Path("m"))]


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "PWNED"


def _spec(tmp_path: Path, marker: Path, which: str) -> Path:
    text = dict(_all(marker))[which]
    path = tmp_path / "evil.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _no_traceback(result) -> None:
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output and "Traceback" not in result.stderr


@pytest.mark.parametrize("which", IDS)
def test_spec_lint_reports_a_located_problem(runner, tmp_path: Path, marker: Path, which: str):
    spec = _spec(tmp_path, marker, which)
    result = runner.invoke(cli, ["spec", "lint", str(spec), "--json"])
    _no_traceback(result)
    assert result.exit_code == 1, result.output
    problems = json.loads(result.stdout)
    codes = {p["code"] for p in problems}
    assert codes & {"spec.yaml", "spec.invalid", "spec.unknown_function"}, problems
    assert all(p["code"] and LOCATED.search(p.get("spec_at", "")) for p in problems if p["code"].startswith("spec.")), (
        problems
    )
    assert not marker.exists()


@pytest.mark.parametrize("which", IDS)
def test_run_refuses_the_spec(runner, tmp_path: Path, marker: Path, which: str):
    spec = _spec(tmp_path, marker, which)
    data = tmp_path / "in.json"
    data.write_text('{"session_id": "s", "agent": "a", "x": "echo hi"}')
    result = runner.invoke(cli, ["run", str(spec), str(data)])
    _no_traceback(result)
    assert result.exit_code in (1, 2), result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines and all(re.search(r"\[(spec\.[a-z_]+)\]", line) for line in lines), result.stderr
    assert all(LOCATED.search(line) for line in lines), result.stderr
    assert not marker.exists()


@pytest.mark.parametrize("which", IDS)
def test_load_spec_raises_a_mapc_error(tmp_path: Path, marker: Path, which: str):
    spec = _spec(tmp_path, marker, which)
    with pytest.raises(MapcError) as caught:
        program(str(spec))  # load and compile
    assert all(p.code.startswith("spec.") and p.spec_at is not None for p in caught.value.problems)
    assert not marker.exists()


def test_the_limits_are_named_in_the_message(tmp_path: Path, marker: Path):
    texts = dict(_bombs())
    with pytest.raises(MapcError, match=f"more than {MAX_SPEC_NODES} values"):
        load_spec("bomb.yaml", texts["billion laughs"])
    with pytest.raises(MapcError, match=f"nested more than {MAX_SPEC_DEPTH} levels"):
        load_spec("deep.yaml", texts["deep flow nesting"])
    with pytest.raises(MapcError, match="alias refers to a node that contains it"):
        load_spec("loop.yaml", texts["recursive alias"])


def test_the_shipped_aliases_still_load():
    """The ACTF spec shares one key list between two objects through an anchor: aliases are fine."""
    assert program("actf").spec.objects


def test_a_spec_that_is_not_utf8_is_a_spec_problem(runner, tmp_path: Path):
    spec = tmp_path / "latin1.yaml"
    spec.write_bytes(HEAD.encode() + RULES.encode() + b"title: caf\xe9\n")
    for args in (["spec", "lint", str(spec)], ["run", str(spec), str(spec)], ["spec", "table", str(spec)]):
        result = runner.invoke(cli, args)
        _no_traceback(result)
        assert result.exit_code == 1 and "[spec.yaml]" in result.output + result.stderr, result.output


def test_an_unreadable_spec_is_a_usage_error(runner, tmp_path: Path):
    for args in (["spec", "lint", str(tmp_path)], ["run", str(tmp_path / "none.yaml"), str(tmp_path)]):
        result = runner.invoke(cli, args)
        _no_traceback(result)
        assert result.exit_code == 2


def test_input_schema_is_a_name_never_a_path(runner, tmp_path: Path):
    """A schema file outside the package is never read (this one would break the schema compiler)."""
    outside = tmp_path / "outside.schema.json"
    outside.write_text("not json at all")
    rel = Path("..", *[".."] * 12, *outside.with_suffix("").with_suffix("").parts[1:]).as_posix()
    for name in (rel, str(outside.with_suffix("").with_suffix("")), "storyline-v1/../storyline-v1"):
        spec = tmp_path / "schema.yaml"
        spec.write_text(HEAD + f"input_schema: {json.dumps(name)}\n" + RULES)
        data = tmp_path / "in.json"
        data.write_text('{"session_id": "s", "agent": "a"}')
        result = runner.invoke(cli, ["run", str(spec), str(data)])
        _no_traceback(result)
        assert result.exit_code == 1 and "[schema.not_found]" in result.stderr, result.stderr
        result = runner.invoke(cli, ["spec", "lint", str(spec)])
        _no_traceback(result)
        assert result.exit_code == 1 and "[lint.unknown_schema]" in result.stdout, result.stdout


def test_dot_dot_in_a_pointer_is_a_key_not_a_path(runner, tmp_path: Path):
    """RFC 6901 has no `..`: it names the key "..", reads no file, and as a target is no place in a
    Storyline (lint.unknown_target; run: the Storyline it would make is invalid)."""
    spec = tmp_path / "dots.yaml"
    spec.write_text(
        HEAD
        + "rules:\n  - {from: /../../../etc/passwd, to: /session}\n  - {from: /agent, to: /agent/id}\n"
        + "  - {from: /x, to: /../../tmp/out}\n"
    )
    result = runner.invoke(cli, ["spec", "lint", str(spec), "--json"])
    _no_traceback(result)
    problems = json.loads(result.stdout)
    assert result.exit_code == 1
    assert any(p["code"] == "lint.unknown_target" and p["pointer"] == "/rules/2/to" for p in problems), problems
    data = tmp_path / "in.json"
    data.write_text('{"..": {"..": {"..": {"etc": {"passwd": "a session"}}}}, "agent": "a", "x": 1}')
    result = runner.invoke(cli, ["run", str(spec), str(data)])
    _no_traceback(result)
    assert result.exit_code == 1
    assert "[schema.additionalProperties]" in result.stderr  # the Storyline key "..", not a file
    assert not (tmp_path / "out").exists()
