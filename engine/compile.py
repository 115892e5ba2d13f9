"""Compile a `Spec` once into a `Program`: a tree of scopes holding rule objects for both directions.

A scope is one level of array iteration (the document, ``/steps/{s}``,
``/steps/{s}/tool_calls/{c}``).  Each rule is placed in the deepest scope whose array prefix its
source pointer starts with; every reference it makes (a value of an enclosing element, a bound
variable, the parent Storyline, a computed candidate) is resolved here to a `Source`, so a run
walks the input once and resolves nothing by text.  codegen.py then writes each scope as
straight-line Python.  Spec mistakes found here (unknown function, a target outside the
source's scope, two rules writing one target) are `Problem`s located at the rule's YAML line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mapc.engine import codegen, functions
from mapc.engine.ops import authoritative, condition
from mapc.engine.problems import MapcError, Problem, SpecLocation
from mapc.engine.program import Path, Program, Rule, Scope, Source, pointer_text
from mapc.engine.residual import ANY_INDEX, ANY_KEY, Tree
from mapc.engine.spec import (
    CallRef,
    ConstRef,
    CountRef,
    ParentRef,
    Ref,
    RuleSpec,
    SourceRef,
    Spec,
    StoryRef,
    VarRef,
)
from mapc.engine.template import Template, Var

if TYPE_CHECKING:
    from mapc.engine.catalog import Catalog


class _Compiler:
    """Holds the scopes of one spec while its rules are resolved, and the problems found."""

    def __init__(self, spec: Spec, catalog: Catalog | None = None) -> None:
        self.spec = spec
        self.catalog = catalog
        self.problems: list[Problem] = []
        root_src = spec.each or Template("", ())
        self.root = Scope(root_src, Template("", ()))
        self.scopes = [self.root]
        self.parent: dict[int, Scope] = {}

    def fail(self, code: str, message: str, at: SpecLocation | None = None) -> None:
        self.problems.append(Problem(code, "", message, at or self.spec.at))

    # -- scopes --

    def build_scopes(self) -> None:
        for array in sorted(self.spec.arrays, key=lambda a: len(a.src.tokens)):
            parent = self.deepest(array.src)
            rel_src = array.src.relative_to(parent.src) if array.src.starts_with(parent.src) else None
            rel_dst = _relative(array.dst, parent.dst)
            rel_else = None
            if array.fallback is not None:
                rel_else = _relative(array.fallback, parent.src)
                if rel_else is None or not _ends_in_var(rel_else):
                    self.fail("spec.bad_array", f"fallback {array.fallback} must be an array beside {array.src}")
                    continue
            if rel_src is None or rel_dst is None or not _ends_in_var(rel_src) or not _ends_in_var(rel_dst):
                self.fail("spec.bad_array", f"array {array.src} → {array.dst} must end in a variable")
                continue
            scope = Scope(
                array.src,
                array.dst,
                level=parent.level + 1,
                src_rel=tuple(rel_src[:-1]),  # type: ignore[arg-type]
                dst_rel=tuple(rel_dst[:-1]),  # type: ignore[arg-type]
                fallback_rel=tuple(rel_else[:-1]) if rel_else else None,  # type: ignore[arg-type]
                omit_empty=array.omit_empty,
            )
            scope.pointer_prefix = pointer_text(scope.src_rel)
            parent.children.append(scope)
            self.parent[id(scope)] = parent
            self.scopes.append(scope)

    def deepest(self, template: Template, *, skip_fallback_elements: bool = False) -> Scope:
        best = self.root
        for scope in self.scopes:
            if not template.starts_with(scope.src) or len(scope.src.tokens) <= len(best.src.tokens):
                continue
            if skip_fallback_elements and scope.fallback_rel is not None and template == scope.src:
                continue  # both arrays' elements are walked from the parent for residuals
            best = scope
        return best

    def chain(self, scope: Scope) -> list[Scope]:
        """`scope` and its ancestors, innermost first."""
        out = [scope]
        while id(out[-1]) in self.parent:
            out.append(self.parent[id(out[-1])])
        return out

    # -- references --

    def source(self, ref: Ref, scope: Scope, rs: RuleSpec, *, side: str = "source") -> Source | None:
        """Resolve a reference made by a rule of `scope`; `side` is where a bare pointer points:
        into the source document (``source``) or into the Storyline (``story``, in a reverse)."""
        if isinstance(ref, Template):
            return self.story_source(ref, scope, rs) if side == "story" else self.elem_source(ref, scope, rs)
        if isinstance(ref, SourceRef):
            found = self.elem_source(ref.target, scope, rs)
            return Source("out", found.path, found.level) if found and found.kind == "elem" else found
        if isinstance(ref, StoryRef):
            return self.story_source(ref.target, scope, rs)
        if isinstance(ref, ParentRef):
            return Source("parent", self.literal(ref.target, rs))
        if isinstance(ref, VarRef):
            for s in self.chain(scope):
                if s.variable == ref.name:
                    return Source("var", level=s.level)
            self.fail("spec.unbound_variable", f"{{{ref.name}}} is bound by no enclosing array", rs.at)
            return None
        if isinstance(ref, CountRef):
            return Source("count")
        if isinstance(ref, ConstRef):
            return Source("const", value=ref.value)
        if isinstance(ref, CallRef):
            args = [self.source(a, scope, rs, side=side) for a in ref.args]
            fn = self.function(ref.call, rs, len(args))
            if fn is None or None in args:
                return None
            return Source("call", fn=fn, args=tuple(a for a in args if a is not None))
        return None

    def elem_source(self, template: Template, scope: Scope, rs: RuleSpec) -> Source | None:
        for s in self.chain(scope):
            if template.starts_with(s.src):
                rel = template.relative_to(s.src)
                if any(isinstance(t, Var) for t in rel):
                    break
                return Source("elem", tuple(rel), s.level)  # type: ignore[arg-type]
        if self.spec.each is not None and not template.starts_with(self.root.src):
            return Source("top", self.literal(template, rs))
        self.fail("spec.unbound_variable", f"{template} uses a variable that no enclosing array binds", rs.at)
        return None

    def story_source(self, template: Template, scope: Scope, rs: RuleSpec) -> Source | None:
        rel = _relative(template, scope.dst)
        if rel is not None and scope.level > 0 and not any(isinstance(t, Var) for t in rel):
            return Source("elem", tuple(rel), scope.level)  # type: ignore[arg-type]
        return Source("story", self.literal(template, rs))

    def literal(self, template: Template, rs: RuleSpec) -> Path:
        lit = template.literal()
        if lit is None:
            self.fail("spec.unbound_variable", f"{template} may not use variables here", rs.at)
            return ()
        return lit

    def function(self, name: str, rs: RuleSpec, arity: int | None) -> Any:
        fn = functions.lookup(name, self.catalog)
        if fn is None:
            known = ", ".join(sorted(k for k in functions.REGISTRY if not k.startswith("__")))
            self.fail("spec.unknown_function", f"unknown function {name!r} (registered: {known})", rs.at)
            return None
        if arity is not None and fn.arity != arity:
            self.fail("spec.bad_arity", f"{name!r} takes {fn.arity} argument(s), the rule passes {arity}", rs.at)
            return None
        return fn.fn

    # -- rules --

    def scope_of(self, rs: RuleSpec) -> Scope:
        """The scope a rule runs in: where its target is, when its sources are there or above."""
        by_target = self.root
        for scope in self.scopes:
            if rs.targets and rs.targets[0].starts_with(scope.dst) and scope.level > by_target.level:
                by_target = scope
        for ref in (*rs.sources, *rs.with_args):
            inner = ref.args[0] if isinstance(ref, CallRef) and ref.args else ref
            if isinstance(inner, Template) and (self.spec.each is None or inner.starts_with(self.root.src)):
                by_source = self.deepest(inner)
                return by_target if by_source in self.chain(by_target) else by_source
        return by_target  # a constant, or a rule on other values, lives where its target does

    def rules(self) -> None:
        readers: dict[str, int] = {}
        for rs in self.spec.rules:
            if authoritative(rs):
                for s in rs.sources:
                    if isinstance(s, Template):
                        readers[s.text] = readers.get(s.text, 0) + 1
        written: dict[str, RuleSpec] = {}
        for rs in self.spec.rules:
            scope = self.scope_of(rs)
            rule = self.rule(rs, scope, readers, written)
            if rule is not None:
                scope.rules.append(rule)

    def rule(self, rs: RuleSpec, scope: Scope, readers: dict[str, int], written: dict[str, RuleSpec]) -> Rule | None:
        sources = [self.source(s, scope, rs) for s in rs.sources]
        with_args = [self.source(s, scope, rs) for s in rs.with_args]
        targets: list[Path] = []
        for t in rs.targets:
            rel = _relative(t, scope.dst)
            if rel is None or any(isinstance(x, Var) for x in rel):
                self.fail(
                    "spec.target_scope", f"target {t} is not inside {scope.dst.text or 'the document root'}", rs.at
                )
                continue
            if not rel and not (rs.op in ("copy", "call") and scope.level > 0):
                self.fail("spec.target_scope", f"only an array element can be written whole ({t})", rs.at)
                continue
            targets.append(tuple(rel))  # type: ignore[arg-type]
            self.check_duplicate(t, rs, written)
        convert = None
        if rs.call is not None:
            arity = len(rs.sources) if rs.op == "call" else 1 + len(rs.with_args)
            convert = self.function(rs.call, rs, arity)
        reverse_convert = self.function(rs.reverse_call, rs, 1 + len(rs.with_args)) if rs.reverse_call else None
        write_back_fn = self.function(rs.write_back_call, rs, 2) if rs.write_back_call else None
        reverse_fn: Any = None
        reverse_args: tuple[Source, ...] = ()
        reverse_targets: tuple[Any, ...] = ()
        if rs.reverse is not None:
            reverse_fn = self.function(rs.reverse.call, rs, len(rs.reverse.args))
            resolved = [self.source(a, scope, rs, side="story") for a in rs.reverse.args]
            reverse_args = tuple(a for a in resolved if a is not None)
            reverse_targets = tuple(
                tuple(t.relative_to(scope.src)) if t.starts_with(scope.src) else ()  # type: ignore[misc]
                for t in rs.reverse.targets
            )
        reverse_first_of = [self.source(s, scope, rs, side="story") for s in rs.reverse_first_of]
        if None in sources or None in with_args or None in reverse_first_of:
            return None
        owned = tuple(isinstance(s, Template) and readers.get(s.text, 0) <= 1 for s in rs.sources)
        return Rule(
            spec=rs,
            sources=tuple(s for s in sources if s is not None),
            targets=tuple(targets),
            convert=convert,
            with_args=tuple(a for a in with_args if a is not None),
            condition=condition(rs.when),
            owned=owned,
            reverse_convert=reverse_convert,
            reverse_when=tuple((self.literal(p, rs), v) for p, v in rs.reverse_when),
            reverse_first_of=tuple(s for s in reverse_first_of if s is not None),
            reverse_fn=reverse_fn,
            reverse_args=reverse_args,
            reverse_targets=reverse_targets,  # type: ignore[arg-type]
            write_back_fn=write_back_fn,
            format=self.spec.name,
        )

    def check_duplicate(self, t: Template, rs: RuleSpec, written: dict[str, RuleSpec]) -> None:
        if rs.derived or rs.reverse_only:
            written.setdefault(t.text, rs)
            return
        other = written.get(t.text)
        if other is not None and not (other.derived or other.reverse_only):
            self.fail("spec.duplicate_target", f"{t} is also written by {other.label} ({other.at})", rs.at)
        written[t.text] = rs

    # -- residual objects --

    def objects(self) -> tuple[tuple[Path, frozenset[str]], ...]:
        top: list[tuple[Path, frozenset[str]]] = []
        for template, known, at in self.spec.objects:
            if self.spec.each is not None and not template.starts_with(self.root.src):
                lit = template.literal()
                if lit is None:
                    self.fail("spec.bad_object", f"object {template} lies outside the documents", at)
                else:
                    top.append((lit, known))
                continue
            scope = self.deepest(template, skip_fallback_elements=True)
            scope.objects.append((tuple(template.relative_to(scope.src)), known))
        return tuple(top)


def compile_spec(spec: Spec, catalog: Catalog | None = None) -> Program:
    """Compile `spec` with the functions `catalog` names (None: the installed catalog's), or
    raise MapcError with every spec problem found."""
    c = _Compiler(spec, catalog)
    c.build_scopes()
    c.rules()
    top_objects = c.objects()
    doc_id = None
    if spec.document_id is not None:
        rs = spec.document_id
        if rs.call:
            doc_id = Rule(rs, (), (), convert=c.function(rs.call, rs, 1))
        else:
            doc_id = Rule(rs, tuple(Source("top", c.literal(s, rs)) for s in rs.sources if isinstance(s, Template)), ())
    for check in spec.checks:
        if check.kind == "call" and functions.lookup(check.value, catalog) is None:
            c.fail("spec.unknown_function", f"unknown function {check.value!r} in a check", check.at)
    children = _member_path(c, spec.children, "children")
    each = _member_path(c, spec.each, "each")
    if c.problems:
        raise MapcError(c.problems, source=spec.path)
    forward_root, reverse_root, source = codegen.generate(spec.name, c.root)
    return Program(
        spec,
        c.root,
        children,
        each,
        top_objects,
        doc_id,
        _objects_count_tree(spec)
        if spec.rows is not None
        else {ANY_INDEX: {}}
        if spec.stream is not None
        else _count_tree(c.root, children, each),
        forward_root,
        reverse_root,
        source,
    )


def _member_path(c: _Compiler, template: Template | None, what: str) -> Path | None:
    if template is None:
        return None
    toks = template.tokens
    if not toks or not isinstance(toks[-1], Var) or any(isinstance(t, Var) for t in toks[:-1]):
        c.fail(f"spec.bad_{what}", f"document {what} must be /path/{{var}}")
        return None
    return tuple(toks[:-1])  # type: ignore[arg-type]


def _relative(template: Template, prefix: Template) -> tuple[Any, ...] | None:
    return template.relative_to(prefix) if template.starts_with(prefix) else None


def _ends_in_var(tokens: tuple[Any, ...]) -> bool:
    return bool(tokens) and isinstance(tokens[-1], Var) and not any(isinstance(t, Var) for t in tokens[:-1])


def _objects_count_tree(spec: Spec) -> Tree:
    """The count tree of a row corpus: every variable of an `objects` template is a position."""
    tree: dict[Any, Any] = {}
    for template, _, _ in spec.objects:
        node = tree
        for token in template.tokens:
            node = node.setdefault(ANY_INDEX if isinstance(token, Var) else token, {})
    return tree


def _count_tree(root: Scope, children: Path | None, each: Path | None) -> Tree:
    """The unknown-key count tree: declared array positions become `*`, document keys stay
    literal, and nested documents recurse (docs/envelope.md)."""

    def at(node: dict[Any, Any], path: tuple[Any, ...]) -> dict[Any, Any]:
        for key in path:
            node = node.setdefault(key, {})
        return node

    def build(scope: Scope, node: dict[Any, Any]) -> None:
        for child in scope.children:
            inner: dict[Any, Any] = {}
            at(node, child.src_rel)[ANY_INDEX] = inner
            if child.fallback_rel is not None:
                at(node, child.fallback_rel)[ANY_INDEX] = inner
            build(child, inner)

    tree: dict[Any, Any] = {}
    member = tree
    if each is not None:
        member = {}
        at(tree, each)[ANY_KEY] = member
    build(root, member)
    if children:
        at(tree, children)[ANY_INDEX] = tree
    return tree
