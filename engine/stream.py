"""JSONL event streams (`document: {stream: …}`): records dispatched by a type key, threaded by a
parent id, calls paired with results, and version drift counted.

An agent's session log is a stream of records, one JSON object a line, of several kinds told
apart by one key (`type`).  A spec says, as data, for each kind (`records:`, the first entry whose
`type` and `when` match):

- `keys`: the keys the format's checked versions write (any other key is counted as unknown);
- `turn: true`: the record becomes one Storyline turn by its `rules` (`{from: P, to: Q}` copies,
  `{const: V, to: Q}`, `{call: fn, to: Q, back: fn}` a named function of the record and, back, of
  the turn); `back_when: {storyline pointer: value}` says which turns the reverse writes as this
  kind; `paired: true`: its results join the turns whose calls they answer (engine/pairing.py);
- `turn: false` (or no entry at all: a kind from a newer version): the record is kept whole;
  with `attach: next` or `attach: previous` its `rules` also lend values to the turn after or
  before it (`attach_when: {storyline pointer: value}`: only to such a turn), forward only: a
  context record is the next turn's env, a token-count record the previous turn's metrics;
- `head: fn`: the reverse of a Storyline from elsewhere writes this kind's record first, `fn(story)`
  (a session's meta record);
- `order: {pointer: [keys]}`: the key order of inner objects, and their known keys (any other is
  counted as unknown, as a record key outside `keys` is).

Threading (engine/thread.py) decides which records are the active branch; records of other
branches are kept whole.  `story:` rules fill the Storyline's own fields from the records (the
first, or `pick: last`, record that has the value; with `when: {pointer: value}`, of the records
holding those values); `every: true` says every record holds the value, so the reverse of a
Storyline from elsewhere writes it into each record.

Nothing is lost, by construction: after a record is mapped, the engine rebuilds it from its turn
exactly as the reverse will, and keeps every value the rebuilt record does not give back as a
residual under the record's pointer (`/{line index}/…`).  A record whose rebuilt form holds a key
the record lacks is kept whole instead (no turn).  The reverse of a Storyline that came from this
format puts each record back at its position: whole records where they were, result records by
the ids at `pair.record` (kept as their place marks), turn records in turn order in between; so
the same records come back.  A Storyline from elsewhere is written turn by turn, each turn's
results as result records after it, threaded by generated ids (UUID 5 of the session and position).

`drift` counts what the spec does not know — record kinds and keys of versions other than those
it was `checked` against — for `mapc convert` to report.
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from mapc.engine import functions, pairing, pointer, thread
from mapc.engine.mapped import Mapped, Rebuilt
from mapc.engine.problems import MapcError, Problem
from mapc.engine.values import MISSING, json_equal

Tokens = tuple[str, ...]
ROOT = ""
DEFAULT_ID = "session.jsonl"  # the source_document_id of a stream read without a path


@dataclass(frozen=True, slots=True)
class Rule:
    """One record rule: `copy` (from → to), `const` (value → to) or `call` (fn(record) → to, and
    `back` fn(turn) → an object merged into the record)."""

    op: str
    to: Tokens
    src: Tokens = ()
    value: Any = None
    call: str | None = None
    back: str | None = None
    pick: str = "first"  # story rules: the first or the last record with a value
    every: bool = False  # story rules: every record holds the value (written back to each)
    last_of_group: bool = False  # only the last record of its thread group maps it (`group: last`)
    when: tuple[tuple[Tokens, Any], ...] = ()  # story rules: only records holding these values


@dataclass(frozen=True, slots=True)
class Entry:
    """One `records:` entry: a record kind and how it maps."""

    type: str
    when: tuple[tuple[Tokens, Any], ...]
    test: str | None
    keys: frozenset[str] | None
    order: tuple[str, ...]
    turn: bool
    paired: bool
    rules: tuple[Rule, ...]
    back_when: tuple[tuple[Tokens, Any], ...]
    nested: tuple[tuple[Tokens, tuple[str, ...]], ...] = ()  # `order`: key order of inner objects
    defaults: tuple[tuple[Tokens, Any], ...] = ()  # values a record written from elsewhere gets where absent
    attach: str | None = None  # a kept record lends its rules' values to the "next"/"previous" turn
    attach_when: tuple[tuple[Tokens, Any], ...] = ()  # … only to a turn holding these values
    head: str | tuple[Rule, ...] | None = None  # the reverse of a foreign Storyline writes this record first


@dataclass(frozen=True, slots=True)
class Children:
    """`children:` — child streams (subagents) and how they link: companion files beside the stream
    (`files`, `key`, `spawn`), or (`linked: parent`) streams of their own whose Storylines name their
    parent's session (`/parent/psid`, by the story rules), linked when read together."""

    files: str | None  # a glob relative to the stream's file, `{stem}` its name without suffix
    key: Tokens  # in a child's records: the value naming it
    spawn: Tokens | None  # in the parent's records: where a result names the child it spawned
    by_parent: bool = False  # `linked: parent`; `files` is then where the reverse writes them ({key}: session)


@dataclass(frozen=True, slots=True)
class StreamSpec:
    """`document.stream`, parsed."""

    type: Tokens
    entries: tuple[Entry, ...]
    story: tuple[Rule, ...] = ()
    thread: thread.Thread | None = None
    pair: pairing.Pair | None = None
    version_at: Tokens | None = None
    checked: tuple[str, ...] = ()
    children: Children | None = None
    defaults: tuple[tuple[Tokens, Any], ...] = ()  # values a record written from elsewhere gets where absent
    # the entries of each string `type`, in order (entry_of looks a record's kind up, not through all)
    by_type: dict[str, tuple[Entry, ...]] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        for e in self.entries:
            self.by_type[e.type] = (*self.by_type.get(e.type, ()), e)


