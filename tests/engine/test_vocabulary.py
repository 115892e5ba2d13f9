"""The rule vocabulary: ten keys and one `back:` block; the first vocabulary still loads (with a
warning naming the new form), and `mapc spec upgrade` rewrites it into the same rules."""

from __future__ import annotations

import importlib.resources
import warnings
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from mapc.cli.main import cli
from mapc.engine import catalog
from mapc.engine.problems import MapcError
from mapc.engine.spec import BACK_KEYS, DEPRECATED_RULE_KEYS, RULE_KEYS, SpecDeprecationWarning, load_spec
from mapc.engine.upgrade import _comparable, upgrade_text

ROOT = Path(__file__).resolve().parents[2]

HEAD = """name: toy
source: toy
arrays: {"/items/{i}": "/turns/{t}"}
objects: {"": [title, alt, items, when], "/items/{i}": [id, text]}
rules:
"""

OLD = (
    HEAD
    + """  - {const: storyline/v1, to: /schema_version}
  - first_of: [/title, /alt]
    nonempty: true
    to: /session
  - {from: /when, to: /started_at, reverse_call: rfc3339_text, reverse_default: "1970-01-01T00:00:00Z"}
  - from: /alt
    to: /notes
    reverse_when: {/origin/format: toy}
    reverse_first_of: [/session]
  - {from: "/items/{i}/id", to: "/turns/{t}/id"}
  - call: effective_kind
    args: ["/items/{i}/text", "/items/{i}/none"]
    to: "/turns/{t}/kind"
    derived: true
  - {from: "/items/{i}/text", to: "/turns/{t}/msg", reverse_only: true}
"""
)

NEW = (
    HEAD
    + """  - {const: storyline/v1, to: /schema_version}
  - first_of: [/title, /alt]
    to: /session
    when: nonempty
  - {from: /when, to: /started_at, back: {default: "1970-01-01T00:00:00Z", call: rfc3339_text}}
  - from: /alt
    to: /notes
    back: {when: {/origin/format: toy}, or: [/session]}
  - {from: "/items/{i}/id", to: "/turns/{t}/id"}
  - call: effective_kind
    args: ["/items/{i}/text", "/items/{i}/none"]
    to: "/turns/{t}/kind"
    back: none
  - {from: "/items/{i}/text", to: "/turns/{t}/msg", forward: none}
"""
)


def _load(text: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SpecDeprecationWarning)
        return load_spec("toy.yaml", text)


def test_the_language_has_at_most_twelve_rule_keys_each_used_by_a_shipped_spec():
    assert len(RULE_KEYS) <= 12
    used: set[str] = set()
    for name in catalog.shipped_names():
        text = importlib.resources.files("mapc.mappings").joinpath(f"{name}.yaml").read_text(encoding="utf-8")
        data = yaml.safe_load(text)
        for rule in [*(data.get("rules") or []), (data.get("document") or {}).get("id") or {}]:
            used |= set(rule)
    assert used <= set(RULE_KEYS), f"shipped specs use old keys: {used - set(RULE_KEYS)}"
    assert used == set(RULE_KEYS), f"keys no shipped spec uses: {set(RULE_KEYS) - used}"


def test_the_new_form_loads_into_the_same_rules_as_the_old():
    assert _comparable(_load(NEW).rules) == _comparable(_load(OLD).rules)


def test_the_old_vocabulary_warns_naming_the_new_form():
    with pytest.warns(SpecDeprecationWarning) as record:
        load_spec("toy.yaml", OLD)
    message = str(record[0].message)
    for key in ("nonempty", "reverse_call", "reverse_default", "reverse_when", "reverse_first_of", "derived"):
        assert f"{key} -> {DEPRECATED_RULE_KEYS[key]}" in message
    assert "mapc spec upgrade toy.yaml" in message
    with warnings.catch_warnings():
        warnings.simplefilter("error", SpecDeprecationWarning)
        load_spec("toy.yaml", NEW)  # no warning


