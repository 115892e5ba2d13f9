"""Compile a `Spec` once into a `Program`: a tree of scopes holding rule objects for both directions.

A scope is one level of array iteration (the document root, ``/steps/{s}``,
``/steps/{s}/tool_calls/{c}``).  Each rule is placed in the deepest scope whose array prefix its
source pointer starts with, and keeps only the tokens below that prefix, pre-parsed, so a run
walks the input once and resolves nothing by text.  Spec mistakes found here (unknown function,
a target outside the source's scope, two rules writing one target) are `Problem`s located at the
rule's YAML line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mapc.engine import functions
from mapc.engine.pointer import escape
from mapc.engine.problems import MapcError, Problem
from mapc.engine.residual import ANY_INDEX, ANY_KEY, Tree
from mapc.engine.spec import ParentRef, RuleSpec, Spec
from mapc.engine.template import Template, Var
from mapc.engine.values import MISSING, is_empty, json_equal

Path = tuple[str, ...]


# --- tiny accessors over pre-parsed relative paths ----------------------------------------


def get_in(obj: Any, path: Path) -> Any:
    """The value at `path` below `obj` (object keys only), or MISSING."""
    for key in path:
        if type(obj) is not dict:
            return MISSING
        obj = obj.get(key, MISSING)
        if obj is MISSING:
            return MISSING
    return obj


def put_in(obj: dict[str, Any], path: Path, value: Any) -> None:
    """Set `value` at `path` below `obj`, creating missing objects on the way."""
    for key in path[:-1]:
        nxt = obj.get(key)
        if type(nxt) is not dict:
            nxt = obj[key] = {}
        obj = nxt
    obj[path[-1]] = value


def insert_copying(obj: dict[str, Any], path: Path, value: Any) -> bool:
    """Insert `value` at `path` unless a value is there; objects on the way are shallow-copied.

    Copying keeps the caller's input unchanged when an object on the path was shared with it.
    Returns False when the place is taken or a non-object stands on the path.
    """
    for key in path[:-1]:
        nxt = obj.get(key, MISSING)
        if nxt is MISSING:
            nxt = obj[key] = {}
        elif type(nxt) is dict:
            nxt = obj[key] = dict(nxt)
        else:
            return False
        obj = nxt
    if path[-1] in obj:
        return False
    obj[path[-1]] = value
    return True


def pointer_text(path: Path) -> str:
    """Escaped pointer text of a relative path."""
    return "".join("/" + escape(k) for k in path)


_CONDITIONS: dict[str, Callable[[Any], bool]] = {
    "nonempty": lambda v: not is_empty(v),
    "integer": lambda v: type(v) is int,
    "number": lambda v: type(v) in (int, float),
    "string": lambda v: type(v) is str,
    "object": lambda v: type(v) is dict,
    "array": lambda v: type(v) is list,
    "boolean": lambda v: type(v) is bool,
}


# --- run-time context ----------------------------------------------------------------------


@dataclass(slots=True)
class Context:
    """What a forward run of one document node carries: residuals and the parent's Storyline."""

    residual: dict[str, Any]
    parent: dict[str, Any] | None
    story: dict[str, Any]


# --- rules ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Source:
    """A rule input: a path below the scope element, or a value of the parent Storyline."""

    path: Path
    parent: bool = False

    def read(self, src: Any, ctx: Context) -> Any:
        if self.parent:
            return get_in(ctx.parent, self.path) if ctx.parent is not None else MISSING
        return get_in(src, self.path)


