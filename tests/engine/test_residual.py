"""engine/residual.py: count normalization, recomputed counts, pointer checks, logical size."""

from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mapc.engine import pointer
from mapc.engine.residual import (
    ANY_INDEX,
    ANY_KEY,
    ANY_STRICT_INDEX,
    count_keys,
    is_count_index,
    is_strict_count_index,
    iter_field_problems,
    normalize,
    recompute_counts,
    unknown_size,
)

# Count trees equivalent to the four sources of docs/envelope.md (the shipped ones come from specs).
ATIF: dict[Any, Any] = {"steps": {ANY_INDEX: {"tool_calls": {ANY_INDEX: {}}}}}
ATIF["subagent_trajectories"] = {ANY_INDEX: ATIF}  # the same rules, recursively
ACTF = {
    "attempts": {
        ANY_KEY: {  # the attempt key is never wildcarded
            "trajectory": {
                "steps": {
                    ANY_INDEX: {
                        "tools": {ANY_INDEX: {}},
                        "observation": {ANY_INDEX: {}},
                        "assistant_content": {"tool_calls": {ANY_INDEX: {}}},
                    }
                }
            }
        }
    }
}
OPENAI = {
    "session_steps": {
        ANY_INDEX: {
            "messages": {ANY_INDEX: {"tool_calls": {ANY_INDEX: {}}}},
            "response": {"tool_calls": {ANY_INDEX: {}}},
        }
    }
}
AGENTICMD = {"blocks": {ANY_STRICT_INDEX: {}}}
TREES = {"atif": ATIF, "actf": ACTF, "openai-msg": OPENAI, "agenticmd": AGENTICMD}


def case(source: str, text: str, expected: str) -> Any:
    return pytest.param(source, text, expected, id=f"{source} {text or '(root)'}")


@pytest.mark.parametrize(
    ("source", "text", "expected"),
    [
        case("atif", "/steps/0/vendor", "/steps/*/vendor"),
        case("atif", "/steps/3/tool_calls/12/x", "/steps/*/tool_calls/*/x"),
        case("atif", "/steps/3/observation/results/0/x", "/steps/*/observation/results/0/x"),
        case(
            "atif",
            "/subagent_trajectories/1/steps/2/tool_calls/0/v",
            "/subagent_trajectories/*/steps/*/tool_calls/*/v",
        ),
        case(
            "atif",
            "/subagent_trajectories/0/subagent_trajectories/4/steps/1/v",
            "/subagent_trajectories/*/subagent_trajectories/*/steps/*/v",
        ),
        case("atif", "/steps/+1/vendor", "/steps/*/vendor"),
        case("atif", "/steps/01/vendor", "/steps/*/vendor"),
        case("atif", "/steps/0/0", "/steps/*/0"),  # numeric object key of a step stays literal
        case("atif", "/steps/x/tool_calls/0", "/steps/x/tool_calls/0"),  # matching stops at "x"
        case("atif", "/steps/-1/vendor", "/steps/-1/vendor"),
        case("atif", "/vendor~1root", "/vendor~1root"),
        case("atif", "/steps/0/vendor~1x~0y", "/steps/*/vendor~1x~0y"),  # escapes kept as stored
        case("atif", "/steps", "/steps"),
        case("atif", "", ""),
        case("actf", "/attempts/7/trajectory/steps/3/vendor", "/attempts/7/trajectory/steps/*/vendor"),
        case("actf", "/attempts/7/trajectory/steps/3/tools/1/x", "/attempts/7/trajectory/steps/*/tools/*/x"),
        case(
            "actf",
            "/attempts/a/trajectory/steps/0/observation/2",
            "/attempts/a/trajectory/steps/*/observation/*",
        ),
        case(
            "actf",
            "/attempts/1/trajectory/steps/0/assistant_content/tool_calls/5/y",
            "/attempts/1/trajectory/steps/*/assistant_content/tool_calls/*/y",
        ),
        case("actf", "/attempts/7/other/steps/3", "/attempts/7/other/steps/3"),
        case("actf", "/vendor_root", "/vendor_root"),
        case("openai-msg", "/session_steps/4/vendor_row", "/session_steps/*/vendor_row"),
        case(
            "openai-msg",
            "/session_steps/4/messages/2/tool_calls/1/x",
            "/session_steps/*/messages/*/tool_calls/*/x",
        ),
        case(
            "openai-msg",
            "/session_steps/4/response/tool_calls/0/x",
            "/session_steps/*/response/tool_calls/*/x",
        ),
        case("openai-msg", "/session_steps/4/response/choices/0", "/session_steps/*/response/choices/0"),
        case("agenticmd", "/blocks/3/header/x", "/blocks/*/header/x"),
        case("agenticmd", "/blocks/03/header/x", "/blocks/03/header/x"),  # strict: no leading zero
        case("agenticmd", "/blocks/+3/x", "/blocks/*/x"),  # the reference's is_array_index takes "+3"
        case("agenticmd", "/frontmatter/0", "/frontmatter/0"),
        case("no-tree", "/items/0/vendor", "/items/0/vendor"),  # a source without a tree
        case("atif", "x", "x"),  # not a pointer: kept (R-UF reports it)
        case("atif", "/steps/0/bad~2", "/steps/0/bad~2"),
    ],
)
def test_normalize(source, text, expected):
    assert normalize(text, TREES.get(source, {})) == expected


