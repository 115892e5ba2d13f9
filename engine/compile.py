"""Compile a `Spec` once into a `Program`: a tree of scopes holding rule objects for both directions.

A scope is one level of array iteration (the document root, ``/steps/{s}``,
``/steps/{s}/tool_calls/{c}``).  Each rule is placed in the deepest scope whose array prefix its
source pointer starts with, and keeps only the tokens below that prefix, pre-parsed; codegen.py
then writes each scope as straight-line Python.  Spec mistakes found here (unknown function, a
target outside the source's scope, two rules writing one target) are `Problem`s located at the
rule's YAML line.
"""

from __future__ import annotations

from typing import Any

from mapc.engine import codegen, functions
from mapc.engine.problems import MapcError, Problem
from mapc.engine.program import CONDITIONS, Path, Program, Rule, Scope, Source, pointer_text
from mapc.engine.residual import ANY_INDEX, Tree
from mapc.engine.spec import ParentRef, RuleSpec, Spec
from mapc.engine.template import Template, Var

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
        if not rs.derived and not rs.reverse_only and rs.op in ("copy", "first_of"):
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
            forward_only, reverse_only = rs.derived, rs.reverse_only
            if not (forward_only or reverse_only) or t.text not in written:
                if t.text in written and not (written[t.text].derived or written[t.text].reverse_only):
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
                condition=CONDITIONS[rs.when] if rs.when else None,
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
    forward_root, reverse_root, source = codegen.generate(spec.name, root)
    return Program(
        spec, root, children, doc_id, _count_tree(root, children), forward_root, reverse_root, source
    )


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
