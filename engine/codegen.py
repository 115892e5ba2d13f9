"""Generate straight-line Python for each scope of a compiled program.

Interpreting rule objects costs several calls per value; the generated functions do what a
hand-written converter does (dict lookups and stores, inline), so a spec runs at about the speed
of code written for one format.  The source is compiled once per program and registered in
`linecache` under ``<mapc NAME.yaml forward/reverse>``, so tracebacks and pdb show real lines.
Rules richer than a copy (chains, computed values, guarded conversions) call their rule
object's method, which keeps their semantics in one place (program.py).

Forward functions are ``f(src, dst, ctx, prefix, up, idx)``: the source element, the Storyline
element being written, the run context, the escaped pointer of `src`, its ancestors and the
indices (or keys) of the elements from the document down.  Reverse functions are
``r(elem, out, ctx, sup, oup, idx)``: the Storyline element, the source element being rebuilt,
and the ancestors on either side.
"""

from __future__ import annotations

import linecache
from typing import Any

from mapc.engine.pointer import escape
from mapc.engine.program import Frame, Rule, Scope, ScopeFn, pointer_text, put_in
from mapc.engine.template import Var
from mapc.engine.values import MISSING, json_equal

# Conditions as inline expressions over `v` (see program.CONDITIONS for their meaning).
_CONDITION_CODE = {
    "integer": "type(v) is int and -9223372036854775808 <= v <= 9223372036854775807",
    "number": "type(v) in (int, float)",
    "string": "type(v) is str",
    "object": "type(v) is dict",
    "array": "type(v) is list",
    "boolean": "type(v) is bool",
}


class _Writer:
    """Accumulates indented source lines and the constants they refer to."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.names: dict[str, Any] = {
            "MISSING": MISSING,
            "escape": escape,
            "put_in": put_in,
            "Frame": Frame,
            "json_equal": json_equal,
        }
        self._ids: dict[int, str] = {}
        self._locals: dict[tuple[str, tuple[str, ...]], str] = {}
        self.derivers: list[str] = []  # module-level functions emitted beside the scope functions

    def start_function(self, header: str) -> None:
        """Begin a function; path locals of the previous one are forgotten."""
        self._locals = {}
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

    def get(self, depth: int, var: str, obj: str, path: tuple[str, ...]) -> None:
        """Emit `var = <value at path below obj, or MISSING>` (`obj` is known to be a dict)."""
        self.emit(depth, f"{var} = {self.path_local(depth, obj, path)}")

    def path_local(self, depth: int, obj: str, path: tuple[str, ...]) -> str:
        """An expression for the value at `path` below `obj`.

        At the top level of a function every prefix of `path` is kept in a local, so a value read
        by several rules is looked up once; deeper (inside a branch) it is an inline expression.
        """
        if not path:
            return obj
        if depth != 1:
            expr = f"{obj}.get({path[0]!r}, MISSING)"
            for key in path[1:]:
                expr = f"(({expr}).get({key!r}, MISSING) if type({expr}) is dict else MISSING)"
            return expr
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

    def put(self, depth: int, obj: str, path: tuple[str, ...], value: str) -> None:
        """Emit a store of `value` at `path` below `obj` (an empty path merges an object in)."""
        if not path:
            self.emit(depth, f"if type({value}) is dict:")
            self.emit(depth + 1, f"{obj}.update({value})")
        elif len(path) == 1:
            self.emit(depth, f"{obj}[{path[0]!r}] = {value}")
        else:
            self.emit(depth, f"put_in({obj}, {path!r}, {value})")


# --- forward -------------------------------------------------------------------------------


def _inline_source(rule: Rule, level: int) -> tuple[str, tuple[str, ...]] | None:
    """(object expression, path) when the rule's single source can be read inline."""
    source = rule.sources[0]
    if source.kind == "elem":
        return ("src" if source.level == level else f"up[{source.level}]"), source.path
    if source.kind == "top":
        return "ctx.top", source.path
    return None


