"""Declared input constraints of a spec (`checks:`): what JSON Schema cannot say about a source.

Each check kind is one small function yielding `Problem`s with the pointer of the offending
value.  Checks run on every node of a document tree (`document.children`), or only on the top
node or on the children; `unique` compares values within a node, or `across: tree`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from mapc.engine import pointer
from mapc.engine.problems import Problem
from mapc.engine.spec import CheckSpec
from mapc.engine.template import Var
from mapc.engine.timestamp import TimestampError, parse_rfc3339
from mapc.engine.values import MISSING, is_empty, json_type


def iter_matches(node: Any, tokens: tuple[str | Var, ...], at: str = "") -> Iterator[tuple[str, Any]]:
    """Every (pointer, value) that the template tokens match below `node`; variables range over
    array positions or object keys.  Values that do not exist are not yielded."""
    if not tokens:
        yield at, node
        return
    head, rest = tokens[0], tokens[1:]
    if isinstance(head, Var):
        if type(node) is list:
            for i, item in enumerate(node):
                yield from iter_matches(item, rest, f"{at}/{i}")
        elif type(node) is dict:
            for key, item in node.items():
                yield from iter_matches(item, rest, f"{at}/{pointer.escape(key)}")
        return
    if type(node) is dict and head in node:
        yield from iter_matches(node[head], rest, f"{at}/{pointer.escape(head)}")


def _nonempty(check: CheckSpec, node: Any, at: str) -> Iterator[Problem]:
    template = check.pointers[0]
    if (
        not any(isinstance(t, Var) for t in template.tokens)
        and pointer.resolve(node, template.tokens) is MISSING
    ):  # type: ignore[arg-type]
        yield Problem(
            "check.nonempty",
            at + template.text,
            f"{template.text} is required and must not be empty",
            check.at,
        )
        return
    for ptr, value in iter_matches(node, template.tokens, at):
        if is_empty(value):
            yield Problem("check.nonempty", ptr, f"expected a non-empty value, got {value!r}", check.at)


def _nonempty_any(check: CheckSpec, node: Any, at: str) -> Iterator[Problem]:
    for template in check.pointers:
        for _, value in iter_matches(node, template.tokens, at):
            if type(value) is str and value:
                return
    names = " or ".join(t.text for t in check.pointers)
    yield Problem("check.nonempty_any", at, f"expected a non-empty string at {names}", check.at)


def _minimum(check: CheckSpec, node: Any, at: str) -> Iterator[Problem]:
    for ptr, value in iter_matches(node, check.pointers[0].tokens, at):
        if type(value) in (int, float) and value < check.value:
            yield Problem("check.minimum", ptr, f"expected a number ≥ {check.value}, got {value}", check.at)


def _timestamp(check: CheckSpec, node: Any, at: str) -> Iterator[Problem]:
    for ptr, value in iter_matches(node, check.pointers[0].tokens, at):
        if value is None:
            continue
        if type(value) is not str:
            yield Problem(
                "check.timestamp", ptr, f"expected an RFC 3339 string, got {json_type(value)}", check.at
            )
            continue
        try:
            parse_rfc3339(value)
        except TimestampError as exc:
            yield Problem("check.timestamp", ptr, str(exc), check.at)


def _unique(check: CheckSpec, node: Any, at: str, seen: dict[Any, str]) -> Iterator[Problem]:
    for ptr, value in iter_matches(node, check.pointers[0].tokens, at):
        if value is None or type(value) in (dict, list):
            continue
        key = (type(value), value)
        if key in seen:
            yield Problem("check.unique", ptr, f"{value!r} is already used at {seen[key] or '/'}", check.at)
        else:
            seen[key] = ptr


_BY_KIND: dict[str, Callable[[CheckSpec, Any, str], Iterator[Problem]]] = {
    "nonempty": _nonempty,
    "nonempty_any": _nonempty_any,
    "minimum": _minimum,
    "timestamp": _timestamp,
}


def iter_check_problems(
    checks: tuple[CheckSpec, ...], doc: Any, children: tuple[str, ...] | None
) -> Iterator[Problem]:
    """Run every check over `doc` and its nested documents (pre-order), in check order per node."""
    nodes = list(_nodes(doc, "", children, top=True))
    for check in checks:
        tree_seen: dict[Any, str] = {}
        for node, at, top in nodes:
            if (check.documents == "top" and not top) or (check.documents == "children" and top):
                continue
            if check.kind == "unique":
                yield from _unique(check, node, at, tree_seen if check.across == "tree" else {})
            else:
                yield from _BY_KIND[check.kind](check, node, at)


def _nodes(
    node: Any, at: str, children: tuple[str, ...] | None, top: bool
) -> Iterator[tuple[Any, str, bool]]:
    yield node, at, top
    if children is None:
        return
    kids = pointer.resolve(node, children)
    if type(kids) is list:
        base = at + pointer.format(children)
        for i, kid in enumerate(kids):
            yield from _nodes(kid, f"{base}/{i}", children, top=False)