# --- reading the spec --------------------------------------------------------------------------


def parse(data: Any) -> tuple[StreamSpec | None, list[Problem]]:
    """`document.stream` of a spec, parsed; the problems point below `/document/stream`."""
    at = "/document/stream"
    problems: list[Problem] = []

    def fail(where: str, message: str) -> None:
        problems.append(Problem("spec.invalid", at + where, message))

    if not isinstance(data, dict):
        fail("", "`document.stream` is a mapping {type, records, story, thread, pair, versions, children}")
        return None, problems
    unknown = set(data) - {"type", "records", "story", "thread", "pair", "versions", "children", "defaults"}
    for key in sorted(unknown):
        fail(f"/{key}", f"unknown key {key!r}")
    ptr = _pointer(data.get("type"), "/type", fail)
    entries = []
    records = data.get("records")
    if not isinstance(records, list) or not records:
        fail("/records", "`records` is a non-empty list of record kinds")
        records = []
    for n, item in enumerate(records):
        entry = _entry(item, f"/records/{n}", fail)
        if entry is not None:
            entries.append(entry)
    story = []
    for n, item in enumerate(data.get("story") or []):
        rule = _rule(item, f"/story/{n}", fail, story=True)
        if rule is not None:
            story.append(rule)
    threading = pair = children = None
    try:
        if data.get("thread") is not None:
            threading = thread.parse(data["thread"])
        if data.get("pair") is not None:
            pair = pairing.parse(data["pair"])
        if data.get("children") is not None:
            c = data["children"]
            if c.get("linked") == "parent":  # streams of their own, found among the streams read together
                files = str(c["files"]) if "files" in c else None  # where the reverse writes them
                children = Children(files, (), None, by_parent=True)
            else:
                children = Children(str(c["files"]), pointer.parse(c["key"]), pointer.parse(c["spawn"]))
    except (KeyError, TypeError, AttributeError, pointer.PointerSyntaxError) as exc:
        fail("", f"thread, pair and children take JSON Pointers ({exc})")
    versions = data.get("versions") or {}
    version_at = _pointer(versions.get("at"), "/versions/at", fail) if versions else None
    checked = versions.get("checked") or [] if isinstance(versions, dict) else []
    if not isinstance(checked, list) or not all(isinstance(v, str) for v in checked):
        fail("/versions/checked", "the checked versions are a list of strings")
        checked = []
    if any(e.paired for e in entries) and pair is None:
        fail("/pair", "a `paired` record kind needs `pair`")
    defaults = _conditions(data.get("defaults"), "/defaults", fail)
    if problems or ptr is None:
        return None, problems
    spec = StreamSpec(
        ptr, tuple(entries), tuple(story), threading, pair, version_at, tuple(checked), children, defaults
    )
    return spec, []


def _pointer(text: Any, where: str, fail: Any) -> Tokens | None:
    try:
        if not isinstance(text, str):
            raise pointer.PointerSyntaxError("not a string")
        return pointer.parse(text)
    except pointer.PointerSyntaxError:
        fail(where, f"{text!r} is not a JSON Pointer")
        return None


def _conditions(value: Any, where: str, fail: Any) -> tuple[tuple[Tokens, Any], ...]:
    if value is None:
        return ()
    if not isinstance(value, dict):
        fail(where, "a condition is a mapping {pointer: value}")
        return ()
    out = []
    for p, v in value.items():
        tokens = _pointer(p, where, fail)
        if tokens is not None:
            out.append((tokens, v))
    return tuple(out)


def _entry(item: Any, where: str, fail: Any) -> Entry | None:
    known = {
        "type",
        "when",
        "test",
        "keys",
        "order",
        "turn",
        "paired",
        "rules",
        "back_when",
        "defaults",
        "attach",
        "attach_when",
        "head",
    }
    if not isinstance(item, dict) or not isinstance(item.get("type"), str):
        fail(where, "a record kind is a mapping with a string `type`")
        return None
    for key in sorted(set(item) - known):
        fail(f"{where}/{key}", f"unknown key {key!r}")
    keys = item.get("keys")
    if keys is not None and (not isinstance(keys, list) or not all(isinstance(k, str) for k in keys)):
        fail(f"{where}/keys", "`keys` is a list of strings")
        keys = None
    test = item.get("test")
    if test is not None and not isinstance(test, str):
        fail(f"{where}/test", "`test` names a registered function")
        test = None
    nested = []
    for p, names in (item.get("order") or {}).items() if isinstance(item.get("order"), dict) else ():
        tokens = _pointer(p, f"{where}/order", fail)
        if tokens is None or not isinstance(names, list) or not all(isinstance(k, str) for k in names):
            fail(f"{where}/order", "`order` maps a pointer to the list of its object's keys, in order")
        else:
            nested.append((tokens, tuple(names)))
    attach = item.get("attach")
    if attach is not None and (attach not in ("next", "previous") or item.get("turn")):
        fail(f"{where}/attach", "`attach` is next or previous, for a record kind that is not a turn")
        attach = None
    head = item.get("head")
    if isinstance(head, list) and not item.get("turn"):
        head = tuple(r for n, x in enumerate(head) if (r := _rule(x, f"{where}/head/{n}", fail, head=True)))
    elif head is not None and (not isinstance(head, str) or item.get("turn")):
        fail(f"{where}/head", "`head` names a registered function or lists rules, for a record kind that is not a turn")
        head = None
    rules = []
    for n, r in enumerate(item.get("rules") or []):
        rule = _rule(r, f"{where}/rules/{n}", fail)
        if rule is not None:
            rules.append(rule)
    return Entry(
        item["type"],
        _conditions(item.get("when"), f"{where}/when", fail),
        test,
        frozenset(keys) if keys is not None else None,
        tuple(keys or ()),
        bool(item.get("turn", False)),
        bool(item.get("paired", False)),
        tuple(rules),
        _conditions(item.get("back_when"), f"{where}/back_when", fail),
        tuple(nested),
        _conditions(item.get("defaults"), f"{where}/defaults", fail),
        attach,
        _conditions(item.get("attach_when"), f"{where}/attach_when", fail),
        head,
    )


