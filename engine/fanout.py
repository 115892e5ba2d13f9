"""Fan-out (`turns:`, `results:`, `summary:`, `back:` in a row-corpus spec): rows ⇄ turns as data.

A row of a training corpus is not one turn: it holds a whole conversation (its history), of which
one part is new (a request and a response).  A spec says which turns a row becomes, in order, and
what each takes from where; this module runs that both ways, for any row corpus::

    turns:
      - name: context                  # the group's first row: one turn per element of an array
        rows: first
        each: "/messages/{m}"
        before: {select: request, has: content}   # the elements before the one `request` found
        id: count                      # 1, 2, …
        needs: /src                    # an element that gives no /src is no turn
        fields: [{from: "{m}/role", map: {user: user, assistant: agent}, to: /src}, …]
      - name: response                 # every row: the value the selection `output` found
        select: output
        missing: {problem: rows.no_output, message: the row has no output}
        id: response                   # a turn id from the order key (`ids:`)
        fields: [{from: "{output}/content", to: /msg}, {spread: /metrics}, …]

A field is a row of the pointer table: `from` (one source), `first_of` (candidates in turn: a
pointer, {from, when?, keep_null?, map?} or {const, if?}), `const`, or `call` + `args`; `to` (in the
turn), `when`, `keep_null`, `map` (a value table), `default` (when nothing is taken), `keep`
(sources kept as residuals when present and not the one taken), `back` (`none`, or {call, args}
for the reverse).  A source pointer is relative to the row (`/created_at`), to the element or the
selection's value (`{m}/…`, `{output}/…`), or to the turn being made (`{turn}/…`: such fields are
computed after the others).  `{spread: /x}` places the spread entries (engine/spread.py) for /x.

`results:` attaches values of a row (tool results) to the latest turn that holds their key, else
to the row's last turn; `summary:` sets Storyline values from the last turn; `row_checks:` and
`id_overflow:` say which problems refuse a row.  `back:` is the reverse: which leading turns are
context, which turn makes a row (and which turn just before it is its request), the history array
every row repeats, and the order of a row's keys.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mapc.engine import functions, pointer
from mapc.engine import spread as spreads
from mapc.engine.problems import MapcError, Problem
from mapc.engine.values import MISSING, is_empty

Tokens = tuple[str, ...]
I64_MAX = 2**63 - 1
_KINDS = {"name", "rows", "each", "before", "select", "has", "missing", "id", "needs", "fields", "back_const"}
_FIELD = {"from", "first_of", "const", "call", "args", "to", "when", "keep_null", "map", "default", "keep", "back"}
_BACK = {"context", "row", "request", "message", "history", "steps", "unrepresentable", "several", "order"}


@dataclass(frozen=True, slots=True)
class Src:
    """A source pointer: `root` is "row", "turn", "last" or the name of an element or selection."""

    root: str
    tokens: Tokens
    text: str


@dataclass(frozen=True, slots=True)
class Candidate:
    """One way a field takes its value: a source (with its test and value table) or a constant."""

    src: Src | None = None
    const: Any = MISSING
    test: Callable[[Any], bool] | None = None
    keep_null: bool = False
    table: dict[Any, Any] | None = None
    if_: Src | None = None


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a turn (or a `{spread: /x}` placeholder), parsed."""

    to: Tokens
    candidates: tuple[Candidate, ...] = ()
    call: Callable[..., Any] | None = None
    args: tuple[Any, ...] = ()  # Src or ("const", V)
    default: Any = MISSING
    keep: tuple[Src, ...] = ()
    back: Any = None  # None (the reverse of the op), "none", or (fn, args, to)
    keep_null: bool = False
    spread: str | None = None
    text: str = ""  # the `to` as written

    late: bool = False  # reads the turn being made: computed after the turn's other fields
    first: Candidate | None = None  # the first candidate with a source: where the reverse writes
    inverse: dict[Any, Any] | None = None  # its value table read backwards


@dataclass(frozen=True, slots=True)
class Kind:
    """One kind of turn a row becomes."""

    name: str
    fields: tuple[Field, ...]
    first_row: bool = False
    each: Tokens | None = None  # the array whose elements are turns
    var: str = ""  # the element's (or the selection's) name in source pointers
    before: tuple[str, str | None] | None = None  # (selection, key it must hold): elements before its value
    select: str | None = None
    has: str | None = None  # a key the selection's value must hold
    missing: tuple[str, str] | None = None  # (problem code, message) when the selection finds nothing
    id: str = "count"
    needs: Tokens | None = None
    back_const: tuple[tuple[Tokens, Any], ...] = ()
    order: tuple[int, ...] = ()  # the fields in the order they are computed: `needs` first, late ones last
    readers: tuple[Any, ...] = ()  # per field: a function of the sources giving (value, source taken), or None
    steps: tuple[Any, ...] = ()  # (index, field, reader, late) in `order`
    puts: tuple[Any, ...] = ()  # (index, spread, single key or None, tokens) in field order
    keeps: tuple[Any, ...] = ()  # (index, kept source)


@dataclass(frozen=True, slots=True)
class Results:
    """`results:`: values of a row attached to the turn that holds their key."""

    each: Tokens
    where: tuple[tuple[Tokens, Any], ...]
    key: Tokens
    key_test: Callable[[Any], bool] | None
    value: tuple[tuple[str, Tokens], ...]
    to: Tokens
    match: tuple[Tokens, Tokens]  # (array in the turn, key in its element)
    after: str | None  # on a group's first row: only the elements after this selection's


