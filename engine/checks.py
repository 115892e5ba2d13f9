"""Declared input constraints of a spec (`checks:`): what JSON Schema cannot say about a source.

Each check kind is one small function yielding `Problem`s with the pointer of the offending
value.  Checks run on every node of a document tree (`document.children`), or only on the top
node or on the children; `unique` compares values within a node, or `across: tree`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from mapc.engine import pointer
from mapc.engine.functions import lookup
from mapc.engine.problems import Problem
from mapc.engine.spec import CheckSpec
from mapc.engine.template import Template, Var
from mapc.engine.timestamp import TimestampError, parse_rfc3339
from mapc.engine.values import MISSING, is_empty, json_equal, json_type

Steps = tuple[Any, ...]  # (parent steps, key): a linked list, flattened only for a message


def collect(node: Any, tokens: tuple[str | Var, ...]) -> list[tuple[Steps, Any]]:
    """Every (steps, value) that the template tokens match below `node`, level by level; variables
    range over array positions or object keys.  No pointer text is built: checks make one only
    for a value that fails (`_at`)."""
    level: list[tuple[Steps, Any]] = [((), node)]
    for token in tokens:
        nxt: list[tuple[Steps, Any]] = []
        if isinstance(token, Var):
            for steps, item in level:
                if type(item) is list:
                    nxt.extend(((steps, i), x) for i, x in enumerate(item))
                elif type(item) is dict:
                    nxt.extend(((steps, k), x) for k, x in item.items())
        else:
            for steps, item in level:
                if type(item) is dict and token in item:
                    nxt.append(((steps, token), item[token]))
        level = nxt
    return level


def values_at(node: Any, tokens: tuple[str | Var, ...]) -> list[Any]:
    """The values `collect` finds, in its order, without their steps: what the fast pass of a
    check reads (`_FINE`); the steps are made only when some value fails."""
    level = [node]
    for token in tokens:
        if isinstance(token, Var):
            nxt: list[Any] = []
            for item in level:
                if type(item) is list:
                    nxt.extend(item)
                elif type(item) is dict:
                    nxt.extend(item.values())
            level = nxt
        else:
            level = [item[token] for item in level if type(item) is dict and token in item]
    return level


def steps_path(steps: Steps) -> list[Any]:
    """The keys and positions of `collect`'s steps, outermost first."""
    out: list[Any] = []
    while steps:
        steps, key = steps
        out.append(key)
    return out[::-1]


Find = Callable[[Any, tuple[str | Var, ...]], list[tuple[Steps, Any]]]


def _at(at: str, steps: Steps) -> str:
    keys: list[str] = []
    while steps:
        steps, key = steps
        keys.append("/" + pointer.escape(str(key)))
    return at + "".join(reversed(keys))


def _nonempty(check: CheckSpec, node: Any, at: str, find: Find) -> Iterator[Problem]:
    template = check.pointers[0]
    if not any(isinstance(t, Var) for t in template.tokens) and pointer.resolve(node, template.tokens) is MISSING:  # type: ignore[arg-type]
        yield Problem(
            "check.nonempty",
            at + template.text,
            f"{template.text} is required and must not be empty",
            check.at,
        )
        return
    for steps, value in find(node, template.tokens):
        if is_empty(value):
            yield Problem("check.nonempty", _at(at, steps), f"expected a non-empty value, got {value!r}", check.at)


def _nonempty_any(check: CheckSpec, node: Any, at: str, find: Find) -> Iterator[Problem]:
    for template in check.pointers:
        for _, value in find(node, template.tokens):
            if not is_empty(value):
                return
    names = " or ".join(t.text for t in check.pointers)
    yield Problem("check.nonempty_any", at, f"expected a non-empty value at {names}", check.at)


def _nonblank(check: CheckSpec, node: Any, at: str, find: Find) -> Iterator[Problem]:
    for steps, value in find(node, check.pointers[0].tokens):
        if type(value) is str and not value.strip():
            yield Problem("check.nonblank", _at(at, steps), f"expected text that is not blank, got {value!r}", check.at)


