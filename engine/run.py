"""Run a compiled `Program`: one source document → Storylines, and Storylines → one document.

Forward walks the input once: each scope's rules write the Storyline, its arrays recurse, and
keys no object scope knows are captured as residuals under their full source pointer.  A value a
rule would lose (a failed condition, a conversion its reverse does not undo) is kept as a
residual too, once the Storyline is written and the reverse can be asked.  Members of the input
(`document.each`, e.g. the attempts of a task) become one Storyline each; nested documents
(`document.children`) become separate Storylines linked by `/children` and `/parent`, in
pre-order.

Reverse rebuilds the document, writes authoritative values back, restores this source's
residuals by pointer (a residual is the source's own value, so it wins over a rebuilt one), and
only then writes back the derived values that the forward rules would not derive again, so a
same-source round trip gives the input back.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from mapc.engine import functions, pointer
from mapc.engine.mapped import Mapped, Rebuilt
from mapc.engine.problems import MapcError, Problem
from mapc.engine.program import Context, Frame, Program, Rule, get_in, pointer_text, put_in
from mapc.engine.residual import count_keys, drop_nested
from mapc.engine.values import MISSING, json_equal
from mapc.engine.views import document_id

# --- forward -------------------------------------------------------------------------------


@contextmanager
def paused_gc() -> Iterator[None]:
    """The cyclic collector paused.  A run (or the store's splitting and rebuilding) allocates many
    small acyclic containers, and the collector would walk every live document again and again while
    they are made: about half the time of a large reverse, a third of `mapc export`'s at 64 MB."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def forward(
    program: Program,
    doc: Any,
    source_document_id: str | None = None,
    *,
    path: str | None = None,
    parsed: bool = False,
) -> list[Mapped]:
    """Map one top-level source document to its Storylines (parents before their children).

    `path` is the input's relative path, the identity of a row corpus (`document.rows`).
    `parsed`: `doc` is what the JSON parser made (and JSON values registered functions made from
    it), so computing its document id need not look for NaN or infinities in it."""
    with paused_gc():
        # Row corpora, event streams and folds have modules of their own, imported by the specs that
        # have them: a plain spec's run does not pay for them.
        if program.spec.rows is not None:
            from mapc.engine import rows

            return rows.forward(program.spec, doc, path)
        if program.spec.stream is not None:
            from mapc.engine import rows, stream

            sdid = source_document_id or (rows.relative_path(path) if path is not None else stream.DEFAULT_ID)
            return [stream.map_document(program.spec.stream, program.spec.source, doc, sdid)]
        return _forward(program, doc, source_document_id, parsed)


def _forward(program: Program, doc: Any, source_document_id: str | None, parsed: bool = False) -> list[Mapped]:
    if source_document_id is None and program.document_id is not None:
        source_document_id = _document_id(program.document_id, doc, parsed)
    sdid = source_document_id or ""
    out: list[Mapped] = []
    if program.each is not None:
        members = get_in(doc, program.each)
        base = pointer_text(program.each)
        items = members.items() if type(members) is dict else enumerate(members) if type(members) is list else ()
        for key, member in items:
            _forward_node(program, member, f"{base}/{pointer.escape(str(key))}", None, sdid, out, doc, key)
    else:
        _forward_node(program, doc, "", None, sdid, out, doc, MISSING)
    _check_identities(out)
    return out


def source_document_id(program: Program, doc: Any, story: dict[str, Any]) -> str:
    """The `source_document_id` this spec's forward gives `doc` (the document `story` came from)."""
    origin = story.get("origin") or {}
    if origin.get("document_id"):
        return str(origin["document_id"])
    return _document_id(program.document_id, doc) if program.document_id is not None else ""


def _document_id(rule: Rule, doc: Any, parsed: bool = False) -> str:
    if rule.sources:
        value = get_in(doc, rule.sources[0].path)
        return value if isinstance(value, str) else ""
    assert rule.convert is not None
    return str((functions.for_parsed(rule.convert) if parsed else rule.convert)(doc))


