"""Generate straight-line Python for each scope of a compiled program.

**The rule of this module: a spec never becomes code.**  A spec is untrusted input, so every value
taken from it (pointer segments, object keys, constants, names, table values, messages built from
them) reaches the generated source only as ``repr()`` of a ``str``, ``bool``, ``None`` or small
``int`` (`_Writer.literal`, ``{x!r}``), or as a constant of the namespace the code indexes by a name
this module makes up (`_Writer.const`).  Nothing from a spec is ever formatted into the text of the
code itself; a message that names a spec value is built in Python and then written with ``repr``.
`tests/hardening/test_codegen_injection.py` checks it over every string slot of the spec schema.

Interpreting rule objects costs several calls per value; the generated functions do what a
hand-written converter does (dict lookups and stores, inline), so a spec runs at about the speed
of code written for one format.  The source is compiled once per program and registered in
`linecache` under ``<mapc NAME.yaml forward/reverse>``, so tracebacks and pdb show real lines.
Every row is written out here with the semantics its rule object defines (program.py: `Rule.forward`,
`Rule.value`, `Rule.reverse_value`, `Rule.reverse`), from the op table: `FORWARD` and `REVERSE` hold
one code writer per op of `ops.OPS` (`REVERSE`'s are the code of `Op.reverse`, part by part), and
a copy's or a chain's candidate test is the op's `takes_code` (the code of the `takes` test its
rule object runs).  Each is specialized for what the row says: chains become
nested branches, the inputs a chain leaves unmapped are known per branch, and the guard that asks
a computed row's reverse what it would write back is code too.  A row falls back to its rule
object's method only in the rare shapes written out nowhere here (a guard reading a Storyline value
that may not be complete yet, a write-back reading ``ctx.out``, a computed reverse with no target).

Forward functions are ``f(src, dst, ctx, prefix, up, idx)``: the source element, the Storyline
element being written, the run context, the escaped pointer of `src`, its ancestors and the
indices (or keys) of the elements from the document down.  Reverse functions are
``r(elem, out, ctx, sup, oup, idx)``: the Storyline element, the source element being rebuilt,
and the ancestors on either side.

The guards (what the reverse of a value gives back) are decided once a scope's Storyline element
is complete: a slot is reserved in ``ctx.checks`` where the rule runs, so what is kept lands in the
residuals in rule order (run.py reads a slot as ``None``, or a ``(pointer, value)`` pair to keep).
A write-back (``ctx.pending``) is ``(fn, want, out[, oup, idx[, story, parent]])``, run as
``fn(entry, ctx, copies)`` once residuals are restored: `fn` is generated, and writes `want` back
unless the rule's forward derives it from the restored source element again.  A fallback array
(written back beside the array it stands in for) is made of copies of that array's elements when
its scope's reverse writes nothing but its own element (`_twins`).
"""

from __future__ import annotations

import linecache
import re
from collections.abc import Callable
from typing import Any

from mapc.engine import cache
from mapc.engine.ops import CONDITIONS, OPS, candidate_code, condition_code
from mapc.engine.pointer import escape
from mapc.engine.program import (
    Frame,
    Rule,
    Scope,
    ScopeFn,
    Source,
    follow,
    insert_copying,
    origin_format,
    pointer_text,
    put_in,
    twin_write_back,
)
from mapc.engine.template import Var
from mapc.engine.values import MISSING, json_equal


class _Writer:
    """Accumulates indented source lines and the constants they refer to."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.names: dict[str, Any] = {
            "MISSING": MISSING,
            "escape": escape,
            "put_in": put_in,
            "insert_copying": insert_copying,
            "follow": follow,
            "twin_write_back": twin_write_back,
            "origin_format": origin_format,
            "Frame": Frame,
            "json_equal": json_equal,
        }
        self._ids: dict[int, str] = {}
        self._locals: dict[tuple[str, tuple[str, ...]], str] = {}
        self._temps = 0
        self._slots = 0
        self.prologue: list[str] = []  # lines that open the function being written (after its header)
        self.derivers: list[str] = []  # module-level functions emitted beside the scope functions
        self.unsafe_story_keys: frozenset[str] = frozenset()  # Storyline keys the document's arrays fill
        self.plain_scopes: dict[int, bool] = {}  # id(scope) -> its reverse writes only its element and write-backs
        self.layouts: set[int] = set()  # lengths of the write-back entries of the reverse function being written
        self.scope_layouts: dict[int, frozenset[int]] = {}  # id(scope) -> those of its reverse function

    def start_function(self, header: str) -> None:
        """Begin a function; path locals of the previous one are forgotten."""
        self._locals = {}
        self.prologue = []
        self.emit(0, header)

    def emit(self, depth: int, line: str) -> None:
        self.lines.append("    " * depth + line)

    def const(self, value: Any, hint: str = "K") -> str:
        """A module-level name bound to `value` (identity-shared across uses)."""
        key = id(value)
        if key not in self._ids:
            name = f"{hint}{len(self._ids)}"
            self._ids[key] = name
            self.names[name] = value
        return self._ids[key]

    def literal(self, value: Any) -> str:
        """An expression for `value`: the `repr` of a string, boolean, None or a small integer, else
        the shared constant itself (a float's repr may be ``inf``, a name; a huge int's may not exist)."""
        if type(value) in (str, bool) or value is None or (type(value) is int and -(2**64) < value < 2**64):
            return repr(value)
        return self.const(value)

    def temp(self) -> str:
        self._temps += 1
        return f"_t{self._temps}"

    def slot(self) -> str:
        self._slots += 1
        return f"k{self._slots}"

    def get(self, depth: int, var: str, obj: str, path: tuple[str, ...]) -> None:
        """Emit `var = <value at path below obj, or MISSING>` (`obj` is known to be a dict)."""
        self.emit(depth, f"{var} = {self.path_local(depth, obj, path)}")

    def path_local(self, depth: int, obj: str, path: tuple[str, ...]) -> str:
        """An expression for the value at `path` below `obj` (a dict that does not change).

        At the top level of a function every prefix of `path` is kept in a local, so a value read
        by several rules is looked up once; deeper (inside a branch) a local already made is used,
        else the lookup is an inline expression.
        """
        if not path:
            return obj
        if depth != 1:
            cached = self._locals.get((obj, path))
            return cached if cached is not None else self.read(obj, path, known_dict=True)
        name = obj
        for i in range(len(path)):
            slot = (obj, path[: i + 1])
            if slot not in self._locals:
                local = f"p{len(self._locals)}"
                if i == 0:
                    self.emit(1, f"{local} = {obj}.get({path[0]!r}, MISSING)")
                else:
                    self.emit(1, f"{local} = {name}.get({path[i]!r}, MISSING) if type({name}) is dict else MISSING")
                self._locals[slot] = local
            name = self._locals[slot]
        return name

    def read(self, obj: str, path: tuple[str, ...], known_dict: bool = False) -> str:
        """An inline expression for `get_in(obj, path)`."""
        expr = obj
        for n, key in enumerate(path):
            if n == 0 and known_dict:
                expr = f"{obj}.get({key!r}, MISSING)"
            else:
                t = self.temp()
                expr = f"({t}.get({key!r}, MISSING) if type({t} := {expr}) is dict else MISSING)"
        return expr

    def put(self, depth: int, obj: str, path: tuple[str, ...], value: str) -> None:
        """Emit a store of `value` at `path` below `obj` (an empty path merges an object in)."""
        if not path:
            self.emit(depth, f"if type({value}) is dict:")
            self.emit(depth + 1, f"{obj}.update({value})")
        elif len(path) == 1:
            self.emit(depth, f"{obj}[{path[0]!r}] = {value}")
        else:  # put_in, inline: objects on the way are copied (another rule may share them with the input)
            if not value.isidentifier():
                self.emit(depth, f"_v = {value}")
                value = "_v"
            node = obj
            for key in path[:-1]:
                t = self.temp()
                self.emit(depth, f"{t} = {node}.get({key!r})")
                self.emit(depth, f"{t} = {node}[{key!r}] = {t}.copy() if type({t}) is dict else {{}}")
                node = t
            self.emit(depth, f"{node}[{path[-1]!r}] = {value}")


_COMMENT_SAFE = re.compile(r"[^A-Za-z0-9_.\-\[\] ]")


def row_comment(rule: Rule) -> str:
    """``# spec.yaml:61 rules[15]``: the YAML row the code below it comes from.  The file name is
    spec text: anything but plain name characters becomes ``?``, so no line break can end the
    comment early; the line number and the label are the reader's own."""
    at = rule.spec.at
    return f"# {_COMMENT_SAFE.sub('?', at.file)[:120]}:{int(at.line)} {_COMMENT_SAFE.sub('?', rule.spec.label)}"


