"""Named selections (engine/select.py): `at`, `last`/`first` with `where`, `has`, alternatives in order."""

from __future__ import annotations

import pytest

from mapc.engine.problems import MapcError
from mapc.engine.select import compile_selections

MESSAGES = {
    "messages": [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": ""},
        {"role": "user", "content": "b"},
        {"role": "assistant", "content": "c"},
        {"role": "assistant", "content": ""},
    ],
    "response": {},
    "values": ["", "x", "y", ""],
}


def select(spec, node=MESSAGES):
    return compile_selections({"s": spec})["s"](node)


def test_last_and_first_matching_element_with_its_tokens():
    assert select({"last": "/messages", "where": {"/role": "user"}}) == (("messages", 2), MESSAGES["messages"][2])
    assert select({"first": "/messages", "where": {"/role": "user"}}) == (("messages", 0), MESSAGES["messages"][0])


def test_has_filters_candidates():
    assert select({"last": "/values", "has": "text"}) == (("values", 2), "y")
    assert select({"first": "/values", "has": "text"}) == (("values", 1), "x")
    assert select({"first": "/values", "has": "empty"}) == (("values", 0), "")


def test_alternatives_are_tried_in_order():
    spec = [{"at": "/response", "has": "nonempty"}, {"last": "/messages", "where": {"/role": "user"}}]
    assert select(spec)[0] == ("messages", 2)
    assert select(spec, {"response": {"content": "x"}, "messages": []}) == (("response",), {"content": "x"})


def test_nothing_found_and_non_arrays():
    assert select({"last": "/messages", "where": {"/role": "tool"}}) is None
    assert select({"last": "/response"}) is None
    assert select({"at": "/missing"}) is None


@pytest.mark.parametrize(
    ("spec", "code"),
    [
        ({"at": "/a", "last": "/b"}, "spec.invalid"),
        ({"at": "no-slash"}, "spec.bad_pointer"),
        ({"at": "/a", "has": "shiny"}, "spec.invalid"),
        ({"at": "/a", "has": {"call": "no_such_function"}}, "spec.unknown_function"),
    ],
)
def test_bad_selections_are_spec_errors(spec, code):
    with pytest.raises(MapcError) as info:
        compile_selections({"s": spec})
    assert info.value.problems[0].code == code