def _require_identity(program: Program, story: dict[str, Any], prefix: str) -> None:
    """A Storyline is named by its ``session`` (or ``trajectory``): without one, a spec error when no
    rule of the spec writes ``/session``, else a problem of this document (it has no value for it)."""
    trajectory = story.get("trajectory")
    if "session" in story or (type(trajectory) is str and trajectory):
        return
    if not any(t.tokens == ("session",) for rule in program.spec.rules for t in rule.targets):
        message = "no rule of the spec writes /session, which names every Storyline"
        raise MapcError([Problem("spec.no_session", prefix, message, program.spec.at)])
    message = "the Storyline made from the document is invalid at /session: the document gives it no value"
    raise MapcError([Problem("schema.required", prefix, message)])


def _check_identities(out: list[Mapped]) -> None:
    seen: dict[str, str] = {}
    problems = []
    for m in out:
        ident = document_id(m.story)
        if type(ident) is not str:
            continue  # not a Storyline: its validation says why
        if ident in seen:
            other = seen[ident] or "the root"
            message = f"document id {ident!r} is also that of the Storyline from {other}"
            problems.append(Problem("tree.duplicate_identity", m.carrier, message))
        seen.setdefault(ident, m.carrier)
    if problems:
        raise MapcError(problems)


def _forward_node(
    program: Program,
    node: Any,
    prefix: str,
    parent: dict[str, Any] | None,
    sdid: str,
    out: list[Mapped],
    top: Any,
    key: Any,
) -> dict[str, Any]:
    story: dict[str, Any] = {}
    ctx = Context({}, parent, story, top=top, key=key)
    program.forward_root(node, story, ctx, prefix, (), (key,))
    for path, known in program.top_objects:  # the input's own keys, kept with every member
        obj = get_in(top, path)
        if type(obj) is dict:
            base = pointer_text(path) + "/"
            for k, v in obj.items():
                if k not in known:
                    ctx.residual[base + pointer.escape(k)] = v
    _keep_what_the_reverse_loses(ctx)
    if program.spec.fold:
        from mapc.engine import fold

        folded = fold.fold(program.spec.fold, story)
        if folded is not story:  # `story` is shared with the Context: change it in place
            story.clear()
            story.update(folded)
    _require_identity(program, story, prefix)
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
            base = prefix + pointer_text(program.children)
            for i, kid in enumerate(kids):
                child = _forward_node(program, kid, f"{base}/{i}", story, sdid, out, top, key)
                ids.append(document_id(child))
    return story


def _keep_what_the_reverse_loses(ctx: Context) -> None:
    """Ask the reverse of every guarded value what it would write back; keep what differs."""
    residual = ctx.residual
    for entry in ctx.checks:
        if entry is None:  # a guard decided in generated code that keeps nothing
            continue
        if len(entry) == 2:  # what a guard decided in generated code keeps: (pointer, value)
            residual[entry[0]] = entry[1]
            continue
        rule, frame, dst, at, raw = entry
        story_frame = Frame(dst, (None,) * len(frame.up), frame.idx)
        ctx.out = frame
        if type(raw) is tuple:  # a computed chain candidate: does its write-back put it home?
            _, i, value = raw
            placed = rule.write_back_fn(value, frame.elem)  # type: ignore[misc]
            if placed is MISSING or not json_equal(get_in(frame.elem, (placed[0],)), placed[1]):
                for arg in rule.sources[i].args:
                    have = arg.read(frame, ctx) if arg.plain and arg.path else MISSING
                    if have is not MISSING and have is not None:
                        ctx.residual[at + pointer_text(arg.path)] = have
        elif rule.reverse_fn is not None and rule.spec.op == "call":
            # A call row's computed reverse: each target it writes back keeps what it would not give.
            # (A copy or chain row with a computed reverse is checked as any value is, below: what
            # its `when` refused or its conversion could not map is kept at its own pointer.)
            values = rule.reverse_fn(*(a.read(story_frame, ctx) for a in rule.reverse_args))
            if len(rule.reverse_targets) == 1:
                values = (values,)
            for path, value in zip(rule.reverse_targets, values, strict=True):
                have = get_in(frame.elem, path)
                if have is not MISSING and (have is not None or value is MISSING) and not json_equal(have, value):
                    ctx.residual[at + pointer_text(path)] = have
        elif not json_equal(rule.reverse_value(story_frame, ctx), raw):
            ctx.residual[at] = raw
    ctx.checks.clear()
    ctx.out = None
    if ctx.mirrors:
        _mirror_residuals(ctx.residual, ctx.mirrors)
    drop_nested(ctx.residual)