def _forward_rule(w: _Writer, d: int, rule: Rule, level: int) -> None:
    spec = rule.spec
    if spec.reverse_only:
        return
    if spec.op == "const":
        value = spec.value
        rendered = repr(value) if type(value) in (str, int, float, bool) or value is None else w.const(value)
        for target in rule.targets:
            w.put(d, "dst", target, rendered)
        return
    local = all(s.kind == "elem" and s.level == level for s in rule.sources)
    if spec.op == "first_of" and spec.derived and not spec.nonempty and local:
        _first_present(w, d, rule)
        return
    inline = _inline_source(rule, level) if spec.op == "copy" else None
    if spec.op == "call":
        args = [_arg_expr(w, d, rule, i, level) for i in range(len(rule.sources))]
        w.emit(d, f"v = {w.const(rule.convert, 'F')}({', '.join(args)})")
        w.emit(d, "if v is not MISSING:")
        for target in rule.targets:
            w.put(d + 1, "dst", target, "v")
        if rule.reverse_fn is not None:  # a computed value with a reverse: checked once the Storyline is written
            w.emit(d, f"ctx.checks.append(({w.const(rule, 'R')}, fr, dst, prefix, None))")
        return
    if inline is None or rule.guarded or rule.with_args:
        w.emit(d, f"{w.const(rule, 'R')}.forward(fr, dst, ctx, prefix)")
        return
    obj, path = inline
    w.get(d, "v", obj, path) if obj == "src" else w.emit(d, f"v = {_read_expr(obj, path)}")
    w.emit(d, "if v is not MISSING:" if spec.keep_null else "if v is not MISSING and v is not None:")
    inner = d + 1
    if rule.condition is not None:
        test = _CONDITION_CODE.get(spec.when or "") or f"{w.const(rule.condition, 'C')}(v)"
        w.emit(inner, f"if {test}:")
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
        w.emit(d + 2, f"ctx.checks.append(({w.const(rule, 'R')}, fr, dst, {at}, v))")


def _arg_expr(w: _Writer, d: int, rule: Rule, i: int, level: int) -> str:
    """An expression for argument `i` of a computed rule, inline where the source allows."""
    source = rule.sources[i]
    if source.kind == "elem":
        if source.level == level:
            return w.path_local(d, "src", source.path)
        return _read_expr(f"up[{source.level}]", source.path)
    if source.kind == "top":
        return _read_expr("ctx.top", source.path)
    if source.kind == "var":
        return f"idx[{source.level}]"
    return f"{w.const(rule, 'R')}.sources[{i}].read(fr, ctx)"


def _read_expr(obj: str, path: tuple[str, ...]) -> str:
    expr = obj
    for key in path:
        expr = f"(({expr}).get({key!r}, MISSING) if type({expr}) is dict else MISSING)"
    return expr


def _first_present(w: _Writer, d: int, rule: Rule) -> None:
    """A derived chain: the first present source (null included) decides, converted or not."""
    names = [w.path_local(d, "src", s.path) for s in rule.sources]
    w.emit(d, "v = MISSING")
    for i, n in enumerate(names):
        w.emit(d + i, f"if {n} is not MISSING:")
        w.emit(d + i + 1, f"v = {n}")
        if i < len(names) - 1:
            w.emit(d + i, "else:")
    value = "v"
    if rule.convert is not None:
        w.emit(d, f"w = {w.const(rule.convert, 'F')}(v) if v is not MISSING else MISSING")
        value = "w"
    w.emit(d, f"if {value} is not MISSING and {value} is not None:")
    for target in rule.targets:
        w.put(d + 1, "dst", target, value)


