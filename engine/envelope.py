"""The `_storyline` envelope (version 1, docs/envelope.md): foreign residuals inside a peripheral document.

A Storyline's `unknown_fields` of sources other than the target format cannot be said in that
format; on export they travel under a `_storyline` key, keyed by the carrier pointer of the node
that "is" each Storyline.  Which pointers are carriers comes from the spec (its document root and
nested documents), never from code here.

Where the key rides is the spec's `document.envelope` (default `/_storyline`, the document root;
a format with an extension slot names a place inside it, e.g. `/extra/_storyline`, so the
format's own validators accept the file).  The writer creates the slot's parent object when it
is absent (the reader drops a parent it leaves empty); when the parent was an empty object
already, the envelope notes it (source `_envelope_slot` at carrier "") so the reader keeps it;
when a node on the way is not an object, the envelope goes to the root place.  The reader
accepts both places, never both at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from mapc.engine import pointer
from mapc.engine.problems import MapcError, Problem
from mapc.engine.values import MISSING, json_equal

KEY = "_storyline"
VERSION = 1
# The hub's own source in an envelope: Storyline keys a format has no place for at all (the tree
# keys, engine/provenance.py), put back on reading where the Storyline has none of its own.
HUB = "storyline"
# The envelope's own note, at carrier "": the object that holds it was an empty object before
# (fields {pointer of that object: {}}), so reading leaves it empty rather than dropping it.
SLOT = "_envelope_slot"
_AT = "/" + KEY
# A field of a format's own source at this pointer (under the document root's reserved
# `_storyline` key, which no document of the format holds) lists pointers of its document that
# the way back leaves out: a hop through another format added them where the document had none
# (engine/provenance.py; applied by engine/convert.rebuild).  So an object a hop added to is
# carried as the keys it lost and the keys to remove, not whole.
ABSENT = "/" + KEY + "/absent"


def take(doc: Any, at: str = _AT) -> tuple[Any, dict[str, dict[str, Any]]]:
    """Split `doc` into the document without its envelope and the carried sources by carrier.

    The envelope is read at `at` (the spec's place) or at the root.  Raises MapcError for an
    envelope that is not exactly of the version-1 shape, or for two envelopes.
    """
    if type(doc) is list:  # a stream of records: the envelope rides in the record `at` names
        return _take_in_list(doc, at)
    if type(doc) is not dict:
        return doc, {}
    tokens = pointer.parse(at)
    parent = pointer.resolve(doc, tokens[:-1]) if at != _AT else MISSING
    nested = type(parent) is dict and KEY in parent
    if KEY not in doc and not nested:
        return doc, {}
    if KEY in doc and nested:
        raise MapcError.single("envelope.invalid", at, f"two _storyline envelopes: at {_AT} and at {at}")
    env, where = (parent[KEY], at) if nested else (doc[KEY], _AT)
    problems = list(_shape_problems(env, where))
    if problems:
        raise MapcError(problems)
    carried = env["unknown_fields"]["by_trajectory"]
    if not nested:
        return {k: v for k, v in doc.items() if k != KEY}, carried
    root = carried.get("", {}).get("sources", {})
    kept_empty = SLOT in root and pointer.format(tokens[:-1]) in root[SLOT]["fields"]
    if SLOT in root:
        carried = _without_slot_note(carried)
    return _without(doc, tokens, keep_empty=kept_empty), carried


def _take_in_list(doc: list[Any], at: str) -> tuple[Any, dict[str, dict[str, Any]]]:
    tokens = pointer.parse(at)
    if len(tokens) < 2 or not pointer.is_array_index(tokens[0]) or int(tokens[0]) >= len(doc):
        return doc, {}
    i = int(tokens[0])
    inner, carried = take(doc[i], pointer.format(tokens[1:]))
    if not carried:
        return doc, {}
    return [*doc[:i], inner, *doc[i + 1 :]], carried


def _without_slot_note(carried: dict[str, Any]) -> dict[str, Any]:
    sources = {k: v for k, v in carried[""]["sources"].items() if k != SLOT}
    rest = {c: e for c, e in carried.items() if c != ""}
    return {"": {"sources": sources}, **rest} if sources else rest


def _without(doc: dict[str, Any], tokens: tuple[str, ...], keep_empty: bool = False) -> dict[str, Any]:
    """`doc` without the key at `tokens` (copying only the objects on the way), dropping the
    objects on the way that it leaves empty (the writer made them), unless `keep_empty`."""
    head, rest = tokens[0], tokens[1:]
    if not rest:
        return {k: v for k, v in doc.items() if k != head}
    inner = _without(doc[head], rest, keep_empty)
    if not inner and not keep_empty:
        return {k: v for k, v in doc.items() if k != head}
    return {**doc, head: inner}


def _shape_problems(env: Any, where: str = _AT) -> Iterator[Problem]:
    if type(env) is not dict or set(env) != {"unknown_fields"}:
        yield Problem("envelope.invalid", where, 'invalid _storyline envelope: expected {"unknown_fields": {...}}')
        return
    uf = env["unknown_fields"]
    at = where + "/unknown_fields"
    if type(uf) is not dict:
        yield Problem("envelope.invalid", at, "invalid _storyline envelope: unknown_fields must be an object")
        return
    if "version" not in uf:
        yield Problem("envelope.invalid", at, "invalid _storyline envelope: missing version")
        return
    if not json_equal(uf["version"], VERSION):
        yield Problem(
            "envelope.unsupported_version",
            at + "/version",
            f"unsupported _storyline envelope version {uf['version']!r}; expected {VERSION}",
        )
        return
    extra = set(uf) - {"version", "by_trajectory"}
    if extra or type(uf.get("by_trajectory")) is not dict:
        yield Problem(
            "envelope.invalid",
            at,
            "invalid _storyline envelope: expected exactly version and a by_trajectory object",
        )
        return
    for carrier, entry in uf["by_trajectory"].items():
        cat = f"{at}/by_trajectory/{pointer.escape(carrier)}"
        if not pointer.is_valid(carrier):
            yield Problem("envelope.bad_carrier", cat, f"carrier {carrier!r} is not a JSON Pointer")
            continue
        if type(entry) is not dict or set(entry) != {"sources"} or type(entry["sources"]) is not dict:
            yield Problem("envelope.invalid", cat, 'invalid _storyline envelope: expected {"sources": {...}}')
            continue
        for source, body in entry["sources"].items():
            sat = f"{cat}/sources/{pointer.escape(source)}"
            if (
                type(body) is not dict
                or set(body) != {"source_document_id", "fields"}
                or type(body["source_document_id"]) is not str
                or type(body["fields"]) is not dict
            ):
                yield Problem(
                    "envelope.invalid",
                    sat,
                    "invalid _storyline envelope: a source is {source_document_id: string, fields: object}",
                )
                continue
            for ptr in body["fields"]:
                if not pointer.is_valid(ptr):
                    yield Problem(
                        "envelope.bad_pointer",
                        f"{sat}/fields/{pointer.escape(ptr)}",
                        f"field key {ptr!r} is not a JSON Pointer",
                    )


def attach(carried: dict[str, dict[str, Any]], stories: dict[str, dict[str, Any]], own_source: str) -> list[Problem]:
    """Merge carried sources into the Storylines bound to their carriers (`stories`, by carrier).

    Returns the problems: unbound carrier, the target's own source carried, conflicting ids or values.
    """
    problems: list[Problem] = []
    for carrier, entry in carried.items():
        cat = f"{_AT}/unknown_fields/by_trajectory/{pointer.escape(carrier)}"
        story = stories.get(carrier)
        if story is None:
            problems.append(
                Problem("envelope.carrier_unbound", cat, f"carrier {carrier!r} is not bound to a trajectory")
            )
            continue
        for source, body in entry["sources"].items():
            sat = f"{cat}/sources/{pointer.escape(source)}"
            if source == own_source:
                problems.append(
                    Problem(
                        "envelope.own_source",
                        sat,
                        f"the envelope must not carry the target source {source!r}",
                    )
                )
                continue
            if source == HUB:
                for ptr, value in body["fields"].items():
                    key = pointer.parse(ptr)
                    if len(key) == 1 and key[0] not in story:
                        story[key[0]] = value
                continue
            problems.extend(_merge(story, source, body, sat))
    return problems


def _merge(story: dict[str, Any], source: str, body: dict[str, Any], at: str) -> Iterator[Problem]:
    if not body["fields"]:
        return
    sources = story.setdefault("unknown_fields", {}).setdefault("sources", {})
    have = sources.get(source)
    if have is None:
        sources[source] = {"source_document_id": body["source_document_id"], "fields": dict(body["fields"])}
        return
    if have["source_document_id"] != body["source_document_id"]:
        yield Problem(
            "envelope.conflict",
            at + "/source_document_id",
            f"source {source!r} already has document id {have['source_document_id']!r}",
        )
        return
    for ptr, value in body["fields"].items():
        old = have["fields"].get(ptr, MISSING)
        if old is MISSING:
            have["fields"][ptr] = value
        elif not json_equal(old, value):
            yield Problem(
                "envelope.conflict",
                f"{at}/fields/{pointer.escape(ptr)}",
                f"{ptr} carried twice with different values",
            )


def foreign_sources(story: dict[str, Any], own_source: str) -> dict[str, Any]:
    """The Storyline's sources other than `own_source` that have at least one field."""
    sources = (story.get("unknown_fields") or {}).get("sources") or {}
    return {s: b for s, b in sources.items() if s != own_source and b.get("fields")}


def write(doc: Any, carriers: Iterable[tuple[str, dict[str, Any]]], own_source: str, at: str = _AT) -> list[Problem]:
    """Add the envelope to `doc` (at `at`, see the module docstring) for every (carrier,
    Storyline) with foreign residuals."""
    by_trajectory: dict[str, Any] = {}
    problems: list[Problem] = []
    for carrier, story in carriers:
        foreign = foreign_sources(story, own_source)
        if not foreign:
            continue
        if pointer.resolve(doc, pointer.parse(carrier)) is MISSING:
            problems.append(Problem("envelope.carrier_missing", carrier, f"carrier {carrier!r} is not in the output"))
            continue
        slot = by_trajectory.setdefault(carrier, {"sources": {}})["sources"]
        for source, body in foreign.items():
            slot[source] = {
                "source_document_id": body.get("source_document_id", ""),
                "fields": body["fields"],
            }
    if not by_trajectory:
        return problems
    tokens = pointer.parse(at)
    if type(doc) is list and len(tokens) > 1 and pointer.is_array_index(tokens[0]) and int(tokens[0]) < len(doc):
        i = int(tokens[0])  # a stream of records: the envelope rides in one of them
        if type(doc[i]) is not dict:
            return [
                *problems,
                Problem("envelope.no_object_root", f"/{i}", "the record that carries the envelope is not an object"),
            ]
        doc[i] = dict(doc[i])  # the record may be a residual the Storyline still holds
        doc, at = doc[i], pointer.format(tokens[1:])
    if type(doc) is not dict:
        problems.append(
            Problem("envelope.no_object_root", "", "foreign unknown fields require an object document root")
        )
        return problems
    value = {"unknown_fields": {"version": VERSION, "by_trajectory": by_trajectory}}
    if KEY in doc:
        problems.append(Problem("envelope.exists", _AT, "the document already has a _storyline key"))
        return problems
    holder, where, was_empty = _holder(doc, at)
    if KEY in holder:
        problems.append(Problem("envelope.exists", where, "the document already has a _storyline key"))
        return problems
    if was_empty is not None:
        note = {"source_document_id": "", "fields": {was_empty: {}}}
        by_trajectory.setdefault("", {"sources": {}})["sources"][SLOT] = note
    holder[KEY] = value
    return problems


def _holder(doc: dict[str, Any], at: str) -> tuple[dict[str, Any], str, str | None]:
    """The object that takes the envelope key, its place, and the pointer of that object when it
    was an empty object already (None otherwise): the parent of `at` (made when absent), or the
    root when a node on the way is not an object."""
    tokens = pointer.parse(at)
    node = doc
    was_empty = None
    for i, token in enumerate(tokens[:-1]):
        child = node.get(token, MISSING)
        if child is MISSING:
            child = node[token] = {}  # every later token is absent too
        elif type(child) is not dict:
            return doc, _AT, None
        else:
            if not child and i == len(tokens) - 2:
                was_empty = pointer.format(tokens[:-1])
            child = node[token] = dict(child)  # the rebuilt document may share it with a Storyline
        node = child
    return node, at, was_empty
