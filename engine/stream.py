"""Event streams (`document.stream` in a spec): a file of records, one Storyline, grouped by kind.

Some formats are logs: JSONL lines of typed records (`{timestamp, type, payload}`), in the order
they happened, where Storyline keeps one turn per model message or tool call and puts what
belongs to it inside it (its tool results, the context it ran in, the events it caused).  The
spec says how records are told apart and where each kind goes; the rules then map the grouped
tree like any other document, and the reverse flattens it back into records.

    document:
      stream:
        kinds:                      # the first whose pointers hold these values names a record's kind
          meta: {/type: session_meta}
          call: {/type: response_item, /payload/type: function_call}
          output: {/type: response_item, /payload/type: function_call_output}
          ...
        head: meta                  # the first record of this kind is the document's /head
        items: [message, call]      # each record of these kinds opens an element of /items
        attach:                     # every other kind, in the order the reverse writes them
          - {kinds: [context], to: next, as: context}          # the next element's /items/{e}/context
          - {kinds: [output], pair: /payload/call_id, with: /payload/call_id, as: outputs}
          - {kinds: [event], to: previous, as: events}
        unknown: unknown            # records of no kind: to the previous element's list of this name

The grouped tree the rules read::

    {"head": record, "before": {as: [records]}, "items": [{"record": r, as: [records]...}],
     "after": {as: [records]}}

`before` holds what attaches to a previous element before there is one, `after` what attaches to
a next element after the last; a paired record whose partner is not found earlier goes to the
previous element's `unpaired` list.  The reverse writes, per element, its `to: next` lists, the
record, then its other lists, each in `attach` order; `head` first, `before` next, `after` last.
A file whose records were in another order keeps that order as `/layout` ({position in the
reverse's order: original index} for the records that moved), which no rule maps, so it is a
residual: a same-format round trip gives the file back exactly.

Version awareness: records of no declared kind are the spec's `unknown` list (never mapped, so
kept and counted as unknown fields); `census` counts the kinds of a file.  The `_storyline`
envelope of a document rides on the first record (the grouped tree holds it at its root).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from mapc.engine import pointer
from mapc.engine.problems import Problem
from mapc.engine.values import MISSING, json_equal

Tokens = tuple[str, ...]
UNPAIRED = "unpaired"
GROUPS = ("head", "before", "items", "after")  # the grouped tree's own keys (and `layout`)


@dataclass(frozen=True, slots=True)
class Attach:
    """Where records of some kinds go: to the next or previous element, or to the element whose
    record holds the same value at `owner` as the record does at `key`."""

    kinds: frozenset[str]
    to: str  # "next", "previous" or "pair"
    name: str
    key: Tokens = ()
    owner: Tokens = ()


@dataclass(frozen=True, slots=True)
class Stream:
    """A parsed `document.stream`."""

    kinds: tuple[tuple[str, tuple[tuple[Tokens, Any], ...]], ...]
    head: str | None
    items: frozenset[str]
    attach: tuple[Attach, ...]
    unknown: str

    def kind(self, record: Any) -> str | None:
        """The kind of `record` (None: no declared kind matches)."""
        for name, where in self.kinds:
            if all(json_equal(pointer.resolve(record, p), v) for p, v in where):
                return name
        return None

    def lists(self) -> tuple[str, ...]:
        """The names of the attached lists, in the order the reverse writes them."""
        names = [a.name for a in self.attach if a.to == "next"]
        names += [a.name for a in self.attach if a.to != "next"]
        for extra in (UNPAIRED, self.unknown):
            if extra not in names:
                names.append(extra)
        return tuple(dict.fromkeys(names))


def parse(entry: Any) -> tuple[Stream | None, list[Problem]]:
    """`document.stream` of a spec, or the problems that make it unreadable (spec problems)."""
    problems: list[Problem] = []

    def bad(where: str, message: str) -> tuple[None, list[Problem]]:
        problems.append(Problem("spec.invalid", f"/document/stream{where}", message))
        return None, problems

    if type(entry) is not dict or not set(entry) <= {"kinds", "head", "items", "attach", "unknown"}:
        return bad("", "`stream` is a mapping of kinds, head, items, attach and unknown")
    kinds = entry.get("kinds")
    if type(kinds) is not dict or not kinds:
        return bad("/kinds", "`kinds` maps each kind's name to {pointer: value} its records hold")
    parsed = []
    for name, where in kinds.items():
        if type(where) is not dict or not where or not all(type(p) is str and pointer.is_valid(p) for p in where):
            return bad(f"/kinds/{pointer.escape(str(name))}", "a kind is {JSON Pointer: value, ...}")
        parsed.append((str(name), tuple((pointer.parse(p), v) for p, v in where.items())))
    names = {n for n, _ in parsed}
    items = entry.get("items")
    if type(items) is not list or not items or not all(i in names for i in items):
        return bad("/items", "`items` lists the kinds (declared in `kinds`) that open an element")
    head = entry.get("head")
    if head is not None and head not in names:
        return bad("/head", "`head` is a kind declared in `kinds`")
    unknown = entry.get("unknown", "unknown")
    if type(unknown) is not str or not unknown:
        return bad("/unknown", "`unknown` names the list that keeps records of no kind")
    attach = []
    for i, a in enumerate(entry.get("attach") or ()):
        ok = type(a) is dict and type(a.get("as")) is str and a["as"] and a["as"] != "record"
        ok = ok and type(a.get("kinds")) is list and all(k in names for k in a["kinds"])
        if ok and "pair" in a:
            ok = set(a) == {"kinds", "pair", "with", "as"} and all(
                type(a[k]) is str and pointer.is_valid(a[k]) for k in ("pair", "with")
            )
            if ok:
                attach.append(
                    Attach(frozenset(a["kinds"]), "pair", a["as"], pointer.parse(a["pair"]), pointer.parse(a["with"]))
                )
        elif ok:
            ok = set(a) == {"kinds", "to", "as"} and a["to"] in ("next", "previous")
            if ok:
                attach.append(Attach(frozenset(a["kinds"]), a["to"], a["as"]))
        if not ok:
            return bad(
                f"/attach/{i}",
                "an attach entry is {kinds: [...], to: next|previous, as: NAME} or "
                "{kinds: [...], pair: /ptr, with: /ptr, as: NAME} (kinds declared in `kinds`)",
            )
    return Stream(tuple(parsed), head, frozenset(items), tuple(attach), unknown), problems


def _rule_of(st: Stream, kind: str | None) -> Attach | None:
    for a in st.attach:
        if kind in a.kinds:
            return a
    return None


# --- forward: records -> grouped tree ---------------------------------------------------------


def group(st: Stream, records: list[Any]) -> dict[str, Any]:
    """The grouped tree of a file's records (see the module docstring)."""
    head: Any = MISSING
    before: dict[str, list[Any]] = {}
    after: dict[str, list[Any]] = {}
    items: list[dict[str, Any]] = []
    pending: dict[str, list[tuple[int, Any]]] = {}  # `to: next` records waiting for an element
    where: dict[int, tuple[str, int, str]] = {}  # original index -> (group, element, list)
    if records and type(records[0]) is dict and "_storyline" in records[0]:
        envelope = records[0]["_storyline"]
        records = [{k: v for k, v in records[0].items() if k != "_storyline"}, *records[1:]]
    else:
        envelope = MISSING
    for n, rec in enumerate(records):
        kind = st.kind(rec)
        if kind is not None and kind == st.head and head is MISSING:
            head = rec
            where[n] = ("head", 0, "")
            continue
        if kind in st.items:
            element: dict[str, Any] = {"record": rec}
            e = len(items)
            for name, waiting in pending.items():
                element[name] = [r for _, r in waiting]
                for m, _ in waiting:
                    where[m] = ("items", e, name)
            pending = {}
            where[n] = ("items", e, "record")
            items.append(element)
            continue
        rule = _rule_of(st, kind)
        name = st.unknown if kind is None else rule.name if rule is not None else st.unknown
        if rule is not None and rule.to == "next":
            pending.setdefault(name, []).append((n, rec))
            continue
        target = len(items) - 1
        if rule is not None and rule.to == "pair":
            key = pointer.resolve(rec, rule.key)
            target = next(
                (
                    e
                    for e in range(len(items) - 1, -1, -1)
                    if key is not MISSING and json_equal(pointer.resolve(items[e]["record"], rule.owner), key)
                ),
                -1,
            )
            if target < 0:
                name, target = UNPAIRED, len(items) - 1
        if target < 0:
            before.setdefault(name, []).append(rec)
            where[n] = ("before", 0, name)
        else:
            items[target].setdefault(name, []).append(rec)
            where[n] = ("items", target, name)
    for name, waiting in pending.items():
        after[name] = [r for _, r in waiting]
        for m, _ in waiting:
            where[m] = ("after", 0, name)
    out: dict[str, Any] = {}
    if head is not MISSING:
        out["head"] = head
    if before:
        out["before"] = before
    out["items"] = items
    if after:
        out["after"] = after
    moved = {str(i): m for i, m in enumerate(_canonical_order(st, where, len(records))) if i != m}
    if moved:
        out["layout"] = moved
    if envelope is not MISSING:
        out["_storyline"] = envelope
    return out


