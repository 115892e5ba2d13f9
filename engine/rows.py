"""Row corpora: documents made of rows, grouped into one Storyline per group (`document.rows`).

Some formats are tables, not trees: a training corpus is a list of rows, each one step of some
session, in any order.  A spec says where the rows are, which value groups them into Storylines
(`group_by`, first appearance first) and which integer orders them (`order_by`, a stable sort),
and names the two functions that map one group to a Storyline and Storylines back to rows.
Everything else is done here, the same for any such format:

- shape: an object holding the rows array (its other keys are the document's residuals), a bare
  array of rows, or JSONL lines; no rows at all is an error;
- row checks: each row an object, a non-empty string group key, an order key that is an integer
  ≥ 1 and unique within its group; every problem points at `/{rows}/{r}` with `r` the row's index
  in the file;
- `decode_json`: string values at these templates that hold JSON are decoded first;
- residuals: keys the spec's `objects` do not know are kept under their source pointer, unless a
  `consume` entry says when they are read (`when: empty`, `when: text`, `equals: {story: /session}`);
  an object-template match that is neither an object nor null is kept whole;
- the envelope: every row of a Storyline is one of its carriers;
- reverse: rows are written Storyline by Storyline, the residuals put back by pointer.  A row that
  moves (the input was not grouped and ordered) keeps its order key as a residual, so its other
  residuals find it again.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import orjson

from mapc.engine import duplicates, fanout, functions, pointer
from mapc.engine import group as group_values
from mapc.engine.checks import collect, steps_path
from mapc.engine.mapped import Mapped, Rebuilt
from mapc.engine.ops import CONDITIONS
from mapc.engine.problems import MapcError, Problem
from mapc.engine.residual import drop_nested
from mapc.engine.spec import Consume, RowsSpec, Spec
from mapc.engine.template import Template, Var, parse_template
from mapc.engine.values import MISSING, is_empty, is_int, json_equal, replaced

DEFAULT_PATH = "source.json"
_KEYS = 2  # a written row's own keys before the group values: its group key and order key


@dataclass(frozen=True, slots=True)
class Group:
    """The rows of one Storyline, in order: (index in the file, row) pairs, and where rows live."""

    rows: tuple[tuple[int, dict[str, Any]], ...]
    at: str  # the escaped pointer of the rows array, e.g. "/session_steps"
    document_id: str
    tables: Any
    select: Any = None  # the spec's named selections (engine/select.py), by name
    values: Any = None  # the Storyline's own values from the rows (`group:`, engine/group.py)
    problems: tuple[Problem, ...] = ()  # and the conflicts found computing them
    spread: tuple[Any, ...] = ()  # keyed values between a row and its turn (`spread:`, engine/spread.py)
    ids: Any = None  # turn ids from the order key, by name (`ids:`, engine/group.TurnId)
    order_tokens: tuple[str, ...] = ()  # the order key's pointer in a row

    def pointer(self, r: int, *tokens: str | int) -> str:
        """The pointer of a value inside row `r` (its index in the file)."""
        return pointer.join(f"{self.at}/{r}", *tokens)


@dataclass(frozen=True, slots=True)
class Back:
    """What a reverse function gets beside the Storylines: the spec's `tables`, `spread:` and `ids:`."""

    tables: Any
    spread: tuple[Any, ...] = ()
    ids: Any = None


# --- forward ---------------------------------------------------------------------------------


