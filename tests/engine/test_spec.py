"""engine/spec.py and engine/compile.py: spec loading, located spec errors, compilation."""

from __future__ import annotations

import pytest

from mapc.engine.compile import compile_spec
from mapc.engine.problems import MapcError
from mapc.engine.spec import load_spec

BASE = """\
name: toy
source: toy
arrays:
  "/items/{i}": "/turns/{t}"
objects:
  "": [items, name]
  "/items/{i}": [id, text]
rules:
  - {const: storyline/v1, to: /schema_version}
  - {from: /name, to: /session}
  - {from: "/items/{i}/id", to: "/turns/{t}/id"}
  - {from: "/items/{i}/text", to: "/turns/{t}/msg", keep_null: true}
"""


def _load(text: str):
    return compile_spec(load_spec("toy.yaml", text))


def _problems(text: str) -> list:
    with pytest.raises(MapcError) as info:
        _load(text)
    return list(info.value.problems)


def test_a_valid_spec_compiles_to_scopes():
    program = _load(BASE)
    assert [r.spec.index for r in program.root.rules] == [0, 1]
    (items,) = program.root.children
    assert items.src_rel == ("items",) and items.dst_rel == ("turns",)
    assert [r.targets for r in items.rules] == [(("id",),), (("msg",),)]
    assert "def forward_root" in program.source


def test_unknown_function_is_located_at_its_rule():
    (p,) = _problems(BASE + "  - {from: /name, call: no_such_fn, to: /trajectory}\n")
    assert p.code == "spec.unknown_function"
    assert (p.spec_at.file, p.spec_at.line, p.spec_at.rule) == ("toy.yaml", 13, "rules[4]")
    assert "int_ms" in p.message  # lists what is registered


def test_wrong_arity_is_reported():
    (p,) = _problems(BASE + "  - {call: int_ms, args: [/name, /name], to: /trajectory}\n")
    assert p.code == "spec.bad_arity"


def test_two_rules_writing_one_target():
    (p,) = _problems(BASE + "  - {from: /other, to: /session}\n")
    assert p.code == "spec.duplicate_target"
    assert "rules[1]" in p.message and p.spec_at.line == 13


def test_a_derived_promotion_may_share_a_target():
    program = _load(BASE + "  - {from: /other, to: /session, derived: true}\n")
    assert len(program.root.rules) == 3


def test_target_outside_the_source_scope():
    (p,) = _problems(BASE + '  - {from: "/items/{i}/x", to: /notes}\n')
    assert p.code == "spec.target_scope"


def test_bad_pointer_and_unknown_keys():
    problems = _problems(BASE + "  - {from: name, to: /x, colour: red}\n")
    assert {p.code for p in problems} == {"spec.bad_pointer", "spec.invalid"}
    assert all(p.spec_at.line == 13 for p in problems)


def test_yaml_syntax_error_names_line_and_column():
    (p,) = _problems("name: toy\nrules: [\n")
    assert p.code == "spec.yaml" and p.spec_at.file == "toy.yaml" and p.spec_at.line >= 2


def test_duplicate_yaml_key_is_an_error():
    with pytest.raises(MapcError, match="duplicate key 'name'"):
        _load("name: a\nname: b\n")


def test_unsafe_yaml_tags_are_refused():
    with pytest.raises(MapcError):
        _load("name: !!python/object/apply:os.system ['true']\n")


def test_unbound_variable():
    (p,) = _problems(BASE + '  - {from: "/other/{k}/x", to: /notes}\n')
    assert p.code == "spec.unbound_variable"


def test_count_tree_follows_declared_arrays():
    from mapc.engine.residual import ANY_INDEX, count_keys

    tree = _load(BASE).count_tree
    assert ANY_INDEX in tree["items"]
    assert count_keys({"/items/0/v": 1, "/items/12/v": 2, "/other/0/v": 3}, tree) == {
        "/items/*/v": 2,
        "/other/0/v": 1,
    }