def _takes(w: _Writer, rule: Rule, var: str) -> str:
    """The op's candidate test of `var` (present or MISSING) for this rule, as an expression:
    `ops.Op.takes_code`, the code of the test `Op.takes` that the rule objects run."""
    return OPS[rule.spec.op].takes_code(rule.spec, var, _condition(w, rule, var) if rule.condition else None)


def _condition(w: _Writer, rule: Rule, var: str) -> str:
    """The rule's `when` condition over `var`, as an expression."""
    if rule.spec.when in CONDITIONS:
        return condition_code(rule.spec.when, var)
    return f"{w.const(rule.condition, 'C')}({var})"


# --- reading sources -----------------------------------------------------------------------


class _Env:
    """Where generated code finds a rule's frame and ``ctx.out`` in one place of a run.

    `elem` and `up` name the frame's element and ancestors (`up` None: ancestors all None, as in
    the forward's view of a Storyline element); `out` and `out_up` name the frame of ``ctx.out``
    (`out` None: ``ctx.out`` is None).  `cache`: the element does not change while the function
    runs, so its values may be kept in locals.
    """

    __slots__ = ("cache", "elem", "level", "out", "out_up", "up")

    def __init__(
        self, level: int, elem: str, up: str | None, out: str | None, out_up: str | None, *, cache: bool
    ) -> None:
        self.level, self.elem, self.up, self.out, self.out_up, self.cache = level, elem, up, out, out_up, cache


def _forward_env(level: int) -> _Env:
    return _Env(level, "src", "up", None, None, cache=True)


def _expr(w: _Writer, d: int, source: Source, env: _Env) -> str:
    """An expression for `source.read(frame, ctx)` in `env` (see program.Source.read)."""
    kind = source.kind
    if kind == "elem":
        if source.level == env.level:
            if env.cache:
                return w.path_local(d, env.elem, source.path)
            return w.read(env.elem, source.path, known_dict=True)
        if env.up is None:
            return "MISSING" if source.path else "None"
        return w.read(f"{env.up}[{source.level}]", source.path)
    if kind == "var":
        return f"idx[{source.level}]" if source.level <= env.level else "MISSING"
    if kind == "top":
        return w.read("ctx.top", source.path)
    if kind == "story":
        return w.read("ctx.story", source.path)
    if kind == "parent":
        return f"({w.read('ctx.parent', source.path)} if ctx.parent is not None else MISSING)"
    if kind == "call":
        args = ", ".join(_expr(w, d, a, env) for a in source.args)
        return f"{w.const(source.fn, 'F')}({args})"
    if kind == "out":
        if env.out is None:
            return "MISSING"
        if source.level == env.level:
            return w.read(env.out, source.path, known_dict=True)
        return w.read(f"{env.out_up}[{source.level}]", source.path)
    if kind == "count":
        return "ctx.count"
    if kind == "const":  # a spec value: repr() of a plain scalar, else the constants table
        return w.literal(source.value)
    return "MISSING"


def _reads_story(sources: tuple[Source, ...]) -> list[tuple[str, ...]]:
    """The Storyline paths that `sources` read (through calls too)."""
    out: list[tuple[str, ...]] = []
    for s in sources:
        if s.kind == "story":
            out.append(s.path)
        elif s.kind == "call":
            out.extend(_reads_story(s.args))
    return out


def _settled(w: _Writer, level: int, paths: list[tuple[str, ...]]) -> bool:
    """True when the Storyline values at `paths` are final once a scope at `level` has run: the
    document's own values are written before any of its arrays is walked."""
    if level == 0:
        return True
    return all(p and p[0] not in w.unsafe_story_keys for p in paths)


# --- forward -------------------------------------------------------------------------------


