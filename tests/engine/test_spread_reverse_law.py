"""The reverse of `spread:` (engine/spread.py) gives what its plain reading gives, for any entries,
turns, Storylines and rows: a hypothesis law against `reference_reverse` below, the implementation
before it found the `open` object once and split the keys once (issue 16 §5, speed).  Both run on
copies of the same row; the rows must be equal key order included, or both raise the same error."""

from __future__ import annotations

import copy
from typing import Any

import orjson
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mapc.engine import pointer, spread
from mapc.engine.values import MISSING

KEYS = st.sampled_from(["a", "b", "c"])  # few: entries, turns and rows meet on the same keys
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["", "x", "y"]))
VALUES = st.recursive(
    SCALARS, lambda inner: st.dictionaries(KEYS, inner, max_size=3) | st.lists(inner, max_size=2), max_leaves=6
)
POINTERS = st.lists(KEYS, min_size=1, max_size=2).map(lambda ks: "/" + "/".join(ks))
OBJECTS = st.dictionaries(KEYS, VALUES, max_size=3)


@st.composite
def entries(draw: Any) -> Any:
    """A `spread:` list: keyed entries (keys `a` or `a/b`, with `first_to` or not) and open ones
    (whose `keys` may name the open object's own first key)."""
    out = []
    for _ in range(draw(st.integers(1, 4))):
        to = draw(st.sampled_from(["/env", "/metrics"]))
        if draw(st.booleans()):
            keys = draw(st.dictionaries(st.sampled_from(["a", "b", "a/b", "b/a", "c/a"]), POINTERS, max_size=3))
            entry: dict[str, Any] = {"to": to, "keys": keys}
            if draw(st.booleans()):
                entry["first_to"] = draw(st.sampled_from(["/task/env", "/task"]))
        else:
            entry = {"to": to, "open": draw(POINTERS)}
            entry["except"] = draw(st.lists(KEYS, max_size=2))
            entry["keys"] = draw(st.lists(KEYS, max_size=3))
        out.append(entry)
    return out


def reference_reverse(entries: Any, row: dict[str, Any], turn: dict[str, Any], story: dict[str, Any], to: str) -> None:
    """engine/spread.reverse as it was (commit 1620c6a), with its `_set`."""

    def _set(row: dict[str, Any], tokens: Any, value: Any) -> None:
        node = row
        for token in tokens[:-1]:
            node = node.setdefault(token, {})
        node[tokens[-1]] = value

    tokens_to = pointer.parse(to)
    selected = tuple(e for e in entries if e.to == tokens_to)
    first = next((e.first_to for e in selected if e.first_to is not None), None)
    for entry in selected:
        own = pointer.resolve(turn, entry.to)
        own = own if type(own) is dict else {}
        if entry.open is not None:
            for key, value in own.items():
                if key not in entry.except_:
                    _set(row, (key,) if key in entry.row_keys else (*entry.open, key), value)
            continue
        base = pointer.resolve(story, first) if first is not None else MISSING
        env = {**(base if type(base) is dict else {}), **own}
        for key, tokens in entry.keys:
            head, _, rest = key.partition("/")
            value = (env.get(head) or {}).get(rest, MISSING) if rest else env.get(head, MISSING)
            if value is not MISSING and value is not None:
                _set(row, tokens, value)


def _outcome(fn: Any, entries: Any, row: Any, turn: Any, story: Any, to: str) -> Any:
    """The row `fn` writes (serialized, key order included), on copies: a row may be given the turn's
    own objects, and a later write into them changes the turn (or makes a cycle)."""
    row, turn, story = copy.deepcopy((row, turn, story))
    try:
        fn(entries, row, turn, story, to)
        return orjson.dumps([row, turn])
    except Exception as exc:  # both must fail alike on the same malformed values
        return ("raised", type(exc).__name__)


@settings(max_examples=1500, deadline=None)
@given(
    entries(),
    OBJECTS,
    st.dictionaries(st.sampled_from(["env", "metrics", "msg"]), OBJECTS | VALUES, max_size=3),
    st.fixed_dictionaries({}, optional={"task": st.fixed_dictionaries({}, optional={"env": OBJECTS}) | OBJECTS}),
    st.sampled_from(["/env", "/metrics"]),
)
# A row key replacing the `open` object on the way (its later keys go into the new one).
@example(
    [{"to": "/metrics", "open": "/a/b", "keys": ["a"]}], {}, {"metrics": {"b": 1, "a": {}, "c": 2}}, {}, "/metrics"
)
# The turn's value of a head wins whole over the Storyline's first value, a null one too.
@example(
    [{"to": "/env", "first_to": "/task/env", "keys": {"a": "/a"}}],
    {},
    {"env": {"a": "x"}},
    {"task": {"env": {"a": "y"}}},
    "/env",
)
@example(
    [{"to": "/env", "first_to": "/task/env", "keys": {"a/b": "/c"}}],
    {},
    {"env": {"a": None}},
    {"task": {"env": {"a": {"b": 1}}}},
    "/env",
)
def test_the_reverse_writes_what_the_plain_reading_writes(raw, row, turn, story, to):
    parsed = spread.parse(raw)
    assert _outcome(spread.reverse, parsed, row, turn, story, to) == _outcome(
        reference_reverse, parsed, row, turn, story, to
    )


def test_the_law_sees_a_difference():
    """Not vacuous: a reverse that skips open entries writes other rows on these inputs."""
    parsed = spread.parse([{"to": "/metrics", "open": "/meta/state", "keys": ["score"]}])
    turn = {"metrics": {"score": 1, "n": 2}}
    got = _outcome(spread.reverse, parsed, {}, turn, {}, "/metrics")
    assert got == orjson.dumps([{"score": 1, "meta": {"state": {"n": 2}}}, turn])
    assert got != _outcome(lambda *a: None, parsed, {}, turn, {}, "/metrics")
