"""Duplicate object keys (`--reject-duplicate-keys`): JSON readers keep the last of two values under
one key, so a document can say two things at once.  When asked, mapc parses the input a second time
with the standard library, which reports each object's pairs, and refuses any repeated key with the
pointer of its second value.  Off by default (`Options.reject_duplicate_keys`): it costs a second parse.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from mapc.engine import pointer
from mapc.engine.problems import Problem


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


def problems(data: bytes | str) -> list[Problem]:
    """`json.duplicate_key` problems of JSON text (none when it is not JSON: the parser says that)."""
    try:
        doc = json.loads(data, object_pairs_hook=_hook)
    except (ValueError, RecursionError):
        return []
    return list(_walk(doc, ""))


def _walk(node: Any, at: str) -> Iterator[Problem]:
    if type(node) is _Pairs:
        for key in node.repeated:
            where = f"{at}/{pointer.escape(key)}"
            yield Problem("json.duplicate_key", where, f"the key {key!r} appears more than once in this object")
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _walk(value, f"{at}/{pointer.escape(key)}")
    elif type(node) is list:
        for i, value in enumerate(node):
            yield from _walk(value, f"{at}/{i}")