@dataclass(frozen=True, slots=True)
class Rule:
    """A compiled rule.  `value` computes the forward value; `forward` also writes and captures."""

    spec: RuleSpec
    sources: tuple[Source, ...]
    targets: tuple[Path, ...]
    convert: Callable[[Any], Any] | None
    condition: Callable[[Any], bool] | None
    owned: tuple[bool, ...]  # per source: no other authoritative rule reads it
    reverse_convert: Callable[[Any], Any] | None
    reverse_when: tuple[tuple[Path, Any], ...]

    @property
    def authoritative(self) -> bool:
        return not self.spec.derived and self.spec.op in ("copy", "first_of")

    def choose(self, src: Any, ctx: Context) -> tuple[int, Any]:
        """The index and value of the source the rule takes, or (-1, MISSING)."""
        spec = self.spec
        if spec.op == "const":
            return -1, spec.value
        if spec.op == "call":
            args = [s.read(src, ctx) for s in self.sources]
            assert self.convert is not None
            return -1, self.convert(*args)
        for i, source in enumerate(self.sources):
            v = source.read(src, ctx)
            if v is MISSING:
                continue
            if spec.op == "first_of":
                if spec.nonempty and is_empty(v):
                    continue
                return i, v
            if v is None and not spec.keep_null:
                return -1, MISSING
            return i, v
        return -1, MISSING

    def value(self, src: Any, ctx: Context) -> Any:
        """The forward value of this rule for the source element `src` (MISSING: none)."""
        i, v = self.choose(src, ctx)
        if v is MISSING or i < 0:
            return v
        if self.condition is not None and not self.condition(v):
            return MISSING
        if self.convert is not None:
            return self.convert(v)
        return v

    def forward(self, src: Any, dst: dict[str, Any], ctx: Context, prefix: str) -> None:
        i, v = self.choose(src, ctx)
        spec = self.spec
        if i >= 0 and v is not MISSING:
            raw = v
            if self.condition is not None and not self.condition(v):
                v = MISSING
            elif self.convert is not None:
                v = self.convert(v)
            if v is MISSING and self.authoritative and raw is not None:
                # What no rule maps is kept, so that the reverse can put it back.
                ctx.residual[prefix + pointer_text(self.sources[i].path)] = raw
        if v is MISSING:
            if self.authoritative:
                self._keep_unchosen(src, ctx, prefix, i)
            return
        for target in self.targets:
            put_in(dst, target, v)
        if spec.op == "first_of" and self.authoritative:
            self._keep_unchosen(src, ctx, prefix, i)
            if i == 0 and json_equal(self._without_first(src, ctx), v):
                # The rest of the chain derives the same value: the reverse would not write the
                # first source back, so keep it here.
                ctx.residual[prefix + pointer_text(self.sources[0].path)] = v

    def _keep_unchosen(self, src: Any, ctx: Context, prefix: str, chosen: int) -> None:
        for j, source in enumerate(self.sources):
            if j == chosen or not self.owned[j] or source.parent:
                continue
            v = source.read(src, ctx)
            if v is not MISSING and v is not None:
                ctx.residual[prefix + pointer_text(source.path)] = v

    def _without_first(self, src: Any, ctx: Context) -> Any:
        for source in self.sources[1:]:
            v = source.read(src, ctx)
            if v is MISSING or (self.spec.nonempty and is_empty(v)):
                continue
            return v
        return MISSING

    # -- reverse --

    def reverse(self, story_elem: Any, out: dict[str, Any], story: dict[str, Any]) -> None:
        """Write this authoritative copy back into the source element `out`."""
        v: Any = MISSING
        if all(json_equal(get_in(story, p), want) for p, want in self.reverse_when):
            for target in self.targets:
                v = get_in(story_elem, target)
                if v is not MISSING and (v is not None or self.spec.keep_null):
                    break
                v = MISSING
        if v is MISSING:
            v = self.spec.reverse_default
            if v is MISSING:
                return
        if self.reverse_convert is not None:
            v = self.reverse_convert(v)
        put_in(out, self.sources[0].path, v)

    @property
    def write_back(self) -> Path | None:
        """Where the reverse writes a derived value that the forward would not derive again."""
        if self.spec.op == "first_of" or (self.spec.op == "copy" and self.spec.derived):
            for source in self.sources:
                if not source.parent:
                    return source.path
        return None


# --- scopes --------------------------------------------------------------------------------


@dataclass(slots=True)
class Scope:
    """One level of array iteration, with its rules, known-key objects and inner arrays."""

    src: Template
    dst: Template
    src_rel: Path = ()
    dst_rel: Path = ()
    rules: list[Rule] = field(default_factory=list)
    objects: list[tuple[Path, frozenset[str]]] = field(default_factory=list)
    children: list[Scope] = field(default_factory=list)
    pointer_prefix: str = ""