@dataclass(frozen=True, slots=True)
class FanOut:
    """A row corpus's fan-out, parsed."""

    kinds: tuple[Kind, ...]
    results: Results | None
    summary: tuple[tuple[Src, Tokens], ...]
    checks: tuple[tuple[Tokens, Callable[..., Any], str], ...]
    overflow: str
    back: dict[str, Any]


# --- the spec ----------------------------------------------------------------------------------


_TOP = {"turns", "checks", "overflow", "results", "summary", "back"}


def parse(spec: dict[str, Any], selections: dict[str, Any], ids: dict[str, Any]) -> FanOut | None:
    """The `fanout:` of a spec (None without one); MapcError (`spec.invalid`, located) when wrong."""
    data = spec.get("fanout")
    if data is None:
        return None
    if type(data) is not dict or set(data) - _TOP or not {"turns", "back"} <= set(data):
        _fail("/fanout", f"`fanout` is {{{', '.join(sorted(_TOP))}}} with turns and back")
    turns = data["turns"]
    if type(turns) is not list or not turns:
        _fail("/fanout/turns", "`turns` is a list of turn kinds")
    kinds = tuple(_kind(k, f"/fanout/turns/{i}", selections, ids) for i, k in enumerate(turns))
    back = data.get("back") or {}
    if type(back) is not dict or set(back) - _BACK or not {"row", "message", "history", "order"} <= set(back):
        _fail("/fanout/back", f"`back` is {{{', '.join(sorted(_BACK))}}} with row, message, history and order")
    names = {k.name for k in kinds}
    if back["message"] not in names or back["row"].get("turn") not in names:
        _fail("/fanout/back", "`back.message` and `back.row.turn` name turn kinds")
    checks = []
    for i, c in enumerate(data.get("checks") or []):
        at = f"/fanout/checks/{i}"
        if type(c) is not dict or set(c) != {"at", "call", "problem"}:
            _fail(at, "a row check is {at, call, problem}")
        checks.append((_tokens(c["at"], at), _function(c["call"], at, 1), str(c["problem"])))
    summary = []
    for i, s in enumerate(data.get("summary") or []):
        if type(s) is not dict or set(s) != {"from", "to"}:
            _fail(f"/fanout/summary/{i}", "a summary value is {from: '{last}/…', to}")
        summary.append((_src(s["from"], f"/fanout/summary/{i}"), _tokens(s["to"], f"/fanout/summary/{i}")))
    return FanOut(
        kinds,
        _results(data.get("results"), selections),
        tuple(summary),
        tuple(checks),
        str(data.get("overflow") or "rows.turn_id"),
        back,
    )


def _fail(at: str, message: str) -> Any:
    raise MapcError.single("spec.invalid", at, message)


def _tokens(text: Any, at: str) -> Tokens:
    if type(text) is not str or not pointer.is_valid(text):
        _fail(at, f"{text!r} is not a JSON Pointer")
    return pointer.parse(text)


def _src(text: Any, at: str) -> Src:
    if type(text) is not str:
        _fail(at, f"{text!r} is not a source pointer")
    if text.startswith("{"):
        root, _, rest = text[1:].partition("}")
        return Src(root, _tokens(rest, at), text)
    return Src("row", _tokens(text, at), text)


def _function(name: Any, at: str, arity: int | None = None) -> Callable[..., Any]:
    fn = functions.lookup(name)
    if fn is None:
        raise MapcError.single("spec.unknown_function", at, f"unknown function {name!r}")
    if arity is not None and fn.arity != arity:
        raise MapcError.single("spec.invalid", at, f"{name!r} takes {fn.arity} arguments; {arity} are passed")
    return fn.fn


def _test(when: Any, at: str) -> Callable[[Any], bool] | None:
    from mapc.engine.ops import CONDITIONS

    if when is None:
        return None
    if type(when) is dict and set(when) == {"call"}:
        return _function(when["call"], at + "/when", 1)
    if when not in CONDITIONS:
        _fail(at + "/when", f"unknown condition {when!r}")
    return CONDITIONS[when].test


def _candidate(c: Any, at: str, test: Callable[[Any], bool] | None, keep_null: bool) -> Candidate:
    if type(c) is str:
        return Candidate(_src(c, at), test=test, keep_null=keep_null)
    if type(c) is dict and "const" in c and set(c) <= {"const", "if"}:
        return Candidate(const=c["const"], if_=_src(c["if"], at) if "if" in c else None)
    if type(c) is dict and "from" in c and set(c) <= {"from", "when", "keep_null", "map"}:
        table = c.get("map")
        return Candidate(
            _src(c["from"], at),
            test=_test(c.get("when"), at),
            keep_null=bool(c.get("keep_null")),
            table=table if type(table) is dict else None,
        )
    return _fail(at, "a candidate is a pointer, {from, when?, keep_null?, map?} or {const, if?}")