def _nonblank_keys(check: CheckSpec, node: Any, at: str, find: Find) -> Iterator[Problem]:
    for steps, value in find(node, check.pointers[0].tokens):
        for key in value if type(value) is dict else ():
            if not key.strip():
                where = _at(at, steps) + "/" + pointer.escape(key)
                yield Problem("check.nonblank_key", where, f"expected a key that is not blank, got {key!r}", check.at)


def _increasing(check: CheckSpec, node: Any, at: str, find: Find) -> Iterator[Problem]:
    # Values under one parent (all variables but the last bound alike) must strictly increase.
    last: dict[Any, Any] = {}
    for steps, value in find(node, check.pointers[0].tokens):
        if type(value) not in (int, float):
            continue
        group = _group_of(steps, check.pointers[0])
        before = last.get(group, MISSING)
        if before is not MISSING and not value > before:
            message = f"expected a value greater than the previous one ({before}), got {value}"
            yield Problem("check.increasing", _at(at, steps), message, check.at)
        last[group] = value


def _bindings(steps: Steps, template: Any) -> tuple[Any, ...]:
    """The keys or indices the template's variables took on the way to a value."""
    keys: list[Any] = []
    while steps:
        steps, key = steps
        keys.append(key)
    keys.reverse()
    return tuple(keys[i] for i, t in enumerate(template.tokens) if isinstance(t, Var))


def _group_of(steps: Steps, template: Any) -> Any:
    return _bindings(steps, template)[:-1]


def _size_of(check: CheckSpec, node: Any, at: str, find: Find) -> Iterator[Problem]:
    assert check.other is not None
    sized = [len(v) for _, v in find(node, check.pointers[0].tokens) if type(v) in (dict, list)]
    for steps, value in find(node, check.other.tokens):
        if sized and value != sized[0]:
            message = f"expected {sized[0]} (the number of entries of {check.pointers[0].text}), got {value!r}"
            yield Problem("check.size_of", _at(at, steps), message, check.at)


def _at_most(check: CheckSpec, node: Any, at: str, find: Find) -> Iterator[Problem]:
    assert check.other is not None
    limits = [v for _, v in find(node, check.other.tokens) if type(v) in (int, float)]
    for steps, value in find(node, check.pointers[0].tokens):
        if limits and type(value) in (int, float) and value > limits[0]:
            message = f"expected at most {limits[0]} ({check.other.text}), got {value}"
            yield Problem("check.at_most", _at(at, steps), message, check.at)


def _same_if_both(check: CheckSpec, node: Any, at: str, find: Find) -> Iterator[Problem]:
    first, second = check.pointers[0], check.pointers[1]
    by_binding = {_bindings(s, first): v for s, v in find(node, first.tokens)}
    for steps, value in find(node, second.tokens):
        other = by_binding.get(_bindings(steps, second), MISSING)
        if not is_empty(value) and not is_empty(other) and not json_equal(value, other):
            message = f"expected the same value as {first.text} when both are non-empty"
            yield Problem("check.same_if_both", _at(at, steps), message, check.at)


def _call(check: CheckSpec, node: Any, at: str, find: Find) -> Iterator[Problem]:
    function = lookup(check.value)
    assert function is not None  # compile checked the name
    for steps, value in find(node, check.pointers[0].tokens):
        for where, code, message in function.fn(value):
            yield Problem(f"check.{code}", _at(at, steps) + where, message, check.at)


def _minimum(check: CheckSpec, node: Any, at: str, find: Find) -> Iterator[Problem]:
    for steps, value in find(node, check.pointers[0].tokens):
        if type(value) in (int, float) and value < check.value:
            yield Problem("check.minimum", _at(at, steps), f"expected a number ≥ {check.value}, got {value}", check.at)


def _timestamp(check: CheckSpec, node: Any, at: str, find: Find) -> Iterator[Problem]:
    for steps, value in find(node, check.pointers[0].tokens):
        if value is None:
            continue
        if type(value) is not str:
            message = f"expected an RFC 3339 string, got {json_type(value)}"
            yield Problem("check.timestamp", _at(at, steps), message, check.at)
            continue
        try:
            parse_rfc3339(value)
        except TimestampError as exc:
            yield Problem("check.timestamp", _at(at, steps), str(exc), check.at)


