"""engine/lint.py: every defect class, shown by a broken spec, located at file:line:column;
and schemas/mapping-spec.schema.json agrees with what engine/spec.py accepts."""

from __future__ import annotations

import importlib.resources
import json

import jsonschema
import pytest
import yaml

from mapc.engine import catalog
from mapc.engine.lint import iter_lint_problems, lint_path
from mapc.engine.schema import load_schema
from mapc.engine.spec import CHECK_KINDS, CONDITIONS, _SpecReader, load_spec

# A small spec that lints clean: every defect test below adds or changes one line.
BASE = """\
name: toy
source: toy
arrays:
  "/items/{i}": "/turns/{t}"
objects:
  "": [items, name, bot]
  "/items/{i}": [id, who, text]
rules:
  - {const: storyline/v1, to: /schema_version}
  - {from: /name, to: /session}
  - {from: /bot, to: /agent/id}
  - {from: "/items/{i}/id", to: "/turns/{t}/id"}
  - {from: "/items/{i}/who", to: "/turns/{t}/src"}
  - {from: "/items/{i}/text", to: "/turns/{t}/msg", keep_null: true}
"""
NEXT_LINE = BASE.count("\n") + 1  # the line an appended rule lands on


def _lint(text: str) -> list:
    return lint_path("toy.yaml", text)


def _codes(text: str) -> list[str]:
    return [p.code for p in _lint(text)]


def _one(text: str, code: str):
    found = [p for p in _lint(text) if p.code == code]
    assert found, f"no {code}: {[str(p) for p in _lint(text)]}"
    return found[0]


def test_the_base_spec_is_clean():
    assert _lint(BASE) == []


@pytest.mark.parametrize("name", catalog.shipped_names())
def test_shipped_specs_are_clean(name: str):
    text = importlib.resources.files("mapc.mappings").joinpath(f"{name}.yaml").read_text(encoding="utf-8")
    assert [str(p) for p in lint_path(f"{name}.yaml", text)] == []


# --- unknown functions or variables ---------------------------------------------------------


def test_unknown_function():
    p = _one(BASE + "  - {from: /name, call: no_such_fn, to: /notes, derived: true}\n", "spec.unknown_function")
    assert (p.spec_at.file, p.spec_at.line, p.spec_at.column) == ("toy.yaml", NEXT_LINE, 5)
    assert p.pointer == "/rules/6"


def test_unknown_reverse_function():
    p = _one(BASE + "  - {from: /note, to: /notes, reverse_call: nope}\n", "spec.unknown_function")
    assert p.spec_at.line == NEXT_LINE


def test_unknown_variable_in_a_source():
    p = _one(BASE + '  - {from: "/items/{x}/model", to: /notes}\n', "spec.unbound_variable")
    assert p.spec_at.line == NEXT_LINE


def test_variable_in_a_target_the_source_does_not_bind():
    p = _one(BASE + '  - {from: /name, to: "/turns/{t}/model"}\n', "spec.target_scope")
    assert p.spec_at.line == NEXT_LINE


# --- invalid pointers -----------------------------------------------------------------------


def test_a_pointer_that_is_not_a_pointer():
    problems = _lint(BASE + "  - {from: name, to: /notes}\n")
    assert "spec.bad_pointer" in [p.code for p in problems]
    assert all(p.spec_at.line == NEXT_LINE for p in problems)


def test_a_bad_escape():
    assert "spec.bad_pointer" in _codes(BASE + "  - {from: /na~2me, to: /notes}\n")


def test_a_target_that_is_no_place_in_a_storyline():
    p = _one(BASE + "  - {from: /note, to: /turns_typo}\n", "lint.unknown_target")
    assert p.spec_at.line == NEXT_LINE and p.pointer == "/rules/6/to"
    assert "lint.unknown_target" in _codes(BASE + '  - {from: "/items/{i}/m", to: "/turns/{t}/message"}\n')
    assert "lint.unknown_target" in _codes(BASE + "  - {from: /v, to: /session/x}\n")  # below a string


def test_targets_inside_free_json_are_places():
    text = BASE + '  - {from: "/items/{i}/x", to: "/turns/{t}/extra/deep/x"}\n'
    assert "lint.unknown_target" not in _codes(text)


def test_an_unknown_input_schema():
    assert "lint.unknown_schema" in _codes("input_schema: no-such-schema\n" + BASE)


# --- two rows writing one target ------------------------------------------------------------


def test_two_rows_writing_one_target():
    p = _one(BASE + "  - {from: /title, to: /session}\n", "spec.duplicate_target")
    assert p.spec_at.line == NEXT_LINE and "rules[1]" in p.message


def test_a_row_writing_inside_another_rows_target():
    text = BASE.replace(
        "  - {from: /bot, to: /agent/id}\n", "  - {from: /bot, to: /agent/id}\n  - {from: /who, to: /agent}\n"
    )
    p = _one(text, "lint.overlapping_targets")
    assert "/agent/id" in p.message


