"""Spread values (`spread:` in a row-corpus spec): keyed values between a row and the turn it becomes.

A row often says, flat, what a Storyline keeps in objects: an environment (`env_name`, an endpoint,
a dataset type) or metrics (a reward beside an open object of counters).  Each entry is one of::

    spread:
      # keyed: each key (a path inside the target object, `a/b`) from a row pointer, if it passes
      # `when`; with `first_to`, the first value of the group goes to that Storyline object and
      # only a later, different one to the turn's
      - {to: /env, first_to: /task/env, when: text, keys: {name: /env_name, endpoint: /meta/endpoint}}
      # open: every key of the row object `open` except `except`, then the row keys `keys`
      - {to: /metrics, open: /meta/state, except: [session_id], keys: [reward]}

The reverse writes them back: a keyed value from the turn's object merged over the Storyline's
(`first_to`), at its row pointer, in the order of the keys; an open entry's key to the row key of
that name when `keys` lists it, else into the `open` object (`except` keys are not written: the
forward would not read them back as this value).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mapc.engine import pointer
from mapc.engine.problems import MapcError
from mapc.engine.values import MISSING

Tokens = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Spread:
    """One `spread:` entry, pointers parsed."""

    to: Tokens
    first_to: Tokens | None = None
    test: Callable[[Any], bool] | None = None
    keys: tuple[tuple[str, Tokens], ...] = ()  # keyed: (key path, row pointer)
    key_tokens: tuple[Tokens, ...] = ()  # keyed: each key path as pointer tokens
    open: Tokens | None = None
    except_: frozenset[str] = frozenset()
    row_keys: tuple[str, ...] = ()  # open: row keys read after the open object's


def parse(entries: Any) -> tuple[Spread, ...]:
    """The `spread:` entries of a spec; MapcError (`spec.invalid`, located) for one of the wrong shape."""
    from mapc.engine.ops import CONDITIONS  # ops imports the spec reader's modules

    if entries is None:
        return ()
    if type(entries) is not list:
        raise MapcError.single("spec.invalid", "/spread", "`spread` is a list of keyed or open entries")
    out = []
    for i, e in enumerate(entries):
        at = f"/spread/{i}"
        keyed = type(e) is dict and type(e.get("keys")) is dict and set(e) <= {"to", "first_to", "when", "keys"}
        opened = type(e) is dict and "open" in e and set(e) <= {"to", "open", "except", "keys"}
        if not (keyed or opened) or "to" not in e:
            raise MapcError.single(
                "spec.invalid",
                at,
                "an entry is {to, keys: {key: pointer}, when?, first_to?} or {to, open, except?, keys?}",
            )
        when = e.get("when")
        if when is not None and when not in CONDITIONS:
            raise MapcError.single("spec.invalid", at + "/when", f"unknown condition {when!r}")
        try:
            if keyed:
                out.append(
                    Spread(
                        _pointer(e["to"]),
                        _pointer(e["first_to"]) if e.get("first_to") is not None else None,
                        CONDITIONS[when].test if when is not None else None,
                        tuple((str(k), _pointer(p)) for k, p in e["keys"].items()),
                        tuple(pointer.parse("/" + str(k)) for k in e["keys"]),
                    )
                )
            else:
                names = e.get("keys") or []
                dropped = e.get("except") or []
                if not all(type(k) is str for k in (*names, *dropped)):
                    raise MapcError.single("spec.invalid", at, "`keys` and `except` of an open entry are lists of keys")
                out.append(
                    Spread(
                        _pointer(e["to"]), open=_pointer(e["open"]), except_=frozenset(dropped), row_keys=tuple(names)
                    )
                )
        except pointer.PointerSyntaxError as exc:
            raise MapcError.single("spec.bad_pointer", at, str(exc)) from None
    return tuple(out)


_SELECTED: dict[tuple[int, str], tuple[tuple[Spread, ...], Tokens | None, tuple[Spread, ...]]] = {}


def _of(entries: tuple[Spread, ...], to: str) -> tuple[tuple[Spread, ...], Tokens | None]:
    """The entries for the turn object `to`, and the `first_to` of any of them (computed once)."""
    found = _SELECTED.get((id(entries), to))
    if found is None or found[2] is not entries:  # keyed by identity: the entries kept alive beside
        tokens = pointer.parse(to)
        selected = tuple(e for e in entries if e.to == tokens)
        first = next((e.first_to for e in selected if e.first_to is not None), None)
        found = _SELECTED[(id(entries), to)] = (selected, first, entries)
    return found[0], found[1]


def _pointer(text: Any) -> Tokens:
    if type(text) is not str or not text:
        raise pointer.PointerSyntaxError(f"{text!r} is not a non-empty JSON Pointer")
    return pointer.parse(text)


# --- forward ---------------------------------------------------------------------------------


def forward(entries: tuple[Spread, ...], row: Any, turn: dict[str, Any], story: dict[str, Any], to: str) -> None:
    """Write the spread values of `row` for the turn object `to` into `turn` (a first value into
    `story`), in place."""
    made: dict[Tokens, dict[str, Any]] = {}  # the turn objects this row fills, written if non-empty
    for entry in _of(entries, to)[0]:
        target = made.setdefault(entry.to, {})
        if entry.open is not None:
            state = pointer.resolve(row, entry.open)
            state = state if type(state) is dict else {}
            target.update({k: v for k, v in state.items() if k not in entry.except_})
            target.update({k: row[k] for k in entry.row_keys if k in row})
            continue
        test, first_to = entry.test, entry.first_to
        first = _object(story, first_to) if first_to is not None else None
        for (key, tokens), key_tokens in zip(entry.keys, entry.key_tokens, strict=True):
            value = pointer.resolve(row, tokens)
            if value is MISSING or not (test(value) if test is not None else value is not None):
                continue
            if first_to is None:
                _put(target, key, value)
                continue
            have = pointer.resolve(first, key_tokens) if first is not None else MISSING
            if have is MISSING:
                if first is None:
                    first = _object(story, first_to, make=True)
                _put(first, key, value)
            elif have != value:
                _put(target, key, value)
    for tokens, values in made.items():
        if values:
            _put_at(turn, tokens, values)


def _object(node: dict[str, Any], tokens: Tokens, make: bool = False) -> Any:
    for token in tokens:
        if type(node.get(token)) is not dict:
            if not make:
                return None
            node[token] = {}
        node = node[token]
    return node


def _put(obj: dict[str, Any], key: str, value: Any) -> None:
    head, _, rest = key.partition("/")
    if rest:
        obj.setdefault(head, {})[rest] = value
    else:
        obj[head] = value


def _put_at(obj: dict[str, Any], tokens: Tokens, value: Any) -> None:
    for token in tokens[:-1]:
        obj = obj.setdefault(token, {})
    obj[tokens[-1]] = value


# --- reverse ---------------------------------------------------------------------------------


def reverse(
    entries: tuple[Spread, ...], row: dict[str, Any], turn: dict[str, Any], story: dict[str, Any], to: str
) -> None:
    """Write the spread values of the turn object `to` (over `story`'s first values) back into
    `row`, in place."""
    selected, first, parts = _reverse_of(entries, to)
    for entry, key_parts in zip(selected, parts, strict=True):
        own = pointer.resolve(turn, entry.to)
        own = own if type(own) is dict else {}
        if entry.open is not None:
            _reverse_open(entry, own, row)
            continue
        base = pointer.resolve(story, first) if first is not None else MISSING
        base = base if type(base) is dict else {}
        for head, rest, tokens in key_parts:
            # The turn's object over the Storyline's, shallow: the turn's value of a head wins whole.
            value = own[head] if head in own else base.get(head)
            if rest:
                value = (value or {}).get(rest)
            if value is not MISSING and value is not None:
                _set(row, tokens, value)


def _reverse_open(entry: Spread, own: dict[str, Any], row: dict[str, Any]) -> None:
    """An open entry's values back: a key `keys` lists to the row key, every other one into the
    `open` object (made when first written, as `_set` would)."""
    inside: dict[str, Any] | None = None
    # The `open` object is found once, unless a row key written on the way could replace it.
    assert entry.open is not None
    once = entry.open[0] not in entry.row_keys
    for key, value in own.items():
        if key in entry.except_:
            continue
        if key in entry.row_keys:
            row[key] = value
        elif once:
            if inside is None:
                inside = _container(row, entry.open)
            inside[key] = value
        else:
            _set(row, (*entry.open, key), value)


def _split(key: str) -> tuple[str, str]:
    head, _, rest = key.partition("/")
    return head, rest


def _container(row: dict[str, Any], tokens: Tokens) -> dict[str, Any]:
    node = row
    for token in tokens:
        node = node.setdefault(token, {})
    return node


_PARTS: dict[tuple[int, str], tuple[tuple[Spread, ...], tuple[tuple[tuple[str, str, Tokens], ...], ...]]] = {}


def _reverse_of(
    entries: tuple[Spread, ...], to: str
) -> tuple[tuple[Spread, ...], Tokens | None, tuple[tuple[tuple[str, str, Tokens], ...], ...]]:
    """`_of`, and the keys of each selected entry split for the reverse (computed once)."""
    selected, first = _of(entries, to)
    found = _PARTS.get((id(entries), to))
    if found is None or found[0] is not selected:
        # Each key split at its first "/" (`a/b` → a, b; `a` → a, ""), beside its row pointer.
        parts = tuple(tuple((*_split(key), tokens) for key, tokens in e.keys) for e in selected)
        found = _PARTS[(id(entries), to)] = (selected, parts)
    return selected, first, found[1]


def _set(row: dict[str, Any], tokens: Tokens, value: Any) -> None:
    node = row
    for token in tokens[:-1]:
        node = node.setdefault(token, {})
    node[tokens[-1]] = value