def _rule(item: Any, where: str, fail: Any, story: bool = False, head: bool = False) -> Rule | None:
    known = {"from", "to", "const", "call", "back", *(("pick", "every", "when") if story else ("group",))}
    if head:  # head rules: Storyline pointer (`from`) → record pointer (`to`), `else` when it is absent
        known = {"from", "to", "const", "else"}
    if not isinstance(item, dict) or "to" not in item:
        fail(where, "a rule is a mapping with `to`")
        return None
    for key in sorted(set(item) - known):
        fail(f"{where}/{key}", f"unknown key {key!r}")
    to = _pointer(item["to"], f"{where}/to", fail)
    ops = [k for k in ("from", "const", "call") if k in item]
    if len(ops) != 1:
        fail(where, "a rule has exactly one of `from`, `const`, `call`")
        return None
    if item.get("group", "last") != "last":
        fail(f"{where}/group", "`group` is last: of the records of one group (thread.group), only the last maps it")
    if item.get("pick", "first") not in ("first", "last"):
        fail(f"{where}/pick", "`pick` is first or last")
    for key in ("call", "back"):
        if key in item and not isinstance(item[key], str):
            fail(f"{where}/{key}", f"`{key}` names a registered function")
            return None
    if to is None:
        return None
    if "from" in item:
        src = _pointer(item["from"], f"{where}/from", fail)
        when = _conditions(item.get("when"), f"{where}/when", fail)
        if src is None:
            return None
        every = bool(item.get("every"))
        return Rule("copy", to, src, item.get("else"), pick=item.get("pick", "first"), every=every, when=when)
    if "const" in item:
        return Rule("const", to, value=item["const"])
    return Rule(
        "call",
        to,
        call=item["call"],
        back=item.get("back"),
        pick=item.get("pick", "first"),
        last_of_group="group" in item,
    )


# --- small helpers -------------------------------------------------------------------------------


_FOUND: dict[str, Any] = {}  # name -> function: a lookup goes through the catalog (bench: 5 % of a forward)


def _fn(name: str) -> Any:
    fn = _FOUND.get(name)
    if fn is not None:
        return fn
    found = functions.lookup(name)
    if found is None:
        raise MapcError.single("spec.unknown_function", "/document/stream", f"unknown function {name!r}")
    _FOUND[name] = found.fn
    return found.fn


def _put(obj: Any, tokens: Tokens, value: Any) -> Any:
    """`obj` with `value` at `tokens` (copied on the way; an absent node is made an object, or a list
    when the token is a position; a residual never needs one made: the diff keeps absent nodes whole)."""
    if not tokens:
        return value
    head, rest = tokens[0], tokens[1:]
    if type(obj) is not dict and pointer.is_array_index(head):  # a position: of a list (made when absent)
        obj = obj if type(obj) is list else []
        out_list = list(obj)
        i = int(head)
        while len(out_list) <= i:
            out_list.append(None)
        out_list[i] = _put(out_list[i], rest, value)
        return out_list
    out = dict(obj) if type(obj) is dict else {}
    out[head] = _put(out.get(head), rest, value) if rest else value
    return out


