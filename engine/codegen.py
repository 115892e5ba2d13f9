"""Generate straight-line Python for each scope of a compiled `Program`.

Interpreting rule objects costs several calls per value; the generated functions do what a
hand-written converter does (dict lookups and stores, inline), so a spec runs at about the speed
of code written for one format.  The source is compiled once per program and registered in
`linecache` under ``<mapc NAME.yaml forward>``, so tracebacks and pdb show real lines.  Rules
whose semantics are richer than a copy (`first_of` chains) call the rule object's method, which
keeps their behaviour in one place.
"""

from __future__ import annotations

import linecache
from typing import Any

from mapc.engine.pointer import escape
from mapc.engine.program import Rule, Scope, ScopeFn, pointer_text, put_in
from mapc.engine.values import MISSING

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
        self.names: dict[str, Any] = {"MISSING": MISSING, "escape": escape, "put_in": put_in}
        self._ids: dict[int, str] = {}
        self._locals: dict[tuple[str, tuple[str, ...]], str] = {}

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
        """Emit `var = <value at path below obj, or MISSING>`.

        `obj` is known to be a dict; every prefix of `path` read at the top level of a function
        is kept in a local, so a value read by several rules is looked up once.
        """
        self.emit(depth, f"{var} = {self.path_local(depth, obj, path)}")

    def path_local(self, depth: int, obj: str, path: tuple[str, ...]) -> str:
        """The name of a local holding the value at `path` below `obj` (emitting it if needed)."""
        if depth != 1:  # only top-level statements are sure to have run before a later use
            expr = f"{obj}.get({path[0]!r}, MISSING)"
            for key in path[1:]:
                expr = f"(({expr}).get({key!r}, MISSING) if type({expr}) is dict else MISSING)"
            return expr
        name = obj
        for i in range(len(path)):
            key = (obj, path[: i + 1])
            if key not in self._locals:
                local = f"p{len(self._locals)}"
                if i == 0:
                    self.emit(1, f"{local} = {obj}.get({path[0]!r}, MISSING)")
                else:
                    self.emit(
                        1, f"{local} = {name}.get({path[i]!r}, MISSING) if type({name}) is dict else MISSING"
                    )
                self._locals[key] = local
            name = self._locals[key]
        return name

    def put(self, depth: int, obj: str, path: tuple[str, ...], value: str) -> None:
        """Emit a store of `value` at `path` below the freshly built object `obj`."""
        if len(path) == 1:
            self.emit(depth, f"{obj}[{path[0]!r}] = {value}")
        else:
            self.emit(depth, f"put_in({obj}, {path!r}, {value})")


def _forward_rule(w: _Writer, d: int, rule: Rule) -> None:
    spec = rule.spec
    if spec.reverse_only:
        return
    if spec.op == "const":
        value = spec.value
        rendered = repr(value) if type(value) in (str, int, float, bool) or value is None else w.const(value)
        for target in rule.targets:
            w.put(d, "dst", target, rendered)
        return
    if spec.op == "first_of":
        if spec.derived and not spec.nonempty and not any(s.parent for s in rule.sources):
            _first_present(w, d, rule)
        else:
            w.emit(d, f"{w.const(rule, 'R')}.forward(src, dst, ctx, prefix)")
        return
    if spec.op == "call":
        args = []
        for i, source in enumerate(rule.sources):
            if source.parent:
                w.emit(d, f"a{i} = {w.const(rule, 'R')}.sources[{i}].read(src, ctx)")
            else:
                w.get(d, f"a{i}", "src", source.path)
            args.append(f"a{i}")
        w.emit(d, f"v = {w.const(rule.convert, 'F')}({', '.join(args)})")
        w.emit(d, "if v is not MISSING:")
        for target in rule.targets:
            w.put(d + 1, "dst", target, "v")
        return
    # copy
    source = rule.sources[0]
    if source.parent:
        w.emit(d, f"{w.const(rule, 'R')}.forward(src, dst, ctx, prefix)")
        return
    w.get(d, "v", "src", source.path)
    w.emit(d, "if v is not MISSING:" if spec.keep_null else "if v is not MISSING and v is not None:")
    keep = rule.authoritative
    ptr = pointer_text(source.path)
    inner = d + 1
    if rule.condition is not None:
        test = _CONDITION_CODE.get(spec.when or "") or f"{w.const(rule.condition, 'C')}(v)"
        w.emit(inner, f"if {test}:")
        inner += 1
    if rule.convert is not None:
        w.emit(inner, f"w = {w.const(rule.convert, 'F')}(v)")
        w.emit(inner, "if w is not MISSING:")
        for target in rule.targets:
            w.put(inner + 1, "dst", target, "w")
        if keep:
            w.emit(inner, "else:")
            w.emit(inner + 1, f"ctx.residual[prefix + {ptr!r}] = v")
    else:
        for target in rule.targets:
            w.put(inner, "dst", target, "v")
    if rule.condition is not None and keep:
        w.emit(d + 1, "else:")
        w.emit(d + 2, f"ctx.residual[prefix + {ptr!r}] = v")


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


