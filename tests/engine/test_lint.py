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
from mapc.engine.spec import BACK_KEYS, CHECK_KINDS, CONDITIONS, DEPRECATED_RULE_KEYS, RULE_KEYS, load_spec

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

# The grown language, clean: a fallback array (`else`), a derived whole object with authoritative
# rows inside it, first_of chains whose later or computed candidates read keys kept whole in
# unknown_fields (`function`), every check kind, preparation and detection.  Rows come last (tests append).
GROWN = """\
name: toy
source: toy
document:
  id: {from: /name}
arrays:
  "/items/{i}": "/turns/{t}"
  "/items/{i}/calls/{c}":
    to: "/turns/{t}/tool_calls/{c}"
    else: "/items/{i}/alt/{c}"
    omit_empty: true
objects:
  "": [items, name, bot, summary]
  "/items/{i}": [id, who, text, calls, alt]
  "/items/{i}/calls/{c}": &call [id, fn, args]
  "/items/{i}/alt/{c}": *call
checks:
  - {nonblank: /name}
  - {nonempty: /bot}
  - {nonempty_any: [/name, /bot]}
  - {unique: "/items/{i}/id"}
  - {minimum: 1, at: "/items/{i}/id"}
  - {increasing: "/items/{i}/id"}
  - {timestamp: "/items/{i}/ts"}
  - {size_of: /items, equals: /count}
  - {at_most: /count, at: /tried}
  - {nonblank_keys: /summary}
  - {same_if_both: ["/items/{i}/calls", "/items/{i}/alt"]}
  - {call: actf_step_problems, at: "/items/{i}"}
  - {nonempty: "/items/{i}/who", each: "/items/{i}", documents: all}
prepare:
  - {at: "/items/{i}/calls", when: object, call: json_text}
detect:
  paths: ["*.toy.json"]
  content:
    - {order: 50, has: [/items], prefix: {/name: toy}}
    - {order: 51, first: true, any: [{has: [/bot]}, {call: actf_document}]}
rules:
  - {const: storyline/v1, to: /schema_version}
  - {from: /name, to: /session}
  - {from: /bot, to: /agent/id}
  - {call: json_text, args: [/summary], to: /final_metrics, derived: true}
  - {from: /summary/ok, to: /final_metrics/ok}
  - {from: "/items/{i}/id", to: "/turns/{t}/id"}
  - {from: "/items/{i}/who", to: "/turns/{t}/src"}
  - {from: "/items/{i}/text", to: "/turns/{t}/msg", keep_null: true}
  - {from: "/items/{i}/calls/{c}/id", to: "/turns/{t}/tool_calls/{c}/tcid"}
  - first_of: ["/items/{i}/calls/{c}/fn", "/items/{i}/calls/{c}/function/name"]
    to: "/turns/{t}/tool_calls/{c}/fn"
  - first_of: ["/items/{i}/calls/{c}/args", {call: json_text, args: ["/items/{i}/calls/{c}/function"]}]
    to: "/turns/{t}/tool_calls/{c}/args"
"""


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


def test_the_grown_language_is_clean():
    assert [str(p) for p in _lint(GROWN)] == []


# --- unknown functions or variables ---------------------------------------------------------


def test_unknown_function():
    p = _one(BASE + "  - {from: /name, call: no_such_fn, to: /notes, derived: true}\n", "spec.unknown_function")
    assert (p.spec_at.file, p.spec_at.line, p.spec_at.column) == ("toy.yaml", NEXT_LINE, 5)
    assert p.pointer == "/rules/6"


def test_unknown_reverse_function():
    p = _one(BASE + "  - {from: /note, to: /notes, reverse_call: nope}\n", "spec.unknown_function")
    assert p.spec_at.line == NEXT_LINE


