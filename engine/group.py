"""Group values (`group:` in a row-corpus spec): the Storyline's own values, taken from its rows.

A row corpus says the values of a whole Storyline (its session, run, agent) on every row, or on
some.  Each entry names where the value goes (`to`, one pointer or several) and its candidates,
tried in order (`first_of`); the first that gives a value passing `when` wins::

    group:
      - {to: /session, first_of: [/session_id]}
      - {to: /run, first_of: [[/run_id, /run_bucket, /job_id]], when: text,
         conflict: rows.conflicting_run, back: /job_id}
      - {to: [/agent/id, /agent/name], first_of: [[/agent_id, /meta_json/source], {const: import}],
         when: text}

A candidate is a row pointer, or a chain of row pointers (a list), searched row by row in order:
the first row where one of the chain's pointers holds a passing value gives it (a later pointer of
the chain is tried only on the same row).  `{const: V}` is V; `{story: /p}` a value an earlier entry
wrote.  `conflict: CODE`: every row whose chain gives a passing value must give the same one, else
CODE at that row's pointer.

The reverse (`back: /p`) writes the Storyline value at row pointer `/p` on every row of its
Storyline, unless the rows as written already give that value back (so a value the forward would
derive is not written twice); it is placed after the rows' group and order keys.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mapc.engine import pointer
from mapc.engine.problems import MapcError, Problem
from mapc.engine.values import MISSING

Tokens = tuple[str, ...]
Test = Callable[[Any], bool]


@dataclass(frozen=True, slots=True)
class Candidate:
    """One candidate: a chain of row pointers (searched row by row), a constant or a Storyline value."""

    chain: tuple[Tokens, ...] = ()
    texts: tuple[str, ...] = ()  # the chain's pointers as written (for problem pointers)
    const: Any = MISSING
    story: Tokens | None = None


@dataclass(frozen=True, slots=True)
class GroupValue:
    """One `group:` entry, pointers parsed."""

    to: tuple[Tokens, ...]
    candidates: tuple[Candidate, ...]
    test: Test | None = None
    conflict: str | None = None
    back: Tokens | None = None


def parse(entries: Any) -> tuple[GroupValue, ...]:
    """The `group:` entries of a spec; MapcError (`spec.invalid`, located) for one of the wrong shape."""
    from mapc.engine.ops import CONDITIONS as conditions  # ops imports the spec reader's modules

    if entries is None:
        return ()
    if type(entries) is not list:
        raise MapcError.single("spec.invalid", "/group", "`group` is a list of {to, first_of, when?, conflict?, back?}")
    return tuple(_entry(e, f"/group/{i}", conditions) for i, e in enumerate(entries))


def _entry(e: Any, at: str, conditions: dict[str, Any]) -> GroupValue:
    keys = {"to", "first_of", "when", "conflict", "back"}
    if type(e) is not dict or not {"to", "first_of"} <= set(e) or set(e) - keys:
        raise MapcError.single("spec.invalid", at, "a group value is {to, first_of, when?, conflict?, back?}")
    when = e.get("when")
    if when is not None and when not in conditions:
        raise MapcError.single("spec.invalid", at + "/when", f"unknown condition {when!r}")
    conflict = e.get("conflict")
    if conflict is not None and (type(conflict) is not str or not conflict):
        raise MapcError.single("spec.invalid", at + "/conflict", "`conflict` is a problem code")
    to = e["to"] if type(e["to"]) is list else [e["to"]]
    first_of = e["first_of"]
    if type(first_of) is not list or not first_of:
        raise MapcError.single("spec.invalid", at + "/first_of", "`first_of` is a non-empty list of candidates")
    try:
        return GroupValue(
            tuple(_pointer(p) for p in to),
            tuple(_candidate(c, f"{at}/first_of/{k}") for k, c in enumerate(first_of)),
            conditions[when].test if when is not None else None,
            conflict,
            _pointer(e["back"]) if e.get("back") is not None else None,
        )
    except pointer.PointerSyntaxError as exc:
        raise MapcError.single("spec.bad_pointer", at, str(exc)) from None


def _pointer(text: Any) -> Tokens:
    if type(text) is not str or not text:
        raise pointer.PointerSyntaxError(f"{text!r} is not a non-empty JSON Pointer")
    return pointer.parse(text)


def _candidate(c: Any, at: str) -> Candidate:
    if type(c) is str:
        return Candidate((_pointer(c),), (c,))
    if type(c) is list and c and all(type(p) is str for p in c):
        return Candidate(tuple(_pointer(p) for p in c), tuple(c))
    if type(c) is dict and set(c) == {"const"}:
        return Candidate(const=c["const"])
    if type(c) is dict and set(c) == {"story"}:
        return Candidate(story=_pointer(c["story"]))
    raise MapcError.single("spec.invalid", at, "a candidate is a pointer, a list of pointers, {const: V} or {story: P}")


def _passes(entry: GroupValue, value: Any) -> bool:
    return value is not MISSING and (entry.test(value) if entry.test is not None else value is not None)


def _chain_value(entry: GroupValue, c: Candidate, row: Any) -> tuple[Any, str]:
    """The first passing value of the chain in one row, and the pointer it was found at."""
    for tokens, text in zip(c.chain, c.texts, strict=True):
        value = pointer.resolve(row, tokens)
        if _passes(entry, value):
            return value, text
    return MISSING, ""


def value_of(entry: GroupValue, rows: list[tuple[str, Any]], story: dict[str, Any]) -> tuple[Any, list[Problem]]:
    """The entry's value over `rows` ((pointer of the row, row) pairs in order), and its conflicts."""
    for c in entry.candidates:
        if c.const is not MISSING:
            return c.const, []
        if c.story is not None:
            value = pointer.resolve(story, c.story)
            if _passes(entry, value):
                return value, []
            continue
        found: Any = MISSING
        problems: list[Problem] = []
        for at, row in rows:
            value, where = _chain_value(entry, c, row)
            if value is MISSING:
                continue
            if found is MISSING:
                found = value
                if entry.conflict is None:
                    break
            elif value != found and entry.conflict is not None:
                message = f"conflicting values for {pointer.format(entry.to[0])} in one group: {value!r} and {found!r}"
                problems.append(Problem(entry.conflict, at + where, message))
        if found is not MISSING:
            return found, problems
    return MISSING, []


