"""Values of keys a format defines that no Storyline field says: kept in `origin.kept`, not as unknown.

A mapping keeps what its reverse would not give back, by JSON Pointer into the source document,
so that A → Storyline → A is exact.  Some of those values are of keys the format itself defines
(an explicit null, a key read only under a condition, a variant shape of a known key): they are
not *unknown* fields, and `unknown_fields.sources.A` must not list them (issue 15 §7).  After the
forward mapping, `split` moves every residual of the format's own source whose key the format
defines at that place into the Storyline's provenance, ``origin.kept`` (the same shape as a
source's residual: ``{source_document_id, fields}``); before the reverse, `merged` puts them back
with the residuals, so the reverse sees exactly what it saw before.  Other formats do not read
`origin.kept`: a hop through one of them carries those values in its envelope (engine/provenance.py),
as any value it cannot say.

Which keys a format defines is data, never code here: the spec's known keys (`objects:`), its
conditionally read keys (`consume:`), and the properties its input schema declares at the place.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any

from mapc.engine import pointer
from mapc.engine.schema import load_schema
from mapc.engine.template import Template, Var

if TYPE_CHECKING:
    from mapc.engine.program import Program

KEPT = "kept"
_MAX_ALTERNATIVES = 64  # schema branches followed per level: bounded work for any (untrusted) schema


class Vocabulary:
    """The keys one format defines, by place in its documents (see the module docstring)."""

    def __init__(self, objects: list[tuple[Template, frozenset[str]]], consumed: list[Template], schema: Any) -> None:
        self._objects = objects
        self._consumed = consumed
        self._schema = schema if type(schema) is dict else None
        self._cache: dict[tuple[str, ...], bool] = {}

    def defines(self, ptr: str) -> bool:
        """Whether the last token of `ptr` is a key the format defines at that place (an array
        index is no key: an item kept whole is not a known key)."""
        tokens: tuple[str, ...] | list[str]
        if ptr[:1] == "/" and "~" not in ptr:  # no escapes: its tokens are the text between slashes
            tokens = ptr[1:].split("/")  # (every residual pointer is new text: parsing them was a fifth of a forward)
        else:
            try:
                tokens = pointer.parse(ptr)
            except pointer.PointerSyntaxError:
                return False
        if not tokens or tokens[-1].isdigit():
            return False
        shape = tuple(["#" if t.isdigit() else t for t in tokens])
        found = self._cache.get(shape)
        if found is None:
            found = self._cache[shape] = self._defines(tuple(tokens))
        return found

    def _defines(self, tokens: tuple[str, ...]) -> bool:
        parent, last = tokens[:-1], tokens[-1]
        for template, keys in self._objects:
            if (last in keys or "*" in keys) and _matches(template, parent):
                return True
        if any(_matches(t, tokens) for t in self._consumed):
            return True
        return self._schema is not None and _schema_defines(self._schema, tokens)


def _matches(template: Template, tokens: tuple[str, ...]) -> bool:
    if len(template.tokens) != len(tokens):
        return False
    return all(isinstance(t, Var) or t == s for t, s in zip(template.tokens, tokens, strict=True))


def _schema_defines(root: dict[str, Any], tokens: tuple[str, ...]) -> bool:
    """Whether the schema declares `tokens[-1]` as a property of an object at `tokens[:-1]`."""
    here = _alternatives(root, root)
    for token in tokens[:-1]:
        here = [c for s in here for c in _child(s, token, root)][:_MAX_ALTERNATIVES]
        if not here:
            return False
    return any(tokens[-1] in (s.get("properties") or {}) for s in here)


def _resolved(schema: Any, root: dict[str, Any]) -> Any:
    for _ in range(16):  # a chain of references, never a loop
        if type(schema) is not dict or type(schema.get("$ref")) is not str or not schema["$ref"].startswith("#"):
            return schema
        try:
            schema = pointer.resolve(root, pointer.parse(schema["$ref"][1:]))
        except (pointer.PointerSyntaxError, LookupError, TypeError):
            return None
    return None


def _alternatives(schema: Any, root: dict[str, Any], depth: int = 0) -> list[dict[str, Any]]:
    """`schema` and the subschemas that may apply beside it (allOf/anyOf/oneOf, if/then/else)."""
    schema = _resolved(schema, root)
    if type(schema) is not dict or depth > 8:
        return []
    out = [schema]
    for key in ("allOf", "anyOf", "oneOf"):
        for sub in schema.get(key) or () if type(schema.get(key)) is list else ():
            out += _alternatives(sub, root, depth + 1)
    for key in ("then", "else"):
        if key in schema:
            out += _alternatives(schema[key], root, depth + 1)
    return out[:_MAX_ALTERNATIVES]


def _child(schema: dict[str, Any], token: str, root: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    props = schema.get("properties")
    if type(props) is dict and token in props:
        out += _alternatives(props[token], root)
    patterns: Any = schema.get("patternProperties")
    for pattern, sub in patterns.items() if type(patterns) is dict else ():
        try:
            if re.search(pattern, token):
                out += _alternatives(sub, root)
        except re.error:
            continue
    if token.isdigit() and type(schema.get("items")) is dict:
        out += _alternatives(schema["items"], root)
    extra = schema.get("additionalProperties")
    if type(extra) is dict and not (type(props) is dict and token in props):
        out += _alternatives(extra, root)
    return out


@functools.cache
def _schema(name: str | None) -> Any:
    return load_schema(name) if name else None


# By program (its id, the program held so the id is not reused): a few specs are in use at a time.
_VOCABULARIES: dict[int, tuple[Program, Vocabulary]] = {}


def vocabulary(program: Program) -> Vocabulary:
    """The keys `program`'s format defines (made once per program)."""
    found = _VOCABULARIES.get(id(program))
    if found is not None:
        return found[1]
    spec = program.spec
    objects = [(t, keys) for t, keys, _ in spec.objects]
    consumed = [c.at for c in (spec.rows.consume if spec.rows is not None else ())]
    words = Vocabulary(objects, consumed, _schema(spec.input_schema))
    _VOCABULARIES[id(program)] = (program, words)
    while len(_VOCABULARIES) > 64:
        del _VOCABULARIES[next(iter(_VOCABULARIES))]
    return words