def test_upgrade_rewrites_the_old_rules_and_nothing_else():
    text, count = upgrade_text("toy.yaml", OLD)
    assert count == 5
    assert text == NEW
    assert upgrade_text("toy.yaml", text) == (text, 0)


@pytest.mark.parametrize("name", ["atif", "actf", "openai-msg"])
def test_upgrading_a_shipped_spec_keeps_its_rules_and_comments(name: str):
    text = (ROOT / "mappings" / f"{name}.yaml").read_text(encoding="utf-8")
    upgraded, _ = upgrade_text(f"{name}.yaml", text)  # checks itself: same rules, no old key
    comments = [line for line in text.splitlines() if line.lstrip().startswith("#")]
    assert comments == [line for line in upgraded.splitlines() if line.lstrip().startswith("#")]
    assert not _load(upgraded).deprecated


def test_upgrade_refuses_a_rule_without_a_new_form():
    text = HEAD + "  - {first_of: [/title, /alt], nonempty: true, when: text, to: /session}\n"
    with pytest.raises(MapcError) as error:
        upgrade_text("toy.yaml", text)
    (problem,) = error.value.problems
    assert problem.code == "spec.upgrade"
    assert (problem.spec_at.line, problem.spec_at.rule) == (6, "rules[0]")


@pytest.mark.parametrize(
    ("rule", "key", "column"),
    [
        ("{from: /title, to: /session, back: {bogus: 1}}", "back/bogus", 30),
        ("{from: /title, to: /session, back: {call: 7}}", "back/call", 37),
        ("{from: /title, to: /session, back: {args: [/a]}}", "back/args", 37),
        ("{from: /title, to: /session, forward: yes}", "forward", 30),
        ("{from: /title, to: /session, back: none, derived: true}", "", 5),
        ("{from: /title, to: /session, back: {or: [7]}}", "back/or/0", 42),
    ],
)
def test_a_bad_back_block_is_located(rule: str, key: str, column: int):
    with pytest.raises(MapcError) as error:
        _load(HEAD + f"  - {rule}\n")
    problem = error.value.problems[0]
    assert problem.pointer == "/rules/0" + (f"/{key}" if key else "")
    assert problem.spec_at.line == 6
    assert problem.spec_at.column >= column  # at the named key's value, inside the rule


def test_mapc_spec_upgrade_rewrites_the_file(tmp_path: Path):
    path = tmp_path / "toy.yaml"
    path.write_text(OLD, encoding="utf-8")
    result = CliRunner().invoke(cli, ["spec", "upgrade", str(path), "--stdout"])
    assert result.exit_code == 0, result.output
    assert result.stdout == NEW and path.read_text(encoding="utf-8") == OLD
    result = CliRunner().invoke(cli, ["spec", "upgrade", str(path)])
    assert result.exit_code == 0, result.output
    assert path.read_text(encoding="utf-8") == NEW
    assert "5 rule(s) upgraded" in result.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["toy.yaml"]  # no temporary file left


def test_back_keys_are_the_schema_s():
    assert set(BACK_KEYS) == {"default", "when", "or", "or_foreign", "call", "args", "to", "home"}


def test_lint_locates_a_broken_back_block_in_a_shipped_spec():
    from mapc.engine.lint import lint_path

    text = (ROOT / "mappings" / "atif.yaml").read_text(encoding="utf-8")
    assert "back: {call: rfc3339_text}" in text
    broken = text.replace("back: {call: rfc3339_text}", "back: {call: no_such_function}")
    line = next(i for i, row in enumerate(broken.splitlines(), 1) if "no_such_function" in row)
    problems = lint_path("atif.yaml", broken)
    found = [p for p in problems if "no_such_function" in p.message]
    assert found and all(p.spec_at.line == line for p in found), [(p.code, p.spec_at) for p in problems]
    assert lint_path("atif.yaml", text) == []
