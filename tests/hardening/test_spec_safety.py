"""Spec safety: a mapping spec is data.  YAML tags, aliases and calls cannot run code, read files or
hang the loader; each attempt is a spec error with file:line:column, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIXTURES

from mapc.cli.main import cli
from mapc.engine.problems import MapcError
from mapc.engine.spec import load_spec

BOMB = "\n".join(
    [f"a0: &a0 [{', '.join(['x'] * 9)}]"]
    + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
    + ["name: [*a8]"]
)
EVIL = {
    "python object": 'name: x\nrules: !!python/object/apply:os.system ["touch {marker}"]\n',
    "python name": "name: !!python/name:os.system x\n",
    "python module": "name: !!python/module:os x\n",
    "custom tag": "name: !shell 'touch {marker}'\n",
    "alias bomb": BOMB,
}


@pytest.mark.parametrize("case", sorted(EVIL))
def test_evil_yaml_is_a_spec_error_and_runs_nothing(case: str, tmp_path: Path, runner: CliRunner) -> None:
    marker = tmp_path / "pwned"
    spec = tmp_path / "evil.yaml"
    spec.write_text(EVIL[case].replace("{marker}", str(marker)))
    with pytest.raises(MapcError) as info:
        load_spec(spec)
    assert info.value.problems[0].code == "spec.yaml"
    assert info.value.problems[0].spec_at is not None and info.value.problems[0].spec_at.line >= 1
    for args in (["spec", "lint", str(spec)], ["run", str(spec), str(FIXTURES / "atif" / "sparse_13.json")]):
        result = runner.invoke(cli, args)
        assert result.exit_code == 1, result.output
        assert "Traceback" not in result.output
        assert "[spec.yaml]" in result.output
    assert not marker.exists()


@pytest.mark.parametrize("call", ["os.system", "builtins.eval", "__import__", "open"])
def test_a_call_names_only_registered_functions(call: str, tmp_path: Path, runner: CliRunner) -> None:
    spec = tmp_path / "calls.yaml"
    spec.write_text(f"name: x\nrules:\n  - {{call: {call}, args: [/a], to: /session, derived: true}}\n")
    result = runner.invoke(cli, ["run", str(spec), str(FIXTURES / "atif" / "sparse_13.json")])
    assert result.exit_code == 1
    assert "[spec.unknown_function]" in result.output and "calls.yaml:3:" in result.output


def test_merge_keys_are_plain_yaml(tmp_path: Path) -> None:
    spec = tmp_path / "merge.yaml"
    spec.write_text(
        'name: x\narrays:\n  "/a/{i}": "/turns/{t}"\n'
        'rules:\n  - &row {from: "/a/{i}/k", to: "/turns/{t}/msg"}\n'
        '  - {<<: *row, from: "/a/{i}/k2", to: "/turns/{t}/reason"}\n'
    )
    loaded = load_spec(spec)
    assert [(str(r.sources[0]), r.targets[0].text) for r in loaded.rules] == [
        ("/a/{i}/k", "/turns/{t}/msg"),
        ("/a/{i}/k2", "/turns/{t}/reason"),
    ]


def test_pointers_cannot_leave_the_document(tmp_path: Path, runner: CliRunner) -> None:
    spec = tmp_path / "escape.yaml"
    spec.write_text("name: x\nrules:\n  - {from: ../../etc/passwd, to: /session}\n")
    result = runner.invoke(cli, ["spec", "lint", str(spec)])
    assert result.exit_code == 1
    assert "[spec.bad_pointer]" in result.output