def _canonical_order(st: Stream, where: dict[int, tuple[str, int, str]], n: int) -> list[int]:
    """The original indices of the records in the order `flatten` writes them."""
    rank = {name: i for i, name in enumerate(st.lists())}
    nexts = {a.name for a in st.attach if a.to == "next"}
    group_rank = {g: i for i, g in enumerate(GROUPS)}

    def key(m: int) -> tuple[int, int, int, int, int]:
        g, e, name = where[m]
        if g == "items":
            slot = (0, rank[name]) if name in nexts else (1, 0) if name == "record" else (2, rank[name])
        else:
            slot = (0, rank.get(name, 0))
        return (group_rank[g], e, *slot, m)

    return sorted(range(n), key=key)


# --- reverse: grouped tree -> records ---------------------------------------------------------


def flatten(st: Stream, tree: Any) -> list[Any]:
    """The records of a grouped tree, in the order `group` read them when `/layout` says it."""
    if type(tree) is not dict:
        return tree
    lists = st.lists()
    nexts = [a.name for a in st.attach if a.to == "next"]
    out: list[Any] = []
    if "head" in tree:
        out.append(tree["head"])
    out.extend(_lists(tree.get("before"), lists))
    for element in tree.get("items") or ():
        if type(element) is not dict:
            continue
        out.extend(_lists(element, [n for n in lists if n in nexts]))
        if "record" in element:
            out.append(element["record"])
        out.extend(_lists(element, [n for n in lists if n not in nexts]))
    out.extend(_lists(tree.get("after"), lists))
    out = _placed(out, tree.get("layout"))
    if "_storyline" in tree and out and type(out[0]) is dict:
        out[0] = {**out[0], "_storyline": tree["_storyline"]}
    return out