def _mirror_residuals(residual: dict[str, Any], mirrors: dict[str, str]) -> None:
    """Copy what is kept below a chosen array to the array given back as its copy."""
    for key, value in list(residual.items()):
        cut = key.find("/", 1)
        while cut != -1:
            other = mirrors.get(key[: cut + 1])
            if other is not None:
                residual[other + key[cut + 1 :]] = value
                break
            cut = key.find("/", cut + 1)


# --- reverse -------------------------------------------------------------------------------


def _unfolded(program: Program, story: dict[str, Any]) -> dict[str, Any]:
    """The Storyline as the reverse rules read it: unfolded by the spec's `fold`, if it has one."""
    if not program.spec.fold:
        return story
    from mapc.engine import fold

    return fold.unfold(program.spec.fold, story)


def reverse(program: Program, stories: list[dict[str, Any]]) -> list[Rebuilt]:
    """Rebuild source documents: one per tree of `/children` links, or one for all members."""
    with paused_gc():
        if program.spec.rows is not None:
            from mapc.engine import rows

            return rows.reverse(program.spec, stories)
        if program.spec.stream is not None:
            from mapc.engine import stream

            return stream.reverse(program.spec.stream, program.spec.source, stories)
        return _reverse(program, stories)


def _reverse(program: Program, stories: list[dict[str, Any]]) -> list[Rebuilt]:
    if program.each is not None:
        return [_reverse_members(program, group) for group in _groups(program, stories)]
    rebuilt = []
    index = {document_id(s): s for s in stories}
    positions = {id(s): i for i, s in enumerate(stories)}
    for root in _roots(program, stories):
        ctx = Context({}, None, root, count=1)
        mapped: list[Mapped] = []
        doc = _reverse_node(program, root, "", None, ctx, mapped, index)
        _finish(program, doc, mapped, ctx, stories, positions)
        rebuilt.append(Rebuilt(doc, tuple(mapped)))
    return rebuilt


