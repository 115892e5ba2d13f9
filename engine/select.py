"""Named selections (`select:` in a spec): pick one value of a node by declared rules.

A selection is a list of alternatives, tried in order; the first that finds a value wins::

    select:
      output:
        - {at: /response, has: {call: has_output}}          # this value, if it passes
        - {last: /messages, where: {/role: assistant}, has: {call: has_output}}

`at` names one value; `last` / `first` name an array whose last / first matching element is
taken.  `where` maps pointers (relative to the candidate) to the values they must hold; `has`
is a condition (`nonempty`, `text`, … or `empty`) or a registered predicate `{call: name}`.
A selection gives back the pointer tokens of what it found (relative to the node) and the value.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mapc.engine import functions, pointer
from mapc.engine.problems import MapcError
from mapc.engine.values import MISSING, is_empty, json_equal

Test = Callable[[Any], bool]
Found = tuple[tuple[str | int, ...], Any]


@dataclass(frozen=True, slots=True)
class Alternative:
    """One way to find the value: at a pointer, or the last/first matching element of an array."""

    at: tuple[str, ...]
    pick: str  # "at", "last" or "first"
    where: tuple[tuple[tuple[str, ...], Any], ...]
    has: Test | None

    def find(self, node: Any) -> Found | None:
        value = pointer.resolve(node, self.at)
        if self.pick == "at":
            return (self.at, value) if value is not MISSING and self._passes(value) else None
        if type(value) is not list:
            return None
        order = range(len(value) - 1, -1, -1) if self.pick == "last" else range(len(value))
        for i in order:
            if self._matches(value[i]) and self._passes(value[i]):
                return ((*self.at, i), value[i])
        return None

    def _matches(self, item: Any) -> bool:
        return all(json_equal(pointer.resolve(item, p), want) for p, want in self.where)

    def _passes(self, value: Any) -> bool:
        return self.has is None or self.has(value)


@dataclass(frozen=True, slots=True)
class Selection:
    """A named selection: its alternatives, tried in order."""

    name: str
    alternatives: tuple[Alternative, ...]

    def __call__(self, node: Any) -> Found | None:
        """(tokens, value) of the first alternative that finds a value in `node`, else None."""
        for alternative in self.alternatives:
            found = alternative.find(node)
            if found is not None:
                return found
        return None


def compile_selections(data: Any) -> dict[str, Selection]:
    """The selections of a spec's `select:` mapping; MapcError for an entry of the wrong shape."""
    if data is None:
        return {}
    if type(data) is not dict:
        raise MapcError.single("spec.invalid", "/select", "`select` maps names to lists of alternatives")
    out = {}
    for name, alternatives in data.items():
        listed = alternatives if type(alternatives) is list else [alternatives]
        out[name] = Selection(name, tuple(_alternative(name, i, a) for i, a in enumerate(listed)))
    return out


def _alternative(name: str, i: int, data: Any) -> Alternative:
    where = f"/select/{pointer.escape(name)}/{i}"
    picks = [k for k in ("at", "last", "first") if type(data) is dict and k in data]
    if len(picks) != 1 or set(data) - {"at", "last", "first", "where", "has"}:
        raise MapcError.single("spec.invalid", where, "an alternative is {at|last|first: pointer, where?, has?}")
    try:
        at = pointer.parse(data[picks[0]])
        conditions = tuple((pointer.parse(p), v) for p, v in (data.get("where") or {}).items())
    except pointer.PointerSyntaxError as exc:
        raise MapcError.single("spec.bad_pointer", where, str(exc)) from None
    return Alternative(at, picks[0], conditions, _test(data.get("has"), where))


def _test(has: Any, where: str) -> Test | None:
    if has is None:
        return None
    from mapc.engine.ops import CONDITIONS

    if has == "empty":
        return lambda v: v is None or is_empty(v)
    if isinstance(has, str) and has in CONDITIONS:
        return CONDITIONS[has].test
    if type(has) is dict and set(has) == {"call"}:
        fn = functions.lookup(has["call"])
        if fn is not None:
            return fn.fn
        raise MapcError.single("spec.unknown_function", where + "/has", f"unknown function {has['call']!r}")
    raise MapcError.single("spec.invalid", where + "/has", f"unknown condition {has!r}")