def test_literal_children_win_over_sentinels():
    tree = {"a": {"0": {"b": {ANY_INDEX: {}}}, ANY_INDEX: {}}}
    assert normalize("/a/0/b/1", tree) == "/a/0/b/*"
    assert normalize("/a/1/b/1", tree) == "/a/*/b/1"


def test_literal_children_match_unescaped_tokens():
    tree = {"a/b": {ANY_INDEX: {}}, "m~n": {ANY_INDEX: {}}}
    assert normalize("/a~1b/0", tree) == "/a~1b/*"
    assert normalize("/m~0n/0", tree) == "/m~0n/*"


@pytest.mark.parametrize(
    ("token", "count", "strict"),
    [
        ("0", True, True),
        ("7", True, True),
        ("+1", True, True),
        ("01", True, False),
        ("00", True, False),
        ("+01", True, True),  # as the reference: only a literal leading "0" is refused
        ("18446744073709551615", True, True),  # usize::MAX
        ("018446744073709551615", True, False),
        ("18446744073709551616", False, False),  # overflows usize
        pytest.param("9" * 5000, False, False, id="5000 digits"),
        ("", False, False),
        ("+", False, False),
        ("-1", False, False),
        ("-0", False, False),
        ("1.0", False, False),
        (" 1", False, False),
        ("1\n", False, False),
        ("١", False, False),  # a non-ASCII digit
        ("*", False, False),
    ],
    ids=repr,
)
def test_index_tokens(token, count, strict):
    assert is_count_index(token) is count
    assert is_strict_count_index(token) is strict


def test_count_keys_counts_distinct_pointers_per_key():
    fields = {"/steps/0/vendor": 1, "/steps/1/vendor": None, "/steps/1/0": "x", "/vendor": {}}
    assert count_keys(fields, ATIF) == {"/steps/*/0": 1, "/steps/*/vendor": 2, "/vendor": 1}


def test_recompute_counts():
    unknown_fields = {
        "sources": {
            "openai-msg": {"source_document_id": "s.json", "fields": {"/session_steps/0/x": 1}},
            "atif": {
                "source_document_id": "h",
                "fields": {
                    "/steps/0/vendor": 1,
                    "/steps/1/vendor": 2,
                    "/subagent_trajectories/0/steps/5/vendor": 3,
                },
            },
            "agenticmd": {"source_document_id": "h2", "fields": {}},
            "future": {"source_document_id": "f", "fields": {"/items/0/vendor": True}},
        }
    }
    counts = recompute_counts(unknown_fields, TREES)
    assert counts == {
        "atif": {"/steps/*/vendor": 2, "/subagent_trajectories/*/steps/*/vendor": 1},
        "future": {"/items/0/vendor": 1},
        "openai-msg": {"/session_steps/*/x": 1},
    }
    assert list(counts) == sorted(counts)  # written in the reference's (sorted) order