def _field(f: Any, at: str) -> Field:
    if type(f) is dict and set(f) == {"spread"}:
        return Field(_tokens(f["spread"], at), spread=f["spread"], text=f["spread"])
    if type(f) is dict and f.get("back") == "none":
        f = {k: v for k, v in f.items() if k != "back"} | {"back": "none"}
    ops = [k for k in ("from", "first_of", "const") if type(f) is dict and k in f]
    if type(f) is not dict or set(f) - _FIELD or "to" not in f or len(ops) > 1 or (not ops and "call" not in f):
        _fail(at, "a field is {from|first_of|const|call, to, when?, keep_null?, map?, default?, keep?, back?}")
    test, keep_null = _test(f.get("when"), at), bool(f.get("keep_null"))
    if "from" in f:
        candidates: tuple[Candidate, ...] = (
            _candidate({"from": f["from"], **({"map": f["map"]} if "map" in f else {})}, at, None, keep_null),
        )
        candidates = (Candidate(candidates[0].src, test=test, keep_null=keep_null, table=candidates[0].table),)
    elif "first_of" in f:
        if type(f["first_of"]) is not list or not f["first_of"]:
            _fail(at + "/first_of", "`first_of` is a non-empty list of candidates")
        candidates = tuple(_candidate(c, f"{at}/first_of/{k}", test, keep_null) for k, c in enumerate(f["first_of"]))
    elif "const" in f:
        candidates = (Candidate(const=f["const"]),)
    else:
        candidates = ()
    nargs = 1 if candidates else len(f.get("args") or [])
    call = _function(f["call"], at + "/call", nargs) if "call" in f else None
    args = tuple(
        ("const", a["const"]) if type(a) is dict and set(a) == {"const"} else _src(a, f"{at}/args")
        for a in f.get("args") or []
    )
    back: Any = None
    if f.get("back") == "none":
        back = "none"
    elif type(f.get("back")) is dict:
        b = f["back"]
        if set(b) - {"call", "args", "to"} or "to" not in b:
            _fail(at + "/back", "`back` is none or {call, args?, to}: a function of turn values, written at `to`")
        back_args = tuple(_back_src(a, f"{at}/back/args") for a in b.get("args") or [f["to"]])
        back = (_function(b.get("call"), at + "/back", len(back_args)), back_args, _src(b["to"], at + "/back/to"))
    keep = tuple(_src(k, at + "/keep") for k in f.get("keep") or [])
    reads = [c.src for c in candidates] + [c.if_ for c in candidates] + list(args)
    first = next((c for c in candidates if c.src is not None), None)
    inverse = {v: k for k, v in first.table.items()} if first is not None and first.table is not None else None
    return Field(
        _tokens(f["to"], at),
        candidates,
        call,
        args,
        f.get("default", MISSING),
        keep,
        back,
        text=f["to"],
        keep_null=keep_null,
        late=any(isinstance(s, Src) and s.root == "turn" for s in reads),
        first=first,
        inverse=inverse,
    )


def _back_src(text: Any, at: str) -> Src:
    """A `back.args` pointer: into the turn, or `{row}/…` (the row's order key, the row being written)."""
    src = _src(text, at)
    return src if src.root == "row" and str(text).startswith("{") else Src("turn", src.tokens, src.text)


def _kind(k: Any, at: str, selections: dict[str, Any], ids: dict[str, Any]) -> Kind:
    if type(k) is not dict or set(k) - _KINDS or not {"name", "fields", "id"} <= set(k):
        _fail(at, f"a turn kind is {{{', '.join(sorted(_KINDS))}}} with name, id and fields")
    if ("each" in k) == ("select" in k):
        _fail(at, "a turn kind has `each` (an array of elements) or `select` (a named selection)")
    for name in [k.get("select"), (k.get("before") or {}).get("select")]:
        if name is not None and name not in selections:
            _fail(at, f"unknown selection {name!r}")
    if k["id"] != "count" and k["id"] not in ids:
        _fail(at + "/id", f"an id is `count` or a name of `ids:`, not {k['id']!r}")
    fields = tuple(_field(f, f"{at}/fields/{i}") for i, f in enumerate(k["fields"] or []))
    each, var = None, str(k.get("select") or "")
    if "each" in k:
        tokens = _tokens(k["each"], at + "/each")
        if not tokens or not (tokens[-1].startswith("{") and tokens[-1].endswith("}")):
            _fail(at + "/each", "`each` is an array pointer ending in its element's {name}")
        each, var = tokens[:-1], tokens[-1][1:-1]
    before = k.get("before")
    missing = k.get("missing")
    needs = _tokens(k["needs"], at + "/needs") if "needs" in k else None
    computed = [i for i, f in enumerate(fields) if f.spread is None]
    first = [i for i in computed if needs is not None and fields[i].to == needs]
    order = first + [i for i in computed if not fields[i].late and i not in first]
    order += [i for i in computed if fields[i].late and i not in first]
    readers = tuple(_reader(f) for f in fields)
    return Kind(
        str(k["name"]),
        fields,
        k.get("rows") == "first",
        each,
        var,
        (before["select"], before.get("has")) if type(before) is dict else None,
        k.get("select"),
        k.get("has"),
        (missing["problem"], missing["message"]) if type(missing) is dict else None,
        str(k["id"]),
        needs,
        tuple((_tokens(p, at), v) for p, v in (k.get("back_const") or {}).items()),
        tuple(order),
        readers,
        tuple((i, fields[i], readers[i], fields[i].late) for i in order),
        tuple((i, f.spread, f.to[0] if len(f.to) == 1 else None, f.to) for i, f in enumerate(fields)),
        tuple((i, k) for i, f in enumerate(fields) for k in f.keep),
    )


Reader = Callable[[dict[str, Any]], tuple[Any, Any]]


