"""Runs by the rule objects themselves: the semantics `mapc explain` and `mapc spec coverage`
trace, run over whole documents, both ways.

`traced(program)` is `program` with its generated forward and reverse functions replaced by ones
that walk the same scopes and call each rule's `Rule.forward` / `Rule.reverse` (whose value
choice is its op's, ops.py).  They are slow and exist to be compared:
tests/formats/test_differential.py requires the generated code and these runs to give the same
Storylines and the same rebuilt documents, value for value and key for key, over every shipped
spec, its fixtures, the hypothesis generators and generated specs.  Where generated code takes a
shortcut (a second home array made of copies of the first's elements, codegen._twins), the
traced reverse does the plain thing (runs the element's rules again), so the shortcut is checked too.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from mapc.engine.pointer import escape
from mapc.engine.program import Context, Frame, Program, Scope, ScopeFn, get_in, pointer_text, put_in
from mapc.engine.template import Var
from mapc.engine.values import MISSING, json_equal


def traced(program: Program) -> Program:
    """`program`, its forward run by rule objects instead of generated code."""
    return dataclasses.replace(program, forward_root=_scope_fn(program.root), reverse_root=_reverse_fn(program.root))


def _scope_fn(scope: Scope) -> ScopeFn:
    inner = [_scope_fn(child) for child in scope.children]

    def run(src: Any, dst: dict[str, Any], ctx: Context, prefix: str, up: tuple[Any, ...], idx: tuple[Any, ...]):
        if type(src) is not dict:
            return None
        frame = Frame(src, up, idx)
        for rule in scope.rules:
            if rule.spec.reverse_only:
                continue
            rule.forward(frame, dst, ctx, prefix)
        for rel, known in scope.objects:
            _keep_unknown(src, rel, known, prefix, ctx)
        for child, fn in zip(scope.children, inner, strict=True):
            _array(child, fn, src, dst, ctx, prefix, up, idx)
        return None

    return run


def _array(child: Scope, fn: ScopeFn, src: dict[str, Any], dst: dict[str, Any], ctx: Context, prefix: str, up, idx):
    """Map the array of `child` below `src` element by element (the fallback array when it is
    empty; the array not chosen is kept, or mirrored when it is a copy of the chosen one)."""
    items = get_in(src, child.src_rel)
    base = prefix + child.pointer_prefix + "/"
    if child.fallback_rel is not None:
        other = get_in(src, child.fallback_rel)
        at = prefix + pointer_text(child.fallback_rel)
        if type(items) is not list or not items:
            items, other = other, items
            base = prefix + pointer_text(child.fallback_rel) + "/"
            at = prefix + pointer_text(child.src_rel)
        if other is not MISSING and other is not None:
            if json_equal(other, items):
                ctx.mirrors[base] = at + "/"
            elif not (other == [] and not (type(items) is list and items)):
                ctx.residual[at] = other
    if type(items) is not list or (child.omit_empty and not items):
        return
    out: list[Any] = []
    put_in(dst, child.dst_rel, out)
    inner_up = (*up, src)
    for i, item in enumerate(items):
        d: dict[str, Any] = {}
        fn(item, d, ctx, base + str(i), inner_up, (*idx, i))
        out.append(d)


def _keep_unknown(obj: Any, tokens: tuple[Any, ...], known: frozenset[str], base: str, ctx: Context) -> None:
    """Keep the keys of the object at `tokens` below `obj` that are not `known` (a variable
    token walks every element or member there)."""
    literal: list[str] = []
    for i, token in enumerate(tokens):
        if isinstance(token, Var):
            holder = get_in(obj, tuple(literal))
            b = base + pointer_text(tuple(literal)) + "/"
            if type(holder) is list:
                for n, x in enumerate(holder):
                    _keep_unknown(x, tokens[i + 1 :], known, b + str(n), ctx)
            elif type(holder) is dict:
                for k, x in holder.items():
                    _keep_unknown(x, tokens[i + 1 :], known, b + escape(k), ctx)
            return
        literal.append(token)
    target = get_in(obj, tuple(literal))
    if type(target) is dict and not target.keys() <= known:
        b = base + pointer_text(tuple(literal)) + "/"
        for key, x in target.items():
            if key not in known:
                ctx.residual[b + escape(key)] = x


def _reverse_fn(scope: Scope) -> ScopeFn:
    inner = [_reverse_fn(child) for child in scope.children]

    def run(elem: Any, out: dict[str, Any], ctx: Context, sup: tuple[Any, ...], oup: tuple[Any, ...], idx):
        if type(elem) is not dict:
            return None
        story_frame = Frame(elem, sup, idx)
        for rule in scope.rules:
            ctx.out = Frame(out, oup, idx)
            rule.reverse(story_frame, out, ctx)
        for child, fn in zip(scope.children, inner, strict=True):
            _reverse_array(scope, child, fn, elem, out, ctx, sup, oup, idx)
        return None

    return run


def _reverse_array(scope: Scope, child: Scope, fn: ScopeFn, elem, out, ctx: Context, sup, oup, idx) -> None:
    """Write the Storyline array of `child` back (to its fallback array too), saying what this
    format cannot hold: a value of another shape, or an object holding more than the array."""
    items = get_in(elem, child.dst_rel)
    where = (scope.dst, child.dst_rel)
    holder = child.dst_rel[:-1]
    if holder:
        h = get_in(elem, holder)
        if h is not MISSING and h is not None and (type(h) is not dict or set(h) - {child.dst_rel[-1]}):
            ctx.problems.append((where, idx, len(holder), "an object holding only " + child.dst_rel[-1]))
    if items is not MISSING and items is not None and type(items) is not list:
        ctx.problems.append((where, idx, len(child.dst_rel), "an array"))
    homes = [child.src_rel] + ([child.fallback_rel] if child.fallback_rel is not None else [])
    if type(items) is list:
        for i, item in enumerate(items):
            if type(item) is not dict:
                ctx.problems.append((where, (*idx, i), len(child.dst_rel) + 1, "an object"))
        for home in homes:
            back: list[Any] = []
            put_in(out, home, back)
            for i, item in enumerate(items):
                o: dict[str, Any] = {}
                fn(item, o, ctx, (*sup, elem), (*oup, out), (*idx, i))
                back.append(o)
    elif child.omit_empty:
        for home in homes:
            put_in(out, home, [])