def _merge(base: dict[str, Any], part: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in part.items():
        out[k] = _merge(out[k], v) if type(v) is dict and type(out.get(k)) is dict else v
    return out


def _matches(conditions: tuple[tuple[Tokens, Any], ...], obj: Any) -> bool:
    for p, v in conditions:
        found = pointer.resolve(obj, p)
        if type(v) is str:  # the common case, a kind's name: no JSON-model comparison needed
            if type(found) is not str or found != v:
                return False
        elif not json_equal(found, v):
            return False
    return True


def entry_of(spec: StreamSpec, record: Any) -> Entry | None:
    """The first entry whose type, `when` and `test` match the record (None: a kind it does not know)."""
    kind = pointer.resolve(record, spec.type)
    for e in spec.by_type.get(kind, ()) if type(kind) is str else ():
        if _matches(e.when, record) and (e.test is None or _fn(e.test)(record) is True):
            return e
    return None


def back_entry(spec: StreamSpec, turn: Any, paired: bool = False) -> Entry | None:
    """The entry the reverse writes a turn as: the first turn entry whose `back_when` matches."""
    for e in spec.entries:
        if e.turn and e.paired == paired and _matches(e.back_when, turn):
            return e
    return None


def build(entry: Entry, record: dict[str, Any], last: bool = True) -> dict[str, Any]:
    """The turn (without id) the entry's rules make of the record (`last`: the record is the last of
    its thread group, e.g. the last record of one API message, which alone carries its usage)."""
    turn: dict[str, Any] = {}
    for rule in entry.rules:
        if rule.last_of_group and not last:
            continue
        if rule.op == "copy":
            value = pointer.resolve(record, rule.src)
        elif rule.op == "const":
            value = rule.value
        else:
            assert rule.call is not None
            value = _fn(rule.call)(record)
        if value is MISSING:
            continue
        turn = _merge(turn, value) if not rule.to and type(value) is dict else _put(turn, rule.to, value)
    return turn


def rebuild(spec: StreamSpec, entry: Entry, turn: dict[str, Any]) -> dict[str, Any]:
    """The record the entry writes for a turn: its type and conditions, then each rule backwards."""
    record: dict[str, Any] = _put({}, spec.type, entry.type)
    for p, v in entry.when:
        record = _put(record, p, v)
    for rule in entry.rules:
        if rule.op == "copy":
            value = pointer.resolve(turn, rule.to)
            if value is not MISSING:
                record = _put(record, rule.src, value)
        elif rule.op == "call" and rule.back is not None:
            part = _fn(rule.back)(turn)
            if type(part) is dict:
                record = _merge(record, part)
    return record


def ordered(spec: StreamSpec, record: Any) -> Any:
    """The record's keys in the order its entry's `keys` list them (then the others, as they are):
    the format's own order, so a rebuilt record reads as the original did."""
    entry = entry_of(spec, record) if type(record) is dict else None
    if entry is None:
        return record
    for at, names in ((), entry.order), *entry.nested:
        inner = pointer.resolve(record, at)
        if names and type(inner) is dict:
            rank = {k: n for n, k in enumerate(names)}
            record = _put(record, at, dict(sorted(inner.items(), key=lambda kv: rank.get(kv[0], len(rank)))))
    return record


def diff(record: Any, rebuilt: Any, at: str = "") -> tuple[dict[str, Any], bool]:
    """The values of `record` that `rebuilt` does not give back, by pointer below the record, and
    whether `rebuilt` holds a key the record lacks (then only the whole record is exact)."""
    out: dict[str, Any] = {}
    if type(record) is dict and type(rebuilt) is dict:
        if any(k not in record for k in rebuilt):
            return {}, True
        for k, v in record.items():
            here = pointer.join(at, k)
            if k not in rebuilt:
                out[here] = v
            elif not json_equal(v, rebuilt[k]):
                inner, whole = diff(v, rebuilt[k], here)
                if whole:
                    return {}, True
                out.update(inner)
        return out, False
    if type(record) is list and type(rebuilt) is list and len(record) == len(rebuilt):
        for i, (a, b) in enumerate(zip(record, rebuilt, strict=True)):
            if not json_equal(a, b):
                inner, whole = diff(a, b, pointer.join(at, i))
                if whole:
                    return {}, True
                out.update(inner)
        return out, False
    if json_equal(record, rebuilt):
        return {}, False
    return {at: record}, False


# --- forward -------------------------------------------------------------------------------------


@dataclass(slots=True)
class Drift:
    """What a stream holds that its spec does not know: kinds, keys and versions."""

    unknown_types: Counter[str] = field(default_factory=Counter)
    unknown_keys: Counter[str] = field(default_factory=Counter)  # "type/key"
    versions: Counter[str] = field(default_factory=Counter)  # versions seen that were not checked
    other_branches: int = 0
    kept_whole: int = 0
    turn_of: dict[int, int] = field(default_factory=dict)  # record index -> the turn (index) it went to

    def messages(self, checked: tuple[str, ...]) -> list[str]:
        """One line per kind of drift, for the CLI to print."""
        against = f" (the spec was checked against {', '.join(checked)})" if checked else ""
        out = []
        if self.unknown_types:
            listed = ", ".join(f"{k} ×{n}" for k, n in sorted(self.unknown_types.items()))
            out.append(f"unknown record types from a newer version, kept whole: {listed}{against}")
        if self.unknown_keys:
            listed = ", ".join(f"{k} ×{n}" for k, n in sorted(self.unknown_keys.items()))
            out.append(f"unknown keys from a newer version, kept: {listed}{against}")
        if self.versions:
            out.append(f"versions the spec was not checked against: {', '.join(sorted(self.versions))}{against}")
        return out


def _records(doc: Any) -> list[dict[str, Any]]:
    if type(doc) is dict:
        doc = [doc]
    if type(doc) is not list or not doc:
        raise MapcError.single("stream.shape", "", "expected JSONL records (a non-empty list of objects)")
    bad = [
        Problem("stream.not_object", f"/{i}", "a record must be a JSON object")
        for i, r in enumerate(doc)
        if type(r) is not dict
    ]
    if bad:
        raise MapcError(bad)
    return doc


def _kind_text(spec: StreamSpec, record: Any) -> str:
    kind = pointer.resolve(record, spec.type)
    return kind if type(kind) is str else "(no type)" if kind is MISSING else repr(kind)


def _active(spec: StreamSpec, records: list[dict[str, Any]], entries: list[Entry | None]) -> set[int]:
    if spec.thread is None:
        return set(range(len(records)))
    pair = spec.pair

    def makes_turn(i: int) -> bool:
        e = entries[i]
        return e is not None and e.turn

    def asks(i: int) -> tuple[str, ...]:
        e = entries[i]
        return (
            pairing.call_ids(pair, build(e, records[i])) if pair and e is not None and e.turn and not e.paired else ()
        )

    def answers(i: int) -> tuple[str, ...]:
        return tuple(v for _, v in pairing.record_ids(pair, records[i])) if pair else ()

    return thread.active(spec.thread, records, makes_turn, asks, answers)


def drift(spec: StreamSpec, doc: Any) -> Drift:
    """What the records hold that the spec does not know (see `Drift`)."""
    found = Drift()
    for record in _records(doc):
        entry = entry_of(spec, record)
        _count(spec, entry, record, found)
    return found


def _count(spec: StreamSpec, entry: Entry | None, record: dict[str, Any], found: Drift) -> None:
    if entry is None:
        found.unknown_types[_kind_text(spec, record)] += 1
    elif entry.keys is not None:
        for k in record:
            if k not in entry.keys:
                found.unknown_keys[f"{entry.type}/{k}"] += 1
    if entry is not None:
        for at, names in entry.nested:
            inner = pointer.resolve(record, at)
            for k in inner if type(inner) is dict else ():
                if k not in names:
                    found.unknown_keys[f"{entry.type}{pointer.format(at)}/{k}"] += 1
    if spec.version_at is not None:
        v = pointer.resolve(record, spec.version_at)
        if type(v) is str and spec.checked and v not in spec.checked:
            found.versions[v] += 1


def forward(spec: StreamSpec, doc: Any) -> tuple[dict[str, Any], dict[str, Any], Drift]:
    """The Storyline of one stream (without `unknown_fields`), its residuals by source pointer,
    and its drift."""
    records = _records(doc)
    entries = [entry_of(spec, r) for r in records]
    active = _active(spec, records, entries)
    found = Drift()
    last_of: dict[Any, int] = {}
    if spec.thread is not None and spec.thread.group is not None:
        for i in sorted(active):
            group = pointer.resolve(records[i], spec.thread.group)
            if type(group) is str:
                last_of[group] = i
    fields: dict[str, Any] = {}
    turns: list[dict[str, Any]] = []
    owner: dict[str, int] = {}
    lending: list[tuple[Entry, dict[str, Any]]] = []  # `attach: next` records waiting for their turn
    for i, (record, entry) in enumerate(zip(records, entries, strict=True)):
        _count(spec, entry, record, found)
        here = f"/{i}"
        if entry is None or not entry.turn:
            fields[here] = record
            if entry is not None and entry.attach == "next" and i in active:
                lending.append((entry, record))
            elif entry is not None and entry.attach == "previous" and turns and i in active:
                turns[-1] = _lend(entry, record, turns[-1])
            continue
        if i not in active:
            fields[here] = record
            found.other_branches += 1
            continue
        group = pointer.resolve(record, spec.thread.group) if spec.thread and spec.thread.group else MISSING
        turn = build(entry, record, last_of.get(group, i) == i)
        items = pairing.results(spec.pair, turn) if spec.pair and entry.paired else []
        answered = (
            bool(items) and spec.pair is not None and all(pairing.result_id(spec.pair, it) in owner for it in items)
        )
        if entry.paired and not answered and "src" not in turn:
            fields[here] = record  # a result that answers no earlier call and makes no turn of its own
            found.kept_whole += 1
            continue
        if answered:
            assert spec.pair is not None
            pseudo = pairing.with_results(spec.pair, {}, items)
            kept, whole = diff(record, rebuild(spec, entry, pseudo))
            if whole:
                fields[here] = record
                found.kept_whole += 1
                continue
            fields.update({here + k: v for k, v in kept.items()})
            for sub, value in pairing.record_ids(spec.pair, record):  # the place marks
                fields[here + sub] = value
            for it in items:
                n = owner[pairing.result_id(spec.pair, it)]
                turns[n] = pairing.with_results(spec.pair, turns[n], [it])
                found.turn_of[i] = n
            continue
        kept, whole = diff(record, _turn_record(spec, turn, 0, entry))
        if whole:
            fields[here] = record
            found.kept_whole += 1
            continue
        fields.update({here + k: v for k, v in kept.items()})
        for lender, lent in lending:
            turn = _lend(lender, lent, turn)
        lending = []
        found.turn_of[i] = len(turns)
        turns.append(turn)
        if spec.pair is not None:
            for tcid in pairing.call_ids(spec.pair, turn):
                owner.setdefault(tcid, len(turns) - 1)
    story = _story(spec, [records[i] for i in sorted(active)] or records)
    story["turns"] = [{"id": n, **t} for n, t in enumerate(turns, start=1)]
    return story, fields, found


def _lend(entry: Entry, record: dict[str, Any], turn: dict[str, Any]) -> dict[str, Any]:
    """`turn` with the values a kept record's rules give it (`attach`), if the turn is one it lends to."""
    if not _matches(entry.attach_when, turn):
        return turn
    lent = build(entry, record)
    return _merge(turn, lent) if lent else turn


def _story(spec: StreamSpec, records: list[dict[str, Any]]) -> dict[str, Any]:
    story: dict[str, Any] = {}
    for rule in spec.story:
        if rule.op == "const":
            story = _put(story, rule.to, rule.value)
            continue
        ordered = records if rule.pick == "first" else records[::-1]
        for record in ordered:
            if not _matches(rule.when, record):
                continue
            value = pointer.resolve(record, rule.src) if rule.op == "copy" else _fn(rule.call or "")(record)
            if value is not MISSING and value is not None:
                story = _put(story, rule.to, value)
                break
    return story


def map_document(spec: StreamSpec, source: str, doc: Any, document_id: str) -> Mapped:
    """One stream as a Storyline bound to the carrier "" (the whole stream), residuals attached."""
    story, fields, _ = forward(spec, doc)
    if fields:
        story["unknown_fields"] = {"sources": {source: {"source_document_id": document_id, "fields": fields}}}
    return Mapped(story, ROOT)


def link(spec: StreamSpec, parent: dict[str, Any], parent_doc: Any, children: list[tuple[dict[str, Any], Any]]) -> None:
    """Link child Storylines (their streams beside) to the parent: `parent`/`children`, with the
    spawning call's id and turn when a parent record names the child (`children.spawn`)."""
    assert spec.children is not None
    if spec.children.by_parent:
        return _link_by_parent(parent, [story for story, _ in children])
    assert spec.children.spawn is not None
    records = _records(parent_doc)
    spawned: dict[Any, str] = {}
    for record in records:
        key = pointer.resolve(record, spec.children.spawn)
        ids = pairing.record_ids(spec.pair, record) if spec.pair else []
        if key is not MISSING and ids:
            spawned.setdefault(key, ids[0][1])
    kids = []
    for story, doc in children:
        key = next((k for r in _records(doc) if (k := pointer.resolve(r, spec.children.key)) is not MISSING), MISSING)
        link_: dict[str, Any] = {"psid": parent["session"]}
        tcid = spawned.get(key)
        if tcid is not None:
            link_["scid"] = tcid
            turn = next((t for t in parent["turns"] if spec.pair and tcid in pairing.call_ids(spec.pair, t)), None)
            if turn is not None:
                link_["ptid"] = turn["id"]
        story["parent"] = link_
        kids.append(story["session"])
    if kids:
        parent["children"] = kids


def _link_by_parent(root: dict[str, Any], children: list[dict[str, Any]]) -> None:
    """Streams whose Storylines name the session that spawned them (`/parent/psid`): each is linked
    to the one it names, the root or another child (a tree of any depth); the others are left as
    they are."""
    by_session = {root["session"]: root}
    for story in children:
        by_session.setdefault(story["session"], story)
    for story in children:
        owner = by_session.get((story.get("parent") or {}).get("psid"))
        if owner is None or owner is story:
            continue
        story.setdefault("trajectory", story["session"])  # a child's name in its tree (a subagent's id there)
        owner.setdefault("children", []).append(story["session"])


# --- reverse -------------------------------------------------------------------------------------


def _own(story: dict[str, Any], source: str) -> dict[str, Any]:
    body = ((story.get("unknown_fields") or {}).get("sources") or {}).get(source) or {}
    return body.get("fields") or {}


def reverse(spec: StreamSpec, source: str, stories: list[dict[str, Any]]) -> list[Rebuilt]:
    """One stream per Storyline: its records back in place when it came from this format (its
    residuals say where), else written turn by turn."""
    out = []
    for n, story in enumerate(stories):
        fields = _own(story, source)
        records = _in_place(spec, story, fields, n, source) if fields else _written(spec, story, n)
        if not records:  # read back, an empty stream is no stream (and has no record to carry an envelope)
            raise MapcError.single(
                "export.unrepresentable",
                f"/{n}/turns",
                f"a Storyline without turns: a {source} stream is one record at least, and no record kind of "
                f"this format is written for a Storyline that has none",
            )
        out.append(Rebuilt(records, (Mapped(story, ROOT),)))  # type: ignore[arg-type]
    return out


_FRESH = " (without unknown_fields.sources.{source} the Storyline is written as a new stream, what it kept dropped)"


def _unedited(turns: list[dict[str, Any]], n: int, source: str) -> None:
    """Refuse, clearly, a Storyline whose turns were removed, inserted or moved after it was read:
    the forward numbers its turns 1, 2, …, and the records' residuals sit at the positions of
    those turns, so a turn out of that order would take another record's values.  (A Storyline
    another format read after a hop numbers its turns its own way; its residuals are the hop's.)"""
    for k, turn in enumerate(turns):
        if turn.get("id") != k + 1:
            raise MapcError.single(
                "export.edited",
                f"/{n}/turns/{k}",
                f"turn id {turn.get('id')!r} where the {source} stream's records put turn {k + 1}: turns were "
                f"removed, inserted or moved after the Storyline was read, which cannot be written back in "
                f"place{_FRESH.format(source=source)}",
            )


def _in_place(spec: StreamSpec, story: dict[str, Any], fields: dict[str, Any], n: int, source: str) -> list[Any]:
    if type(fields.get(ROOT)) is list:  # the whole stream was kept (a hop could not say it)
        return list(fields[ROOT])
    whole: dict[int, Any] = {}
    parts: dict[int, list[tuple[Tokens, Any]]] = {}
    for ptr, value in fields.items():
        tokens = pointer.parse(ptr)
        if not tokens or not pointer.is_array_index(tokens[0]):
            raise MapcError.single("residual.unplaceable", f"/{n}", f"residual {ptr} is not inside a record")
        i = int(tokens[0])
        if len(tokens) == 1:
            whole[i] = value
        else:
            parts.setdefault(i, []).append((tokens[1:], value))
    turns = [t for t in story.get("turns") or [] if type(t) is dict]
    if (story.get("origin") or {}).get("format") == source:  # read from this format, not another's reading
        _unedited(turns, n, source)
    by_id: dict[str, Any] = {}
    if spec.pair is not None:
        for t in turns:
            for it in pairing.paired(spec.pair, t):
                rid = pairing.result_id(spec.pair, it)
                if rid is not MISSING:
                    by_id.setdefault(rid, it)
    marks = _place_marks(spec, parts, by_id)
    claimed = {rid for ids in marks.values() for rid in ids}
    last = max([*whole, *parts], default=-1)
    records: list[Any] = []
    queue = list(turns)
    i = 0
    while i <= last:
        if i in whole:
            record = whole[i]
        elif i in marks:
            entry = next(e for e in spec.entries if e.paired)
            assert spec.pair is not None
            record = rebuild(spec, entry, pairing.with_results(spec.pair, {}, [by_id[r] for r in marks[i]]))
        elif queue:
            turn = queue.pop(0)
            record = _turn_record(spec, turn, n)
        else:
            raise MapcError.single(
                "export.edited",
                f"/{n}/turns",
                f"record {i} of the {source} stream has no turn to write it from: a turn, a tool call or a "
                f"result was removed after the Storyline was read, and the stream cannot be written back in "
                f"place{_FRESH.format(source=source)}",
            )
        for tokens, value in parts.get(i, ()):
            record = _put(record, tokens, value)
        records.append(record if i in whole else ordered(spec, record))
        i += 1
    position = {id(turn): t for t, turn in enumerate(turns)} if queue else {}
    for turn in queue:  # after the stream's last record: a turn appended to the Storyline after it was read
        own = []
        if spec.pair is not None:
            own = [it for it in pairing.paired(spec.pair, turn) if pairing.result_id(spec.pair, it) not in claimed]
            claimed.update(pairing.result_id(spec.pair, it) for it in own)
        records += _appended(spec, story, turn, own, n, position[id(turn)], records)
    unclaimed = [rid for rid in by_id if rid not in claimed]
    if unclaimed:
        raise MapcError.single(
            "export.edited",
            f"/{n}/turns",
            f"results {', '.join(unclaimed[:3])} are in no record of the {source} stream they came from: a result "
            f"was added, or given another id, after the Storyline was read{_FRESH.format(source=source)}",
        )
    return records


def _appended(
    spec: StreamSpec, story: dict[str, Any], turn: dict[str, Any], own: list[Any], n: int, t: int, before: list[Any]
) -> list[Any]:
    """The records of a turn after the stream's last record (appended to the Storyline after it was
    read): its record, then its results no record placed (`own`) as result records.  In a threaded
    stream a record without an id is written as a new stream's are (`_stamped`): its id made from
    the Storyline's session and the previous record's id, threaded to that record, with the values
    every record holds; the loss report lists them as synthesized (engine/loss.py)."""
    session = str(story.get("session", ""))
    base = pairing.with_results(spec.pair, pairing.without_paired(spec.pair, turn), own) if spec.pair else turn
    out: list[Any] = []
    for record in _turn_records(spec, base, n, t):
        if spec.thread is not None and pointer.resolve(record, spec.thread.id) is MISSING:
            ids = (pointer.resolve(r, spec.thread.id) for r in reversed([*before, *out]) if type(r) is dict)
            previous = next((v for v in ids if type(v) is str), None)
            record = _stamped(spec, story, record, previous, f"{session}:{previous}:{len(before) + len(out)}")
        out.append(ordered(spec, record))
    return out


def _place_marks(
    spec: StreamSpec, parts: dict[int, list[tuple[Tokens, Any]]], by_id: dict[str, Any]
) -> dict[int, list[str]]:
    """The positions of result records: their residuals hold ids at `pair.record`, all of them results."""
    if spec.pair is None:
        return {}
    out = {}
    for i, items in parts.items():
        holder: dict[str, Any] = {}
        for tokens, value in sorted(
            items, key=lambda kv: [(0, int(t), "") if t.isdigit() else (1, 0, t) for t in kv[0]]
        ):
            holder = _put(holder, tokens, value)  # positions in order: the ids come out in the record's order
        ids = [v for _, v in pairing.record_ids(spec.pair, holder)]
        if ids and all(v in by_id for v in ids) and _still_a_result(spec, [by_id[v] for v in ids], items):
            out[i] = ids
    return out


def _still_a_result(spec: StreamSpec, items: list[Any], parts: list[tuple[Tokens, Any]]) -> bool:
    """Whether the result record of `items`, with the residuals over it, is still a result record:
    a call record also holds the id at `pair.record` (its own call id), and after a hop its
    residuals may name it, but they then also say its kind (found by the hop law over generated
    rollouts: the call was laid out as a result and its turn written once more at the end)."""
    assert spec.pair is not None
    entry = next(e for e in spec.entries if e.paired)
    record = rebuild(spec, entry, pairing.with_results(spec.pair, {}, items))
    for tokens, value in parts:
        record = _put(record, tokens, value)
    found = entry_of(spec, record)
    return found is not None and found.paired


def _turn_record(spec: StreamSpec, turn: dict[str, Any], n: int, fallback: Entry | None = None) -> dict[str, Any]:
    """The record the reverse writes for a turn (the forward checks its records against it)."""
    entry = back_entry(spec, turn) or fallback
    if entry is None:
        raise MapcError.single(
            "export.unrepresentable",
            f"/{n}/turns",
            f"no record kind of this format writes a turn with src {turn.get('src')!r}",
        )
    return rebuild(spec, entry, pairing.without_paired(spec.pair, turn) if spec.pair else turn)


def _with_defaults(entry: Entry | None, record: dict[str, Any]) -> dict[str, Any]:
    for at, value in entry.defaults if entry is not None else ():
        if pointer.resolve(record, at) is MISSING:
            record = _put(record, at, value)
    return record


def _head(head: str | tuple[Rule, ...], story: dict[str, Any]) -> dict[str, Any]:
    """The head record of a Storyline from elsewhere: `fn(story)`, or its rules (each a const, or
    the Storyline's value at `from`, else the rule's `else` when that is absent or null)."""
    if isinstance(head, str):
        return dict(_fn(head)(story))
    record: dict[str, Any] = {}
    for rule in head:
        value = rule.value if rule.op == "const" else pointer.resolve(story, rule.src)
        if rule.op == "copy" and (value is MISSING or value is None):
            value = MISSING if rule.value is None else rule.value
        if value is not MISSING:
            record = _put(record, rule.to, value)
    return record


def _written(spec: StreamSpec, story: dict[str, Any], n: int) -> list[Any]:
    """A Storyline from elsewhere: each turn a record, its results as result records after it."""
    session = str(story.get("session", ""))
    records: list[dict[str, Any]] = [_put(_head(e.head, story), spec.type, e.type) for e in spec.entries if e.head]
    for t, turn in enumerate(story.get("turns") or []):
        if type(turn) is dict:
            records += _turn_records(spec, turn, n, t)
    previous: Any = None
    for k, record in enumerate(records):
        records[k] = _stamped(spec, story, record, previous, f"{session}:{k}")
        previous = pointer.resolve(records[k], spec.thread.id) if spec.thread is not None else None
    return records


def _turn_records(spec: StreamSpec, turn: dict[str, Any], n: int, t: int) -> list[dict[str, Any]]:
    """The records of a turn written anew: its record, then its results as result records."""
    records = [_with_defaults(back_entry(spec, turn), _turn_record(spec, turn, n))]
    paired = next((e for e in spec.entries if e.paired), None)
    if spec.pair is None or paired is None:
        return records
    for k, item in enumerate(pairing.paired(spec.pair, turn)):
        if type(item) is not dict:
            raise MapcError.single(
                "export.unrepresentable", f"/{n}/turns/{t}/observation/results/{k}", "a result must be an object"
            )
        # The result record says what its entry copies (a timestamp) as its call's turn says it.
        shared: dict[str, Any] = {}
        for rule in paired.rules:
            value = pointer.resolve(turn, rule.to) if rule.op == "copy" else MISSING
            if value is not MISSING:
                shared = _put(shared, rule.to, value)
        pseudo = pairing.with_results(spec.pair, shared, [item])
        records.append(_with_defaults(paired, rebuild(spec, paired, pseudo)))
    return records


def _stamped(spec: StreamSpec, story: dict[str, Any], record: dict[str, Any], previous: Any, seed: str) -> Any:
    """A record written anew with what the format writes on every record: the Storyline's values
    the story rules say every record holds (`every`), the stream's `defaults`, and, threaded, an id
    made from the Storyline's identity (UUID 5 of `seed`) whose parent is `previous`."""
    for rule in spec.story:
        value = pointer.resolve(story, rule.to) if rule.every and rule.op == "copy" else MISSING
        if value is not MISSING and pointer.resolve(record, rule.src) is MISSING:
            record = _put(record, rule.src, value)
    for at, value in spec.defaults:
        if pointer.resolve(record, at) is MISSING:
            record = _put(record, at, value)
    if spec.thread is not None:
        record = _put(record, spec.thread.parents[0], previous)
        record = _put(record, spec.thread.id, str(uuid.uuid5(uuid.NAMESPACE_URL, f"mapc:{seed}")))
    return record


Fact = tuple[str, str, tuple[str, ...]]


def explain(spec: StreamSpec, doc: Any, tokens: Tokens) -> list[Fact]:
    """(kind, message, Storyline targets) facts about the value at `tokens` (`/N/…`, record N)."""
    records = _records(doc)
    if not tokens or not pointer.is_array_index(tokens[0]) or int(tokens[0]) >= len(records):
        return [("document", "the stream: its records become one Storyline", ())]
    i, rest = int(tokens[0]), tokens[1:]
    _, fields, found = forward(spec, records)
    here = pointer.format(tokens)
    for ptr in fields:
        if ptr == here or here.startswith(ptr + "/"):
            why = "its record is kept whole" if ptr == f"/{i}" else "kept under its pointer"
            return [("residual", f"a residual ({why}): no Storyline field holds it", ())]
    entry = entry_of(spec, records[i])
    turn = found.turn_of.get(i)
    if entry is None or turn is None:
        return [("dropped", "not in the Storyline", ())]
    if not rest:
        what = f"its results join /turns/{turn}" if entry.paired else f"it becomes /turns/{turn}"
        return [("document", f"a {entry.type} record: {what}", (f"/turns/{turn}",))]
    out: list[Fact] = []
    for n, rule in enumerate(entry.rules):
        at = f"records[{spec.entries.index(entry)}].rules[{n}]"
        if rule.op == "copy" and rest[: len(rule.src)] == rule.src:
            target = pointer.format(("turns", str(turn), *rule.to, *rest[len(rule.src) :]))
            out.append(("read", f"{at} copies it to {target}", (target,)))
        elif rule.op == "call":
            target = pointer.format(("turns", str(turn), *rule.to))
            out.append(("inside", f"{at} reads the record with {rule.call} into {target}", (target,)))
    if entry.paired:
        out.append(
            ("read", f"a result of turn {turn}: its observation results", (f"/turns/{turn}/observation/results",))
        )
    if rest and rest[0] == pointer.format(spec.type)[1:]:
        out.append(("read", f"the record kind ({entry.type}): chooses its rules", ()))
    return out or [("dropped", "not in the Storyline", ())]