def forward(spec: Spec, doc: Any, path: str | None) -> list[Mapped]:
    """The Storylines of one row corpus, one per group, in order of first appearance."""
    model = spec.rows
    assert model is not None
    document_id = relative_path(path)
    at = _literal(model.rows)
    rows, root = _rows_of(doc, model)
    rows = [_decoded(row, model.decode_json) for row in rows]
    groups = _groups(rows, model, at)
    mapper = _function(model.call) if model.fanout is None else None
    out = []
    for members in groups:
        pairs = tuple((r, rows[r]) for r in members)
        values, conflicts = group_values.forward(model.group, [(f"{at}/{r}", row) for r, row in pairs])
        group = Group(
            pairs,
            at,
            document_id,
            model.tables,
            model.selections,
            values,
            tuple(conflicts),
            model.spread,
            model.ids,
            model.order_by.tokens,
        )
        story, residual = mapper(group) if mapper is not None else fanout.forward(model.fanout, group, spec.source)
        residual = {**root, **residual}
        residual.update(_unknown_keys(spec, group, story))
        _keep_order_keys(residual, members, groups, model, group)
        if model.fanout is not None:
            residual.update(_histories_kept(spec, story, residual, pairs, at, document_id))
        drop_nested(residual)
        if residual:
            story["unknown_fields"] = {
                "sources": {spec.source: {"source_document_id": document_id, "fields": residual}}
            }
        out.append(Mapped(story, *_carriers(group)))
    return out


def _histories_kept(
    spec: Spec, story: dict[str, Any], residual: dict[str, Any], pairs: tuple[tuple[int, Any], ...], at: str, sdid: str
) -> dict[str, Any]:
    """The history arrays (`back.history`) of the rows that the way back would not write as they
    are, each kept whole at its row's pointer.

    The reverse rewrites each row's history from the turns before it; a history that says more or
    other than those turns (a system message added mid-run, a history an agent compacted or
    edited) is read by no rule, and without this it would be dropped silently.  The check runs the
    reverse on the group's own Storyline and residuals, so what it keeps is exactly what the way
    back would not give back (every row's history, if the way back writes other rows)."""
    model = spec.rows
    history = model.fanout.back.get("history") if model is not None and model.fanout is not None else None
    if model is None or type(history) is not str:
        return {}
    trial = story
    if residual:
        # The group written alone: its rows are rows 0, 1, … of the trial, not their places in the file.
        local = {str(r): str(n) for n, (r, _) in enumerate(pairs)}
        fields = {}
        for ptr, value in residual.items():
            if ptr.startswith(at + "/"):
                index, _, rest = ptr[len(at) + 1 :].partition("/")
                ptr = f"{at}/{local.get(index, index)}" + (f"/{rest}" if rest else "")
            fields[ptr] = value
        uf = {"sources": {spec.source: {"source_document_id": sdid, "fields": fields}}}
        trial = {**story, "unknown_fields": uf}
    try:
        (rebuilt,) = reverse(spec, [trial], histories=True)
        written = rebuilt.document.get(model.rows.tokens[0])
    except MapcError:
        written = None  # this reading has no way back as it is: every history is kept
    same_rows = type(written) is list and len(written) == len(pairs)
    tokens = pointer.parse(history)
    out: dict[str, Any] = {}
    for n, (r, row) in enumerate(pairs):
        have = pointer.resolve(row, tokens)
        if have is MISSING:
            continue
        if not (same_rows and _same_bytes_or_history(have, pointer.resolve(written[n], tokens))):
            out[f"{at}/{r}{history}"] = have
    return out


def _same_bytes_or_history(a: Any, b: Any) -> bool:
    """`_same_history`, asked only when the two do not serialize to the same bytes (most do)."""
    try:
        if orjson.dumps(a) == orjson.dumps(b):
            return True
    except orjson.JSONEncodeError:
        pass  # past orjson's nesting or integer range: compared value by value
    return _same_history(a, b)


def _known_empty(value: Any) -> bool:
    """null, [] or {} (not ``""``: an empty text is said)."""
    return value is None or (type(value) in (dict, list) and not value)