def test_unknown_functions_in_checks_computed_candidates_and_detection():
    p = _one(GROWN.replace("{call: actf_step_problems", "{call: no_check"), "spec.unknown_function")
    assert p.spec_at.line == GROWN.splitlines().index('  - {call: actf_step_problems, at: "/items/{i}"}') + 1
    assert "spec.unknown_function" in _codes(
        GROWN.replace('{call: json_text, args: ["/items', '{call: no_candidate, args: ["/items')
    )
    p = _one(GROWN.replace("{call: actf_document}", "{call: no_detector}"), "spec.unknown_function")
    assert p.pointer == "/detect/content/1/any/1/call"
    assert p.spec_at.line == GROWN.splitlines().index(next(x for x in GROWN.splitlines() if "actf_document" in x)) + 1
    p = _one(GROWN.replace("call: json_text}", "call: no_preparer}"), "spec.unknown_function")
    assert p.pointer == "/prepare/0/call"


def test_unknown_variable_in_a_source():
    p = _one(BASE + '  - {from: "/items/{x}/model", to: /notes}\n', "spec.unbound_variable")
    assert p.spec_at.line == NEXT_LINE


def test_variable_in_a_target_the_source_does_not_bind():
    # {c} of the target is bound by no array the source lies in.
    p = _one(BASE + '  - {from: "/items/{i}/id", to: "/turns/{t}/tool_calls/{c}/tcid"}\n', "spec.target_scope")
    assert p.spec_at.line == NEXT_LINE
    p = _one(BASE + '  - {from: "/items/{i}/id", to: /notes}\n', "spec.target_scope")  # out of its element
    assert p.spec_at.line == NEXT_LINE
    p = _one(BASE + '  - {const: 1, to: "/turns/{x}/nllm"}\n', "spec.target_scope")  # {x}: no array at all
    assert p.spec_at.line == NEXT_LINE


def test_a_row_may_read_a_value_of_an_enclosing_element():
    text = BASE.replace("[items, name, bot]", "[items, name, bot, model]")
    assert _codes(text + '  - {from: /model, to: "/turns/{t}/model", derived: true}\n') == []


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


def test_an_authoritative_row_inside_a_derived_whole_object_is_not_an_overlap():
    assert "lint.overlapping_targets" not in _codes(GROWN)
    # the same whole object written by an authoritative copy is an overlap
    text = GROWN.replace(
        "{call: json_text, args: [/summary], to: /final_metrics, derived: true}", "{from: /bot, to: /final_metrics}"
    )
    p = _one(text, "lint.overlapping_targets")
    assert "/final_metrics/ok" in p.message


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
    p = _one(GROWN + '  - {from: "/items/{i}/alt/0/id", to: "/turns/{t}/model"}\n', "lint.unreachable_row")
    assert "literal position" in p.message and "/items/{*}/alt" in p.message  # a fallback array too


def test_later_or_computed_candidates_may_read_keys_kept_in_unknown_fields():
    # `function` is not a known key of a call: kept whole, it round-trips; the chains read it last.
    assert "lint.unreachable_row" not in _codes(GROWN)
    # a chain of unknown keys only never fires
    text = GROWN.replace(
        '["/items/{i}/calls/{c}/fn", "/items/{i}/calls/{c}/function/name"]',
        '["/items/{i}/calls/{c}/function/name", "/items/{i}/calls/{c}/name"]',
    )
    p = _one(text, "lint.unreachable_row")
    assert "'function' is not a known key" in p.message and "every other first_of candidate" in p.message
    # an authoritative copy of one is still told
    p = _one(
        GROWN + '  - {from: "/items/{i}/calls/{c}/function/name", to: "/turns/{t}/tool_calls/{c}/kind"}\n',
        "lint.unreachable_row",
    )
    assert "'function' is not a known key" in p.message


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


def test_a_copy_from_an_enclosing_element_into_every_element():
    text = BASE.replace("[items, name, bot]", "[items, name, bot, model]")
    p = _one(text + '  - {from: /model, to: "/turns/{t}/model"}\n', "lint.no_reverse")
    assert "enclosing element" in p.message and p.pointer == "/rules/6" and p.spec_at.line == NEXT_LINE


def test_two_rows_writing_back_one_source():
    p = _one(BASE + "  - {from: /name, to: /trajectory}\n", "lint.reverse_conflict")
    assert "/name" in p.message


# --- known keys no row reads ----------------------------------------------------------------


def test_a_known_key_no_row_reads():
    p = _one(BASE.replace("[id, who, text]", "[id, who, text, model]"), "lint.unread_key")
    assert "'model'" in p.message and p.spec_at.line == 7  # the objects entry of /items/{i}