def forward(entries: tuple[GroupValue, ...], rows: list[tuple[str, Any]]) -> tuple[dict[str, Any], list[Problem]]:
    """The Storyline values of one group (in entry order) and the problems (conflicts)."""
    story: dict[str, Any] = {}
    problems: list[Problem] = []
    for entry in entries:
        value, found = value_of(entry, rows, story)
        problems.extend(found)
        if value is not MISSING:
            for tokens in entry.to:
                _put(story, tokens, value)
    return story, problems


def reverse(entries: tuple[GroupValue, ...], story: dict[str, Any], rows: list[dict[str, Any]], keys: int) -> None:
    """Write each entry's `back` pointer on every row of `story`'s `rows` (in place), unless the rows
    already give its value back; after the first `keys` keys of each row (its group and order keys)."""
    for entry in entries:
        if entry.back is None:
            continue
        want = pointer.resolve(story, entry.to[0])
        if want is MISSING or want is None:
            continue
        if value_of(entry, [("", r) for r in rows], story)[0] == want:
            continue
        for n, row in enumerate(rows):
            if len(entry.back) == 1:  # a row key: placed after the keys written before it
                items = list(row.items())
                items.insert(min(keys, len(items)), (entry.back[0], want))
                rows[n] = dict(items)
            else:
                _put(row, entry.back, want)
        keys += 1


# --- turn ids ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TurnId:
    """A turn id computed from a row's order key (`ids:`): base + times·order + plus, where the base
    is what the map function counts before the rows' turns (context turns)."""

    times: int
    plus: int = 0

    def of(self, base: int, order: int) -> int:
        """The turn id of the row with order key `order`."""
        return base + self.times * order + self.plus

    def order(self, base: int, turn_id: Any) -> int | None:
        """The order key a turn id was computed from, or None when no order key ≥ 1 gives it."""
        if type(turn_id) is not int:
            return None
        order, rest = divmod(turn_id - base - self.plus, self.times)
        return order if rest == 0 and order >= 1 else None


def parse_ids(data: Any) -> dict[str, TurnId]:
    """The `ids:` of a spec: names to {times: nonzero integer, plus?: integer}; MapcError (located)."""
    if data is None:
        return {}
    if type(data) is not dict:
        raise MapcError.single("spec.invalid", "/ids", "`ids` maps names to {times, plus?}")
    out = {}
    for name, e in data.items():
        ok = type(e) is dict and set(e) <= {"times", "plus"} and type(e.get("times")) is int and e["times"] != 0
        if not ok or type(e.get("plus", 0)) is not int:
            where = f"/ids/{pointer.escape(str(name))}"
            raise MapcError.single("spec.invalid", where, "an id is {times: n ≠ 0, plus?: n}")
        out[str(name)] = TurnId(e["times"], e.get("plus", 0))
    return out


def _put(obj: dict[str, Any], tokens: Tokens, value: Any) -> None:
    for token in tokens[:-1]:
        obj = obj.setdefault(token, {})
    obj[tokens[-1]] = value
