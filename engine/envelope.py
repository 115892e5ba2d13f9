"""The `_storyline` envelope (version 1, REFERENCE.md §2): foreign residuals inside a peripheral document.

A Storyline's `unknown_fields` of sources other than the target format cannot be said in that
format; on export they travel under a `_storyline` key, keyed by the carrier pointer of the node
that "is" each Storyline.  Which pointers are carriers comes from the spec (its document root and
nested documents), never from code here.

Where the key rides is the spec's `document.envelope` (default `/_storyline`, the document root;
a format with an extension slot names a place inside it, e.g. `/extra/_storyline`, so the
format's own validators accept the file).  The writer creates the slot's parent object when it
is absent and uses the root place when the parent is not a non-empty object (an empty one could
not be told from one it created); the reader accepts both places and drops a parent left empty.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from mapc.engine import pointer
from mapc.engine.problems import MapcError, Problem
from mapc.engine.values import MISSING, json_equal

KEY = "_storyline"
VERSION = 1
_AT = "/" + KEY


def take(doc: Any, at: str = _AT) -> tuple[Any, dict[str, dict[str, Any]]]:
    """Split `doc` into the document without its envelope and the carried sources by carrier.

    The envelope is read at `at` (the spec's place) or at the root.  Raises MapcError for an
    envelope that is not exactly of the version-1 shape, or for two envelopes.
    """
    if type(doc) is not dict:
        return doc, {}
    tokens = pointer.parse(at)
    parent = pointer.resolve(doc, tokens[:-1]) if at != _AT else MISSING
    nested = type(parent) is dict and KEY in parent
    if KEY not in doc and not nested:
        return doc, {}
    if KEY in doc and nested:
        raise MapcError.single("envelope.invalid", at, f"two _storyline envelopes: at {_AT} and at {at}")
    if nested:
        env, where = parent[KEY], at
        rest = _without(doc, tokens)
    else:
        env, where = doc[KEY], _AT
        rest = {k: v for k, v in doc.items() if k != KEY}
    problems = list(_shape_problems(env, where))
    if problems:
        raise MapcError(problems)
    return rest, env["unknown_fields"]["by_trajectory"]


def _without(doc: dict[str, Any], tokens: tuple[str, ...]) -> dict[str, Any]:
    """`doc` without the key at `tokens` (copying only the objects on the way), dropping the
    objects on the way that it leaves empty."""
    head, rest = tokens[0], tokens[1:]
    if not rest:
        return {k: v for k, v in doc.items() if k != head}
    inner = _without(doc[head], rest)
    if not inner:
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
    if type(doc) is not dict:
        problems.append(
            Problem("envelope.no_object_root", "", "foreign unknown fields require an object document root")
        )
        return problems
    value = {"unknown_fields": {"version": VERSION, "by_trajectory": by_trajectory}}
    if KEY in doc:
        problems.append(Problem("envelope.exists", _AT, "the document already has a _storyline key"))
        return problems
    holder, where = _holder(doc, at)
    if KEY in holder:
        problems.append(Problem("envelope.exists", where, "the document already has a _storyline key"))
    else:
        holder[KEY] = value
    return problems


def _holder(doc: dict[str, Any], at: str) -> tuple[dict[str, Any], str]:
    """The object that takes the envelope key, and its place: the parent of `at` (made when
    absent), or the root when that parent is not a non-empty object."""
    tokens = pointer.parse(at)
    node = doc
    for i, token in enumerate(tokens[:-1]):
        child = node.get(token, MISSING)
        if child is MISSING:
            child = node[token] = {}  # every later token is absent too
        elif type(child) is not dict or (not child and i == len(tokens) - 2):
            return doc, _AT
        else:
            child = node[token] = dict(child)  # the rebuilt document may share it with a Storyline
        node = child
    return node, at
