"""Duplicate object keys: JSON readers keep the last of two values under one key, so a document can
say two things at once and one of them is lost without a word.  mapc refuses a repeated key by
default (``json.duplicate_key``, at the pointer of its second value), in every format: this is
mapc's decision, stricter than the reference (which refuses one only in its typed objects).
``--allow-duplicate-keys`` (``MAPC_ALLOW_DUPLICATE_KEYS=1``) keeps the last value instead.

The check is cheap because it does not parse again.  In JSON text a ``:`` byte is either the
separator after a key or a character inside a string (it is never escaped, except as ``\\u003a``).
orjson's output of the parsed document has exactly one ``:`` per key it kept and every colon of
its strings, raw.  So with `T` colons in the input, `D` in the re-serialized document and `E`
escaped colons in the input, ``T - D + E`` is the number of keys dropped plus the colons inside
what they held (so > 0) when a key repeats, and 0 when none does and `E` is exact.  Only a document
that fails this test (or holds ``\\u003``) is parsed a second time, with the standard library, to
name the repeated keys; bench/rows_duplicates.py measures the cost on the 30 MB inputs.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from typing import Any

import orjson

from mapc.engine import pointer
from mapc.engine.problems import Problem

ENV = "MAPC_ALLOW_DUPLICATE_KEYS"


def allowed() -> bool:
    """Whether the environment allows repeated keys (the CLI flag sets it for worker processes too)."""
    return os.environ.get(ENV, "") not in ("", "0")


def problems_of(data: bytes | str, doc: Any) -> list[Problem]:
    """`json.duplicate_key` problems of JSON text `data`, already parsed into `doc`."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if b":" not in raw:
        return []  # no object with a key
    try:
        out = orjson.dumps(doc)
    except (TypeError, orjson.JSONEncodeError):  # deeper than orjson writes, or a big integer
        return problems(raw)
    if raw.count(b":") == out.count(b":") and b"\\u003" not in raw:
        return []
    return problems(raw)


class _Pairs(dict):  # type: ignore[type-arg]
    """An object that held a key twice: its repeated keys."""

    repeated: list[str]


def _hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = _Pairs(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        out.repeated = [k for k, _ in pairs if k in seen or seen.add(k)]  # type: ignore[func-returns-value]
        return out
    return dict(pairs)


def repeats(data: bytes | str, doc: Any) -> bool:
    """Whether JSON text `data` (parsed into `doc`) repeats a key in an object, unless allowed: a
    string holding such JSON is kept as the string it is, not read as the JSON it would lose."""
    return not allowed() and bool(problems_of(data, doc))


pairs_hook = _hook  # an ``object_pairs_hook`` for `json` readers; `found` lists what it saw repeated


def problems(data: bytes | str) -> list[Problem]:
    """`json.duplicate_key` problems of JSON text (none when it is not JSON: the parser says that)."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 5_000))  # as deep as orjson reads (1,024 levels), never a silent pass
    try:
        doc = json.loads(data, object_pairs_hook=_hook)
    except ValueError:
        return []  # not JSON: the parser that read it first says so (orjson, before this)
    finally:
        sys.setrecursionlimit(limit)
    return list(found(doc))


def found(node: Any, at: str = "", code: str = "json.duplicate_key") -> Iterator[Problem]:
    """The repeated keys in a value read with `pairs_hook`, as problems at their pointers below `at`."""
    stack = [(node, at)]
    while stack:  # not recursive: a document may nest as deep as the parser allows
        node, at = stack.pop()
        if type(node) is _Pairs:
            for key in node.repeated:
                where = f"{at}/{pointer.escape(key)}"
                yield Problem(code, where, f"the key {key!r} appears more than once in this object")
        if isinstance(node, dict):
            stack.extend((value, f"{at}/{pointer.escape(key)}") for key, value in reversed(node.items()))
        elif type(node) is list:
            stack.extend((value, f"{at}/{i}") for i, value in reversed(list(enumerate(node))))