def _reader(f: Field) -> Reader | None:
    """Field `f`'s forward as one function of the sources (env), for fields whose value needs no
    residual bookkeeping: constants, copies and chains (a call of the value taken included)."""
    if f.spread is not None or f.call is not None:
        return None  # a call's value may hold residuals (functions.Kept): the session keeps them
    if len(f.candidates) == 1 and f.candidates[0].src is None and f.candidates[0].if_ is None:
        const = f.candidates[0].const
        return lambda env: (const, None)
    candidates = f.candidates
    default = f.default

    def read(env: dict[str, Any]) -> tuple[Any, Any]:
        value, taken = _first_candidate(candidates, env)
        return (default if value is MISSING else value), taken

    return read


def _results(r: Any, selections: dict[str, Any]) -> Results | None:
    if r is None:
        return None
    keys = {"each", "where", "key", "value", "to", "match", "after"}
    if type(r) is not dict or set(r) - keys or not {"each", "key", "value", "to", "match"} <= set(r):
        _fail(
            "/fanout/results",
            "`results` is {each, where?, key: {from, when?}, value: {key: pointer}, to, match, after?}",
        )
    head, _, tail = r["match"].partition("/{c}")
    return Results(
        _tokens(r["each"], "/fanout/results/each"),
        tuple((_tokens(p, "/fanout/results/where"), v) for p, v in (r.get("where") or {}).items()),
        _tokens(r["key"]["from"], "/fanout/results/key"),
        _test(r["key"].get("when"), "/fanout/results/key"),
        tuple((str(k), _tokens(p, "/fanout/results/value")) for k, p in r["value"].items()),
        _tokens(r["to"], "/fanout/results/to"),
        (_tokens(head, "/fanout/results/match"), _tokens(tail, "/fanout/results/match")),
        r.get("after"),
    )


def sources(kind: Kind) -> list[tuple[Src, str]]:
    """(source, turn target as written) of every field of `kind` that reads the row: its pointer table."""
    out = []
    for f in kind.fields:
        for c in f.candidates:
            if c.src is not None and c.src.root != "turn":
                out.append((c.src, f.text))
        for a in f.args:
            if isinstance(a, Src) and a.root != "turn":
                out.append((a, f.text))
    return out


# --- forward -----------------------------------------------------------------------------------


def _read(src: Src, env: dict[str, Any]) -> Any:
    node = env.get(src.root, MISSING)
    if len(src.tokens) == 1 and type(node) is dict:
        return node.get(src.tokens[0], MISSING)
    return MISSING if node is MISSING else pointer.resolve(node, src.tokens)


def _first_candidate(candidates: tuple[Candidate, ...], env: dict[str, Any]) -> tuple[Any, Src | None]:
    """The value of a field's first candidate that gives one (MISSING when none does) and the source it
    was read from (None for a constant): a constant counts when its `if` source is not empty; a read one
    when it is there, not null (unless `keep_null`), passes its test and, with a table, maps to a value."""
    for c in candidates:
        src = c.src
        if src is None:
            if c.if_ is None or not is_empty(_read(c.if_, env)):
                return c.const, None
            continue
        v = _read(src, env)
        if v is MISSING or (v is None and not c.keep_null) or (c.test is not None and not c.test(v)):
            continue
        if c.table is not None:
            v = c.table.get(v, MISSING) if type(v) is str else MISSING
            if v is MISSING:
                continue
        return v, src
    return MISSING, None