@pytest.mark.parametrize(
    "unknown_fields",
    [None, {}, {"sources": {}}, {"sources": []}, {"sources": {"atif": None}}, {"sources": {"atif": {}}}, 3],
    ids=["null", "no-sources", "empty-sources", "sources-array", "source-null", "no-fields", "number"],
)
def test_recompute_counts_of_nothing_or_malformed_is_empty(unknown_fields):
    assert recompute_counts(unknown_fields, TREES) == {}


def test_iter_field_problems_names_each_bad_pointer():
    unknown_fields = {
        "sources": {"a/b": {"source_document_id": "d", "fields": {"/ok": 1, "x": 2, "/bad~2": 3, "/bad~": 4, "": 5}}}
    }
    problems = list(iter_field_problems(unknown_fields))
    assert [p.code for p in problems] == ["storyline.bad_unknown_pointer"] * 3
    assert [p.pointer for p in problems] == [
        "/unknown_fields/sources/a~1b/fields/x",
        "/unknown_fields/sources/a~1b/fields/~1bad~02",
        "/unknown_fields/sources/a~1b/fields/~1bad~0",
    ]
    assert '"/bad~2"' in problems[1].message


def test_unknown_size_counts_utf8_bytes():
    unknown_fields = {
        "sources": {
            "atif": {"source_document_id": "hé", "fields": {"/é": "ü", "/n": None, "/o": {"a": [1, 2]}}},
            "empty": {"source_document_id": "abc", "fields": {}},
        }
    }
    # ids 3 + 3 bytes; pointers 3 + 2 + 2; values '"ü"' 4, 'null' 4, '{"a":[1,2]}' 11
    assert unknown_size(unknown_fields) == (3, 3 + 3 + 3 + 2 + 2 + 4 + 4 + 11)
    assert unknown_size(None) == (0, 0)


def test_unknown_size_survives_values_orjson_refuses():
    big = 2**70
    fields = {"sources": {"s": {"source_document_id": "", "fields": {"/b": big}}}}
    assert unknown_size(fields) == (1, 2 + len(str(big)))


texts = st.text(st.characters(exclude_categories=("Cs",)), max_size=5)  # orjson refuses lone surrogates
json_leaves = st.none() | st.booleans() | st.integers(-(2**63), 2**63) | texts
json_values = st.recursive(
    json_leaves,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)
hostile_tokens = st.sampled_from(
    ["steps", "tool_calls", "subagent_trajectories", "0", "01", "+1", "/", "~", "~01", "", "*", "x"]
)


@given(st.lists(hostile_tokens, max_size=7))
def test_normalize_only_turns_index_tokens_into_stars(tokens):
    text = pointer.format(tokens)
    out = pointer.parse(normalize(text, ATIF))
    assert len(out) == len(tokens)
    for before, after in zip(tokens, out, strict=True):
        assert after == before or (after == "*" and is_count_index(before))


@given(st.lists(hostile_tokens, max_size=7))
def test_normalize_without_a_tree_is_identity(tokens):
    text = pointer.format(tokens)
    assert normalize(text, {}) == text


@given(st.dictionaries(texts, json_values, max_size=5))
def test_unknown_size_matches_the_definition(fields):
    unknown_fields = {"sources": {"s": {"source_document_id": "id", "fields": fields}}}
    expected = 2 + sum(len(k.encode("utf-8", "surrogatepass")) + len(orjson.dumps(v)) for k, v in fields.items())
    assert unknown_size(unknown_fields) == (len(fields), expected)
