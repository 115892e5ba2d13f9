"""Folded elements (`fold:` in a spec): elements of one array that belong to the element before them.

Some formats write as separate elements what Storyline keeps inside one: a chat transcript puts each
tool result in a message of its own after the message that called the tool, where a Storyline turn
holds its results in `/observation/results`.  The spec still maps the source array element by
element (so every residual keeps its source pointer); a fold then moves each element matching
`where` into the array `into` of the element before it, as the object `take` describes (its keys
and the element pointers their values come from), and removes it.  The reverse unfolds first:
after each element, one element per item of its `into` array, carrying `where`'s values and the
item's values at `take`'s pointers.

    fold:
      - {array: /turns, where: {/src: tool}, into: /observation/results,
         take: {source_call_id: /extra/tool_call_id, content: /msg}}

A folded element's other values are dropped, so a spec folds only elements whose other values are
derived (a position id, a kind): the reverse gives the element back from `where` and `take` alone.
An element to fold with no element before it is an input error (`fold.orphan`), at the source
pointer of the array element it came from (`arrays` says which source array that is).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mapc.engine import pointer
from mapc.engine.problems import MapcError, Problem
from mapc.engine.values import MISSING, json_equal

Tokens = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Fold:
    """One `fold:` entry, pointers parsed (`source` is the source array template, for errors)."""

    array: Tokens
    where: tuple[tuple[Tokens, Any], ...]
    into: Tokens
    take: tuple[tuple[str, Tokens], ...]
    source: str | None = None


def parse(entries: Any, arrays: dict[str, str]) -> tuple[Fold, ...]:
    """The `fold:` entries of a spec (already shape-checked by the spec schema); `arrays` maps each
    Storyline array template to its source array template."""
    out = []
    for e in entries or ():
        array = e["array"]
        src = next((s for s, d in arrays.items() if d.rsplit("/", 1)[0] == array), None)
        out.append(
            Fold(
                pointer.parse(array),
                tuple((pointer.parse(p), v) for p, v in e["where"].items()),
                pointer.parse(e["into"]),
                tuple((k, pointer.parse(p)) for k, p in e["take"].items()),
                src.rsplit("/", 1)[0] if src else None,
            )
        )
    return tuple(out)


def _get(obj: Any, tokens: Tokens) -> Any:
    for t in tokens:
        if type(obj) is not dict or t not in obj:
            return MISSING
        obj = obj[t]
    return obj


def _without(obj: dict[str, Any], tokens: Tokens) -> dict[str, Any]:
    """`obj` (copied on the way) without the value at `tokens`; objects left empty go too."""
    head, rest = tokens[0], tokens[1:]
    if head not in obj:
        return obj
    out = dict(obj)
    if rest:
        inner = obj[head]
        if type(inner) is not dict:
            return obj
        inner = _without(inner, rest)
        if inner:
            out[head] = inner
        else:
            del out[head]
    else:
        del out[head]
    return out


def _with(obj: dict[str, Any], tokens: Tokens, value: Any) -> dict[str, Any]:
    out = dict(obj)
    if len(tokens) == 1:
        out[tokens[0]] = value
    else:
        inner = out.get(tokens[0])
        out[tokens[0]] = _with(inner if type(inner) is dict else {}, tokens[1:], value)
    return out


def _put(obj: dict[str, Any], tokens: Tokens, value: Any, made: set[int]) -> None:
    """`_with` in place, for an object being built: the objects on the way that are not in `made`
    (the ids of those this build made, alive in `obj`) are copied first, so no value is changed."""
    for t in tokens[:-1]:
        inner = obj.get(t)
        if type(inner) is not dict or id(inner) not in made:
            inner = dict(inner) if type(inner) is dict else {}
            made.add(id(inner))
        obj[t] = inner
        obj = inner
    obj[tokens[-1]] = value


_PLAIN = (str, int, bool, type(None))  # `==` is JSON equality when the types are the same


def _matches(f: Fold, elem: Any) -> bool:
    if type(elem) is not dict:
        return False
    for p, v in f.where:
        got = elem.get(p[0], MISSING) if len(p) == 1 else _get(elem, p)
        if type(v) in _PLAIN:  # the usual `where` (a role name): no call per element
            if type(got) is not type(v) or got != v:
                return False
        elif not json_equal(got, v):
            return False
    return True


def fold(folds: tuple[Fold, ...], story: dict[str, Any]) -> dict[str, Any]:
    """`story` with every fold applied (the same object when nothing folds)."""
    for f in folds:
        items = _get(story, f.array)
        if type(items) is not list:
            continue
        matched = [_matches(f, e) for e in items]
        if True not in matched:
            continue
        out: list[Any] = []
        owned: dict[int, list[Any]] = {}  # id(element) -> the `into` list this fold made for it
        for n, elem in enumerate(items):
            if not matched[n]:
                out.append(elem)
                continue
            if not out:
                where = f"{f.source}/{n}" if f.source else pointer.format((*f.array, str(n)))
                raise MapcError.single("fold.orphan", where, "this element belongs after another one, but it is first")
            item = {k: v for k, p in f.take if (v := _get(elem, p)) is not MISSING}
            prev = out[-1]
            have = _get(prev, f.into)
            if type(have) is list and owned.get(id(prev)) is have:  # a list this fold made: append
                have.append(item)
                continue
            items_of_prev = [*(have if type(have) is list else ()), item]
            out[-1] = _with(prev, f.into, items_of_prev)
            owned[id(out[-1])] = items_of_prev
        story = _with(story, f.array, out)
    return story


def unfold(folds: tuple[Fold, ...], story: dict[str, Any]) -> dict[str, Any]:
    """The inverse of `fold`: each `into` item becomes an element of its own after its owner."""
    for f in reversed(folds):
        items = _get(story, f.array)
        if type(items) is not list:
            continue
        out: list[Any] = []
        changed = False
        for elem in items:
            inner = _get(elem, f.into) if type(elem) is dict and not _matches(f, elem) else MISSING
            if type(inner) is not list or not inner or not all(type(i) is dict for i in inner):
                out.append(elem)
                continue
            changed = True
            out.append(_without(elem, f.into))
            for item in inner:
                new: dict[str, Any] = {}
                made: set[int] = set()
                for p, v in f.where:
                    _put(new, p, v, made)
                for k, p in f.take:
                    if k in item:
                        _put(new, p, item[k], made)
                out.append(new)
        if changed:
            story = _with(story, f.array, out)
    return story


def problems_of(entries: Any) -> list[Problem]:
    """Shape problems of `fold:` entries beyond the spec schema: every pointer must parse."""
    out = []
    for i, e in enumerate(entries or ()):
        for ptr in (e.get("array"), e.get("into"), *(e.get("where") or {}), *(e.get("take") or {}).values()):
            try:
                if not pointer.parse(ptr):
                    raise pointer.PointerSyntaxError("empty")
            except (pointer.PointerSyntaxError, TypeError):
                out.append(Problem("spec.invalid", f"/fold/{i}", f"{ptr!r} is not a non-empty JSON Pointer"))
    return out