def test_the_rows_of_an_array_read_the_elements_of_its_fallback():
    # the elements of /items/{i}/alt are read by the rows of /items/{i}/calls/{c}
    assert "lint.unread_key" not in _codes(GROWN)
    text = GROWN.replace('"/items/{i}/alt/{c}": *call', '"/items/{i}/alt/{c}": [id, fn, args, extra]')
    p = _one(text, "lint.unread_key")
    assert "'extra'" in p.message and "/items/{i}/alt/{c}" in p.message
    text = GROWN.replace("&call [id, fn, args]", "&call [id, fn, args, extra]")
    assert [p.pointer for p in _lint(text) if p.code == "lint.unread_key"] == [
        "/objects/~1items~1{i}~1calls~1{c}",
        "/objects/~1items~1{i}~1alt~1{c}",
    ]


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
    accepted = {*RULE_KEYS, *DEPRECATED_RULE_KEYS}
    assert rule_keys == accepted, rule_keys ^ accepted
    assert set(SPEC_SCHEMA["$defs"]["back"]["properties"]) == set(BACK_KEYS)
    assert set(SPEC_SCHEMA["$defs"]["rule"]["properties"]) == rule_keys
    assert set(SPEC_SCHEMA["$defs"]["condition"]["enum"]) == set(CONDITIONS)
    check_keys = set(SPEC_SCHEMA["$defs"]["check"]["properties"])
    assert set(CHECK_KINDS) <= check_keys
    source = importlib.resources.files("mapc.engine").joinpath("spec.py").read_text(encoding="utf-8")
    for keys in (
        SPEC_SCHEMA["properties"],
        SPEC_SCHEMA["properties"]["document"]["properties"],
        SPEC_SCHEMA["properties"]["arrays"]["additionalProperties"]["anyOf"][1]["properties"],
        check_keys,
    ):
        for key in keys:
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
        {**base, "rules": [{"from": {"var": "a", "story": "/x"}, "to": "/y"}]},
        {**base, "rules": [{"from": {"count": "turns"}, "to": "/y"}]},
        {**base, "rules": [{"call": "f", "to": "/y", "reverse": {"call": "g"}}]},
        {**base, "checks": [{"unique": "/a", "timestamp": "/b"}]},
        {**base, "checks": [{"minimum": 1}]},
        {**base, "checks": [{"size_of": "/a"}]},
        {**base, "checks": [{"at_most": "/k"}]},
        {**base, "checks": [{"call": "f"}]},
        {**base, "checks": [{"nonblank": "/a", "equals": "/b"}]},
        {**base, "checks": [{"same_if_both": ["/a"]}]},
        {**base, "arrays": {"/a/{i}": {"else": "/b/{i}"}}},
        {**base, "arrays": {"/a/{i}": {"to": "/turns/{t}", "otherwise": "/b/{i}"}}},
        {**base, "document": {"each": "/a/{a}", "many": True}},
        {**base, "detect": {"content": [{"has": "/a"}]}},
        {**base, "prepare": [{"at": "/a/{i}", "when": "list"}]},
    ):
        assert not validator.is_valid(bad), json.dumps(bad)[:200]
        assert _lint(yaml.safe_dump(bad)), json.dumps(bad)[:200]


def test_the_spec_schema_accepts_every_key_of_the_grown_language():
    validator = jsonschema.Draft202012Validator(SPEC_SCHEMA)
    data = yaml.safe_load(GROWN)
    assert [e.message for e in validator.iter_errors(data)] == []
    rule = {
        "first_of": [{"parent": "/a"}, {"story": "/b"}, {"source": "/c"}, {"var": "i"}, {"count": "documents"}],
        "with": [{"call": "f", "args": ["/x", {"var": "i"}]}],
        "reverse_first_of": ["/y", {"call": "g"}],
        "reverse": {"call": "h", "args": ["/turns/{t}/x"], "to": ["/a", "/b"]},
        "write_back_call": "k",
        "reverse_only": True,
        "to": "/z",
    }
    assert [e.message for e in validator.iter_errors({**data, "rules": [rule]})] == []