def _residual_walk(w: _Writer, d: int, obj: str, tokens: tuple[Any, ...], known: str, base: str, n: int) -> None:
    """Walk `tokens` below `obj` (variables loop over arrays or objects) and keep unknown keys."""
    literal: list[str] = []
    for i, token in enumerate(tokens):
        if isinstance(token, Var):
            arr = f"a{n}"
            w.emit(d, f"{arr} = {_read_expr(obj, tuple(literal))}")
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
    w.emit(d, f"{o} = {_read_expr(obj, tuple(literal)) if literal else obj}")
    w.emit(d, f"if type({o}) is dict and not {o}.keys() <= {known}:")
    w.emit(d + 1, f"b{n} = {base} + {pointer_text(tuple(literal)) + '/'!r}")
    w.emit(d + 1, f"for key, x in {o}.items():")
    w.emit(d + 2, f"if key not in {known}:")
    w.emit(d + 3, f"ctx.residual[b{n} + escape(key)] = x")


def _forward_scope(w: _Writer, scope: Scope, name: str, counter: list[int]) -> None:
    inner_names = []
    for child in scope.children:
        counter[0] += 1
        inner = f"_forward_{counter[0]}"
        _forward_scope(w, child, inner, counter)
        inner_names.append(inner)
    w.start_function(f"def {name}(src, dst, ctx, prefix, up, idx):")
    w.emit(1, "if type(src) is not dict:")
    w.emit(2, "return None")
    w.emit(1, "fr = Frame(src, up, idx)")
    for rule in scope.rules:
        _forward_rule(w, 1, rule, scope.level)
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
    w.emit(1, "return None")
    w.emit(0, "")


# --- reverse -------------------------------------------------------------------------------


def _reverse_rule(w: _Writer, d: int, rule: Rule, level: int) -> None:
    spec = rule.spec
    r = w.const(rule, "R")
    if rule.reverse_fn is not None:
        w.emit(d, f"{r}.reverse(sfr, out, ctx)")
    elif (rule.authoritative or spec.reverse_only) and spec.op == "copy":
        source = rule.sources[0]
        if source.kind == "var":
            w.emit(d, f"ctx.key = {r}.reverse_value(sfr, ctx)")
        elif source.kind == "top":
            w.emit(d, "if ctx.first:")  # the document's own fields: from its first Storyline
            w.emit(d + 1, "v = " + f"{r}.reverse_value(sfr, ctx)")
            w.emit(d + 1, "if v is not MISSING:")
            w.put(d + 2, "ctx.top", source.path, "v")
        elif source.kind != "elem":
            pass
        elif (
            spec.reverse_when
            or spec.reverse_default is not MISSING
            or len(rule.targets) > 1
            or (rule.reverse_first_of or rule.with_args or not source.path)
        ):
            w.emit(d, f"{r}.reverse(sfr, out, ctx)")
        else:
            w.get(d, "v", "elem", rule.targets[0]) if rule.targets[0] else w.emit(d, "v = elem")
            w.emit(d, "if v is not MISSING:" if spec.keep_null else "if v is not MISSING and v is not None:")
            value = "v"
            if rule.reverse_convert is not None:
                value = f"{w.const(rule.reverse_convert, 'F')}(v)"
            w.put(d + 1, "out", source.path, value)
    if rule.write_back is not None and rule.targets and not any(s.kind == "top" for s in rule.sources):
        target = rule.targets[0]
        if target:
            absent = (
                "(MISSING,)"
                if rule.spec.op == "first_of" and not rule.spec.nonempty and not rule.convert
                else "(MISSING, None)"
            )
            w.emit(d, f"if {w.path_local(d, 'elem', target)} not in {absent}:")
            d += 1
        derive = _deriver(w, rule, level)
        w.emit(
            d,
            f"ctx.pending.append(({r}, {derive}, Frame(elem, sup, idx), Frame(out, oup, idx), ctx.story, ctx.parent))",
        )