class _Session:
    """One group's turns, residuals and problems."""

    def __init__(self, fan: FanOut, group: Any, source: str) -> None:
        self.fan, self.g = fan, group
        self.turns: list[dict[str, Any]] = []
        self.residual: dict[str, Any] = {}
        self.holders: dict[str, dict[str, Any]] = {}  # the latest turn holding each result key
        self.row_ids = [(k.id, group.ids[k.id]) for k in fan.kinds if not k.first_row and k.id in group.ids]
        self.problems: list[Problem] = list(group.problems)
        self.story: dict[str, Any] = {"schema_version": "storyline/v1"}
        self.story["origin"] = {"format": source, "document_id": group.document_id}
        self.story.update(group.values)

    def build(self) -> tuple[dict[str, Any], dict[str, Any]]:
        rows = self.g.rows
        first_r, first = rows[0]
        for kind in self.fan.kinds:
            if kind.first_row:
                self._elements(kind, first_r, first)
        base = len(self.turns)
        for r, row in rows:
            self._row(r, row, base, row is first)
        if self.problems:
            raise MapcError(self.problems)
        self.story["turns"] = self.turns
        last = self.turns[-1] if self.turns else MISSING
        for src, to in self.fan.summary:
            value = _read(src, {"last": last})
            if value is not MISSING and value is not None:
                _put(self.story, to, value)
        return self.story, self.residual

    def _elements(self, kind: Kind, r: int, row: dict[str, Any]) -> None:
        """The turns of an `each` kind: elements of the array (before the selection's value)."""
        assert kind.each is not None
        end = None
        if kind.before is not None:
            found = self.g.select[kind.before[0]](row)
            if found is None or (kind.before[1] is not None and kind.before[1] not in found[1]):
                return
            end = found[0][-1]
        array = pointer.resolve(row, kind.each)
        for m, element in enumerate(array[:end] if type(array) is list else []):
            if type(element) is not dict:
                continue
            at = (*kind.each, m)
            turn = self._turn(kind, r, row, element, at, len(self.turns) + 1, None)
            if turn is None:
                if not self._result(element, None):
                    self.residual[self.g.pointer(r, *at)] = element
                continue
            self._append(turn)

    def _row(self, r: int, row: dict[str, Any], base: int, first: bool) -> None:
        order = pointer.resolve(row, self.g.order_tokens)
        named = {name: turn_id.of(base, order) for name, turn_id in self.row_ids}
        if any(i > I64_MAX for i in named.values()):
            self.problems.append(
                Problem(self.fan.overflow, self.g.pointer(r, *self.g.order_tokens), "the turn id overflows i64")
            )
            return
        for tokens, check, code in self.fan.checks:
            value = pointer.resolve(row, tokens)
            if value is not MISSING and value is not None:
                try:
                    check(value)
                except ValueError as exc:
                    self.problems.append(Problem(code, self.g.pointer(r, *tokens), str(exc)))
        current = None
        for kind in self.fan.kinds:
            if kind.first_row:
                continue
            found = self.g.select[kind.select](row)
            if found is None or (kind.has is not None and kind.has not in found[1]):
                if kind.missing is not None and found is None:
                    self.problems.append(Problem(kind.missing[0], self.g.pointer(r), kind.missing[1]))
                    return
                continue
            current = self._turn(kind, r, row, found[1], tuple(found[0]), named.get(kind.id), row)
            if current is not None:
                self._append(current)
        res = self.fan.results
        if res is None or current is None:
            return
        start = 0
        if first and res.after is not None:
            found = self.g.select[res.after](row)
            start = found[0][-1] + 1 if found is not None else 0
        values = pointer.resolve(row, res.each)
        if type(values) is not list:
            return
        if len(res.where) == 1 and len(res.where[0][0]) == 1:  # one key: the common case, without a walk
            key, want = res.where[0][0][0], res.where[0][1]
            for element in values[start:]:
                if type(element) is dict and element.get(key, MISSING) == want:
                    self._result(element, current)
            return
        for element in values[start:]:
            if type(element) is dict and all(pointer.resolve(element, p) == v for p, v in res.where):
                self._result(element, current)

    def _turn(
        self, kind: Kind, r: int, row: dict[str, Any], node: Any, at: tuple[Any, ...], turn_id: Any, spread_row: Any
    ) -> dict[str, Any] | None:
        env: dict[str, Any] = {"row": row, kind.var: node}
        where = {"row": (), kind.var: at}
        values: list[Any] = [MISSING] * len(kind.fields)
        taken: list[Src | None] = [None] * len(kind.fields)
        needs = kind.needs is not None
        for i, f, reader, late in kind.steps:
            if late and "turn" not in env:
                env["turn"] = {kind.fields[j].to[0]: v for j, v in enumerate(values) if v is not MISSING}
            values[i], taken[i] = reader(env) if reader is not None else self._value(f, env, where, r)
            if needs:
                if values[i] is MISSING:
                    return None  # no turn: the element is read otherwise
                needs = False
        turn: dict[str, Any] = {"id": turn_id}
        for i, spread, key, tokens in kind.puts:
            if spread is not None:
                spreads.forward(self.g.spread, spread_row, turn, self.story, spread)
            elif values[i] is not MISSING:
                if key is not None:
                    turn[key] = values[i]
                else:
                    _put(turn, tokens, values[i])
        for i, k in kind.keeps:  # kept sources: after the turn's fields
            value = _read(k, env)
            if value is not MISSING and k != taken[i]:
                self.residual[self.g.pointer(r, *where[k.root], *k.tokens)] = value
        return turn

    def _value(self, f: Field, env: dict[str, Any], where: dict[str, Any], r: int) -> tuple[Any, Src | None]:
        """The field's value (or its default, or MISSING) and the source it took."""
        value, taken = _first_candidate(f.candidates, env)
        if f.call is not None:
            if f.candidates:
                if value is MISSING:
                    return f.default, None
                args = [value]
            else:
                args = [a[1] if type(a) is tuple else _read(a, env) for a in f.args]
            try:
                value = f.call(*args)
            except ValueError:
                return f.default, None
            if isinstance(value, functions.Kept):  # residuals under the first argument's source
                base = taken if f.candidates else f.args[0] if f.args and isinstance(f.args[0], Src) else None
                for tokens, kept in value.residuals.items():
                    prefix = where[base.root] + base.tokens if base is not None else ()
                    self.residual[self.g.pointer(r, *prefix, *tokens)] = kept
                value = value.value
        return (f.default if value is MISSING else value), taken

    def _result(self, element: dict[str, Any], current: dict[str, Any] | None) -> bool:
        """Attach `element` to the latest turn that holds its key (else to `current`), once."""
        res = self.fan.results
        if res is None:
            return False
        key = element.get(res.key[0], MISSING) if len(res.key) == 1 else pointer.resolve(element, res.key)
        if key is MISSING or (res.key_test is not None and not res.key_test(key)):
            return False
        value = {
            name: _or_none(element.get(tokens[0], MISSING) if len(tokens) == 1 else pointer.resolve(element, tokens))
            for name, tokens in res.value
        }
        target = self.holders.get(key, current) if type(key) is str else self._holder(key, current)
        if target is None:
            return False
        results = _container(target, res.to)
        if value not in results:
            results.append(value)
        return True

    def _holder(self, key: Any, current: dict[str, Any] | None) -> dict[str, Any] | None:
        """The latest turn whose `match` elements hold `key` (a key that is no string), else `current`."""
        assert self.fan.results is not None
        array, inner = self.fan.results.match
        for turn in reversed(self.turns):
            held = pointer.resolve(turn, array)
            if any(pointer.resolve(e, inner) == key for e in held or ()):
                return turn
        return current

    def _append(self, turn: dict[str, Any]) -> None:
        """Add a turn; index the string keys its `match` elements hold (the latest turn wins)."""
        self.turns.append(turn)
        if self.fan.results is not None:
            array, inner = self.fan.results.match
            held = pointer.resolve(turn, array)
            for e in held if type(held) is list else ():
                key = pointer.resolve(e, inner)
                if type(key) is str:
                    self.holders[key] = turn


