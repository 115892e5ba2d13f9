"""Threading of an event stream by a parent id (`document.stream.thread`): which records are the
active branch.

A stream whose records name their parent (an id and a parent id) is a tree, not a list: an edited
or retried message starts a new branch beside the old one, and the file keeps both.  The active
branch is the chain of ancestors of the *leaf*, the last record (in file order) of a kind that
makes a turn.  A parent is the first present, non-null value of the `parent` pointers (a second
pointer is a logical parent across a break in the chain, e.g. a compaction boundary).

Records the chain does not reach but that belong with it join it, until nothing changes:

- a record whose `group` value (e.g. the API message id several records share) is that of an
  active record: parts of one message written as separate records;
- a record paired with an active record (`rescue`: ids a record answers, ids a record asks): a
  tool result written as a sibling of the next call;
- a descendant of the leaf (records written after the last turn, e.g. a closing summary);
- a root written before the chain's first record (its parent is null, or not in this stream: a
  child stream's opening records name records of the parent's).

Records without an id are not threaded and are active.  Everything else is another branch: the
stream module keeps it whole, never drops it.  The active records keep their file order, which
respects the tree (a record is written after its parent).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mapc.engine import pointer
from mapc.engine.values import MISSING

Tokens = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Thread:
    """`thread: {id, parent: [pointers], group?}`, parsed."""

    id: Tokens
    parents: tuple[Tokens, ...]
    group: Tokens | None = None


def parse(entry: Any) -> Thread:
    """The `thread:` mapping of a stream spec (shape checked by the spec schema)."""
    parents = entry["parent"] if isinstance(entry["parent"], list) else [entry["parent"]]
    group = entry.get("group")
    return Thread(
        pointer.parse(entry["id"]), tuple(pointer.parse(p) for p in parents), pointer.parse(group) if group else None
    )


def id_of(thread: Thread, record: Any) -> Any:
    """The record's own id (MISSING when it has none, or it is not a non-empty string)."""
    value = pointer.resolve(record, thread.id)
    return value if type(value) is str and value else MISSING


def parent_of(thread: Thread, record: Any) -> Any:
    """The first present, non-null parent id of the record (MISSING: a root)."""
    for p in thread.parents:
        value = pointer.resolve(record, p)
        if type(value) is str and value:
            return value
    return MISSING


def active(
    thread: Thread,
    records: Sequence[Any],
    makes_turn: Callable[[int], bool],
    asks: Callable[[int], tuple[str, ...]] = lambda i: (),
    answers: Callable[[int], tuple[str, ...]] = lambda i: (),
) -> set[int]:
    """The positions of the records on the active branch (see the module docstring).

    `makes_turn(i)`: whether record i is of a kind that makes a turn; `asks(i)` / `answers(i)`:
    the pairing ids record i opens (tool calls) and closes (tool results).  Each is called at
    most once per record."""
    ids = [id_of(thread, r) for r in records]
    by_id: dict[str, int] = {}
    for i, key in enumerate(ids):
        if key is not MISSING:
            by_id.setdefault(key, i)
    threaded = [i for i, key in enumerate(ids) if key is not MISSING]  # in file order
    out = {i for i, key in enumerate(ids) if key is MISSING}
    leaf = next((i for i in reversed(threaded) if makes_turn(i)), None)
    if leaf is None:
        return set(range(len(records)))
    parents = {j: parent_of(thread, records[j]) for j in threaded}
    seen: set[int] = set()
    at: int | None = leaf
    while at is not None and at not in seen:  # a cycle ends the walk; its records stay aside
        seen.add(at)
        parent = parents[at]
        at = by_id.get(parent) if parent is not MISSING else None
    out |= seen
    first = min(seen)
    for j in threaded:  # roots before the chain: a child stream's records that name its parent's
        if j < first and by_id.get(parents[j]) is None:
            out.add(j)
    out |= _descendants(parents, leaf, by_id, threaded)
    return _closure(thread, records, out, [j for j in threaded if j not in out], asks, answers)


def _closure(
    thread: Thread,
    records: Sequence[Any],
    out: set[int],
    candidates: list[int],
    asks: Callable[[int], tuple[str, ...]],
    answers: Callable[[int], tuple[str, ...]],
) -> set[int]:
    """`out` with every candidate that shares a group with an active record, answers a call one
    asks or asks a call one answers, until nothing changes.  (Joining only grows what the active
    records share, so the records taken in any order are the same: each candidate is indexed by
    what it would share, and the records that join pull in the ones waiting on them.)"""
    if not candidates:
        return out
    asks, answers = _once(asks), _once(answers)
    by_group: dict[Any, list[int]] = {}
    by_answer: dict[str, list[int]] = {}
    by_ask: dict[str, list[int]] = {}
    for j in candidates:
        g = _group(thread, records[j])
        if g is not MISSING:
            by_group.setdefault(g, []).append(j)
        for a in answers(j):
            by_answer.setdefault(a, []).append(j)
        for a in asks(j):
            by_ask.setdefault(a, []).append(j)
    waiting = set(candidates)
    queue = sorted(out)
    while queue:
        j = queue.pop()
        pulled: list[int] = []
        g = _group(thread, records[j]) if by_group else MISSING
        if g is not MISSING:
            pulled += by_group.pop(g, ())
        if by_answer:
            for a in asks(j):  # a call of an active record: the records answering it join
                pulled += by_answer.pop(a, ())
        if by_ask:
            for a in answers(j):  # a result of an active record: the records asking it join
                pulled += by_ask.pop(a, ())
        for k in pulled:
            if k in waiting:
                waiting.discard(k)
                out.add(k)
                queue.append(k)
    return out


def _once(fn: Callable[[int], tuple[str, ...]]) -> Callable[[int], tuple[str, ...]]:
    """`fn` remembered per record (the stream's `asks` maps the record to read its calls)."""
    memo: dict[int, tuple[str, ...]] = {}

    def once(i: int) -> tuple[str, ...]:
        found = memo.get(i)
        if found is None:
            found = memo[i] = fn(i)
        return found

    return once


def _group(thread: Thread, record: Any) -> Any:
    if thread.group is None:
        return MISSING
    value = pointer.resolve(record, thread.group)
    return value if type(value) is str and value else MISSING


def _descendants(parents: dict[int, Any], leaf: int, by_id: dict[str, int], threaded: list[int]) -> set[int]:
    out = {leaf}
    for j in threaded:
        if j <= leaf:
            continue
        parent = parents[j]
        if parent is not MISSING and by_id.get(parent) in out:
            out.add(j)
    return out - {leaf}
