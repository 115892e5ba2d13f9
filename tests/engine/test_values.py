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


def test_json_equal_looks_inside_equal_containers():
    shared = {"a": [1, "x"]}
    assert json_equal(shared, shared)
    assert json_equal([shared, {"b": None}], [{"a": [1, "x"]}, {"b": None}])
    assert not json_equal([{"a": [1, "x"]}], [{"a": [True, "x"]}])  # == in Python, not in JSON
    assert not json_equal({"a": {"b": 1}}, {"a": {"b": 1.0}})
    assert not json_equal({"a": 1}, {"b": 1})
    assert not json_equal(["x", 2], ["x", 2, 3])
    assert not json_equal(float("nan"), float("nan"))
