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
    the pairing ids record i opens (tool calls) and closes (tool results)."""
    by_id: dict[str, int] = {}
    for i, r in enumerate(records):
        key = id_of(thread, r)
        if key is not MISSING:
            by_id.setdefault(key, i)
    threaded = {i for i, r in enumerate(records) if id_of(thread, r) is not MISSING}
    out = set(range(len(records))) - threaded
    leaf = next((i for i in sorted(threaded, reverse=True) if makes_turn(i)), None)
    if leaf is None:
        return set(range(len(records)))
    seen: set[int] = set()
    at: int | None = leaf
    while at is not None and at not in seen:  # a cycle ends the walk; its records stay aside
        seen.add(at)
        parent = parent_of(thread, records[at])
        at = by_id.get(parent) if parent is not MISSING else None
    out |= seen
    first = min(seen)
    for j in sorted(threaded):  # roots before the chain: a child stream's records that name its parent's
        if j < first and by_id.get(parent_of(thread, records[j])) is None:
            out.add(j)
    out |= _descendants(thread, records, leaf, by_id, threaded)
    changed = True
    while changed:
        groups = {g for g in (_group(thread, records[j]) for j in out) if g is not MISSING}
        asked = {a for j in out for a in asks(j)}
        answered = {a for j in out for a in answers(j)}
        changed = False
        for j in sorted(threaded - out):
            g = _group(thread, records[j])
            if (g is not MISSING and g in groups) or set(answers(j)) & asked or set(asks(j)) & answered:
                out.add(j)
                changed = True
    return out


def _group(thread: Thread, record: Any) -> Any:
    if thread.group is None:
        return MISSING
    value = pointer.resolve(record, thread.group)
    return value if type(value) is str and value else MISSING


def _descendants(
    thread: Thread, records: Sequence[Any], leaf: int, by_id: dict[str, int], threaded: set[int]
) -> set[int]:
    out = {leaf}
    for j in sorted(threaded):
        if j <= leaf:
            continue
        parent = parent_of(thread, records[j])
        if parent is not MISSING and by_id.get(parent) in out:
            out.add(j)
    return out - {leaf}
