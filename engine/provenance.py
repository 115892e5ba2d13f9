"""Keep a document whole through a hop: what format B cannot say about A's document rides along.

A Storyline made from format A and exported to format B loses what B has no place for (a user turn
in a format whose turns are all the agent's, a task field in a format of rows…). Before the export,
the hop is tried: A's document is rebuilt from the Storylines, and again from what B → Storyline
would give back; every value that differs becomes one more residual of source A, at its pointer in
A's document. Residuals of a source other than the target travel in B's `_storyline` envelope, and
A's reverse puts residuals back over what it rebuilds — so A → B → A gives A's document back, while
B's own values stay what B says. A value the hop adds where A had none cannot be removed by a
residual, so the nearest enclosing object is kept whole instead (the whole document, pointer "",
when the hop adds a key at its root).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from mapc.engine import envelope, pointer, run
from mapc.engine.mapped import Rebuilt
from mapc.engine.problems import MapcError
from mapc.engine.program import Program
from mapc.engine.values import MISSING, json_bytes, json_equal

Export = Callable[[str, list[dict[str, Any]]], Any]
Import = Callable[[str, bytes], list[dict[str, Any]]]
Rebuild = Callable[[Program, list[dict[str, Any]]], list[Rebuilt]]


def carry_home(
    stories: list[dict[str, Any]],
    target: str,
    programs: dict[str, Program],
    export: Export,
    read: Import,
    rebuild: Rebuild = run.reverse,
) -> list[dict[str, Any]]:
    """`stories` with the residuals that make a hop through `target` lossless for their own format.

    `programs` are the formats that can rebuild a document (by name); `export`/`read` convert
    Storylines to `target` and back; `rebuild` writes a format's documents from Storylines (as the
    export does).  Storylines of no such format, or of `target`, are unchanged.
    """
    out = list(stories)
    groups: dict[str, list[int]] = {}
    by_source = {p.spec.source: name for name, p in programs.items()}
    for i, story in enumerate(stories):
        for fmt in _home_formats(story, by_source):
            if fmt in programs and fmt != target:
                groups.setdefault(fmt, []).append(i)
    for fmt, indices in groups.items():
        program = programs[fmt]
        try:
            rebuilt = rebuild(program, [stories[i] for i in indices])
        except MapcError:
            continue  # not one of A's documents: nothing to keep for A
        across = _links_across(program, rebuilt, target, export, read)
        for doc in rebuilt:
            kept, links = _lost_in_hop(program, doc, target, export, read, rebuild)
            if len(doc.stories) == 1 and id(doc.stories[0].story) in across:
                links = {0: across[id(doc.stories[0].story)]}
            owners = {p: _owner(p, [m.carriers for m in doc.stories]) for p in kept}
            sdid = _document_sdid(program, doc)
            for n, m in enumerate(doc.stories):
                extra = {p: v for p, v in kept.items() if owners[p] in (n, None)}
                if extra or links.get(n):
                    at = next(i for i in indices if stories[i] is m.story)
                    base = out[at]  # what another format's hop home already added, if any
                    story = _with_residuals(base, program, doc.document, extra, sdid) if extra else base
                    out[at] = _with_links(story, links.get(n) or {})
    return out


def _home_formats(story: dict[str, Any], by_source: dict[str, str]) -> list[str]:
    """The formats whose documents `story` can give back: its origin's, and every format it holds
    residuals of (a document that came through another format first: A → B → C must keep what C
    loses of A's document too, not only of B's), in that order."""
    out = []
    origin = story.get("origin")
    fmt = origin.get("format") if type(origin) is dict else None
    if type(fmt) is str:
        out.append(fmt)
    uf = story.get("unknown_fields")
    sources = uf.get("sources") if type(uf) is dict else None
    for source in sources if type(sources) is dict else ():
        name = by_source.get(source)
        if name is not None and name not in out:
            out.append(name)
    return out


# The Storyline's own keys that tie a tree (or a task's attempts) together: a format without
# trees (one document per task, rows grouped by session) loses them, and without them A's
# document cannot be rebuilt; a format without a task loses the run and the attempt key that
# make a task's attempts one document (found by the hop law over generated task documents).
TREE_KEYS = ("trajectory", "parent", "children", "run", "attempt_id")


def _lost_in_hop(
    program: Program, doc: Rebuilt, target: str, export: Export, read: Import, rebuild: Rebuild
) -> tuple[dict[str, Any], dict[int, dict[str, Any]]]:
    """Pointers into A's document whose values A → target → A would not give back; and, by
    position of the Storyline, the tree keys (`TREE_KEYS`) the hop lost.

    When the hop cannot be tried to the end, what it would lose is unknown: A's document is kept
    whole (pointer ""), never nothing."""
    stories = original = [m.story for m in doc.stories]
    links: dict[int, dict[str, Any]] = {}
    try:
        hop = export(target, stories)
    except MapcError:
        # A document of one member of a tree of documents (a format writing each Storyline of a tree
        # as a stream of its own) cannot be exported alone, its links naming Storylines of other
        # documents: what the hop does to its own values is tried without them (the hop law over
        # generated trees of linked streams found the root's values lost through a tree format).
        alone = [{k: v for k, v in s.items() if k not in ("children", "parent")} for s in stories]
        if alone == stories:
            return {}, {}  # the export itself fails, and says why: nothing is written to carry anything for
        try:
            hop = export(target, alone)
        except MapcError:
            return {}, {}
        stories = alone
    whole = {"": doc.document}
    data = hop.encode() if isinstance(hop, str) else json_bytes(hop)
    if data is None:  # not JSON (only a Python caller hands such values over)
        return whole, {}
    try:
        back = read(target, data)
        if len(original) > 1 and len(back) == len(original):
            links = _lost_links(original, back)
            back = [_with_tree(b, links.get(n) or {}) for n, b in enumerate(back)]
        again = _rebuilt(program, back, rebuild)
        # One Storyline needs its tree keys only where they name its node in A's document (an
        # attempt key, lost by a format without attempts): else A's own residuals would
        # rebuild the document under another key than the one its envelope entries name.
        moved = len(stories) == len(back) == len(again) == 1 and again[0].stories[0].carrier != doc.stories[0].carrier
        if moved and (links := _lost_links(stories, back)):
            back = [_with_tree(back[0], links[0])]
            again = _rebuilt(program, back, rebuild)
    except MapcError:
        return whole, {}  # B's document does not read back as A's: keep all of A's
    if len(again) != 1:
        return whole, links
    gone = program.spec.rows is None  # a row corpus keeps its residuals inside rows: no removals there
    kept = dict(diff(doc.document, again[0].document, "", gone=gone))
    # Carrying residuals of A may change how A's document is written (a format's `finish` leaves
    # a document with A's own residuals as it is): diff again as the way back will see it.
    sdid = _document_sdid(program, doc)
    for _ in range(3):
        if not kept or len(back) != len(stories):
            break
        carriers = [m.carriers for m in doc.stories]
        owners = {p: _owner(p, carriers) for p in kept}
        marked = [
            _with_residuals(b, program, doc.document, {p: v for p, v in kept.items() if owners[p] in (n, None)}, sdid)
            for n, b in enumerate(back)
        ]
        try:
            again = rebuild(program, marked)
        except MapcError:
            # The way back refuses B's reading with these residuals (a stream written in place
            # whose turns the hop renumbered): no subset of A's values is known to suffice.
            return whole, links
        if len(again) != 1:
            break
        more = dict(diff(doc.document, again[0].document, "", gone=gone))
        if not more:
            break
        kept = {p: v for p, v in kept.items() if not any(p == q or p.startswith(q + "/") for q in more)} | more
    return kept, links


def _rebuilt(program: Program, back: list[dict[str, Any]], rebuild: Rebuild) -> list[Rebuilt]:
    try:
        return rebuild(program, back)
    except MapcError:
        # A's own residuals may not fit what B gave back (a residual inside a message B
        # dropped): diff against what B alone gives, so the kept values hold all of it.
        return rebuild(program, [_without_source(s, program.spec.source) for s in back])


def _links_across(
    program: Program, rebuilt: list[Rebuilt], target: str, export: Export, read: Import
) -> dict[int, dict[str, Any]]:
    """For a format writing each Storyline of a tree as a document of its own (a session log's
    sub-agent streams): by the Storyline (its id), the tree keys the hop through `target` of the
    whole tree loses (a target that writes trees keeps them; one without trees does not)."""
    members = [d.stories[0].story for d in rebuilt if len(d.stories) == 1]
    if len(members) < 2 or not any("children" in s or "parent" in s for s in members):
        return {}
    try:
        hop = export(target, members)
        data = hop.encode() if isinstance(hop, str) else json_bytes(hop)
        back = read(target, data) if data is not None else []
    except MapcError:
        return {}
    if len(back) != len(members):
        return {}
    tree = {"/children", "/parent", "/trajectory"}  # the links (a run and attempt key are no tree's own)
    out = {
        id(members[n]): {p: v for p, v in lost.items() if p in tree} for n, lost in _lost_links(members, back).items()
    }
    return {k: v for k, v in out.items() if v}


def _lost_links(stories: list[dict[str, Any]], back: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Per Storyline (matched by position), the tree keys it has and the hop's reading lacks."""
    out: dict[int, dict[str, Any]] = {}
    for n, (story, again) in enumerate(zip(stories, back, strict=True)):
        lost = {f"/{k}": story[k] for k in TREE_KEYS if k in story and k not in again}
        if lost:
            out[n] = lost
    return out