@dataclass(frozen=True, slots=True)
class Program:
    """A compiled spec: the root scope plus document-level settings."""

    spec: Spec
    root: Scope
    children: Path | None
    document_id: Rule | None
    count_tree: Tree


# --- compilation ---------------------------------------------------------------------------


def _resolve_function(name: str, spec: RuleSpec, arity: int | None, problems: list[Problem]) -> Any:
    fn = functions.lookup(name)
    if fn is None:
        known = ", ".join(sorted(k for k in functions.REGISTRY if not k.startswith("__")))
        problems.append(
            Problem("spec.unknown_function", "", f"unknown function {name!r} (registered: {known})", spec.at)
        )
        return None
    if arity is not None and fn.arity != arity:
        problems.append(
            Problem(
                "spec.bad_arity",
                "",
                f"{name!r} takes {fn.arity} argument(s), the rule passes {arity}",
                spec.at,
            )
        )
        return None
    return fn.fn


def compile_spec(spec: Spec) -> Program:
    """Compile `spec`, or raise MapcError with every spec problem found."""
    problems: list[Problem] = []
    root = Scope(Template("", ()), Template("", ()))
    scopes = [root]
    for src, dst in sorted(spec.arrays, key=lambda a: len(a[0].tokens)):
        parent = _deepest(scopes, src)
        rel_src, rel_dst = src.relative_to(parent.src), _relative(dst, parent.dst)
        if (
            not rel_src
            or not isinstance(rel_src[-1], Var)
            or rel_dst is None
            or not rel_dst
            or not isinstance(rel_dst[-1], Var)
            or any(isinstance(t, Var) for t in rel_src[:-1] + rel_dst[:-1])
        ):
            problems.append(
                Problem("spec.bad_array", "", f"array {src} → {dst} must end in a variable", spec.at)
            )
            continue
        scope = Scope(src, dst, tuple(rel_src[:-1]), tuple(rel_dst[:-1]))  # type: ignore[arg-type]
        scope.pointer_prefix = pointer_text(scope.src_rel)
        parent.children.append(scope)
        scopes.append(scope)

    readers: dict[tuple[str, ...], int] = {}
    for rs in spec.rules:
        if not rs.derived and rs.op in ("copy", "first_of"):
            for s in rs.sources:
                if isinstance(s, Template):
                    readers[tuple(map(str, s.tokens))] = readers.get(tuple(map(str, s.tokens)), 0) + 1

    written: dict[str, RuleSpec] = {}
    for rs in spec.rules:
        rule_scope = _scope_of_rule(rs, scopes, problems)
        if rule_scope is None:
            continue
        sources: list[Source] = []
        for s in rs.sources:
            if isinstance(s, ParentRef):
                sources.append(Source(_literal(s.target, rs, problems), parent=True))
            else:
                sources.append(Source(_literal_rel(s, rule_scope.src, rs, problems)))
        targets = []
        for t in rs.targets:
            rel = _relative(t, rule_scope.dst)
            if rel is None or any(isinstance(x, Var) for x in rel) or not rel:
                problems.append(
                    Problem(
                        "spec.target_scope", "", f"target {t} is not inside {rule_scope.dst or '/'}", rs.at
                    )
                )
                continue
            targets.append(tuple(rel))  # type: ignore[arg-type]
            if not rs.derived or t.text not in written:
                if t.text in written and not written[t.text].derived:
                    other = written[t.text]
                    problems.append(
                        Problem(
                            "spec.duplicate_target",
                            "",
                            f"{t} is also written by {other.label} ({other.at})",
                            rs.at,
                        )
                    )
                written.setdefault(t.text, rs)
        convert = None
        if rs.call is not None:
            arity = len(rs.sources) if rs.op == "call" else 1
            convert = _resolve_function(rs.call, rs, arity, problems)
        reverse_convert = _resolve_function(rs.reverse_call, rs, 1, problems) if rs.reverse_call else None
        owned = tuple(
            isinstance(s, Template) and readers.get(tuple(map(str, s.tokens)), 0) <= 1 for s in rs.sources
        )
        rule_scope.rules.append(
            Rule(
                spec=rs,
                sources=tuple(sources),
                targets=tuple(targets),
                convert=convert,
                condition=_CONDITIONS[rs.when] if rs.when else None,
                owned=owned,
                reverse_convert=reverse_convert,
                reverse_when=tuple((_literal(p, rs, problems), v) for p, v in rs.reverse_when),
            )
        )

    for template, known, at in spec.objects:
        scope = _deepest(scopes, template)
        rel = template.relative_to(scope.src)
        if any(isinstance(t, Var) for t in rel):
            problems.append(
                Problem("spec.bad_object", "", f"object {template} is not inside a declared array", at)
            )
            continue
        scope.objects.append((tuple(rel), known))  # type: ignore[arg-type]

    doc_id = None
    if spec.document_id is not None:
        rs = spec.document_id
        convert = _resolve_function(rs.call, rs, len(rs.sources) or 1, problems) if rs.call else None
        sources = tuple(Source(_literal(s, rs, problems)) for s in rs.sources if isinstance(s, Template))
        doc_id = Rule(rs, sources, (), convert, None, (), None, ())

    children = None
    if spec.children is not None:
        toks = spec.children.tokens
        if not toks or not isinstance(toks[-1], Var) or any(isinstance(t, Var) for t in toks[:-1]):
            problems.append(
                Problem("spec.bad_children", "", "document children must be /path/{var}", spec.at)
            )
        else:
            children = tuple(toks[:-1])  # type: ignore[arg-type]
    if problems:
        raise MapcError(problems, source=spec.path)
    return Program(spec, root, children, doc_id, _count_tree(root, children))