def _placed(records: list[Any], layout: Any) -> list[Any]:
    """`records` (in the reverse's order) where `layout` puts them: {position: original index} for
    the records that moved.  A layout that does not fit the records (they were changed) is ignored."""
    if type(layout) is not dict or not layout:
        return records
    order = list(range(len(records)))
    for key, at in layout.items():
        if not (key.isdigit() and int(key) < len(records) and type(at) is int and 0 <= at < len(records)):
            return records
        order[int(key)] = at
    if sorted(order) != list(range(len(records))):
        return records
    placed: list[Any] = [None] * len(records)
    for rec, at in zip(records, order, strict=True):
        placed[at] = rec
    return placed


def _lists(holder: Any, names: Any) -> list[Any]:
    if type(holder) is not dict:
        return []
    out: list[Any] = []
    for name in names:
        value = holder.get(name)
        if type(value) is list:
            out.extend(value)
    return out


def census(st: Stream, records: list[Any]) -> Counter[str]:
    """How many records of each kind a file holds; records of no kind are counted by their own
    type values (the first `kinds` pointer that is a string), under ``unknown:``."""
    counts: Counter[str] = Counter()
    first = st.kinds[0][1][0][0] if st.kinds and st.kinds[0][1] else ()
    for rec in records:
        kind = st.kind(rec)
        if kind is None:
            tag = pointer.resolve(rec, first) if first else MISSING
            kind = f"unknown:{tag}" if type(tag) is str else "unknown:?"
        counts[kind] += 1
    return counts
