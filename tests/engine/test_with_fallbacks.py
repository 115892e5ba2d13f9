"""`with_fallbacks` (engine/functions.py): what a missing key of an object is filled with, in which order."""

from __future__ import annotations

from mapc.engine.functions import lookup, with_fallbacks
from mapc.engine.values import MISSING

TABLE = [["a_len", "a", 0], ["ms", "total_ms", None], ["reason", "finish", None]]


def test_a_present_key_is_kept_and_a_missing_one_read_from_its_other_key():
    got = with_fallbacks({"ms": 5, "a": 3, "finish": "stop"}, TABLE, {})
    assert got == {"ms": 5, "a": 3, "finish": "stop", "a_len": 3, "reason": "stop"}
    assert list(got) == ["ms", "a", "finish", "a_len", "reason"]  # filled keys follow, in table order


def test_else_the_object_more_else_the_default():
    assert with_fallbacks({}, TABLE, {"total_ms": 7}) == {"a_len": 0, "ms": 7, "reason": None}
    assert with_fallbacks({"total_ms": None}, TABLE, {"total_ms": 7})["ms"] is None  # its own key, even null


def test_anything_but_an_object_is_filled_from_nothing():
    assert with_fallbacks(MISSING, TABLE, MISSING) == {"a_len": 0, "ms": None, "reason": None}
    assert with_fallbacks([1], [["k", None, 1]], None) == {"k": 1}
    assert with_fallbacks({"k": 2}, "not a table", {}) == {"k": 2}


def test_the_input_is_not_changed_and_specs_can_call_it():
    obj = {"a": 1}
    with_fallbacks(obj, TABLE, {})
    assert obj == {"a": 1}
    function = lookup("with_fallbacks")
    assert function is not None and function.arity == 3
