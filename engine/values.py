"""JSON values as orjson gives them: dict, list, str, int, float, bool, None.

`MISSING` keeps "absent" apart from JSON null, and `json_equal` keeps ``True`` apart from ``1``
(Python's ``==`` does not), which "consume if equal", envelope merges and the round-trip laws need.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Final

import orjson


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Final = _Missing()
"""The value of a pointer that resolves to nothing (distinct from JSON null)."""

JSON_TYPES: Final = {
    "null": (type(None),),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
    "string": (str,),
    "array": (list,),
    "object": (dict,),
}


def json_type(value: Any) -> str:
    """The JSON type name of `value` (``integer`` for ints, ``number`` for floats)."""
    t = type(value)
    if t is bool:
        return "boolean"
    if t is int:
        return "integer"
    if t is float:
        return "number"
    if t is str:
        return "string"
    if t is list:
        return "array"
    if t is dict:
        return "object"
    if value is None:
        return "null"
    return t.__name__


def is_int(value: Any) -> bool:
    """True for a JSON integer (never for a bool or a float)."""
    return type(value) is int


_PLAIN = (str, int, bool, type(None))  # types whose `==` already is JSON equality (same type on both sides)


def json_equal(a: Any, b: Any) -> bool:
    """Equality in the JSON data model: types must match, so ``True != 1`` and ``1 != 1.0``.

    A value is equal to itself (JSON has no NaN; a float NaN is still unequal to everything).
    """
    ta = type(a)
    if ta is not type(b):
        return False
    if a is b:
        return ta is not float or a == a
    if ta is dict:
        if a.keys() != b.keys():
            return False
        for k, x in a.items():
            y = b[k]
            if x is y and type(x) is not float:
                continue
            tx = type(x)
            if tx is not type(y):
                return False
            if tx in _PLAIN:
                if x != y:
                    return False
            elif not json_equal(x, y):
                return False
        return True
    if ta is list:
        if len(a) != len(b):
            return False
        for x, y in zip(a, b):  # noqa: B905 (same length)
            if x is y and type(x) is not float:
                continue
            tx = type(x)
            if tx is not type(y):
                return False
            if tx in _PLAIN:
                if x != y:
                    return False
            elif not json_equal(x, y):
                return False
        return True
    return bool(a == b)


def is_empty(value: Any) -> bool:
    """The RFCs' "empty" values: absent, null, ``""``, ``{}`` and ``[]``."""
    return value is MISSING or value is None or (type(value) in (str, dict, list) and not value)


def replaced(node: Any, path: list[Any], value: Any) -> Any:
    """A copy of `node` with `value` at `path` (keys and positions); only the containers on the path
    are copied, so the input is left as it was."""
    if not path:
        return value
    copy = list(node) if type(node) is list else dict(node)
    copy[path[0]] = replaced(node[path[0]], path[1:], value)
    return copy


def json_bytes(value: Any) -> bytes | None:
    """`value` as JSON: orjson, else (nesting past its 254 levels, integers beyond 64 bits) the
    standard library, as the CLI writes its output; None for a value that is not JSON at all."""
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        pass  # the standard library below writes what orjson does not
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 5_000))  # JSON nests up to 1,024 levels; each costs a few frames
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError, RecursionError):  # not JSON: NaN, a lone surrogate, a tuple key…
        return None
    finally:
        sys.setrecursionlimit(limit)