def _deepest(scopes: list[Scope], template: Template) -> Scope:
    best = scopes[0]
    for scope in scopes:
        if template.starts_with(scope.src) and len(scope.src.tokens) > len(best.src.tokens):
            best = scope
    return best


def _relative(template: Template, prefix: Template) -> tuple[Any, ...] | None:
    return template.relative_to(prefix) if template.starts_with(prefix) else None


def _scope_of_rule(rs: RuleSpec, scopes: list[Scope], problems: list[Problem]) -> Scope | None:
    own = [s for s in rs.sources if isinstance(s, Template)]
    if not own:
        # A constant or a rule on parent values lives where its target does.
        deepest = scopes[0]
        for scope in scopes:
            if (
                rs.targets
                and rs.targets[0].starts_with(scope.dst)
                and len(scope.dst.tokens) > len(deepest.dst.tokens)
            ):
                deepest = scope
        return deepest
    scope = _deepest(scopes, own[0])
    for s in own[1:]:
        if _deepest(scopes, s) is not scope:
            problems.append(
                Problem("spec.mixed_scopes", "", f"{s} and {own[0]} are in different arrays", rs.at)
            )
            return None
    return scope


def _literal_rel(template: Template, prefix: Template, rs: RuleSpec, problems: list[Problem]) -> Path:
    rel = template.relative_to(prefix)
    if any(isinstance(t, Var) for t in rel):
        problems.append(
            Problem("spec.unbound_variable", "", f"{template} uses a variable that no array declares", rs.at)
        )
        return ()
    return tuple(rel)  # type: ignore[arg-type]


def _literal(template: Template, rs: RuleSpec, problems: list[Problem]) -> Path:
    lit = template.literal()
    if lit is None:
        problems.append(Problem("spec.unbound_variable", "", f"{template} may not use variables here", rs.at))
        return ()
    return lit


def _count_tree(root: Scope, children: Path | None) -> Tree:
    """The unknown-key count tree: declared array positions become `*`, recursing into children."""

    def build(scope: Scope, node: dict[Any, Any]) -> None:
        for child in scope.children:
            at = node
            for key in child.src_rel:
                at = at.setdefault(key, {})
            inner: dict[Any, Any] = {}
            at[ANY_INDEX] = inner
            build(child, inner)

    tree: dict[Any, Any] = {}
    build(root, tree)
    if children:
        at = tree
        for key in children:
            at = at.setdefault(key, {})
        at[ANY_INDEX] = tree
    return tree


__all__ = [
    "ANY_KEY",
    "Context",
    "Program",
    "Rule",
    "Scope",
    "compile_spec",
    "get_in",
    "insert_copying",
    "put_in",
]