def test_a_nested_copy_of_the_same_data_is_not_an_overlap():
    text = BASE + '  - {from: "/items/{i}/meta", to: "/turns/{t}/extra"}\n'
    text += '  - {from: "/items/{i}/meta/k", to: "/turns/{t}/extra/k", reverse_only: true}\n'
    assert "lint.overlapping_targets" not in _codes(text.replace("[id, who, text]", "[id, who, text, meta]"))


# --- required targets -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("drop", "missing"),
    [
        ("  - {from: /name, to: /session}\n", "/session"),
        ("  - {from: /bot, to: /agent/id}\n", "/agent"),
        ("  - {const: storyline/v1, to: /schema_version}\n", "/schema_version"),
        ('  - {from: "/items/{i}/who", to: "/turns/{t}/src"}\n', "/turns/{*}/src"),
        ('  - {from: "/items/{i}/text", to: "/turns/{t}/msg", keep_null: true}\n', "/turns/{*}/msg"),
    ],
)
def test_a_required_storyline_key_no_row_writes(drop, missing):
    problems = [p for p in _lint(BASE.replace(drop, "")) if p.code == "lint.required_target"]
    assert any(p.message.startswith(f"Storyline requires {missing},") for p in problems), [p.message for p in problems]


def test_required_keys_of_objects_the_spec_writes_into():
    text = BASE + '  - {from: "/items/{i}/call", to: "/turns/{t}/tool_calls"}\n'
    assert "lint.required_target" not in _codes(text.replace("[id, who, text]", "[id, who, text, call]"))
    calls = BASE.replace("[id, who, text]", "[id, who, text, calls]").replace(
        'arrays:\n  "/items/{i}": "/turns/{t}"\n',
        'arrays:\n  "/items/{i}": "/turns/{t}"\n  "/items/{i}/calls/{c}": "/turns/{t}/tool_calls/{c}"\n',
    )
    text = calls + '  - {from: "/items/{i}/calls/{c}/id", to: "/turns/{t}/tool_calls/{c}/tcid"}\n'
    messages = [p.message for p in _lint(text) if p.code == "lint.required_target"]
    assert any("tool_calls/{*}/fn" in m for m in messages) and any("tool_calls/{*}/args" in m for m in messages)


# --- rows that can never fire ---------------------------------------------------------------


def test_a_source_under_a_key_the_object_does_not_list():
    p = _one(BASE + "  - {from: /title, to: /notes}\n", "lint.unreachable_row")
    assert "'title' is not a known key" in p.message and p.spec_at.line == NEXT_LINE


def test_a_literal_position_into_a_declared_array():
    p = _one(BASE + '  - {from: "/items/0/id", to: /notes}\n', "lint.unreachable_row")
    assert "literal position" in p.message


def test_a_source_repeated_in_a_first_of_chain():
    p = _one(
        BASE + "  - {first_of: [/name, /bot, /name], to: /trajectory, derived: true}\n",
        "lint.unreachable_row",
    )
    assert p.pointer == "/rules/6/first_of/2"


def test_a_first_of_source_shadowed_by_an_always_present_one():
    # ATIF's input schema requires /agent/name as a string: /notes is never chosen.
    text = "input_schema: atif-v1.7\n" + BASE.replace("[items, name, bot]", "[items, name, bot, agent, notes]")
    p = _one(
        text + "  - {first_of: [/agent/name, /notes], to: /trajectory, derived: true}\n",
        "lint.unreachable_row",
    )
    assert "always present" in p.message and p.pointer == "/rules/6/first_of/1"


def test_a_condition_the_input_schema_rules_out():
    text = "input_schema: atif-v1.7\n" + BASE.replace("[items, name, bot]", "[items, name, bot, notes]")
    p = _one(text + "  - {from: /notes, to: /trajectory, when: integer}\n", "lint.unreachable_row")
    assert "string" in p.message


def test_a_row_repeating_an_earlier_one():
    text = BASE + '  - {from: "/items/{i}/id", to: "/turns/{t}/id", derived: true}\n'
    p = _one(text, "lint.unreachable_row")
    assert "repeats rules[3]" in p.message


# --- rows whose reverse is undefined --------------------------------------------------------


def test_a_call_row_that_is_not_derived():
    p = _one(BASE + '  - {call: int_ms, args: ["/items/{i}/ms"], to: "/turns/{t}/latency_ms"}\n', "lint.no_reverse")
    assert "mark it derived" in p.message
    fixed = BASE + '  - {call: int_ms, args: ["/items/{i}/ms"], to: "/turns/{t}/latency_ms", derived: true}\n'
    assert "lint.no_reverse" not in _codes(fixed.replace("[id, who, text]", "[id, who, text, ms]"))