def _same_history(a: Any, b: Any) -> bool:
    """`a` and `b` are equal JSON, where a key holding an empty value (null, [], {}) is the same
    as no key: the way back writes no empty it does not need, and an empty read by no rule says
    nothing (the format's known empties, dropped by its `consume` entries)."""
    if type(a) is dict and type(b) is dict:
        keys = {k for k, v in a.items() if not _known_empty(v)} | {k for k, v in b.items() if not _known_empty(v)}
        return all(_same_history(a.get(k), b.get(k)) for k in keys)
    if type(a) is list and type(b) is list:
        return len(a) == len(b) and all(_same_history(x, y) for x, y in zip(a, b, strict=True))
    return json_equal(a, b)


def relative_path(path: str | None) -> str:
    """The corpus identity: its relative path, which must not be absolute or leave its directory."""
    if path is None:
        return DEFAULT_PATH
    posix = path.replace("\\", "/")
    if not path or PurePosixPath(posix).is_absolute() or any(p in ("..", ".") for p in posix.split("/")):
        raise MapcError.single(
            "input.bad_path",
            "",
            f"the document id is the input's relative path; {path!r} is not a relative path inside its directory",
        )
    return path


def _literal(template: Template) -> str:
    return pointer.format(t for t in template.tokens if not isinstance(t, Var))


def _rows_of(doc: Any, model: RowsSpec) -> tuple[list[Any], dict[str, Any]]:
    """The rows and the document's own other keys (kept as residuals at `/{key}`)."""
    key = model.rows.tokens[0]
    if type(doc) is list:
        rows, root = doc, {}
    elif type(doc) is dict and type(doc.get(key)) is list:
        rows = doc[key]
        root = {"/" + pointer.escape(k): v for k, v in doc.items() if k != key}
    elif type(doc) is dict:
        raise MapcError.single("rows.shape", "", f"expected an array of rows or an object with a {key!r} array")
    else:
        raise MapcError.single("rows.shape", "", f"expected an array of rows, got a {type(doc).__name__} root")
    if not rows:
        raise MapcError.single("rows.empty", _literal(model.rows), "the rows cannot be empty")
    return rows, root


def _decoded(row: Any, templates: tuple[Template, ...]) -> Any:
    """`row` with the JSON-holding strings at `templates` decoded (a copy where anything changes)."""
    for template in templates:
        tokens = template.tokens[2:]  # below /{rows}/{r}
        for steps, value in collect(row, tokens):
            if type(value) is str:
                try:
                    decoded = orjson.loads(value)
                except orjson.JSONDecodeError:
                    continue
                if duplicates.repeats(value, decoded):
                    continue  # decoded, a value would be lost: kept as the string
                row = replaced(row, steps_path(steps), decoded)
    return row


def _groups(rows: list[Any], model: RowsSpec, at: str) -> list[list[int]]:
    """Row indices per group (first appearance first), each stably sorted by its order key."""
    by_tokens, order_tokens = model.group_by.tokens, model.order_by.tokens
    problems: list[Problem] = []
    groups: dict[str, list[int]] = {}
    for r, row in enumerate(rows):
        here = f"{at}/{r}"
        if type(row) is not dict:
            problems.append(Problem("rows.not_object", here, f"a row must be an object, got {_kind(row)}"))
            continue
        key = pointer.resolve(row, by_tokens)
        if type(key) is not str or not key:
            where = here + model.group_by.text
            problems.append(Problem("rows.group_key", where, f"expected a non-empty string, got {_show(key)}"))
            continue
        order = pointer.resolve(row, order_tokens)
        if not is_int(order) or not 1 <= order < 2**63:
            where = here + model.order_by.text
            message = f"expected an integer ≥ 1 (i64), got {_show(order)}"
            problems.append(Problem("rows.order_key", where, message))
            continue
        groups.setdefault(key, []).append(r)
    out = []
    for members in groups.values():
        members.sort(key=lambda r: pointer.resolve(rows[r], order_tokens))
        seen: dict[int, int] = {}
        for r in members:
            order = pointer.resolve(rows[r], order_tokens)
            if order in seen:
                where = f"{at}/{r}{model.order_by.text}"
                message = f"duplicate {model.order_by.text[1:]} {order} in its group (also row {seen[order]})"
                problems.append(Problem("rows.duplicate_order_key", where, message))
            seen.setdefault(order, r)
        out.append(members)
    if problems:
        raise MapcError(problems)
    return out


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__.replace("str", "string").replace("dict", "object")