def _inline_source(rule: Rule, level: int) -> tuple[str, tuple[str, ...]] | None:
    """(object expression, path) when the rule's single source can be read inline."""
    source = rule.sources[0]
    if source.kind == "elem":
        return ("src" if source.level == level else f"up[{source.level}]"), source.path
    if source.kind == "top":
        return "ctx.top", source.path
    return None


Fin = list[Callable[[], None]]  # what a scope function does once its Storyline element is complete


def _forward_rule(w: _Writer, d: int, rule: Rule, level: int, fin: Fin) -> None:
    """Write the forward of one row: its op's code writer (`FORWARD`, one per op of ops.OPS)."""
    if not rule.spec.reverse_only:
        FORWARD[rule.spec.op](w, d, rule, level, fin)


def _forward_const(w: _Writer, d: int, rule: Rule, level: int, fin: Fin) -> None:
    """const (ops._choose_const): the value, at every target."""
    for target in rule.targets:
        w.put(d, "dst", target, w.literal(rule.spec.value))


def _forward_call(w: _Writer, d: int, rule: Rule, level: int, fin: Fin) -> None:
    """call (ops._choose_call): the function of its arguments, unless it gives no value."""
    env = _forward_env(level)
    args = [_expr(w, d, s, env) for s in rule.sources]
    w.emit(d, f"v = {w.const(rule.convert, 'F')}({', '.join(args)})")
    w.emit(d, "if v is not MISSING:")
    for target in rule.targets:
        w.put(d + 1, "dst", target, "v")
    if rule.reverse_fn is not None:  # a computed value with a reverse: checked once the Storyline is written
        _reverse_fn_check(w, d, rule, level, fin)


def _forward_sources(w: _Writer, d: int, rule: Rule, level: int, fin: Fin) -> None:
    """copy and first_of (ops._choose_candidates): each source asked the op's test (`_takes`);
    a plain copy of one value of the element or the document is written out inline."""
    spec = rule.spec
    inline = _inline_source(rule, level) if not OPS[spec.op].chain else None
    if inline is None or rule.guarded or rule.with_args:
        _forward_chain(w, d, rule, level, fin)
        return
    obj, path = inline
    w.get(d, "v", obj, path) if obj == "src" else w.emit(d, f"v = {w.read(obj, path)}")
    w.emit(d, f"if {OPS[spec.op].takes_code(spec, 'v', None)}:")  # a copy's test; its condition apart
    inner = d + 1
    if rule.condition is not None:  # a copy's condition, apart: what fails it may be kept (below)
        w.emit(inner, f"if {_condition(w, rule, 'v')}:")
        inner += 1
    value = "v"
    if rule.convert is not None:  # a derived conversion (authoritative ones are guarded above)
        w.emit(inner, f"w = {w.const(rule.convert, 'F')}(v)")
        w.emit(inner, "if w is not MISSING:")
        inner += 1
        value = "w"
    for target in rule.targets:
        w.put(inner, "dst", target, value)
    if rule.condition is not None and rule.authoritative:
        w.emit(d + 1, "else:")  # kept unless the reverse gives it back (checked at the end)
        at = f"{pointer_text(path)!r}" if obj == "ctx.top" else f"prefix + {pointer_text(path)!r}"
        _value_check(w, d + 2, rule, level, fin, at, "v")


FORWARD: dict[str, Callable[[_Writer, int, Rule, int, Fin], None]] = {
    "copy": _forward_sources,
    "first_of": _forward_sources,
    "const": _forward_const,
    "call": _forward_call,
}
assert FORWARD.keys() == OPS.keys(), "every op of ops.OPS has its code writer here"


def _at(rule: Rule, i: int) -> str:
    """An expression for the full source pointer of source `i` (see Rule.at)."""
    return f"{rule.pointer(i)!r}" if rule.sources[i].kind == "top" else f"prefix + {rule.pointer(i)!r}"


def _forward_chain(w: _Writer, d: int, rule: Rule, level: int, fin: Fin) -> None:
    """`Rule.forward` of a copy or a chain, with each candidate's branch written out."""
    spec = rule.spec
    env = _forward_env(level)
    n = len(rule.sources)
    if spec.op == "copy" and n != 1:
        w.emit(d, f"{w.const(rule, 'R')}.forward(Frame(src, up, idx), dst, ctx, prefix)")
        return
    for s in rule.sources:  # plain values of this element, read once up front
        if s.kind == "elem" and s.level == level:
            _expr(w, d, s, env)

    def candidate(j: int, depth: int) -> None:
        if j == n:
            _chain_tail(w, depth, rule, level, fin, -1)
            return
        w.emit(depth, f"x = {_expr(w, depth, rule.sources[j], env)}")
        test = _takes(w, rule, "x")
        w.emit(depth, f"if {test}:")
        _chain_tail(w, depth + 1, rule, level, fin, j)
        w.emit(depth, "else:")
        if not OPS[spec.op].chain:  # a copy's only source: nothing is chosen
            _chain_tail(w, depth + 1, rule, level, fin, -1)
        else:
            candidate(j + 1, depth + 1)

    candidate(0, d)