def _or_none(value: Any) -> Any:
    return None if value is MISSING else value


def _container(turn: dict[str, Any], tokens: Tokens) -> list[Any]:
    node = turn
    for token in tokens[:-1]:
        node = node.setdefault(token, {})
    return node.setdefault(tokens[-1], [])


def _put(obj: dict[str, Any], tokens: Tokens, value: Any) -> None:
    if len(tokens) == 1:
        obj[tokens[0]] = value
        return
    for token in tokens[:-1]:
        obj = obj.setdefault(token, {})
    obj[tokens[-1]] = value


def forward(fan: FanOut, group: Any, source: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The Storyline of one group (its rows in order) and the values kept as residuals."""
    return _Session(fan, group, source).build()


# --- reverse -----------------------------------------------------------------------------------


def _provenance(story: dict[str, Any], source: str) -> str | None:
    origin = story.get("origin") or {}
    if origin.get("format") == source and origin.get("document_id"):
        return str(origin["document_id"])
    own = ((story.get("unknown_fields") or {}).get("sources") or {}).get(source)
    return own.get("source_document_id") if own else None


def _group_key(story: dict[str, Any], at: Tokens, used: set[str]) -> str:
    """A Storyline's group key: its value at `at`, unless an earlier Storyline of this export has it
    (subagents sharing their parent's session): then its trajectory id, else the value numbered.
    Rows are grouped by this key, so each Storyline needs its own; the hop carries the value back."""
    key = own = pointer.resolve(story, at)
    if key in used:
        trajectory = story.get("trajectory")
        key = trajectory if type(trajectory) is str and trajectory and trajectory not in used else key
        k = 2
        while key in used:
            key, k = f"{own}#{k}", k + 1
    used.add(key)
    return key


def reverse(
    fan: FanOut, model: Any, stories: list[dict[str, Any]], source: str, *, histories: bool = False
) -> list[list[dict[str, Any]]]:
    """The rows of each Storyline: one per turn that makes a row, each with the full history (with
    `histories`, each row holds its keys and its history only: what a check of histories needs)."""
    documents = {d for s in stories if (d := _provenance(s, source)) is not None}
    if len(documents) > 1:
        several = str(fan.back.get("several") or "these Storylines come from {n} files ({ids})")
        message = several.replace("{n}", str(len(documents))).replace("{ids}", ", ".join(sorted(documents)))
        raise MapcError.single("export.several_documents", "", message + "; one JSON document holds one")
    group_at = next(e.to[0] for e in model.group if e.candidates[0].chain[:1] == (model.group_by.tokens,))
    problems: list[Problem] = []
    out = []
    used: set[str] = set()
    for n, story in enumerate(stories):
        try:
            rows = _Rows(fan, model, story, _provenance(story, source) is not None, group_at).rows(histories)
            key = _group_key(story, group_at, used)
            for r in rows:
                _put(r, model.group_by.tokens, key)
            out.append(rows)
        except MapcError as exc:
            problems.extend(p.within(f"/{n}") for p in exc.problems)
    if problems:
        raise MapcError(problems)
    return out


_PARSED: dict[str, Tokens] = {}


def _matches(turn: Any, where: Any) -> bool:
    for p, v in (where or {}).items():
        tokens = _PARSED.get(p)
        if tokens is None:
            tokens = _PARSED[p] = pointer.parse(p)
        if pointer.resolve(turn, tokens) != v:
            return False
    return True


class _Plan:
    """What the reverse of a fan-out reads of its spec, worked out once."""

    def __init__(self, fan: FanOut) -> None:
        kinds = {k.name: k for k in fan.kinds}
        self.message_kind = kinds[fan.back["message"]]
        row = fan.back["row"]
        self.row_kind = kinds[row["turn"]]
        self.row_has = _test(row.get("has"), "/fanout/back/row")
        self.request_kind = next((k for k in fan.kinds if not k.first_row and k is not self.row_kind), None)
        src = next(f for f in self.message_kind.fields if f.to == self.message_kind.needs)
        self.roles = set((src.candidates[0].table or {}).values())
        self.writers_of: dict[str, tuple[Field | None, Field | None]] = {}
        self.row_writers: dict[int, Writer] = {}  # by id of a field of this fan-out's kinds
        self.element_fields = {k.name: tuple(_writer(f) for f in k.fields if _writes(f, True)) for k in fan.kinds}
        self.history = pointer.parse(fan.back["history"])
        self.row_items: dict[str, RowItem] = {}  # a row's value: who writes it (computed once per target)


def _writes(f: Field, element: bool) -> bool:
    """Whether the reverse of `f` writes into the element (or, `element` False, into the row)."""
    if f.spread is not None or f.back == "none":
        return False
    if type(f.back) is tuple:
        return (f.back[2].root == "row") != element
    src = f.first.src if f.first is not None else None
    return src is not None and src.root != "turn" and (src.root == "row") != element


Writer = Callable[[dict[str, Any], dict[str, Any], Any], None]
RowItem = tuple[tuple[bool, str | None, str | None, Tokens, Writer], ...]


def _writer(f: Field, element: bool = True) -> Writer:
    """The reverse of field `f` into its element, as one function of (turn, element, order key):
    the common cases (a copy of one key, read through its value table or not) without lookups."""
    if type(f.back) is tuple:
        fn, args, to = f.back
        reads = tuple((a.root == "row", a.tokens[0] if len(a.tokens) == 1 else None, a.tokens) for a in args)
        dst = to.tokens

        def write_call(turn: dict[str, Any], out: dict[str, Any], step: Any) -> None:
            value = fn(
                *(
                    step if row else turn.get(key, MISSING) if key is not None else pointer.resolve(turn, tokens)
                    for row, key, tokens in reads
                )
            )
            if value is not MISSING:
                _put(out, dst, value)

        return write_call
    first = f.first
    simple = (
        type(f.back) is not tuple
        and first is not None
        and first.src is not None
        and len(f.to) == 1
        and len(first.src.tokens) == 1
        and f.call is None
    )
    if not simple:
        return lambda turn, out, step: _Rows._back(f, turn, out, step, element)
    assert first is not None and first.src is not None
    key, dst, default, keep_null, inverse = f.to[0], first.src.tokens[0], f.default, f.keep_null, f.inverse

    def write(turn: dict[str, Any], out: dict[str, Any], step: Any) -> None:
        value = turn.get(key, MISSING)
        if value is MISSING:
            value = default
        if value is MISSING or (value is None and not keep_null):
            return
        if inverse is not None:
            value = inverse.get(value, MISSING) if type(value) is str else MISSING
            if value is MISSING:
                return
        out[dst] = value

    return write


_PLANS: dict[int, tuple[FanOut, _Plan]] = {}


def _plan(fan: FanOut) -> _Plan:
    found = _PLANS.get(id(fan))
    if found is None or found[0] is not fan:  # keyed by identity: the fan-out kept alive beside
        found = _PLANS[id(fan)] = (fan, _Plan(fan))
    return found[1]


class _Rows:
    """The rows of one Storyline."""

    def __init__(self, fan: FanOut, model: Any, story: dict[str, Any], provenance: bool, group_at: Tokens) -> None:
        self.fan, self.model, self.story, self.provenance, self.group_at = fan, model, story, provenance, group_at
        plan = self.plan = _plan(fan)
        self.message_kind, self.row_kind, self.request_kind = plan.message_kind, plan.row_kind, plan.request_kind
        self.row_has, self.roles, self._writers_of = plan.row_has, plan.roles, plan.writers_of
        self._row_writers = plan.row_writers

    def _is_row(self, turn: dict[str, Any]) -> bool:
        row = self.fan.back["row"]
        return _matches(turn, row.get("where")) and (self.row_has is None or self.row_has(turn))

    def rows(self, histories: bool = False) -> list[dict[str, Any]]:
        turns = self.story["turns"]
        context_any = (self.fan.back.get("context") or {}).get("any") or []
        n = 0
        while n < len(turns) and turns[n]["src"] in self.roles and any(_matches(turns[n], w) for w in context_any):
            n += 1
        context, rest = turns[:n], turns[n:]
        interactions: list[tuple[dict[str, Any] | None, dict[str, Any], list[dict[str, Any]]]] = []
        between: list[dict[str, Any]] = []
        request_where = (self.fan.back.get("request") or {}).get("where")
        for turn in rest:
            if self._is_row(turn):
                request = between.pop() if between and _matches(between[-1], request_where) else None
                interactions.append((request, turn, between))
                between = []
            elif turn["src"] in self.roles:
                between.append(turn)
        if not interactions:
            message = str(self.fan.back.get("unrepresentable") or "a Storyline without a turn that makes a row")
            raise MapcError.single("export.unrepresentable", "/turns", message)
        # The messages so far: one list added to in place; each row is given a copy.
        history = [m for turn in context for m in self._messages(turn)]
        steps = self._steps(interactions, len(context))
        rows = []
        history_at = self.plan.history
        plain = ("history", self.row_kind.name)
        order = ["history"] if histories else self.fan.back["order"]
        items = [(item, () if item in plain else self._row_item(item)) for item in order]
        for (request, response, skipped), step in zip(interactions, steps, strict=True):
            for turn in skipped:
                history.extend(self._messages(turn))
            asked = self._message(request) if request is not None else self._asked()
            results = self._results(response)
            row: dict[str, Any] = {}
            _put(row, self.group_at_row(), pointer.resolve(self.story, self.group_at))
            _put(row, self.model.order_by.tokens, step)
            for item, writers in items:
                if item == "history":
                    _put(row, history_at, [*history, asked, *results])
                elif item == self.row_kind.name:
                    self._element(row, self.row_kind, response, step)
                else:
                    self._row_value(row, writers, response, request, step)
            history.append(asked)
            history.extend(results)
            history.append(self._element({}, self.row_kind, response, step, home=False))
            rows.append(row)
        return rows

    def group_at_row(self) -> Tokens:
        return self.model.group_by.tokens

    def _steps(self, interactions: list[Any], context: int) -> list[int]:
        """Order keys from the turn ids when this format wrote them (`ids:`), else 1, 2, 3…"""
        ids = self.model.ids.get(str(self.fan.back.get("steps")))
        if self.provenance and ids is not None:
            steps = [ids.order(context, response["id"]) for _, response, _ in interactions]
            if None not in steps and len(set(steps)) == len(steps):
                return steps  # type: ignore[return-value]
        return list(range(1, len(interactions) + 1))

    def _asked(self) -> dict[str, Any]:
        """The request element of a row without a request turn: what its selection requires."""
        assert self.request_kind is not None and self.request_kind.select is not None
        out: dict[str, Any] = {}
        for tokens, value in self.model.selections[self.request_kind.select].alternatives[0].where:
            _put(out, tokens, value)
        return out

    def _messages(self, turn: dict[str, Any]) -> list[dict[str, Any]]:
        return [self._message(turn), *self._results(turn)]

    def _message(self, turn: dict[str, Any]) -> dict[str, Any]:
        """A turn as an element of the message kind: its fields written back."""
        out: dict[str, Any] = {}
        for write in self.plan.element_fields[self.message_kind.name]:
            write(turn, out, None)
        return out

    def _results(self, turn: dict[str, Any]) -> list[dict[str, Any]]:
        """The results attached to `turn`, as the elements they were read from."""
        res = self.fan.results
        if res is None:
            return []
        held = pointer.resolve(turn, res.to[:-1])
        values = held.get(res.to[-1]) if type(held) is dict else None
        key = next(name for name, tokens in res.value if tokens == res.key)
        out = []
        for value in values if type(values) is list else ():
            if type(value) is dict and (res.key_test is None or res.key_test(value.get(key, MISSING))):
                element: dict[str, Any] = {}
                for tokens, want in res.where:
                    _put(element, tokens, want)
                for name, tokens in res.value:
                    _put(element, tokens, value.get(name))
                out.append(element)
        return out

    def _element(self, row: dict[str, Any], kind: Kind, turn: dict[str, Any], step: int, home: bool = True) -> Any:
        """The row kind's element (at its selection's first place, `home`), its fields written back."""
        out: dict[str, Any] = {}
        for tokens, value in kind.back_const:
            _put(out, tokens, value)
        for write in self.plan.element_fields[kind.name]:
            write(turn, out, step)
        if home:
            assert kind.select is not None
            _put(row, self.model.selections[kind.select].alternatives[0].at, out)
        return out

    def _row_value(
        self, row: dict[str, Any], writers: RowItem, response: dict[str, Any], request: Any, step: int
    ) -> None:
        """The row values written back from the turn field(s) writing a target (`_row_item`): the
        first of the response and request turns that holds the target decides (a null holds it too)."""
        for of_response, spread, key, tokens, write in writers:
            turn = response if of_response else request
            if turn is None:
                continue
            if spread is not None:
                spreads.reverse(self.model.spread, row, turn, self.story, spread)
                return
            there = turn.get(key, MISSING) if key is not None and type(turn) is dict else pointer.resolve(turn, tokens)
            if there is MISSING:
                continue
            write(turn, row, step)
            return

    def _row_item(self, target: str) -> RowItem:
        """Who writes the row value `target` back, in order: the row kind's field, then the request
        kind's (whether it reads the response turn, its spread, its key or pointer, its writer)."""
        found = self.plan.row_items.get(target)
        if found is None:
            out = []
            for of_response, field in zip((True, False), self._writers(target), strict=True):
                if field is None:
                    continue
                write = self._row_writers.get(id(field))
                if write is None:
                    write = self._row_writers[id(field)] = _writer(field, element=False)
                key = field.to[0] if len(field.to) == 1 else None
                out.append((of_response, field.spread, key, field.to, write))
            found = self.plan.row_items[target] = tuple(out)
        return found

    def _writers(self, target: str) -> tuple[Field | None, Field | None]:
        """The row kind's and the request kind's field writing the turn's `target` (computed once)."""
        found = self._writers_of.get(target)
        if found is None:
            tokens = pointer.parse(target)
            pick = [
                next((f for f in k.fields if f.to == tokens), None) if k is not None else None
                for k in (self.row_kind, self.request_kind)
            ]
            found = self._writers_of[target] = (pick[0], pick[1])
        return found

    @staticmethod
    def _back(f: Field, turn: dict[str, Any], out: dict[str, Any], step: Any, element: bool) -> None:
        """Write field `f` of `turn` back into `out` (the element, or the row)."""
        if f.back == "none" or f.spread is not None:
            return
        if type(f.back) is tuple:
            fn, args, to = f.back
            if (to.root == "row") != element:
                value = fn(*(step if a.root == "row" else pointer.resolve(turn, a.tokens) for a in args))
                if value is not MISSING:
                    _put(out, to.tokens, value)
            return
        first = f.first
        if first is None or first.src is None or first.src.root == "turn" or (first.src.root == "row") == element:
            return
        value = pointer.resolve(turn, f.to)
        if value is MISSING:
            value = f.default
        if value is MISSING or (value is None and not f.keep_null):
            return
        if f.inverse is not None:
            value = f.inverse.get(value, MISSING) if type(value) is str else MISSING
            if value is MISSING:
                return
        if f.call is not None and f.candidates:
            there = pointer.resolve(out, first.src.tokens)
            try:
                again = f.call(there) if there is not MISSING else MISSING
            except (ValueError, TypeError):
                again = MISSING
            if again == value:
                return  # the forward derives this value again from what is there
        _put(out, first.src.tokens, value)