def _groups(program: Program, stories: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Storylines grouped by the document they rebuild: the value the reverse writes to the
    document's id (for a task with attempts: the task id that the Storyline's `run` gives back), in first
    order."""
    identity = _identity_rule(program)
    groups: dict[Any, list[dict[str, Any]]] = {}
    for story in stories:
        key = MISSING
        if identity is not None:
            ctx = Context({}, None, story, count=len(stories))
            key = identity.reverse_value(Frame(story, (), (MISSING,)), ctx)
        groups.setdefault(orjson_key(key), []).append(story)
    return list(groups.values())


def orjson_key(value: Any) -> Any:
    """A hashable stand-in for a JSON value."""
    return value if isinstance(value, (str, int, float, bool)) or value is None else repr(value)


def _identity_rule(program: Program) -> Rule | None:
    rule = program.document_id
    if rule is None or not rule.sources:
        return None
    for candidate in program.root.rules:
        if (
            candidate.sources
            and candidate.sources[0].kind == "top"
            and candidate.sources[0].path == rule.sources[0].path
        ):
            return candidate
    return None


def _named(story: dict[str, Any]) -> str:
    """How a message names a Storyline: its session and trajectory."""
    parts = [f"{key} {story[key]!r}" for key in ("session", "trajectory") if type(story.get(key)) is str]
    return ", ".join(parts) or "no session"


def _reverse_members(program: Program, stories: list[dict[str, Any]]) -> Rebuilt:
    assert program.each is not None
    top: dict[str, Any] = {}
    members: dict[str, Any] = {}
    mapped: list[Mapped] = []
    problems: list[Problem] = []
    ctx = Context({}, None, {}, top=top, count=len(stories))
    for n, story in enumerate(stories):
        view = _unfolded(program, story)
        ctx.story, ctx.first, ctx.key = view, n == 0, MISSING
        out: dict[str, Any] = {}
        program.reverse_root(view, out, ctx, (), (), (MISSING,))
        ctx.story = story
        problems.extend(_unwritable(ctx, stories))
        key = ctx.key
        if key is MISSING or key is None:
            if len(stories) > 1:
                message = (
                    f"several Storylines make one document here, and each needs an id for its place in it: "
                    f"Storyline {n} ({_named(story)}) has none"
                )
                problems.append(Problem("tree.no_member_key", f"/{n}", message))
                continue
            key = "1"
        key = str(key)
        if key in members:
            problems.append(Problem("tree.duplicate_member", f"/{n}", f"two Storylines have the id {key!r}"))
            continue
        members[key] = out
        mapped.append(Mapped(story, f"{pointer_text(program.each)}/{pointer.escape(key)}"))
    # A document is rebuilt from Storylines that all came from this format, or from none that did.
    own = [bool(_own_entry(program, m.story)) or _origin(m.story) == program.spec.name for m in mapped]
    if any(own) and not all(own):
        message = "some Storylines came from this format and some did not: they cannot make one document"
        problems.append(Problem("residual.mixed_provenance", "", message))
    if problems:
        raise MapcError(problems)
    put_in(top, program.each, members)
    _finish(program, top, mapped, ctx, stories)
    return Rebuilt(top, tuple(mapped))


def _reverse_node(
    program: Program,
    story: dict[str, Any],
    prefix: str,
    parent: dict[str, Any] | None,
    ctx: Context,
    mapped: list[Mapped],
    index: dict[str, dict[str, Any]],
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    mapped.append(Mapped(story, prefix))
    view = _unfolded(program, story)
    ctx.story, ctx.parent = view, parent
    program.reverse_root(view, out, ctx, (), (), (MISSING,))
    ctx.story = story
    if ctx.problems:
        raise MapcError(_unwritable(ctx, list(index.values())))
    if program.children is not None and type(story.get("children")) is list:
        base = prefix + pointer_text(program.children)
        kids = [
            _reverse_node(program, index[kid], f"{base}/{i}", story, ctx, mapped, index)
            for i, kid in enumerate(story["children"])
        ]
        put_in(out, program.children, kids)
    return out


def _unwritable(ctx: Context, stories: list[dict[str, Any]]) -> list[Problem]:
    """The reverse's `ctx.problems` as located problems (pointers into the Storylines)."""
    out = []
    for (scope_dst, rel), idx, depth, expected in ctx.problems:
        tokens: list[Any] = []
        values = iter(idx[1:])
        for token in (*scope_dst.tokens, *rel, "*"):
            tokens.append(next(values, "?") if not isinstance(token, str) or token == "*" else token)
        where = pointer.format(tokens[: len(scope_dst.tokens) + depth])
        prefix = f"/{stories.index(ctx.story)}" if len(stories) > 1 else ""
        out.append(Problem("export.unrepresentable", prefix + where, f"this format holds {expected} here"))
    ctx.problems.clear()
    return out


def _finish(
    program: Program,
    doc: dict[str, Any],
    mapped: list[Mapped],
    ctx: Context,
    stories: list[dict[str, Any]],
    positions: dict[int, int] | None = None,
) -> None:
    """Restore residuals, then run the pending write-backs against the restored document.

    `positions` (id of each of `stories` → its index) is made once by a caller rebuilding many
    documents: made here per document, it would cost the square of their number."""
    if positions is None:
        positions = {id(s): i for i, s in enumerate(stories)}
    copies = _restore_residuals(program, doc, mapped, positions)
    # Each write-back is ``(fn, want, out, ...)`` with a generated `fn` (codegen._write_back_fn): it
    # follows `copies` to the restored element and writes `want` back unless the forward derives it again.
    for entry in ctx.pending:
        entry[0](entry, ctx, copies)
    ctx.pending.clear()


# --- residuals -----------------------------------------------------------------------------

Copies = dict[int, tuple[Any, Any]]  # id(original) -> (original, its copy in the output)


def _origin(story: dict[str, Any]) -> Any:
    origin = story.get("origin")
    return origin.get("format") if type(origin) is dict else None


def _own_entry(program: Program, story: dict[str, Any]) -> dict[str, Any] | None:
    sources = (story.get("unknown_fields") or {}).get("sources") or {}
    entry = sources.get(program.spec.source)
    return entry if isinstance(entry, dict) and entry.get("fields") else None