def _chain_tail(w: _Writer, d: int, rule: Rule, level: int, fin: Fin, j: int) -> None:
    """What `Rule.forward` does once candidate `j` (in `x`) is chosen, or none is (``j == -1``)."""
    spec = rule.spec
    auth = rule.authoritative
    if j < 0:
        if auth and spec.op == "first_of":  # a copy's unchosen source is missing or null: nothing to keep
            _keep_unchosen(w, d, rule, level, -1)
        w.emit(d, "pass")  # the branch is never empty (no candidate of the chain may be this rule's own)
        return
    checkable = auth and rule.sources[j].plain  # a lost value is kept (unless null) if the reverse loses it
    if spec.op == "copy" and rule.condition is not None:
        w.emit(d, f"if not {_condition(w, rule, 'x')}:")
        if checkable:
            w.emit(d + 1, "if x is not None:")
            _value_check(w, d + 2, rule, level, fin, _at(rule, j), "x")
        w.emit(d + 1, "pass")
        w.emit(d, "else:")
        d += 1
    value = "x"
    if rule.convert is not None:
        env = _forward_env(level)
        extra = "".join(", " + _expr(w, d, a, env) for a in rule.with_args)
        w.emit(d, f"w = {w.const(rule.convert, 'F')}(x{extra})")
        if spec.op == "copy" and checkable:
            w.emit(d, "if x is not None:")
            _value_check(w, d + 1, rule, level, fin, _at(rule, j), "x")
        w.emit(d, "if w is MISSING:")
        if spec.op == "first_of":
            if checkable:
                w.emit(d + 1, "if x is not None:")
                _value_check(w, d + 2, rule, level, fin, _at(rule, j), "x")
            if auth:
                _keep_unchosen(w, d + 1, rule, level, j)
        w.emit(d + 1, "pass")
        w.emit(d, "else:")
        d += 1
        value = "w"
    for target in rule.targets:
        w.put(d, "dst", target, value)
    if spec.op != "first_of" or not auth:
        return
    _keep_unchosen(w, d, rule, level, j)
    source = rule.sources[j]
    env = _forward_env(level)
    if j > 0 and source.kind == "call" and rule.write_back_fn is not None:
        # Does the write-back put the computed value home?  If not, its inputs are kept.
        w.emit(d, f"pl = {w.const(rule.write_back_fn, 'F')}({value}, src)")
        w.emit(d, "if pl is MISSING or not json_equal(src.get(pl[0], MISSING), pl[1]):")
        for arg in source.args:
            if arg.plain and arg.path:
                w.emit(d + 1, f"y = {_expr(w, d + 1, arg, env)}")
                w.emit(d + 1, "if y is not MISSING and y is not None:")
                w.emit(d + 2, f"ctx.checks.append((prefix + {pointer_text(arg.path)!r}, y))")
        w.emit(d + 1, "pass")
    if j > 0 and rule.owned[j] and source.plain:
        # The reverse writes the value back to the first source only: keep this one.
        w.emit(d, f"ctx.residual[{_at(rule, j)}] = {value}")
    elif j == 0:
        # The rest of the chain derives the same value, so the reverse would not write the first
        # source back: keep it.
        _without_first(w, d, rule, level)
        w.emit(d, f"if json_equal(y, {value}):")
        w.emit(d + 1, f"ctx.residual[{_at(rule, 0)}] = {value}")


def _keep_unchosen(w: _Writer, d: int, rule: Rule, level: int, chosen: int) -> None:
    """`Rule._keep_unchosen`: the inputs of the candidates not taken, kept as residuals."""
    env = _forward_env(level)
    for j, source in enumerate(rule.sources):
        if j == chosen:
            continue
        inputs = [(source, rule.owned[j])] if source.plain else [(a, True) for a in source.args if a.plain]
        for item, owned in inputs:
            if not owned or not item.path or (item.kind == "elem" and item.level != level):
                continue
            key = ("" if item.kind == "top" else "prefix + ") + repr(pointer_text(item.path))
            w.emit(d, f"y = {_expr(w, d, item, env)}")
            w.emit(d, "if y is not MISSING and y is not None:")
            w.emit(d + 1, f"ctx.residual[{key}] = y")


def _without_first(w: _Writer, d: int, rule: Rule, level: int) -> None:
    """`Rule._without_first` into `y`: the value of the chain without its first candidate."""
    env = _forward_env(level)
    rest = rule.sources[1:]
    if not rest:
        w.emit(d, "y = MISSING")
        return
    for k, source in enumerate(rest):
        w.emit(d + k, f"y = {_expr(w, d + k, source, env)}")
        w.emit(d + k, f"if not ({candidate_code('y', rule.spec.nonempty, None)}):")
    w.emit(d + len(rest), "y = MISSING")


def _value_check(w: _Writer, d: int, rule: Rule, level: int, fin: Fin, at: str, raw: str) -> None:
    """Keep `raw` (the source value at `at`) unless the reverse of `rule` gives it back."""
    story_reads = [p for p, _ in rule.reverse_when]
    if rule.spec.synthesized:
        story_reads.append(("origin",))
    story_reads += _reads_story(rule.reverse_first_of) + _reads_story(rule.with_args)
    if not _settled(w, level, story_reads):
        w.emit(d, f"ctx.checks.append(({w.const(rule, 'R')}, Frame(src, up, idx), dst, {at}, {raw}))")
        return
    k = w.slot()
    w.emit(d, f"{k} = len(ctx.checks)")
    w.emit(d, "ctx.checks.append(None)")
    w.emit(d, f"{k}a, {k}r = {at}, {raw}")

    def decide() -> None:
        w.emit(1, f"if {k} >= 0:")
        story_env = _Env(level, "dst", None, "src", "up", cache=False)
        source_env = _Env(level, "src", "up", "src", "up", cache=True)
        _reverse_value(w, 2, rule, story_env, source_env, "v")
        w.emit(2, f"if not json_equal(v, {k}r):")
        w.emit(3, f"ctx.checks[{k}] = ({k}a, {k}r)")

    fin.append(decide)
    w.prologue.append(f"{k} = -1")


def _reverse_fn_check(w: _Writer, d: int, rule: Rule, level: int, fin: Fin) -> None:
    """Keep the sources a computed row's reverse would not give back (decided at the end)."""
    if not rule.reverse_targets or not _settled(w, level, _reads_story(rule.reverse_args)):
        w.emit(d, f"ctx.checks.append(({w.const(rule, 'R')}, Frame(src, up, idx), dst, prefix, None))")
        return
    k = w.slot()
    w.emit(d, f"{k} = len(ctx.checks)")
    for _ in rule.reverse_targets:
        w.emit(d, "ctx.checks.append(None)")

    def decide() -> None:
        story_env = _Env(level, "dst", None, "src", "up", cache=False)
        args = ", ".join(_expr(w, 1, a, story_env) for a in rule.reverse_args)
        call = f"{w.const(rule.reverse_fn, 'F')}({args})"
        names = [f"{k}v{n}" for n in range(len(rule.reverse_targets))]
        if len(names) == 1:
            w.emit(1, f"{names[0]} = {call}")
        else:
            w.emit(1, f"{', '.join(names)}, = {call}")
        for n, (path, name) in enumerate(zip(rule.reverse_targets, names, strict=True)):
            have = f"{k}h{n}"
            w.emit(1, f"{have} = {w.path_local(1, 'src', path)}")
            # A null the reverse would not write back at all is kept too (absent and null differ).
            w.emit(
                1,
                f"if {have} is not MISSING and ({have} is not None or {name} is MISSING)"
                f" and not json_equal({have}, {name}):",
            )
            w.emit(2, f"ctx.checks[{k} + {n}] = (prefix + {pointer_text(path)!r}, {have})")

    fin.append(decide)