def _unique(check: CheckSpec, node: Any, at: str, find: Find, seen: dict[Any, tuple[str, Any]]) -> Iterator[Problem]:
    for steps, value in find(node, check.pointers[0].tokens):
        if value is None or type(value) in (dict, list):
            continue
        key = (type(value), value)
        if key in seen:
            first = _at(*seen[key])
            yield Problem("check.unique", _at(at, steps), f"{value!r} is already used at {first or '/'}", check.at)
        else:
            seen[key] = (at, steps)


# --- the fast pass: does a check find nothing? ----------------------------------------------
# A valid document is the common case: each of these says, from the values alone (no steps, no
# pointers), that its check would yield no problem; only when one says no does the check run.


def _fine_nonempty(check: CheckSpec, node: Any, values: Values) -> bool:
    tokens = check.pointers[0].tokens
    if not any(isinstance(t, Var) for t in tokens):
        return False  # a missing value is a problem too: the check itself decides (cheap)
    return not any(is_empty(v) for v in values(node, tokens))


def _fine_minimum(check: CheckSpec, node: Any, values: Values) -> bool:
    low = check.value
    return not any(type(v) in (int, float) and v < low for v in values(node, check.pointers[0].tokens))


def _fine_timestamp(check: CheckSpec, node: Any, values: Values) -> bool:
    for value in values(node, check.pointers[0].tokens):
        if value is None:
            continue
        if type(value) is not str:
            return False
        try:
            parse_rfc3339(value)
        except TimestampError:
            return False
    return True


def _fine_nonblank(check: CheckSpec, node: Any, values: Values) -> bool:
    return all(type(v) is not str or v.strip() for v in values(node, check.pointers[0].tokens))


def _fine_unique(check: CheckSpec, node: Any, values: Values) -> bool:
    keys = [
        (type(v), v) for v in values(node, check.pointers[0].tokens) if v is not None and type(v) not in (dict, list)
    ]
    return len(set(keys)) == len(keys)


def _fine_increasing(check: CheckSpec, node: Any, values: Values) -> bool:
    # Grouped as `_group_of` groups: the values below one container of the last variable.
    tokens = check.pointers[0].tokens
    last_var = max((i for i, t in enumerate(tokens) if isinstance(t, Var)), default=-1)
    if last_var < 0:
        return True  # one value: nothing to compare
    rest = tokens[last_var + 1 :]
    for container in values(node, tokens[:last_var]):
        items = container if type(container) is list else container.values() if type(container) is dict else ()
        before: Any = MISSING
        for item in items:
            for value in values_at(item, rest):
                if type(value) not in (int, float):
                    continue
                if before is not MISSING and not value > before:
                    return False
                before = value
    return True


def _fine_call(check: CheckSpec, node: Any, values: Values) -> bool:
    function = lookup(check.value)
    assert function is not None  # compile checked the name
    return all(next(iter(function.fn(v)), None) is None for v in values(node, check.pointers[0].tokens))


def _fine_same_if_both(check: CheckSpec, node: Any, values: Values) -> bool:
    # The common shape: both pointers below the same elements (equal up to their last variable),
    # each one literal path further: a value of each per element, compared element by element.
    first, second = check.pointers[0].tokens, check.pointers[1].tokens
    last_var = max((i for i, t in enumerate(first) if isinstance(t, Var)), default=-1)
    a, b = first[last_var + 1 :], second[last_var + 1 :]
    if last_var < 0 or first[: last_var + 1] != second[: last_var + 1] or not a or not b:
        return False
    if any(isinstance(t, Var) for t in (*a, *b)):
        return False
    for container in values(node, first[:last_var]):
        items = container if type(container) is list else container.values() if type(container) is dict else ()
        for item in items:
            x, y = _literal(item, a), _literal(item, b)
            if x is not MISSING and y is not MISSING and not is_empty(x) and not is_empty(y) and not json_equal(x, y):
                return False
    return True