def _deriver(w: _Writer, rule: Rule, level: int) -> str:
    """The name of a generated function giving a derived rule's forward value from a rebuilt source
    element (what a write-back compares with), or ``None`` where the rule object must compute it."""
    spec = rule.spec
    local = all(s.kind == "elem" and s.level == level for s in rule.sources)
    if not (spec.derived and local and spec.op in ("first_of", "copy") and not spec.nonempty):
        return "None"
    name = f"_derive_{len(w.derivers)}"
    lines = [f"def {name}(src):", "    v = MISSING"]
    for i, source in enumerate(rule.sources):
        lines.append("    " * (i + 1) + f"x = {_read_expr('src', source.path)}")
        lines.append("    " * (i + 1) + "if x is not MISSING:")
        lines.append("    " * (i + 2) + "v = x")
        if spec.op == "copy" or i == len(rule.sources) - 1:
            break
        lines.append("    " * (i + 1) + "else:")
    if spec.op == "copy" and not spec.keep_null:
        lines += ["    if v is None:", "        return MISSING"]
    if spec.op == "copy" and spec.when:
        test = _CONDITION_CODE.get(spec.when) or f"{w.const(rule.condition, 'C')}(v)"
        lines += ["    if v is MISSING or not (" + test + "):", "        return MISSING"]
    if rule.convert is not None:
        lines.append(f"    return {w.const(rule.convert, 'F')}(v) if v is not MISSING else MISSING")
    else:
        lines.append("    return v")
    w.derivers.append("\n".join(lines) + "\n")
    return name


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
    for rule in scope.rules:
        _reverse_rule(w, 1, rule, scope.level)
    if any("sfr" in line for line in w.lines[start:]):  # frames only where a rule object needs them
        w.lines[start:start] = ["    sfr = Frame(elem, sup, idx)", "    ctx.out = Frame(out, oup, idx)"]
    for child, inner in zip(scope.children, inner_names, strict=True):
        w.get(1, "items", "elem", child.dst_rel)
        # A Storyline value of another shape than the array (or an object holding more than it)
        # cannot be written in this format: say so rather than drop it.
        where = w.const((scope.dst, child.dst_rel), "AT")
        holder = child.dst_rel[:-1]
        if holder:
            w.emit(1, f"h = {_read_expr('elem', holder)}")
            only = "{" + repr(child.dst_rel[-1]) + "}"
            w.emit(1, f"if h is not MISSING and h is not None and (type(h) is not dict or set(h) - {only}):")
            w.emit(
                2, f"ctx.problems.append(({where}, idx, {len(holder)}, 'an object holding only {child.dst_rel[-1]}'))"
            )
        w.emit(1, "if items is not MISSING and items is not None and type(items) is not list:")
        w.emit(2, f"ctx.problems.append(({where}, idx, {len(child.dst_rel)}, 'an array'))")
        w.emit(1, "if type(items) is list:")
        w.emit(2, "for i, item in enumerate(items):")
        w.emit(3, "if type(item) is not dict:")
        w.emit(4, f"ctx.problems.append(({where}, idx + (i,), {len(child.dst_rel) + 1}, 'an object'))")
        homes = [child.src_rel] + ([child.fallback_rel] if child.fallback_rel is not None else [])
        for home in homes:  # a fallback array is written too: it held the same elements
            w.emit(2, "back = []")
            w.put(2, "out", home, "back")
            w.emit(2, "for i, item in enumerate(items):")
            w.emit(3, "o = {}")
            w.emit(3, f"{inner}(item, o, ctx, sup + (elem,), oup + (out,), idx + (i,))")
            w.emit(3, "back.append(o)")
        if child.omit_empty:
            w.emit(1, "else:")
            for home in homes:
                w.put(2, "out", home, "[]")
    w.emit(1, "return None")
    w.emit(0, "")


def generate(name: str, root: Scope) -> tuple[ScopeFn, ScopeFn, str]:
    """The forward and reverse functions of the root scope of spec `name`, and their source text."""
    w = _Writer()
    _forward_scope(w, root, "forward_root", [0])
    _reverse_scope(w, root, "reverse_root", [0])
    source = "\n".join([*w.derivers, "", *w.lines]) + "\n"
    filename = f"<mapc {name}.yaml forward/reverse>"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    namespace = dict(w.names)
    exec(compile(source, filename, "exec"), namespace)
    return namespace["forward_root"], namespace["reverse_root"], source