def _residual_walk(w: _Writer, d: int, obj: str, tokens: tuple[Any, ...], known: str, base: str, n: int) -> None:
    """Walk `tokens` below `obj` (variables loop over arrays or objects) and keep unknown keys."""
    literal: list[str] = []
    for i, token in enumerate(tokens):
        if isinstance(token, Var):
            arr = f"a{n}"
            w.emit(d, f"{arr} = {_walk_read(w, d, obj, tuple(literal))}")
            b = f"{base} + {pointer_text(tuple(literal)) + '/'!r}"
            w.emit(d, f"if type({arr}) is list:")
            w.emit(d + 1, f"for i{n}, x{n} in enumerate({arr}):")
            _residual_walk(w, d + 2, f"x{n}", tokens[i + 1 :], known, f"{b} + str(i{n})", n + 1)
            w.emit(d, f"elif type({arr}) is dict:")
            w.emit(d + 1, f"for i{n}, x{n} in {arr}.items():")
            _residual_walk(w, d + 2, f"x{n}", tokens[i + 1 :], known, f"{b} + escape(i{n})", n + 1)
            return
        literal.append(token)
    o = f"o{n}"
    w.emit(d, f"{o} = {_walk_read(w, d, obj, tuple(literal))}")
    w.emit(d, f"if type({o}) is dict and not {o}.keys() <= {known}:")
    w.emit(d + 1, f"b{n} = {base} + {pointer_text(tuple(literal)) + '/'!r}")
    w.emit(d + 1, f"for key, x in {o}.items():")
    w.emit(d + 2, f"if key not in {known}:")
    w.emit(d + 3, f"ctx.residual[b{n} + escape(key)] = x")


def _walk_read(w: _Writer, d: int, obj: str, path: tuple[str, ...]) -> str:
    if obj == "src":  # the scope's element: a dict, whose values may already be in locals
        return w.path_local(d, obj, path)
    return w.read(obj, path)


def _forward_scope(w: _Writer, scope: Scope, name: str, counter: list[int]) -> None:
    inner_names = []
    for child in scope.children:
        counter[0] += 1
        inner = f"_forward_{counter[0]}"
        _forward_scope(w, child, inner, counter)
        inner_names.append(inner)
    w.start_function(f"def {name}(src, dst, ctx, prefix, up, idx):")
    header = len(w.lines)
    w.emit(1, "if type(src) is not dict:")
    w.emit(2, "return None")
    fin: Fin = []
    for rule in scope.rules:
        w.emit(1, row_comment(rule))
        _forward_rule(w, 1, rule, scope.level, fin)
    for rel, known in scope.objects:
        _residual_walk(w, 1, "src", rel, w.const(known, "KNOWN"), "prefix", 0)
    for child, inner in zip(scope.children, inner_names, strict=True):
        w.get(1, "items", "src", child.src_rel)
        if child.fallback_rel is not None:
            w.get(1, "other", "src", child.fallback_rel)
            w.emit(1, "if type(items) is not list or not items:")
            w.emit(2, "items, other = other, items")
            w.emit(2, f"base = prefix + {pointer_text(child.fallback_rel) + '/'!r}")
            w.emit(2, f"at = prefix + {pointer_text(child.src_rel)!r}")
            w.emit(1, "else:")
            w.emit(2, f"base = prefix + {child.pointer_prefix + '/'!r}")
            w.emit(2, f"at = prefix + {pointer_text(child.fallback_rel)!r}")
            # The other array is given back as a copy of this one: keep it unless it is one.
            w.emit(1, "if other is not MISSING and other is not None:")
            w.emit(2, "if json_equal(other, items):")
            # Given back as a copy of the chosen array: what is kept below one is kept below both.
            w.emit(3, "ctx.mirrors[base] = at + '/'")
            w.emit(2, "elif not (other == [] and not (type(items) is list and items)):")  # [] comes back as []
            w.emit(3, "ctx.residual[at] = other")
        else:
            w.emit(1, f"base = prefix + {child.pointer_prefix + '/'!r}")
        w.emit(1, "if type(items) is list" + (" and items:" if child.omit_empty else ":"))
        w.emit(2, "out = []")
        w.put(2, "dst", child.dst_rel, "out")
        w.emit(2, "inner = up + (src,)")
        w.emit(2, "for i, item in enumerate(items):")
        w.emit(3, "d = {}")
        w.emit(3, f"{inner}(item, d, ctx, base + str(i), inner, idx + (i,))")
        w.emit(3, "out.append(d)")
    for decide in fin:  # the Storyline element is complete: decide the guards
        decide()
    w.emit(1, "return None")
    w.emit(0, "")
    w.lines[header:header] = ["    " + line for line in w.prologue]


# --- reverse -------------------------------------------------------------------------------


def _reverse_env(level: int) -> _Env:
    return _Env(level, "elem", "sup", "out", "oup", cache=True)


def _out_env(level: int) -> _Env:
    """The frame of ``ctx.out`` in a reverse (where a conversion's extra arguments are read)."""
    return _Env(level, "out", "oup", "out", "oup", cache=False)