def _show(value: Any) -> str:
    return "nothing" if value is MISSING else orjson.dumps(value).decode()[:60]


def _function(name: str) -> Any:
    fn = functions.lookup(name)
    if fn is None:
        raise MapcError.single("spec.unknown_function", "", f"unknown function {name!r} in document.map")
    return fn.fn


def _carriers(group: Group) -> tuple[str, tuple[str, ...]]:
    carriers = [f"{group.at}/{r}" for r, _ in group.rows]
    return carriers[0], tuple(carriers[1:])


# --- residuals ---------------------------------------------------------------------------------


def _unknown_keys(spec: Spec, group: Group, story: dict[str, Any]) -> dict[str, Any]:
    """Keys of the group's rows that no `objects` entry knows and no `consume` entry reads."""
    plan, trie = _residual_plan(spec)
    hits: list[list[tuple[str, Any]]] = [[] for _ in plan]
    for r, row in group.rows:
        _walk(row, trie, (r,), plan, hits, group, story)
    # Template by template, row by row, each in document order: the order one walk per template gave.
    out: dict[str, Any] = {}
    for found in hits:
        for at, value in found:
            out[at] = value
    return out


def _walk(
    value: Any,
    node: _Node,
    path: tuple[Any, ...],
    plan: Plan,
    hits: list[list[tuple[str, Any]]],
    group: Group,
    story: dict[str, Any],
) -> None:
    """One walk of a row for all its object templates at once (they share their prefixes)."""
    for t in node.ends:
        plain, open_, here = plan[t]
        if type(value) is not dict:
            if value is not None:
                hits[t].append((pointer.join(group.at, *path), value))
            continue
        # The common case, asked of the key set at once: every key known (or the object open) and none
        # read only under a condition.  Otherwise key by key, in the object's order.
        if value.keys().isdisjoint(here) if open_ else value.keys() <= plain:
            continue
        for key, item in value.items():
            rule = here.get(key)
            if rule is None and (open_ or key in plain):
                continue
            if rule is None or not _consumed(rule, item, list(path), group, story):
                hits[t].append((pointer.join(group.at, *path, key), item))
    if type(value) is dict:
        for key, child in node.keys.items():
            if key in value:
                _walk(value[key], child, (*path, key), plan, hits, group, story)
        if node.var is not None:
            for key, item in value.items():
                _walk(item, node.var, (*path, key), plan, hits, group, story)
    elif type(value) is list and node.var is not None:
        for i, item in enumerate(value):
            _walk(item, node.var, (*path, i), plan, hits, group, story)


@dataclass(slots=True)
class _Node:
    """A level of the object templates below a row: the templates ending here (their index in the
    plan), the named keys below, and the level any key or position leads to (a variable)."""

    ends: list[int]
    keys: dict[str, _Node]
    var: _Node | None = None


Plan = tuple[tuple[frozenset[str], bool, dict[str, Consume]], ...]
_PLANS: dict[int, tuple[Spec, Plan, _Node]] = {}