def split(story: dict[str, Any], program: Program) -> dict[str, Any]:
    """`story` with the residuals of its own format's source whose keys the format defines moved
    to ``origin.kept`` (the story itself when there are none)."""
    source = program.spec.source
    uf: Any = story.get("unknown_fields")
    entry: Any = (uf.get("sources") or {}).get(source) if type(uf) is dict else None
    fields: Any = entry.get("fields") if type(entry) is dict else None
    origin: Any = story.get("origin")
    if type(fields) is not dict or not fields or type(origin) is not dict:
        return story
    words = vocabulary(program)
    kept = {p: v for p, v in fields.items() if words.defines(p)}
    if not kept:
        return story
    rest = {p: v for p, v in fields.items() if p not in kept}
    sources = dict(uf["sources"])
    if rest:
        sources[source] = {**entry, "fields": rest}
    else:
        del sources[source]
    out = {k: v for k, v in story.items() if k not in ("unknown_fields", "unknown_key_counts")}
    if sources:
        out["unknown_fields"] = {**uf, "sources": sources}
    out["origin"] = {**origin, KEPT: {"source_document_id": entry.get("source_document_id", ""), "fields": kept}}
    return out


def merged(story: dict[str, Any], program: Program) -> dict[str, Any]:
    """`story` with its ``origin.kept`` back among its own source's residuals, as the forward
    mapping found them (the story itself when it keeps nothing for `program`'s format)."""
    origin: Any = story.get("origin")
    kept: Any = origin.get(KEPT) if type(origin) is dict else None
    if type(kept) is not dict or origin.get("format") != program.spec.name:
        return story
    source = program.spec.source
    found: Any = story.get("unknown_fields")
    uf: dict[str, Any] = dict(found) if type(found) is dict else {}
    sources = dict(uf.get("sources") or {})
    entry: Any = sources.get(source)
    fields = dict(kept.get("fields") or {})
    if type(entry) is dict:
        fields.update(entry.get("fields") or {})  # a value carried back wins over the kept one
        sources[source] = {**entry, "fields": fields}
    else:
        sources[source] = {"source_document_id": kept.get("source_document_id", ""), "fields": fields}
    uf["sources"] = sources
    out = {**story, "unknown_fields": uf, "origin": {k: v for k, v in origin.items() if k != KEPT}}
    return out