def _reverse_value(w: _Writer, d: int, rule: Rule, env: _Env, with_env: _Env, var: str) -> bool:
    """Emit `Rule.reverse_value` into `var`: the Storyline frame is `env`, ``ctx.out`` `with_env`'s.

    Returns False when `var` is known to hold a value (a default stands in for a missing one)."""
    spec = rule.spec
    none = "MISSING" if spec.reverse_default is MISSING else w.literal(spec.reverse_default)

    def fallbacks(depth: int) -> None:
        chain = rule.reverse_first_of
        if not chain:
            w.emit(depth, f"{var} = {none}")
            return
        if spec.synthesized:  # from this format, a missing value was missing in the source too
            w.emit(depth, f"if origin_format(ctx.story) == {rule.format!r}:")
            w.emit(depth + 1, f"{var} = {none}")
            w.emit(depth, "else:")
            depth += 1
        for k, source in enumerate(chain):
            w.emit(depth + k, f"{var} = {_expr(w, depth + k, source, env)}")
            w.emit(depth + k, f"if {var} is MISSING or {var} is None:")
        w.emit(depth + len(chain), f"{var} = {none}")

    def targets(k: int, depth: int) -> None:
        if k == len(rule.targets):
            fallbacks(depth)
            return
        target = rule.targets[k]
        read = w.path_local(depth, env.elem, target) if env.cache else w.read(env.elem, target, known_dict=True)
        w.emit(depth, f"{var} = {read}")
        w.emit(depth, f"if {var} is MISSING" + ("" if spec.keep_null else f" or {var} is None") + ":")
        targets(k + 1, depth + 1)

    if rule.reverse_when:
        test = " and ".join(
            f"json_equal({w.read('ctx.story', path)}, {w.literal(want)})" for path, want in rule.reverse_when
        )
        w.emit(d, f"if {test}:")
        targets(0, d + 1)
        w.emit(d, "else:")
        w.emit(d + 1, f"{var} = {none}")
    else:
        targets(0, d)
    maybe_missing = spec.reverse_default is MISSING
    if rule.reverse_convert is not None:
        extra = "".join(", " + _expr(w, d + 1, a, with_env) for a in rule.with_args)
        call = f"{var} = {w.const(rule.reverse_convert, 'F')}({var}{extra})"
        if maybe_missing:
            w.emit(d, f"if {var} is not MISSING:")
            w.emit(d + 1, call)
        else:
            w.emit(d, call)
        maybe_missing = True  # a conversion may give no value
    return maybe_missing


def _put_back(w: _Writer, d: int, obj: str, path: tuple[str, ...], value: str) -> None:
    """`put_in(obj, path, value) if path else obj.update(value)` (see Rule.reverse)."""
    if path:
        w.put(d, obj, path, value)
    else:
        w.emit(d, f"{obj}.update({value})")


def _reverse_rule(w: _Writer, d: int, rule: Rule, level: int) -> None:
    """Write the reverse of one row: its op's code writer (`REVERSE`, one per op of ops.OPS, each
    the code of that op's `Op.reverse`)."""
    REVERSE[rule.spec.op](w, d, rule, level)


def _reverse_copy_op(w: _Writer, d: int, rule: Rule, level: int) -> None:
    """copy (ops._reverse_copy): a computed reverse, else its value back to its source; a derived
    copy's write-back."""
    if not _reverse_computed(w, d, rule, level):
        _reverse_copy(w, d, rule, level)
    _queue_write_back(w, d, rule, level)


def _reverse_chain_op(w: _Writer, d: int, rule: Rule, level: int) -> None:
    """first_of (ops._reverse_chain): a computed reverse, and the chosen value's write-back."""
    _reverse_computed(w, d, rule, level)
    _queue_write_back(w, d, rule, level)


def _reverse_computed_op(w: _Writer, d: int, rule: Rule, level: int) -> None:
    """const and call (ops._reverse_computed): only a computed reverse writes anything back."""
    _reverse_computed(w, d, rule, level)


def _reverse_computed(w: _Writer, d: int, rule: Rule, level: int) -> bool:
    """`Rule.reverse_computed`: a `back: {call, args, to}` function's results to their source
    pointers (by the rule object when it has no target here).  False when the row has none."""
    if rule.reverse_fn is None:
        return False
    if not rule.reverse_targets:
        w.emit(d, f"{w.const(rule, 'R')}.reverse_computed(Frame(elem, sup, idx), out, ctx)")
        return True
    env = _reverse_env(level)
    args = ", ".join(_expr(w, d, a, env) for a in rule.reverse_args)
    call = f"{w.const(rule.reverse_fn, 'F')}({args})"
    names = [f"v{n}" for n in range(len(rule.reverse_targets))]
    w.emit(d, f"{names[0]} = {call}" if len(names) == 1 else f"{', '.join(names)}, = {call}")
    for path, name in zip(rule.reverse_targets, names, strict=True):
        w.emit(d, f"if {name} is not MISSING:")
        _put_back(w, d + 1, "out", path, name)
    return True


def _reverse_copy(w: _Writer, d: int, rule: Rule, level: int) -> None:
    """`Rule.reverse_copy`: an authoritative or reverse-only copy's value back to its source (the
    element, the document's own fields from its first Storyline, or the document key)."""
    if not (rule.authoritative or rule.spec.reverse_only):
        return
    env = _reverse_env(level)
    source = rule.sources[0]
    if source.kind == "var":
        _reverse_value(w, d, rule, env, _out_env(level), "v")
        w.emit(d, "ctx.key = v")
    elif source.kind == "top":
        w.emit(d, "if ctx.first:")  # the document's own fields: from its first Storyline
        if _reverse_value(w, d + 1, rule, env, _out_env(level), "v"):
            w.emit(d + 1, "if v is not MISSING:")
            w.put(d + 2, "ctx.top", source.path, "v")
        else:
            w.put(d + 1, "ctx.top", source.path, "v")
    elif source.kind == "elem":
        if _reverse_value(w, d, rule, env, _out_env(level), "v"):
            w.emit(d, "if v is not MISSING:")
            _put_back(w, d + 1, "out", source.path, "v")
        else:
            _put_back(w, d, "out", source.path, "v")


def _queue_write_back(w: _Writer, d: int, rule: Rule, level: int) -> None:
    """`Rule.queue_write_back`: a derived value's write-back entry in ``ctx.pending``, run by a
    generated function (`_write_back_fn`) once residuals are restored."""
    if rule.write_back is None or not rule.targets or any(s.kind == "top" for s in rule.sources):
        return
    target = rule.targets[0]
    want = w.path_local(d, "elem", target)
    null = rule.spec.op == "first_of" and not rule.spec.nonempty and not rule.convert  # a null is a value
    if target:
        w.emit(d, f"if {want} is not MISSING" + ("" if null else f" and {want} is not None") + ":")
        d += 1
    fn, layout = _write_back_fn(w, rule, level)
    entry = {3: "", 5: ", oup, idx", 7: ", oup, idx, ctx.story, ctx.parent"}[layout]
    w.layouts.add(layout)
    if any(_uses(s, ("top",)) for s in (*rule.sources, *rule.with_args)):
        w.layouts.add(0)  # reads the document being rebuilt: more than the element itself
    w.emit(d, f"ctx.pending.append(({fn}, {want}, out{entry}))")