def _residual_plan(spec: Spec) -> tuple[Plan, _Node]:
    """Per object template below a row (in the spec's order): the keys it knows that no `consume`
    entry reads, whether it is open ("*"), and its `consume` entries by key; and the templates' tokens
    below `/{rows}/{r}` as one tree.  Made once per spec (the spec is kept beside its plan, so an id
    is never reused for another spec's)."""
    cached = _PLANS.get(id(spec))
    if cached is not None and cached[0] is spec:
        return cached[1], cached[2]
    assert spec.rows is not None
    plan = []
    root = _Node([], {})
    for template, known, _ in spec.objects:
        if len(template.tokens) < 2:
            continue  # the document root: its keys are handled with the rows
        here = {
            c.at.tokens[-1]: c
            for c in spec.rows.consume
            if c.at.tokens[:-1] == template.tokens and type(c.at.tokens[-1]) is str
        }
        node = root
        for token in template.tokens[2:]:
            if isinstance(token, Var):
                node.var = node.var or _Node([], {})
                node = node.var
            else:
                node = node.keys.setdefault(token, _Node([], {}))
        node.ends.append(len(plan))
        plan.append((frozenset(known - set(here)), "*" in known, here))
    if len(_PLANS) > 64:
        _PLANS.clear()
    _PLANS[id(spec)] = (spec, tuple(plan), root)
    return tuple(plan), root


def _consumed(rule: Consume, value: Any, path: list[Any], group: Group, story: dict[str, Any]) -> bool:
    if rule.when == "empty":
        return value is None or is_empty(value)
    if rule.when is not None:
        return CONDITIONS[rule.when].test(value)
    return json_equal(value, _value(rule.equals, rule, path, group, story))


def _value(ref: Any, rule: Consume, path: list[Any], group: Group, story: dict[str, Any]) -> Any:
    """What a `consume.equals` names: a source pointer (same variables as the rule's, bound by `path`),
    a Storyline value, a constant, or the first of several that is present and not null."""
    if isinstance(ref, str):
        bindings = {t.name: p for t, p in zip(rule.at.tokens[1:], path, strict=False) if isinstance(t, Var)}
        tokens = [str(bindings[t.name]) if isinstance(t, Var) else t for t in parse_template(ref).tokens]
        row = dict(group.rows).get(int(tokens[1])) if len(tokens) > 1 and tokens[1].isdigit() else None
        return pointer.resolve(row, tuple(tokens[2:])) if row is not None else MISSING
    if isinstance(ref, dict) and "story" in ref:
        return pointer.resolve(story, pointer.parse(ref["story"]))
    if isinstance(ref, dict) and "const" in ref:
        return ref["const"]
    if isinstance(ref, dict) and "first_of" in ref:
        for item in ref["first_of"]:
            found = _value(item, rule, path, group, story)
            if found is not MISSING and found is not None:
                return found
    return MISSING


def _keep_order_keys(
    residual: dict[str, Any], members: list[int], groups: list[list[int]], model: RowsSpec, group: Group
) -> None:
    """Keep the order key of a row that has residuals and does not stay at its index: the
    reverse writes rows group by group, and finds a moved row's residuals again by this key."""
    start = 0
    for g in groups:
        if g is members:
            break
        start += len(g)
    with_residuals = {int(k.split("/")[2]) for k in residual if k.startswith(group.at + "/") and k.count("/") >= 2}
    rows = dict(group.rows)
    for position, r in enumerate(members, start=start):
        if r != position and r in with_residuals:
            residual[group.pointer(r, *model.order_by.tokens)] = pointer.resolve(rows[r], model.order_by.tokens)


# --- reverse ---------------------------------------------------------------------------------