def _with_tree(story: dict[str, Any], links: dict[str, Any]) -> dict[str, Any]:
    """`story` with the carried tree keys put back where it has none (envelope.HUB's fields)."""
    missing = {p[1:]: v for p, v in links.items() if p[1:] not in story}
    return {**story, **missing} if missing else story


def _with_links(story: dict[str, Any], links: dict[str, Any]) -> dict[str, Any]:
    """`story` carrying `links` as fields of the hub's own source, for the target's envelope."""
    if not links:
        return story
    uf = dict(story.get("unknown_fields") or {})
    sources = dict(uf.get("sources") or {})
    sources[envelope.HUB] = {"source_document_id": story.get("trajectory") or story["session"], "fields": links}
    uf["sources"] = sources
    return {**story, "unknown_fields": uf}


class _Gone:
    """The value of a pointer the way back must leave out: the hop added it where A had none."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "GONE"


GONE = _Gone()


def diff(want: Any, have: Any, at: str, *, gone: bool = False) -> Iterator[tuple[str, Any]]:
    """(pointer, value) pairs that turn `have` into `want` when each value is put at its pointer.

    With `gone`, a key (or trailing array items) `have` has and `want` lacks is the pair
    (pointer, GONE), to be removed, so an object or array the hop added to is not kept whole."""
    if json_equal(want, have):
        return
    parts: list[tuple[str, Any]] | None = None
    if type(want) is dict and type(have) is dict and (gone or not set(have) - set(want)):
        parts = [
            p
            for key, value in want.items()
            for p in diff(value, have.get(key, MISSING), f"{at}/{pointer.escape(key)}", gone=gone)
        ]
        parts += [(f"{at}/{pointer.escape(key)}", GONE) for key in have if key not in want]
    elif type(want) is list and type(have) is list and (len(want) == len(have) or (gone and len(want) < len(have))):
        parts = [p for i, w in enumerate(want) for p in diff(w, have[i], f"{at}/{i}", gone=gone)]
        parts += [(f"{at}/{i}", GONE) for i in range(len(want), len(have))]
    if parts is None:
        yield at, want
    elif gone and any(v is GONE for _, v in parts) and _cost(parts) >= _cost([(at, want)]):
        yield at, want  # the object whole says it in fewer bytes than its changes and removals
    else:
        yield from parts


def _cost(pairs: list[tuple[str, Any]]) -> int:
    """About the bytes `pairs` take in an envelope (a removal: its pointer in the ABSENT list)."""
    total = 0
    for ptr, value in pairs:
        total += len(ptr) + 4
        if value is not GONE:
            data = json_bytes(value)
            total += len(data) if data is not None else 1 << 30
    return total


def _owner(ptr: str, carriers: list[tuple[str, ...]]) -> int | None:
    """The Storyline whose carrier is the nearest one above `ptr`; None (every Storyline) for a
    value of the document's own, as forward keeps a document's own residuals with each member."""
    best, length = None, -1
    for n, own in enumerate(carriers):
        for c in own:
            if (ptr == c or ptr.startswith(c + "/")) and len(c) > length:
                best, length = n, len(c)
    return best


def _without_source(story: dict[str, Any], source: str) -> dict[str, Any]:
    uf = story.get("unknown_fields")
    if type(uf) is not dict or source not in (uf.get("sources") or {}):
        return story
    sources = {k: v for k, v in uf["sources"].items() if k != source}
    rest = {k: v for k, v in story.items() if k not in ("unknown_fields", "unknown_key_counts")}
    return {**rest, "unknown_fields": {**uf, "sources": sources}} if sources else rest


def _document_sdid(program: Program, doc: Rebuilt) -> str:
    """The one `source_document_id` of A's residuals for every Storyline of `doc`: the one its
    Storylines' own residuals name, else the root Storyline's (the way back refuses Storylines of
    one document whose residuals name two)."""
    for m in doc.stories:
        entry = ((m.story.get("unknown_fields") or {}).get("sources") or {}).get(program.spec.source)
        if type(entry) is dict and type(entry.get("source_document_id")) is str:
            return str(entry["source_document_id"])
    return run.source_document_id(program, doc.document, doc.stories[0].story)


def _with_residuals(
    story: dict[str, Any], program: Program, doc: Any, extra: dict[str, Any], sdid: str | None = None
) -> dict[str, Any]:
    source = program.spec.source
    uf = dict(story.get("unknown_fields") or {})
    sources = dict(uf.get("sources") or {})
    entry = dict(sources.get(source) or {})
    if "source_document_id" not in entry:
        entry["source_document_id"] = sdid if sdid is not None else run.source_document_id(program, doc, story)
    values = {p: v for p, v in extra.items() if v is not GONE}
    removed = sorted(p for p, v in extra.items() if v is GONE)
    fields = {**values, **(entry.get("fields") or {})}
    if removed:
        fields[envelope.ABSENT] = sorted({*removed, *(fields.get(envelope.ABSENT) or [])})
    entry["fields"] = fields
    sources[source] = entry
    uf["sources"] = sources
    return {**story, "unknown_fields": uf}
