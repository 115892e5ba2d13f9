"""Run a compiled `Program`: one source document → Storylines, and Storylines → one document.

Forward walks the input once: each scope's rules write the Storyline, its arrays recurse, and
keys no object scope knows are captured as residuals under their full source pointer.  Nested
documents (the spec's `document.children`) become separate Storylines linked by `/children` and
`/parent`, in pre-order.  Reverse rebuilds the tree from `/children`, writes authoritative values
back, restores this source's residuals by pointer, and only then writes back the derived values
that the forward rules would not derive again (so a same-source round trip gives the input back).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from mapc.engine import pointer
from mapc.engine.problems import MapcError, Problem
from mapc.engine.program import Context, Program, Rule, get_in, insert_copying, put_in
from mapc.engine.residual import count_keys
from mapc.engine.values import MISSING, json_equal
from mapc.engine.views import document_id


@dataclass(frozen=True, slots=True)
class Mapped:
    """One Storyline made from a source document, with the pointer of the node it came from."""

    story: dict[str, Any]
    carrier: str


# --- forward -------------------------------------------------------------------------------


def forward(program: Program, doc: Any, source_document_id: str | None = None) -> list[Mapped]:
    """Map one top-level source document to its Storylines (parents before their children)."""
    if source_document_id is None and program.document_id is not None:
        source_document_id = _document_id(program.document_id, doc)
    out: list[Mapped] = []
    _forward_node(program, doc, "", None, source_document_id or "", out)
    seen: dict[str, str] = {}
    problems = []
    for m in out:
        ident = document_id(m.story)
        if ident in seen:
            problems.append(
                Problem(
                    "tree.duplicate_identity",
                    m.carrier,
                    f"document id {ident!r} is also that of the Storyline from {seen[ident] or 'the root'}",
                )
            )
        seen.setdefault(ident, m.carrier)
    if problems:
        raise MapcError(problems)
    return out


def _document_id(rule: Rule, doc: Any) -> str:
    if rule.sources:
        value = get_in(doc, rule.sources[0].path)
        return value if isinstance(value, str) else ""
    assert rule.convert is not None
    return str(rule.convert(doc))


def _forward_node(
    program: Program, node: Any, prefix: str, parent: dict[str, Any] | None, sdid: str, out: list[Mapped]
) -> dict[str, Any]:
    story: dict[str, Any] = {}
    ctx = Context({}, parent, story)
    program.forward_root(node, story, ctx, prefix)
    if parent is not None:
        story["parent"] = {"psid": document_id(parent)}
    if ctx.residual:
        source = program.spec.source
        story["unknown_fields"] = {"sources": {source: {"source_document_id": sdid, "fields": ctx.residual}}}
        story["unknown_key_counts"] = {source: count_keys(ctx.residual, program.count_tree)}
    out.append(Mapped(story, prefix))
    if program.children is not None:
        kids = get_in(node, program.children)
        if type(kids) is list:
            ids = story["children"] = []
            base = prefix + "".join("/" + pointer.escape(k) for k in program.children)
            for i, kid in enumerate(kids):
                child = _forward_node(program, kid, f"{base}/{i}", story, sdid, out)
                ids.append(document_id(child))
    return story


# --- reverse -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Rebuilt:
    """One rebuilt top-level source document and the Storylines it came from, with carriers."""

    document: dict[str, Any]
    stories: tuple[Mapped, ...]


def reverse(program: Program, stories: list[dict[str, Any]]) -> list[Rebuilt]:
    """Rebuild source documents from Storylines: one per tree of `/children` links."""
    rebuilt = []
    for root in _roots(program, stories):
        pending: list[tuple[Rule, Any, dict[str, Any], dict[str, Any], dict[str, Any] | None]] = []
        mapped: list[Mapped] = []
        doc = _reverse_node(program, root, "", None, pending, mapped, _index(stories))
        copies = _restore_residuals(program, doc, mapped)
        for rule, story_elem, out, story, parent in pending:
            while id(out) in copies:  # restoring copied this object (it may be shared with a Storyline)
                out = copies[id(out)][1]
            _write_back(rule, story_elem, out, story, parent)
        rebuilt.append(Rebuilt(doc, tuple(mapped)))
    return rebuilt


def _index(stories: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {document_id(s): s for s in stories}


def _roots(program: Program, stories: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Stories no other story lists as a child, after checking the tree is sound."""
    problems: list[Problem] = []
    by_id: dict[str, int] = {}
    for i, story in enumerate(stories):
        ident = document_id(story)
        if ident in by_id:
            problems.append(
                Problem(
                    "tree.duplicate_identity", f"/{i}", f"document id {ident!r} is also /{by_id[ident]}'s"
                )
            )
        by_id.setdefault(ident, i)
    parent_of: dict[str, str] = {}
    for i, story in enumerate(stories):
        kids = story.get("children") if program.children is not None else None
        for j, kid in enumerate(kids or []):
            if kid not in by_id:
                problems.append(
                    Problem("tree.unknown_child", f"/{i}/children/{j}", f"no Storyline has id {kid!r}")
                )
            elif kid in parent_of:
                problems.append(
                    Problem(
                        "tree.multiple_parents",
                        f"/{i}/children/{j}",
                        f"{kid!r} is already a child of {parent_of[kid]!r}",
                    )
                )
            else:
                parent_of[kid] = document_id(story)
    roots = [s for s in stories if document_id(s) not in parent_of]
    if stories and not roots:
        problems.append(Problem("tree.no_root", "", "every Storyline is some other's child (a cycle)"))
    reachable: set[str] = set()
    todo = [document_id(r) for r in roots]
    while todo:
        ident = todo.pop()
        if ident in reachable:
            continue
        reachable.add(ident)
        todo.extend(k for k in stories[by_id[ident]].get("children") or [] if k in by_id)
    for i, story in enumerate(stories):
        if document_id(story) not in reachable and roots:
            problems.append(
                Problem("tree.unreachable", f"/{i}", "Storyline is in a cycle of /children links")
            )
    if problems:
        raise MapcError(problems)
    return roots