def reverse(spec: Spec, stories: list[dict[str, Any]], *, histories: bool = False) -> list[Rebuilt]:
    """One document holding the rows of all `stories`, Storyline by Storyline (with `histories`,
    rows of a fan-out hold only their keys and histories, and what residuals put back)."""
    model = spec.rows
    assert model is not None
    at = _literal(model.rows)
    if model.fanout is not None:
        rows_per_story = fanout.reverse(model.fanout, model, stories, spec.source, histories=histories)
    else:
        rows_per_story = _function(model.reverse_call)(
            stories, Back(model.tables, model.spread, model.ids), spec.source
        )
    own = [_own_fields(s, spec.source) for s in stories]
    kept_document = next((f[""] for f in own if type(f.get("")) is dict), None)
    if kept_document is not None:  # the whole document was kept (a hop added to its root)
        return [Rebuilt(dict(kept_document), tuple(Mapped(s, f"{at}/0") for s in stories))]
    kept_rows = next((f[at] for f in own if type(f.get(at)) is list), None)
    doc: dict[str, Any] = {}
    rows: list[Any] = [] if kept_rows is None else list(kept_rows)
    mapped: list[Mapped] = []
    problems: list[Problem] = []
    for n, (story, written) in enumerate(zip(stories, rows_per_story, strict=True)):
        residual = {p: v for p, v in own[n].items() if p != at}
        if kept_rows is not None:  # the rows were kept whole: residuals point into them as they are
            problems.extend(_restore(doc, rows, 0, residual, model, n))
            mapped.append(Mapped(story, f"{at}/0"))
            continue
        start = len(rows)
        written = list(written)
        group_values.reverse(model.group, story, written, _KEYS)
        rows.extend(written)
        problems.extend(_restore(doc, rows, start, residual, model, n))
        mapped.append(Mapped(story, *_story_carriers(at, start, len(written))))
    if problems:
        raise MapcError(problems)
    doc[model.rows.tokens[0]] = rows
    return [Rebuilt(doc, tuple(mapped))]


def _own_fields(story: dict[str, Any], source: str) -> dict[str, Any]:
    body = ((story.get("unknown_fields") or {}).get("sources") or {}).get(source) or {}
    return body.get("fields") or {}


def _story_carriers(at: str, start: int, count: int) -> tuple[str, tuple[str, ...]]:
    carriers = [f"{at}/{i}" for i in range(start, start + max(count, 1))]
    return carriers[0], tuple(carriers[1:])


def _restore(
    doc: dict[str, Any], rows: list[Any], start: int, residual: dict[str, Any], model: RowsSpec, n: int
) -> Iterator[Problem]:
    """Put a Storyline's residuals back: the document's own keys at the root, row values by row."""
    order = model.order_by.tokens
    moved: dict[int, int] = {}
    for ptr, value in residual.items():
        tokens = pointer.parse(ptr)
        if len(tokens) == 2 + len(order) and tokens[0] == model.rows.tokens[0] and tuple(tokens[2:]) == order:
            for i in range(start, len(rows)):
                if json_equal(pointer.resolve(rows[i], order), value):
                    moved[int(tokens[1])] = i
    # Moves are a permutation: if two rows' residuals would land on one row, the kept order keys
    # are values the way back changed (a hop renumbered the steps), not moves: put them as they are.
    indices = {int(t[1]) for t in map(pointer.parse, residual) if len(t) > 1 and pointer.is_array_index(t[1])}
    if len({moved.get(r, r) for r in indices}) < len(indices):
        moved = {}
    for ptr, value in residual.items():
        tokens = list(pointer.parse(ptr))
        if len(tokens) == 1:
            doc[tokens[0]] = value
            continue
        if tokens[0] != model.rows.tokens[0] or not pointer.is_array_index(tokens[1]):
            yield Problem("residual.unplaceable", f"/{n}", f"residual {ptr} is not inside a row")
            continue
        i = moved.get(int(tokens[1]), int(tokens[1]))
        if not 0 <= i < len(rows):
            yield Problem("residual.unplaceable", f"/{n}", f"residual {ptr} names a row that is not there")
            continue
        rows[i] = _placed(rows[i], tokens[2:], value)


def _placed(node: Any, tokens: list[str], value: Any) -> Any:
    """`node` with `value` put at `tokens` (a residual wins), creating objects on the way."""
    if not tokens:
        return value
    head, rest = tokens[0], tokens[1:]
    if type(node) is list and pointer.is_array_index(head):
        i = int(head)
        copy = list(node)
        while len(copy) <= i:
            copy.append(None)
        copy[i] = _placed(copy[i], rest, value)
        return copy
    copy = dict(node) if type(node) is dict else {}
    copy[head] = _placed(copy.get(head), rest, value) if rest else value
    return copy