REVERSE: dict[str, Callable[[_Writer, int, Rule, int], None]] = {
    "copy": _reverse_copy_op,
    "first_of": _reverse_chain_op,
    "const": _reverse_computed_op,
    "call": _reverse_computed_op,
}
assert REVERSE.keys() == OPS.keys(), "every op of ops.OPS has its reverse code writer here"


def _write_back_fn(w: _Writer, rule: Rule, level: int) -> tuple[str, int]:
    """A generated ``fn(entry, ctx, copies)`` for a write-back entry of ``ctx.pending``, and the
    entry's length: ``(fn, want, out[, oup, idx[, story, parent]])``.  It writes `want` back into
    the rebuilt element `out` unless the rule's forward derives it from there again."""
    name = f"_write_back_{len(w.derivers)}"
    body = _Writer()
    body.names, body._ids, body._temps = w.names, w._ids, w._temps
    sources = (*rule.sources, *rule.with_args)
    generic = any(_uses(s, ("out",)) for s in sources) or rule.spec.op not in ("copy", "first_of")
    layout = 3
    if generic or any(_uses(s, ("story", "parent")) for s in sources):
        layout = 7
    elif any(_reaches_up(s, level) or _uses(s, ("var",)) for s in sources):
        layout = 5
    body.emit(1, "_, want, out" + {3: "", 5: ", oup, idx", 7: ", oup, idx, story, parent"}[layout] + " = e")
    body.emit(1, "if copies:")
    body.emit(2, "if id(out) in copies:")
    body.emit(3, "out = follow(copies, out)")
    if layout > 3:
        body.emit(2, "oup = tuple([follow(copies, u) for u in oup])")
    if layout == 7:
        body.emit(1, "ctx.story, ctx.parent = story, parent")
    if generic:
        body.emit(1, f"v = {w.const(rule, 'R')}.value(Frame(out, oup, idx), ctx)")
    else:
        _rule_value(body, 1, rule, _Env(level, "out", "oup", None, None, cache=False))
    body.emit(1, "if json_equal(v, want):")
    body.emit(2, "return None")
    if rule.write_back_fn is not None:
        body.emit(1, f"pl = {w.const(rule.write_back_fn, 'F')}(want, out)")
        body.emit(1, "if pl is not MISSING:")
        body.emit(2, "key, value = pl")
        body.emit(2, "if key not in out:")  # insert_copying(out, (key,), value)
        body.emit(3, "out[key] = value")
    elif rule.write_back is not None and len(rule.write_back) == 1:
        body.emit(1, f"if {rule.write_back[0]!r} not in out:")  # insert_copying(out, (key,), want)
        body.emit(2, f"out[{rule.write_back[0]!r}] = want")
    else:
        assert rule.write_back is not None
        body.emit(1, f"insert_copying(out, {rule.write_back!r}, want)")
    body.emit(1, "return None")
    w._temps = body._temps
    w.derivers.append("\n".join([f"def {name}(e, ctx, copies):", *body.lines]) + "\n")
    return name, layout


def _reaches_up(source: Source, level: int) -> bool:
    if source.kind == "elem":
        return source.level != level
    return source.kind == "call" and any(_reaches_up(a, level) for a in source.args)


def _uses(source: Source, kinds: tuple[str, ...]) -> bool:
    return source.kind in kinds or (source.kind == "call" and any(_uses(a, kinds) for a in source.args))


def _rule_value(w: _Writer, d: int, rule: Rule, env: _Env) -> None:
    """Emit `Rule.value` into `v` over the frame `env` names (a copy or a chain)."""
    spec = rule.spec
    w.emit(d, "v = MISSING")
    for j, source in enumerate(rule.sources):
        w.emit(d + j, f"x = {_expr(w, d + j, source, env)}")
        test = _takes(w, rule, "x")
        w.emit(d + j, f"if {test}:")
        w.emit(d + j + 1, "v = x")
        if not OPS[spec.op].chain or j == len(rule.sources) - 1:
            break
        w.emit(d + j, "else:")
    if spec.op == "copy" and rule.condition is not None:
        w.emit(d, f"if v is not MISSING and not {_condition(w, rule, 'v')}:")
        w.emit(d + 1, "v = MISSING")
    if rule.convert is not None:
        extra = "".join(", " + _expr(w, d + 1, a, env) for a in rule.with_args)
        w.emit(d, "if v is not MISSING:")
        w.emit(d + 1, f"v = {w.const(rule.convert, 'F')}(v{extra})")