def _forward_scope(w: _Writer, scope: Scope, name: str, counter: list[int]) -> None:
    inner_names = []
    for child in scope.children:
        counter[0] += 1
        inner = f"_forward_{counter[0]}"
        _forward_scope(w, child, inner, counter)
        inner_names.append(inner)
    w.start_function(f"def {name}(src, dst, ctx, prefix):")
    w.emit(1, "if type(src) is not dict:")
    w.emit(2, "return None")
    for rule in scope.rules:
        _forward_rule(w, 1, rule)
    for rel, known in scope.objects:
        k = w.const(known, "KNOWN")
        if rel:
            w.get(1, "o", "src", rel)
        else:
            w.emit(1, "o = src")
        w.emit(1, f"if type(o) is dict and not o.keys() <= {k}:")
        w.emit(2, f"base = prefix + {pointer_text(rel) + '/'!r}")
        w.emit(2, "for key, x in o.items():")
        w.emit(3, f"if key not in {k}:")
        w.emit(4, "ctx.residual[base + escape(key)] = x")
    for child, inner in zip(scope.children, inner_names, strict=True):
        w.get(1, "items", "src", child.src_rel)
        w.emit(1, "if type(items) is list:")
        w.emit(2, "out = []")
        w.put(2, "dst", child.dst_rel, "out")
        w.emit(2, f"base = prefix + {child.pointer_prefix + '/'!r}")
        w.emit(2, "for i, item in enumerate(items):")
        w.emit(3, "d = {}")
        w.emit(3, f"{inner}(item, d, ctx, base + str(i))")
        w.emit(3, "out.append(d)")
    w.emit(1, "return None")
    w.emit(0, "")


def _reverse_rule(w: _Writer, d: int, rule: Rule) -> None:
    spec = rule.spec
    if (rule.authoritative or spec.reverse_only) and spec.op == "copy":
        if spec.reverse_when or spec.reverse_default is not MISSING or len(rule.targets) > 1:
            w.emit(d, f"{w.const(rule, 'R')}.reverse(elem, out, story)")
        else:
            w.get(d, "v", "elem", rule.targets[0])
            w.emit(d, "if v is not MISSING:" if spec.keep_null else "if v is not MISSING and v is not None:")
            value = "v"
            if rule.reverse_convert is not None:
                value = f"{w.const(rule.reverse_convert, 'F')}(v)"
            w.put(d + 1, "out", rule.sources[0].path, value)
    if rule.write_back is not None and rule.targets:
        w.emit(d, f"pending.append(({w.const(rule, 'R')}, elem, out, story, parent))")


def _reverse_scope(w: _Writer, scope: Scope, name: str, counter: list[int]) -> None:
    inner_names = []
    for child in scope.children:
        counter[0] += 1
        inner = f"_reverse_{counter[0]}"
        _reverse_scope(w, child, inner, counter)
        inner_names.append(inner)
    w.start_function(f"def {name}(elem, out, story, parent, pending):")
    w.emit(1, "if type(elem) is not dict:")
    w.emit(2, "return None")
    for rule in scope.rules:
        _reverse_rule(w, 1, rule)
    for child, inner in zip(scope.children, inner_names, strict=True):
        w.get(1, "items", "elem", child.dst_rel)
        w.emit(1, "if type(items) is list:")
        w.emit(2, "back = []")
        w.put(2, "out", child.src_rel, "back")
        w.emit(2, "for item in items:")
        w.emit(3, "o = {}")
        w.emit(3, f"{inner}(item, o, story, parent, pending)")
        w.emit(3, "back.append(o)")
    w.emit(1, "return None")
    w.emit(0, "")


def generate(name: str, root: Scope) -> tuple[ScopeFn, ScopeFn, str]:
    """The forward and reverse functions of the root scope of spec `name`, and their source text."""
    w = _Writer()
    _forward_scope(w, root, "forward_root", [0])
    _reverse_scope(w, root, "reverse_root", [0])
    source = "\n".join(w.lines) + "\n"
    filename = f"<mapc {name}.yaml forward/reverse>"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    namespace = dict(w.names)
    exec(compile(source, filename, "exec"), namespace)
    return namespace["forward_root"], namespace["reverse_root"], source
