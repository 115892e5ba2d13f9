"""Duplicate object keys: JSON readers keep the last of two values under one key, so a document can
say two things at once and one of them is lost without a word.  mapc refuses a repeated key by
default (``json.duplicate_key``, at the pointer of the repeated key), in every format: this is
mapc's decision, stricter than the reference (which refuses one only in its typed objects).  A job
whose `Options` (engine/options.py) say ``allow_duplicate_keys`` keeps the last value instead
(``--allow-duplicate-keys``); the callers decide, this module reads no setting.

What is reported: every key that repeats an earlier key of its object, in text order, at the
pointer it has (``{"a": {"x": 1, "x": 2}, "a": 3}`` gives ``/a/x``, then ``/a``).  Keys are compared
as the strings they decode to, so ``"a"`` and ``"\\u0061"`` are one key.

Two checks give the same answers (tests/hardening/test_duplicate_keys.py proves it over generated
JSON); `problems_of` uses the first it has:

- the C scanner ``_dupscan`` (engine/_dupscan.c), built at install time when a compiler is there
  (setup.py, optional): one scan of the bytes that decodes only the keys; a few percent of the parse
  (bench/rows_duplicates.py);
- the pure-Python check.  In JSON text a ``:`` byte is either the separator after a key or a
  character inside a string (it is never escaped, except as ``\\u003a``).  orjson's output of the
  parsed document has exactly one ``:`` per key it kept and every colon of its strings, raw.  So
  with `T` colons in the input, `D` in the re-serialized document and `E` escaped colons in the
  input, ``T - D + E`` is the number of keys dropped plus the colons inside what they held (so > 0)
  when a key repeats, and 0 when none does and `E` is exact.  Only a document that fails this test
  (or holds ``\\u003``) is parsed a second time, with the standard library, to name the keys.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import orjson

from mapc.engine import pointer
from mapc.engine.problems import Problem

CODE = "json.duplicate_key"


def _load_native() -> ModuleType | None:
    try:
        from mapc.engine import _dupscan  # type: ignore[attr-defined]
    except ImportError:  # installed without a compiler: the pure-Python check below
        return None
    return _dupscan


native: ModuleType | None = _load_native()
"""The C scanner, or None when this installation has none (then `problems_of` uses Python)."""


def _problem(where: str, key: str, code: str = CODE) -> Problem:
    return Problem(code, where, f"the key {key!r} appears more than once in this object")


def _raw(data: bytes | str) -> bytes:
    return data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data


def problems_of(data: bytes | str, doc: Any) -> list[Problem]:
    """`json.duplicate_key` problems of JSON text `data`, already parsed into `doc`."""
    raw = _raw(data)
    if native is not None:
        found = native_problems(raw)
        if found is not None:
            return found
    return python_problems_of(raw, doc)


def native_problems(data: bytes | str) -> list[Problem] | None:
    """The C scanner's problems of JSON text; None without the scanner, or for text it cannot follow."""
    if native is None:
        return None
    found = native.scan(_raw(data))
    return None if found is None else [_problem(where, key) for where, key in found]


def python_problems_of(data: bytes | str, doc: Any) -> list[Problem]:
    """`problems_of` without the C scanner: colons counted, and a second parse only to name the keys."""
    raw = _raw(data)
    if b":" not in raw:
        return []  # no object with a key
    try:
        out = orjson.dumps(doc)
    except (TypeError, orjson.JSONEncodeError):  # deeper than orjson writes, or a big integer
        return problems(raw)
    if raw.count(b":") == out.count(b":") and b"\\u003" not in raw:
        return []
    return problems(raw)


def repeats(data: bytes | str, doc: Any) -> bool:
    """Whether JSON text `data` (parsed into `doc`) repeats a key in an object: a string holding such
    JSON is kept as the string it is, not read as the JSON that would lose a value.  (Whatever a
    job's `allow_duplicate_keys`: keeping the string loses nothing, decoding it would.)"""
    if type(doc) is dict:
        # The usual tool-call arguments, a flat object: every key written is followed by a colon, so
        # as many keys kept as colons in the text means none was dropped (no scan needed).
        colons = data.count(b":") if isinstance(data, bytes) else data.count(":")
        if len(doc) == colons and all(type(v) is not dict and type(v) is not list for v in doc.values()):
            return False
    elif type(doc) is not list:
        return False  # a scalar holds no object
    return bool(problems_of(data, doc))


class _Pairs(dict):  # type: ignore[type-arg]
    """An object that held a key twice: the value kept (the last), and every pair as written."""

    pairs: list[tuple[str, Any]]


def _hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        kept = _Pairs(out)
        kept.pairs = pairs
        return kept
    return out


pairs_hook = _hook  # an ``object_pairs_hook`` for `json` readers; `found` lists what it saw repeated


def problems(data: bytes | str) -> list[Problem]:
    """`json.duplicate_key` problems of JSON text, by a second parse with the standard library (none
    when it is not JSON: the parser that read it first says so)."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 5_000))  # as deep as orjson reads (1,024 levels), never a silent pass
    try:
        doc = json.loads(data, object_pairs_hook=_hook)
    except ValueError:
        return []  # not JSON: the parser that read it first says so (orjson, before this)
    finally:
        sys.setrecursionlimit(limit)
    return list(found(doc))


def found(node: Any, at: str = "", code: str = CODE) -> Iterator[Problem]:
    """The repeated keys in a value read with `pairs_hook`, as problems at their pointers below `at`,
    in text order (a repeated key's first value is searched too: it is in the text)."""
    stack: list[tuple[Any, str, bool]] = [(node, at, False)]  # (value, pointer, whether it is a repeated key)
    while stack:  # not recursive: a document may nest as deep as the parser allows
        node, at, repeated = stack.pop()
        if repeated:
            yield _problem(at, node, code)
            continue
        if type(node) is _Pairs:
            seen: set[str] = set()
            todo: list[tuple[Any, str, bool]] = []
            for key, value in node.pairs:
                where = f"{at}/{pointer.escape(key)}"
                if key in seen:
                    todo.append((key, where, True))
                seen.add(key)
                todo.append((value, where, False))
            stack.extend(reversed(todo))
        elif isinstance(node, dict):
            stack.extend((value, f"{at}/{pointer.escape(key)}", False) for key, value in reversed(node.items()))
        elif type(node) is list:
            stack.extend((value, f"{at}/{i}", False) for i, value in reversed(list(enumerate(node))))