def _literal(node: Any, tokens: tuple[Any, ...]) -> Any:
    for token in tokens:
        if type(node) is not dict:
            return MISSING
        node = node.get(token, MISSING)
    return node


Values = Callable[[Any, tuple[str | Var, ...]], list[Any]]
_FINE: dict[str, Callable[[CheckSpec, Any, Values], bool]] = {
    "nonempty": _fine_nonempty,
    "minimum": _fine_minimum,
    "timestamp": _fine_timestamp,
    "nonblank": _fine_nonblank,
    "unique": _fine_unique,
    "increasing": _fine_increasing,
    "call": _fine_call,
    "same_if_both": _fine_same_if_both,
}


_BY_KIND: dict[str, Callable[[CheckSpec, Any, str, Find], Iterator[Problem]]] = {
    "nonempty": _nonempty,
    "nonempty_any": _nonempty_any,
    "minimum": _minimum,
    "timestamp": _timestamp,
    "nonblank": _nonblank,
    "nonblank_keys": _nonblank_keys,
    "increasing": _increasing,
    "size_of": _size_of,
    "at_most": _at_most,
    "same_if_both": _same_if_both,
    "call": _call,
}


def iter_check_problems(
    checks: tuple[CheckSpec, ...], doc: Any, children: tuple[str, ...] | None, *, fast: bool = True
) -> Iterator[Problem]:
    """Run every check over `doc` and its nested documents (pre-order), in check order per node.

    `fast`: a check first asks its values alone whether it finds anything (`_FINE`), and runs in
    full only when it may; False runs each in full (the same problems: tests compare the two)."""
    nodes = list(_nodes(doc, "", children, top=True))
    found: dict[tuple[int, Any], list[tuple[Steps, Any]]] = {}

    values_found: dict[tuple[int, Any], list[Any]] = {}

    def find(node: Any, tokens: tuple[str | Var, ...]) -> list[tuple[Steps, Any]]:
        # Several checks often read the same values (step ids: minimum and unique).
        key = (id(node), tokens)
        if key not in found:
            found[key] = collect(node, tokens)
        return found[key]

    def values(node: Any, tokens: tuple[str | Var, ...]) -> list[Any]:
        key = (id(node), tokens)
        if key not in values_found:
            values_found[key] = values_at(node, tokens)
        return values_found[key]

    for check in checks:
        tree_seen: dict[Any, tuple[str, Any]] = {}
        for node, at, top in nodes:
            if (check.documents == "top" and not top) or (check.documents == "children" and top):
                continue
            if check.each is not None:
                members = [(_at(at, steps), member) for steps, member in find(node, check.each.tokens)]
                inner = _relative_check(check)
            else:
                members, inner = [(at, node)], check
            fine = _FINE.get(check.kind) if fast and not (check.kind == "unique" and check.across == "tree") else None
            for where, member in members:
                if fine is not None and fine(inner, member, values):
                    continue
                if check.kind == "unique":
                    yield from _unique(inner, member, where, find, tree_seen if check.across == "tree" else {})
                else:
                    yield from _BY_KIND[check.kind](inner, member, where, find)


def _relative_check(check: CheckSpec) -> CheckSpec:
    """The check with its pointers taken relative to its `each` template."""
    assert check.each is not None
    n = len(check.each.tokens)

    def rel(t: Template) -> Template:
        return Template(t.text, t.tokens[n:]) if t.starts_with(check.each) else t  # type: ignore[arg-type]

    other = rel(check.other) if check.other is not None else None
    return replace(check, pointers=tuple(rel(p) for p in check.pointers), other=other, each=None)


def _nodes(node: Any, at: str, children: tuple[str, ...] | None, top: bool) -> Iterator[tuple[Any, str, bool]]:
    yield node, at, top
    if children is None:
        return
    kids = pointer.resolve(node, children)
    if type(kids) is list:
        base = at + pointer.format(children)
        for i, kid in enumerate(kids):
            yield from _nodes(kid, f"{base}/{i}", children, top=False)