def test_a_converting_copy_without_reverse_call():
    text = BASE.replace("[id, who, text]", "[id, who, text, ms]")
    p = _one(text + '  - {from: "/items/{i}/ms", call: int_ms, to: "/turns/{t}/latency_ms"}\n', "lint.no_reverse")
    assert "reverse_call" in p.message


def test_a_copy_whose_target_is_another_rows_primary_target():
    text = BASE.replace("[items, name, bot]", "[items, name, bot, note, alt]")
    text += "  - {from: /note, to: [/notes, /trajectory]}\n  - {from: /alt, to: /trajectory, derived: true}\n"
    p = _one(text, "lint.ambiguous_reverse")
    assert "/trajectory" in p.message and p.spec_at.line == NEXT_LINE


def test_two_rows_writing_back_one_source():
    p = _one(BASE + "  - {from: /name, to: /trajectory}\n", "lint.reverse_conflict")
    assert "/name" in p.message


# --- known keys no row reads ----------------------------------------------------------------


def test_a_known_key_no_row_reads():
    p = _one(BASE.replace("[id, who, text]", "[id, who, text, model]"), "lint.unread_key")
    assert "'model'" in p.message and p.spec_at.line == 7  # the objects entry of /items/{i}


# --- the spec schema ------------------------------------------------------------------------


def test_schema_problems_are_located():
    # spec.py reads `nonempty: "yes"` as true; the schema says it is a boolean.
    text = BASE.replace("[items, name, bot]", "[items, name, bot, alt]")
    problems = _lint(text + '  - {first_of: [/name, /alt], nonempty: "yes", to: /trajectory, derived: true}\n')
    assert [(p.code, p.pointer, p.spec_at.line) for p in problems] == [("lint.schema", "/rules/6/nonempty", NEXT_LINE)]


def test_load_problems_win_over_schema_problems_on_the_same_line():
    problems = _lint(BASE + "  - {from: /x, to: /notes, when: sometimes}\n")
    assert [p.code for p in problems] == ["spec.invalid"]


def test_yaml_mistakes_are_located():
    [p] = _lint(BASE + "  - {from: /x, to: [/a\n")
    assert p.code == "spec.yaml" and p.spec_at.line > 1


def test_iter_lint_problems_takes_a_loaded_spec():
    spec = load_spec("toy.yaml", BASE + "  - {from: /title, to: /notes}\n")
    assert [p.code for p in iter_lint_problems(spec)] == ["lint.unreachable_row"]


SPEC_SCHEMA = load_schema("mapping-spec")


def test_the_spec_schema_is_a_valid_schema_and_accepts_the_shipped_specs():
    jsonschema.Draft202012Validator.check_schema(SPEC_SCHEMA)
    for name in catalog.shipped_names():
        text = importlib.resources.files("mapc.mappings").joinpath(f"{name}.yaml").read_text(encoding="utf-8")
        errors = list(jsonschema.Draft202012Validator(SPEC_SCHEMA).iter_errors(yaml.safe_load(text)))
        assert not errors, [e.message for e in errors]


def test_the_spec_schema_grows_with_spec_py():
    """The schema must accept every key engine/spec.py accepts (add new keys to both)."""
    rule_keys = set(SPEC_SCHEMA["$defs"]["rule_keys"]["properties"])
    assert rule_keys >= _SpecReader._RULE_KEYS, _SpecReader._RULE_KEYS - rule_keys
    assert set(SPEC_SCHEMA["$defs"]["rule"]["properties"]) == rule_keys
    assert set(SPEC_SCHEMA["$defs"]["condition"]["enum"]) == set(CONDITIONS)
    check_keys = set(SPEC_SCHEMA["$defs"]["check"]["properties"])
    assert set(CHECK_KINDS) <= check_keys
    top = set(SPEC_SCHEMA["properties"])
    source = importlib.resources.files("mapc.engine").joinpath("spec.py").read_text(encoding="utf-8")
    for key in top:
        assert f'"{key}"' in source, key


def test_the_spec_schema_rejects_what_spec_py_rejects():
    validator = jsonschema.Draft202012Validator(SPEC_SCHEMA)
    base = yaml.safe_load(BASE)
    for bad in (
        {**base, "colour": "red"},
        {**base, "rules": [{"frm": "/x", "to": "/y"}]},
        {**base, "rules": [{"from": "/x", "const": 1, "to": "/y"}]},
        {**base, "rules": [{"from": "/x"}]},
        {**base, "rules": [{"from": "x", "to": "/y"}]},
        {**base, "checks": [{"unique": "/a", "timestamp": "/b"}]},
        {**base, "checks": [{"minimum": 1}]},
    ):
        assert not validator.is_valid(bad), json.dumps(bad)[:200]
