"""engine/values.py: JSON equality and emptiness."""

from mapc.engine.values import MISSING, is_empty, json_equal, json_type


def test_json_equal_keeps_types_apart():
    assert not json_equal(True, 1)
    assert not json_equal(1, 1.0)
    assert not json_equal({"a": [0]}, {"a": [False]})
    assert json_equal({"a": [1, None, {"b": "c"}]}, {"a": [1, None, {"b": "c"}]})
    assert not json_equal({"a": 1}, {"a": 1, "b": 2})


def test_is_empty():
    for v in (MISSING, None, "", {}, []):
        assert is_empty(v)
    for v in (0, False, " ", {"a": None}, [None]):
        assert not is_empty(v)


def test_json_type():
    assert [json_type(v) for v in (None, True, 1, 1.5, "s", [], {})] == [
        "null",
        "boolean",
        "integer",
        "number",
        "string",
        "array",
        "object",
    ]