def _restore_residuals(
    program: Program, doc: dict[str, Any], mapped: list[Mapped], positions: dict[int, int]
) -> Copies:
    """Put this source's residuals back at their pointers; returns the containers it copied.

    Problems point into the Storyline input: ``/i/unknown_fields/…`` when there are several
    (`positions` maps each Storyline to its index)."""
    source = program.spec.source
    problems: list[Problem] = []
    copies: Copies = {}
    sdid: str | None = None
    restored: dict[str, Any] = {}
    for m in mapped:
        entry = _own_entry(program, m.story)
        if entry is None:
            continue
        base = f"/{positions[id(m.story)]}" if len(positions) > 1 else ""
        if sdid is None:
            sdid = entry.get("source_document_id")
        elif entry.get("source_document_id") != sdid:
            problems.append(
                Problem(
                    "residual.mixed_documents",
                    f"{base}/unknown_fields/sources/{pointer.escape(source)}/source_document_id",
                    f"Storylines of one {source} document carry residuals of two documents ({sdid!r}, "
                    f"{entry.get('source_document_id')!r})",
                )
            )
        for ptr, value in entry["fields"].items():
            at = f"{base}/unknown_fields/sources/{pointer.escape(source)}/fields/{pointer.escape(ptr)}"
            if ptr in restored:
                # Copies of one value (a document's own keys, kept with every member) must agree.
                if not json_equal(restored[ptr], value):
                    problems.append(Problem("residual.conflict", at, f"{ptr} is kept twice with different values"))
                continue
            restored[ptr] = value
            problems.extend(_restore_one(doc, ptr, value, at, copies))
    if problems:
        raise MapcError(problems)
    return copies


def _restore_one(doc: dict[str, Any], ptr: str, value: Any, at: str, copies: Copies) -> Iterator[Problem]:
    try:
        tokens = pointer.parse(ptr)
    except pointer.PointerSyntaxError:
        yield Problem("residual.bad_pointer", at, f"{ptr!r} is not a JSON Pointer")
        return
    if not tokens:  # the whole document, kept because a hop through another format added to it
        if type(value) is not dict:
            yield Problem("residual.bad_pointer", at, "a residual at the root must be an object")
            return
        doc.clear()
        doc.update(value)
        return
    if not _place(doc, tokens, value, copies):
        yield Problem("residual.collision", at, f"{ptr} cannot be placed: a non-object stands on its path")


def _place(doc: dict[str, Any], tokens: tuple[str, ...], value: Any, copies: Copies) -> bool:
    """Set `value` at `tokens`, creating objects on the way (an existing value is replaced).

    Containers on the path are shallow-copied first, since the reverse may have placed a value of
    the Storyline there by reference; `copies` records each copy so later writes can follow it.
    """
    node: Any = doc
    for token in (*tokens[:-1], None):
        if type(node) is dict:
            key: Any = tokens[-1] if token is None else token
        elif type(node) is list and pointer.is_array_index(tokens[-1] if token is None else token):
            key = int(tokens[-1] if token is None else token)
            if key >= len(node):
                return False
        else:
            return False
        if token is None:
            node[key] = value
            return True
        nxt = node.get(key, MISSING) if type(node) is dict else node[key]
        if nxt is MISSING:
            nxt = {}
            copies[id(nxt)] = (nxt, nxt)  # made here: ours to change
        elif type(nxt) in (dict, list):
            if copies.get(id(nxt), (None, None))[1] is not nxt:  # not yet a copy of ours
                copy = nxt.copy()
                copies[id(nxt)] = (nxt, copy)  # the original is kept alive, so its id stays unique
                copies[id(copy)] = (copy, copy)
                nxt = copy
        else:
            return False
        node[key] = nxt
        node = nxt
    return False


def _roots(program: Program, stories: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Stories no other story lists as a child, after checking the tree is sound."""
    problems: list[Problem] = []
    by_id: dict[str, int] = {}
    for i, story in enumerate(stories):
        ident = document_id(story)
        if ident in by_id:
            problems.append(
                Problem("tree.duplicate_identity", f"/{i}", f"document id {ident!r} is also /{by_id[ident]}'s")
            )
        by_id.setdefault(ident, i)
    parent_of: dict[str, str] = {}
    for i, story in enumerate(stories):
        kids = story.get("children") if program.children is not None else None
        for j, kid in enumerate(kids or []):
            if kid not in by_id:
                problems.append(Problem("tree.unknown_child", f"/{i}/children/{j}", f"no Storyline has id {kid!r}"))
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
            problems.append(Problem("tree.unreachable", f"/{i}", "Storyline is in a cycle of /children links"))
    if problems:
        raise MapcError(problems)
    return roots