def _reverse_scope(w: _Writer, scope: Scope, name: str, counter: list[int]) -> None:
    inner_names = []
    for child in scope.children:
        counter[0] += 1
        inner = f"_reverse_{counter[0]}"
        _reverse_scope(w, child, inner, counter)
        inner_names.append(inner)
    w.start_function(f"def {name}(elem, out, ctx, sup, oup, idx):")
    w.emit(1, "if type(elem) is not dict:")
    w.emit(2, "return None")
    start = len(w.lines)
    w.layouts = set()
    for rule in scope.rules:
        w.emit(1, row_comment(rule))
        _reverse_rule(w, 1, rule, scope.level)
    w.scope_layouts[id(scope)] = frozenset(w.layouts)
    generic = any(".reverse_computed(" in line for line in w.lines[start:])
    if generic:  # a rule object's method reads `ctx.out`
        w.lines[start:start] = ["    ctx.out = Frame(out, oup, idx)"]
    # Run twice over the same elements, this scope's function would give the same result: a second
    # home array can be made of copies (see `_twins`).
    w.plain_scopes[id(scope)] = not (generic or scope.children or any(_writes_context(r) for r in scope.rules))
    for child, inner in zip(scope.children, inner_names, strict=True):
        w.get(1, "items", "elem", child.dst_rel)
        # A Storyline value of another shape than the array (or an object holding more than it)
        # cannot be written in this format: say so rather than drop it.
        where = w.const((scope.dst, child.dst_rel), "AT")
        holder = child.dst_rel[:-1]
        if holder:
            w.emit(1, f"h = {w.path_local(1, 'elem', holder)}")
            only = w.const(frozenset([child.dst_rel[-1]]), "ONLY")
            what = "an object holding only " + child.dst_rel[-1]  # spec text: into the code as a literal only
            w.emit(1, f"if h is not MISSING and h is not None and (type(h) is not dict or set(h) - {only}):")
            w.emit(2, f"ctx.problems.append(({where}, idx, {len(holder)}, {what!r}))")
        w.emit(1, "if items is not MISSING and items is not None and type(items) is not list:")
        w.emit(2, f"ctx.problems.append(({where}, idx, {len(child.dst_rel)}, 'an array'))")
        w.emit(1, "if type(items) is list:")
        w.emit(2, "for i, item in enumerate(items):")
        w.emit(3, "if type(item) is not dict:")
        w.emit(4, f"ctx.problems.append(({where}, idx + (i,), {len(child.dst_rel) + 1}, 'an object'))")
        w.emit(2, "s2 = sup + (elem,)")
        w.emit(2, "o2 = oup + (out,)")
        homes = [child.src_rel] + ([child.fallback_rel] if child.fallback_rel is not None else [])
        twins = len(homes) > 1 and _twins(w, child, homes)
        if twins:
            w.emit(2, "n0 = len(ctx.pending)")
        for n, home in enumerate(homes):  # a fallback array is written too: it held the same elements
            if n and twins:
                _twin_home(w, 2, home, w.scope_layouts[id(child)])
                continue
            w.emit(2, "back = []")
            w.put(2, "out", home, "back")
            w.emit(2, "for i, item in enumerate(items):")
            w.emit(3, "o = {}")
            w.emit(3, f"{inner}(item, o, ctx, s2, o2, idx + (i,))")
            w.emit(3, "back.append(o)")
        if child.omit_empty:
            w.emit(1, "else:")
            for home in homes:
                w.put(2, "out", home, "[]")
    w.emit(1, "return None")
    w.emit(0, "")


def _writes_context(rule: Rule) -> bool:
    """A reverse rule that writes the document key or the document's own fields (``ctx``)."""
    spec = rule.spec
    return (
        rule.reverse_fn is None
        and (rule.authoritative or spec.reverse_only)
        and spec.op == "copy"
        and rule.sources[0].kind in ("var", "top")
    )


def _out_reads(rule: Rule) -> list[tuple[int, tuple[str, ...]]]:
    """(level, path) of the rebuilt source values a reverse rule reads."""
    found: list[tuple[int, tuple[str, ...]]] = []

    def walk(source: Source, out_side: bool) -> None:
        if source.kind == "out" or (out_side and source.kind == "elem"):
            found.append((source.level, source.path))
        for a in source.args:
            walk(a, out_side)

    for a in rule.reverse_args:
        walk(a, False)
    if rule.reverse_convert is not None:
        for a in rule.with_args:  # read in the frame of ``ctx.out``
            walk(a, True)
    for a in rule.reverse_first_of:
        walk(a, False)
    return found


def _twins(w: _Writer, child: Scope, homes: list[tuple[str, ...]]) -> bool:
    """True when the elements of a second home array may be copies of the first's: the child's
    function writes only its own element and write-backs, and reads nothing that writing the
    first array changes (the parent's rebuilt values along either array's path)."""
    if not w.plain_scopes.get(id(child)):
        return False
    parent = child.level - 1
    for rule in child.rules:
        for level, path in _out_reads(rule):
            if level == parent and any(path[: len(h)] == h[: len(path)] for h in homes):
                return False
            if level < parent and not path:
                return False
    return True


def _twin_home(w: _Writer, d: int, home: tuple[str, ...], layouts: frozenset[int]) -> None:
    """The second home array as shallow copies of the first's elements (`back`), with their
    write-backs repeated for the copies, in the order a second run would have made them
    (`layouts`: the lengths of the child's write-back entries)."""
    w.emit(d, "twin = {}")
    w.emit(d, "back2 = []")
    w.put(d, "out", home, "back2")
    w.emit(d, "for o in back:")
    w.emit(d + 1, "c = o.copy()")
    w.emit(d + 1, "twin[id(o)] = c")
    w.emit(d + 1, "back2.append(c)")
    if not layouts:
        return
    w.emit(d, "pending = ctx.pending")
    if layouts == {3}:
        # Write-backs that read only their element do to a copy what they did to its original:
        # one entry per copy gives it the original's result (program.twin_write_back).
        w.emit(d, "groups = {}")
        w.emit(d, "for n in range(n0, len(pending)):")
        w.emit(d + 1, "e = pending[n]")
        w.emit(d + 1, "g = groups.get(id(e[2]))")
        w.emit(d + 1, "if g is None:")
        w.emit(d + 2, "groups[id(e[2])] = [e]")
        w.emit(d + 1, "else:")
        w.emit(d + 2, "g.append(e)")
        w.emit(d, "for o in back:")
        w.emit(d + 1, "g = groups.get(id(o))")
        w.emit(d + 1, "if g is not None:")
        w.emit(d + 2, "pending.append((twin_write_back, o, twin[id(o)], g))")
        return
    w.emit(d, "for n in range(n0, len(pending)):")
    w.emit(d + 1, "e = pending[n]")
    w.emit(d + 1, "pending.append(e[:2] + (twin[id(e[2])],) + e[3:])")


def generate(name: str, root: Scope) -> tuple[ScopeFn, ScopeFn, str]:
    """The forward and reverse functions of the root scope of spec `name`, and their source text."""
    w = _Writer()
    w.unsafe_story_keys = frozenset(c.dst_rel[0] for c in root.children if c.dst_rel)
    _forward_scope(w, root, "forward_root", [0])
    _reverse_scope(w, root, "reverse_root", [0])
    source = "\n".join([*w.derivers, "", *w.lines]) + "\n"
    # A spec name is checked when the spec is read; this one is a label, so it is shown escaped anyway.
    label = name if name.isprintable() and len(name) <= 100 else repr(name[:100])
    filename = f"<mapc {label}.yaml forward/reverse>"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    namespace = dict(w.names)
    exec(cache.compiled(source, filename), namespace)  # compile(), or its bytecode from the spec cache
    return namespace["forward_root"], namespace["reverse_root"], source