def _reverse_node(
    program: Program,
    story: dict[str, Any],
    prefix: str,
    parent: dict[str, Any] | None,
    pending: list[Any],
    mapped: list[Mapped],
    index: dict[str, dict[str, Any]],
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    mapped.append(Mapped(story, prefix))
    program.reverse_root(story, out, story, parent, pending)
    if program.children is not None and type(story.get("children")) is list:
        base = prefix + "".join("/" + pointer.escape(k) for k in program.children)
        kids = [
            _reverse_node(program, index[kid], f"{base}/{i}", story, pending, mapped, index)
            for i, kid in enumerate(story["children"])
        ]
        put_in(out, program.children, kids)
    return out


def _write_back(
    rule: Rule, story_elem: Any, out: dict[str, Any], story: dict[str, Any], parent: dict[str, Any] | None
) -> None:
    want = get_in(story_elem, rule.targets[0])
    if want is MISSING or want is None:
        return
    if json_equal(rule.value(out, Context({}, parent, story)), want):
        return
    assert rule.write_back is not None
    insert_copying(out, rule.write_back, want)


Copies = dict[int, tuple[Any, Any]]  # id(original) -> (original, its copy in the output)


def _restore_residuals(program: Program, doc: dict[str, Any], mapped: list[Mapped]) -> Copies:
    """Put this source's residuals back at their pointers; returns the containers it copied."""
    source = program.spec.source
    problems: list[Problem] = []
    copies: Copies = {}
    sdid: str | None = None
    for m in mapped:
        entry = ((m.story.get("unknown_fields") or {}).get("sources") or {}).get(source)
        if not entry:
            continue
        if sdid is None:
            sdid = entry.get("source_document_id")
        elif entry.get("source_document_id") != sdid:
            problems.append(
                Problem(
                    "residual.mixed_documents",
                    f"/unknown_fields/sources/{pointer.escape(source)}/source_document_id",
                    f"Storylines of one {source} document carry residuals of two documents ({sdid!r}, "
                    f"{entry.get('source_document_id')!r})",
                )
            )
        for ptr, value in (entry.get("fields") or {}).items():
            problems.extend(_restore_one(doc, ptr, value, source, copies))
    if problems:
        raise MapcError(problems)
    return copies


def _restore_one(doc: dict[str, Any], ptr: str, value: Any, source: str, copies: Copies) -> Iterator[Problem]:
    at = f"/unknown_fields/sources/{pointer.escape(source)}/fields/{pointer.escape(ptr)}"
    try:
        tokens = pointer.parse(ptr)
    except pointer.PointerSyntaxError:
        yield Problem("residual.bad_pointer", at, f"{ptr!r} is not a JSON Pointer")
        return
    if not tokens:
        yield Problem("residual.bad_pointer", at, "a residual cannot replace the whole document")
        return
    parent = pointer.resolve(doc, tokens[:-1])
    if type(parent) is list:
        yield Problem("residual.collision", at, f"{ptr} points into an array the mapping rebuilt")
        return
    existing = pointer.resolve(doc, tokens)
    if existing is not MISSING:
        if not json_equal(existing, value):
            yield Problem("residual.collision", at, f"{ptr} already holds a mapped value that differs")
        return
    if not _insert_path(doc, tokens, value, copies):
        yield Problem("residual.collision", at, f"{ptr} cannot be placed: a non-object stands on its path")


def _insert_path(doc: dict[str, Any], tokens: tuple[str, ...], value: Any, copies: Copies) -> bool:
    """Insert `value` at `tokens`, creating objects on the way.

    Containers on the path are shallow-copied first, since the reverse may have placed a value of
    the Storyline there by reference; `copies` records each copy so later writes can follow it.
    """
    node: Any = doc
    for token in tokens[:-1]:
        if type(node) is dict:
            key: Any = token
        elif type(node) is list and pointer.is_array_index(token) and int(token) < len(node):
            key = int(token)
        else:
            return False
        nxt = node.get(key, MISSING) if type(node) is dict else node[key]
        if nxt is MISSING:
            nxt = {}
        elif type(nxt) in (dict, list):
            copy = nxt.copy()
            copies[id(nxt)] = (nxt, copy)  # the original is kept alive, so its id stays unique
            nxt = copy
        else:
            return False
        node[key] = nxt
        node = nxt
    if type(node) is not dict:
        return False
    node[tokens[-1]] = value
    return True
