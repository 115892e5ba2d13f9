"""Span-tree formats (`document: {spans: …}`): trace files of nested spans, run as a codec.

A trace file is not a tree of the Storyline's shape: it is flat lists of spans inside envelope
levels, each span linked to its parent by id, with its values in a *keyed attribute list*
(`[{key, value: {TYPE: v}}]`), and ids that a writer must make up.  A spec of this kind
(`mappings/traces/NAME.yaml`, the catalog's `traces` package) says all of that shape as data, and
names two functions for the format's own reading of the spans:

```yaml
document:
  spans:
    nest: [outer, inner, spans]                  # the envelope levels; the last one holds the spans
    envelope: [{…}, {…}]                         # what the writer puts beside each level's list
    ids: {trace: T, span: S, parent: P, trace_bytes: 16, span_bytes: 8}   # hex ids of these sizes
    times: {start: START, end: END, min: 0}      # integer text, at least `min`; an end before its start is the start
    after: {K: V}                                # constant span fields written last
    attributes: {at: attrs, key: key, value: value, list: values,
                 read: {TYPE: int | list | keyed},   # any other type: the value as it is
                 write: {bool: TYPE, int: TYPE, string: TYPE, other: TYPE}}
    kind: ATTRIBUTE                              # the attribute that tells span kinds apart
    root: KIND                                   # a trajectory's span; the others belong to the nearest above
    without_root: {when: KIND}                   # no root, but spans of this kind: each trace is one
    trace_id: [trace, "{root}"]                  # hash inputs of a trace id ({root}: the root Storyline)
    read: fn                                     # fn(root, members, roots, context, key) -> (story, whole)
    write: fn                                    # fn(story, context) -> span drafts
    codes: {invalid: …, bad_id: …, no_root: …}   # the problems' codes
    indent: 2
    table: {ATTRIBUTE: STORYLINE-POINTER}        # what each attribute says (`mapc spec table`)
    tables_schema: NAME                          # schemas/NAME.schema.json: what the functions read
```

A spec is untrusted: `parse` checks it against ``schemas/span-tree-spec.schema.json``, its
`tables` against the schema `tables_schema` names (the tables its functions read), and that the
functions it names are registered, each problem at its JSON Pointer in the spec
(`mapc spec lint` reports the same problems).

Reading: the file is parsed (a key repeated in one object refused unless the options allow it),
the spans are flattened with their pointers and their ids checked as hex of the stated size,
their attribute lists read into objects, and each span that is not a root joins the nearest root
above it by parent id (*nesting by parent span id*); `read` makes one Storyline per root from its
spans in start order, and says whether the file carried the whole Storyline.  When it did not,
nothing is lost by construction: the Storyline is written back to drafts, each span is compared
with the draft of its kind in the same place, and what the draft does not give back (attributes,
span fields, the file's own ids, spans no draft stands for) becomes the Storyline's
`unknown_fields` at its pointer, with the spans of no root and the envelope levels' own values
(kept by the first such Storyline).

Writing: one trace per tree of parent and child Storylines, parents first.  `write` gives each
Storyline's spans as drafts `{id: [parts], parent: index | None, fields: {…}, start, end,
attributes: [[key, value], …]}`, its root span first; the engine makes the ids (*hashed ids*:
BLAKE3 of the parts joined by NUL, as hex of the stated size; a trace's from `trace_id` with the
root Storyline's identity), links each root span to its parent Storyline's (`parent: None`) and
the others to the draft they name, and writes the attribute lists by the values' JSON types
(integers as text, values that are neither strings, integers nor booleans as compact JSON text).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
from blake3 import blake3

from mapc.engine import canonical, duplicates, functions, pointer, residual
from mapc.engine.codecs import Codec
from mapc.engine.options import DEFAULT, Options
from mapc.engine.problems import MapcError, Problem
from mapc.engine.schema import compiled_validator
from mapc.engine.views import document_id

_HEX = frozenset("0123456789abcdefABCDEF")


@dataclass(frozen=True, slots=True)
class Span:
    """One span as read: its pointer in the file, the span object, its attributes as an object,
    and its position among the file's spans (a writer's own order, where start times may not be)."""

    at: str
    raw: dict[str, Any]
    attrs: dict[str, Any]
    n: int = 0


@dataclass(frozen=True)
class SpanSpec:
    """A span-tree format, as its spec says it (see the module docstring)."""

    name: str
    source: str
    title: str
    what: str
    paths: tuple[str, ...]
    nest: tuple[str, ...]
    envelope: tuple[dict[str, Any], ...]
    trace_key: str
    span_key: str
    parent_key: str
    trace_bytes: int
    span_bytes: int
    start_key: str
    end_key: str
    time_min: int | None
    after: dict[str, Any]
    attributes_key: str
    key_key: str
    value_key: str
    read_types: dict[str, str]
    list_key: str
    write_types: dict[str, str]
    kind: str
    root: str
    without_root: str | None
    trace_id: tuple[str, ...]
    read: str
    write: str
    codes: dict[str, str]
    indent: int | None
    table: dict[str, str] = field(default_factory=dict)
    tables: dict[str, Any] = field(default_factory=dict)


@dataclass
class Context:
    """What `read` and `write` are given: the spec's tables and a JSON-text reader of attributes."""

    spec: SpanSpec
    allow_duplicate_keys: bool = False

    @property
    def tables(self) -> dict[str, Any]:
        return self.spec.tables

    def json(self, value: Any, at: str, shape: type | None = None) -> Any:
        """The JSON an attribute's text holds (a value that is no text stays as it is); a key
        repeated in one of its objects is refused (at the attribute) unless allowed, and so is a
        value that is not of `shape` (`dict`, or `list`: a list of objects)."""
        if type(value) is not str:
            return self._shaped(value, at, shape)
        try:
            out = orjson.loads(value)
        except orjson.JSONDecodeError:
            raise _fail(self.spec.codes["invalid"], at, "expected JSON text in this attribute") from None
        if not self.allow_duplicate_keys:
            found = duplicates.problems_of(value, out)
            if found:
                where = found[0].pointer
                raise _fail("json.duplicate_key", at, f"the JSON text of this attribute repeats a key (at {where})")
        return self._shaped(out, at, shape)

    def _shaped(self, value: Any, at: str, shape: type | None) -> Any:
        if shape is dict and type(value) is not dict:
            raise _fail(self.spec.codes["invalid"], at, "expected this attribute to hold an object")
        if shape is list and (type(value) is not list or not all(type(v) is dict for v in value)):
            raise _fail(self.spec.codes["invalid"], at, "expected this attribute to hold a list of objects")
        return value


SCHEMA = "span-tree-spec"


def is_span_tree(data: Any) -> bool:
    """Whether a spec file's top level is of this kind (`document: {spans: …}`)."""
    return type(data) is dict and type(data.get("document")) is dict and "spans" in data["document"]


def iter_spec_problems(data: Any, *, check_functions: bool = True) -> Iterator[Problem]:
    """Every problem of the span-tree spec `data`, each at its JSON Pointer in the spec: its shape
    against ``schemas/span-tree-spec.schema.json`` (``spec.schema``), then (with `check_functions`)
    the functions it names that are not registered (``spec.unknown_function``)."""
    shaped = False
    for problem in compiled_validator(SCHEMA).iter_problems(data):
        shaped = True
        yield Problem("spec.schema", problem.pointer, f"{problem.message} (schemas/{SCHEMA}.schema.json)")
    if shaped:
        return
    tables_schema = data["document"]["spans"].get("tables_schema")
    if tables_schema is not None:
        try:
            validator = compiled_validator(tables_schema)
        except MapcError:
            yield Problem("spec.unknown_schema", "/document/spans/tables_schema", f"no schema {tables_schema!r}")
            return
        for problem in validator.iter_problems(data.get("tables") or {}):
            where = f"/tables{problem.pointer}"
            yield Problem("spec.schema", where, f"{problem.message} (schemas/{tables_schema}.schema.json)")
    for role in ("read", "write") if check_functions else ():
        name = data["document"]["spans"][role]
        if functions.lookup(name) is None:
            yield Problem("spec.unknown_function", f"/document/spans/{role}", f"no function {name!r}")


def parse(data: dict[str, Any], tables: dict[str, Any], *, check_functions: bool = True) -> SpanSpec:
    """The span-tree spec `data` (a spec file's top level), checked first: MapcError holding
    every problem at its pointer in the spec (`iter_spec_problems`).  Without `check_functions`
    its functions are looked up when it runs (``spec.unknown_function`` then)."""
    problems = list(iter_spec_problems(data, check_functions=check_functions))
    if problems:
        raise MapcError(problems)
    spans = data["document"]["spans"]
    ids, times, attrs = spans["ids"], spans["times"], spans["attributes"]
    detect = data.get("detect") or {}
    return SpanSpec(
        name=str(data["name"]),
        source=str(data.get("source", data["name"])),
        title=str(data.get("title", data["name"])),
        what=str(spans.get("what", "a trace request")),
        paths=tuple(detect.get("paths") or ()),
        nest=tuple(spans["nest"]),
        envelope=tuple(spans.get("envelope") or ()),
        trace_key=ids["trace"],
        span_key=ids["span"],
        parent_key=ids["parent"],
        trace_bytes=int(ids["trace_bytes"]),
        span_bytes=int(ids["span_bytes"]),
        start_key=times["start"],
        end_key=times["end"],
        time_min=times.get("min"),
        after=dict(spans.get("after") or {}),
        attributes_key=attrs["at"],
        key_key=attrs.get("key", "key"),
        value_key=attrs.get("value", "value"),
        read_types=dict(attrs.get("read") or {}),
        list_key=attrs.get("list", "values"),
        write_types=dict(attrs["write"]),
        kind=spans["kind"],
        root=spans["root"],
        without_root=(spans.get("without_root") or {}).get("when"),
        trace_id=tuple(str(p) for p in spans["trace_id"]),
        read=spans["read"],
        write=spans["write"],
        codes=dict(spans["codes"]),
        indent=spans.get("indent"),
        table=dict(spans.get("table") or {}),
        tables=dict(tables or {}),
    )


def codec(spec: SpanSpec) -> Codec:
    """The codec that runs `spec` both ways."""
    return Codec(
        name=spec.name,
        source=spec.source,
        decode=lambda data, path=None, options=DEFAULT: decode(spec, data, options),
        encode=lambda stories: encode(spec, stories),
        path_patterns=spec.paths,
        count_tree=count_tree(spec),
        description=spec.title,
    )


def markdown(spec: SpanSpec) -> str:
    """The spec's table as Markdown: attribute | Storyline pointer(s)."""
    rows = [f"| `{key}` | {_pointers(to)} |" for key, to in spec.table.items()]
    return "\n".join([f"# {spec.name}: {spec.title}", "", "| attribute | Storyline |", "|---|---|", *rows]) + "\n"


def _pointers(text: str) -> str:
    # pointers as code, a note (no pointer: what the attribute is for) as it is
    return ", ".join(f"`{p}`" for p in text.split()) if text.startswith("/") else text.replace("|", "\\|")


def count_tree(spec: SpanSpec) -> residual.Tree:
    """Array positions of the file, for counting kept values: each level's list, the spans'
    attribute lists."""
    tree: residual.Tree = {spec.attributes_key: {residual.ANY_STRICT_INDEX: {}}}
    for level in reversed(spec.nest):
        tree = {level: {residual.ANY_STRICT_INDEX: tree}}
    return tree


def _fail(code: str, at: str, message: str) -> MapcError:
    return MapcError([Problem(code, at, message)])


def _function(name: str) -> Callable[..., Any]:
    fn = functions.lookup(name)
    if fn is None:
        raise MapcError.single("spec.unknown_function", "/document/spans", f"no function {name!r}")
    return fn.fn


# --- keyed attribute lists ---------------------------------------------------------------------


def attribute(spec: SpanSpec, key: str, value: Any) -> dict[str, Any]:
    """One `{key, value: {TYPE: v}}` entry, its type from the value's JSON type."""
    types = spec.write_types
    typed: dict[str, Any]
    if type(value) is bool:
        typed = {types["bool"]: value}
    elif type(value) is int:
        typed = {types["int"]: str(value)}
    elif type(value) is str:
        typed = {types["string"]: value}
    else:
        typed = {types["other"]: orjson.dumps(value).decode()}
    return {spec.key_key: key, spec.value_key: typed}


def _value(spec: SpanSpec, v: Any, at: str = "") -> Any:
    """A typed value read (`{TYPE: v}`); a value its type cannot be is refused at `at`."""
    if type(v) is not dict or len(v) != 1:
        return None
    ((kind, inner),) = v.items()
    how = spec.read_types.get(kind)
    if how == "int":
        if type(inner) is int:
            return inner
        if type(inner) is not str or not inner.lstrip("-").isdigit() or not inner.isascii():
            raise _fail(spec.codes["invalid"], f"{at}/{kind}", "expected an integer (as text)")
        return int(inner)
    if how in ("list", "keyed"):
        items = (inner if type(inner) is dict else {}).get(spec.list_key, [])
        if type(items) is not list:
            raise _fail(spec.codes["invalid"], f"{at}/{kind}/{spec.list_key}", "expected a list")
        if how == "list":
            return [_value(spec, x, f"{at}/{kind}/{spec.list_key}/{n}") for n, x in enumerate(items)]
        return _keyed(spec, items, f"{at}/{kind}/{spec.list_key}", "an object")
    return inner


def _keyed(spec: SpanSpec, items: list[Any], at: str, what: str) -> dict[str, Any]:
    """A list of `{key, value}` entries (at `at`) read as an object; an entry that is no such
    object, or that repeats a key (OTLP keys are unique: keeping one value would drop the other
    silently), is refused at its pointer."""
    out = {}
    first: dict[str, int] = {}
    for n, kv in enumerate(items):
        here = f"{at}/{n}"
        if type(kv) is not dict or type(kv.get(spec.key_key)) is not str:
            raise _fail(spec.codes["invalid"], here, f"expected {what} with a string {spec.key_key!r}")
        key = kv[spec.key_key]
        if key in first:
            raise _fail(
                spec.codes["invalid"],
                f"{here}/{spec.key_key}",
                f"expected a key of its own: {key!r} is also at {at}/{first[key]}",
            )
        first[key] = n
        out[key] = _value(spec, kv.get(spec.value_key), f"{here}/{spec.value_key}")
    return out


def attributes(spec: SpanSpec, span: dict[str, Any], at: str = "") -> dict[str, Any]:
    """A span's attribute list read as an object; an entry that is no `{key, value}` object, that
    repeats a key, or a value its type cannot be, is refused at its pointer."""
    listed = span.get(spec.attributes_key)
    if listed is None:
        return {}
    if type(listed) is not list:
        raise _fail(spec.codes["invalid"], f"{at}/{spec.attributes_key}", "expected a list of attributes")
    return _keyed(spec, listed, f"{at}/{spec.attributes_key}", "an attribute: an object")


# --- reading -----------------------------------------------------------------------------------


def _flatten(spec: SpanSpec, doc: Any) -> list[Span]:
    first = spec.nest[0]
    if type(doc) is not dict or type(doc.get(first)) is not list:
        raise _fail(spec.codes["invalid"], "", f'expected {spec.what}: {{"{first}": [...]}}')
    level: list[tuple[str, Any]] = [("", doc)]
    for key in spec.nest:
        level = [
            (f"{at}/{key}/{n}", item)
            for at, node in level
            for n, item in enumerate((node if type(node) is dict else {}).get(key) or [])
        ]
    out: list[Span] = []
    for at, span in level:
        if type(span) is not dict:
            raise _fail(spec.codes["invalid"], at, "a span is an object")
        for key, size in ((spec.trace_key, 2 * spec.trace_bytes), (spec.span_key, 2 * spec.span_bytes)):
            value = span.get(key)
            if type(value) is not str or len(value) != size or any(c not in _HEX for c in value):
                raise _fail(spec.codes["bad_id"], f"{at}/{key}", f"expected {size} hex digits")
        parent = span.get(spec.parent_key)
        if parent not in (None, "") and (
            type(parent) is not str or len(parent) != 2 * spec.span_bytes or any(c not in _HEX for c in parent)
        ):
            raise _fail(spec.codes["bad_id"], f"{at}/{spec.parent_key}", f"expected {2 * spec.span_bytes} hex digits")
        for key in (spec.start_key, spec.end_key):
            value = span.get(key)
            if value is not None and not (
                type(value) is int or (type(value) is str and value.isdigit() and value.isascii())
            ):
                raise _fail(spec.codes["invalid"], f"{at}/{key}", "expected a time: integer nanoseconds (as text)")
        out.append(Span(at, span, attributes(spec, span, at), len(out)))
    return out


def _envelope_values(spec: SpanSpec, doc: dict[str, Any]) -> dict[str, Any]:
    """Every level's own values beyond its list, at their pointers."""
    out: dict[str, Any] = {}
    level: list[tuple[str, Any]] = [("", doc)]
    for key in spec.nest:
        below: list[tuple[str, Any]] = []
        for at, node in level:
            if type(node) is dict:
                out.update((pointer.join(at, k), v) for k, v in node.items() if k != key)
                below.extend((f"{at}/{key}/{n}", item) for n, item in enumerate(node.get(key) or []))
        level = below
    return out


def decode(spec: SpanSpec, data: bytes, options: Options = DEFAULT) -> list[dict[str, Any]]:
    """The Storylines of a trace file: one per root span (one per trace when there is none and
    `without_root` allows it)."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise _fail("json.invalid", "", f"not valid JSON: {exc}") from None
    repeated = [] if options.allow_duplicate_keys else duplicates.problems_of(data, doc)
    if repeated:
        raise MapcError(repeated)
    spans = _flatten(spec, doc)
    by_id = {s.raw[spec.span_key].lower(): s for s in spans}
    roots: list[Span | None] = [s for s in spans if s.attrs.get(spec.kind) == spec.root]
    per_trace = not roots
    if per_trace and (spec.without_root is None or not any(s.attrs.get(spec.kind) == spec.without_root for s in spans)):
        raise _fail(spec.codes["no_root"], "", f"no {spec.root} span: nothing says where a trajectory is")
    keys = (
        list(dict.fromkeys(s.raw[spec.trace_key].lower() for s in spans))
        if per_trace
        else [s.raw[spec.span_key].lower() for s in roots if s is not None]
    )
    root_ids = set(keys)

    homes: dict[str, str | None] = {}  # span id -> its root, for every span walked past (linear time)

    def owner(span: Span) -> str | None:
        if per_trace:
            return str(span.raw[spec.trace_key]).lower()
        path: list[str] = []
        parent = (span.raw.get(spec.parent_key) or "").lower()
        home: str | None = None
        while parent and len(path) < len(spans):  # a cycle of parents ends here
            if parent in root_ids:
                home = parent
                break
            if parent in homes:
                home = homes[parent]
                break
            path.append(parent)
            up = by_id.get(parent)
            parent = ((up.raw.get(spec.parent_key) if up is not None else "") or "").lower()
        homes.update(dict.fromkeys(path, home))
        return home

    members: dict[str, list[Span]] = {k: [] for k in keys}
    orphans: dict[str, Any] = {}
    for s in spans:
        if per_trace or s.raw[spec.span_key].lower() not in root_ids:
            home = owner(s)
            if home is None:
                orphans[s.at] = s.raw
            else:
                members[home].append(s)
    read = _function(spec.read)
    ctx = Context(spec, options.allow_duplicate_keys)
    real_roots = [s for s in roots if s is not None]
    stories = []
    first_kept = True
    for k, key in enumerate(keys):
        root = None if per_trace else real_roots[k]
        own = sorted(members[key], key=lambda m: int(m.raw.get(spec.start_key) or 0))
        story, whole = read(root, own, real_roots, ctx, key)
        if not whole:
            kept = _not_given_back(spec, story, root, own, ctx)
            if first_kept:
                kept.update(orphans)
                kept.update(_envelope_values(spec, doc))
                first_kept = False
            _keep(spec, story, kept, doc)
        stories.append(story)
    return stories


def _same(value: Any, written: Any) -> bool:
    """Whether a read attribute value is the one the writer gives: equal, or JSON text of it."""
    if value == written and type(value) is type(written):
        return True
    if type(value) is str and type(written) is not str:
        try:
            return bool(orjson.loads(value) == written)
        except orjson.JSONDecodeError:
            return False
    return False


def _not_given_back(
    spec: SpanSpec, story: dict[str, Any], root: Span | None, own: list[Span], ctx: Context
) -> dict[str, Any]:
    """What the spans of a Storyline hold that writing the Storyline back does not give: each
    span is compared with the draft of its kind in the same place (the n-th span of a kind with
    the n-th draft of it); what differs, and a span with no draft, is kept at its pointer.  The
    ids are the file's own (written back, they are hashed anew), so they are kept too."""
    drafts = _function(spec.write)(story, ctx)
    by_kind: dict[Any, list[dict[str, Any]]] = {}
    for d in drafts:
        kind = next((v for k, v in d["attributes"] if k == spec.kind), None)
        by_kind.setdefault(kind, []).append(d)
    root_id = root.raw[spec.span_key].lower() if root is not None else None
    kept: dict[str, Any] = {}
    for span in [root, *own] if root is not None else own:
        queue = by_kind.get(span.attrs.get(spec.kind))
        if not queue:
            kept[span.at] = span.raw  # nothing written back stands for it: kept whole
            continue
        d = queue.pop(0)
        start = d["start"] if spec.time_min is None else max(spec.time_min, d["start"])
        written = {
            **(d.get("fields") or {}),
            spec.start_key: str(start),
            spec.end_key: str(max(start, d["end"])),
            **spec.after,
        }
        for key, value in span.raw.items():
            if key in (spec.trace_key, spec.span_key):
                kept[pointer.join(span.at, key)] = value
            elif key == spec.parent_key:
                if span is root or str(value).lower() != root_id:
                    kept[pointer.join(span.at, key)] = value
            elif key == spec.attributes_key:
                attrs = dict(d["attributes"])
                for i, a in enumerate(value if type(value) is list else []):
                    k = a.get(spec.key_key) if type(a) is dict else None
                    if k not in attrs or not _same(_value(spec, a.get(spec.value_key)), attrs[k]):
                        kept[f"{span.at}/{key}/{i}"] = a
            elif key not in written or written[key] != value:
                kept[pointer.join(span.at, key)] = value
    return kept


def _keep(spec: SpanSpec, story: dict[str, Any], kept: dict[str, Any], doc: Any) -> None:
    if not kept:
        return
    source = {"source_document_id": canonical.document_id(doc), "fields": kept}
    story["unknown_fields"] = {"sources": {spec.source: source}}
    story["unknown_key_counts"] = {spec.source: residual.count_keys(kept, count_tree(spec))}


# --- writing -----------------------------------------------------------------------------------


def hashed_id(text: str, nbytes: int) -> str:
    """A deterministic id: BLAKE3 of the text, `nbytes` bytes as hex."""
    return blake3(text.encode("utf-8", "surrogatepass")).hexdigest(length=nbytes)


def _parent_id(story: dict[str, Any]) -> Any:
    parent = story.get("parent")
    return parent.get("psid") if type(parent) is dict else None


def _parents_first(stories: list[dict[str, Any]], by_id: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    done: set[str] = set()

    def visit(story: dict[str, Any]) -> None:
        ident = document_id(story)
        if ident in done:
            return
        done.add(ident)
        if _parent_id(story) in by_id:
            visit(by_id[_parent_id(story)])
        out.append(story)

    for story in stories:
        visit(story)
    return out


def encode(spec: SpanSpec, stories: list[dict[str, Any]]) -> str:
    """One trace request for the Storylines (already valid): one trace per tree of parent and
    child Storylines."""
    write = _function(spec.write)
    ctx = Context(spec)
    by_id = {document_id(s): s for s in stories}
    out: list[dict[str, Any]] = []
    root_spans: dict[str, str] = {}
    for story in _parents_first(stories, by_id):
        root = story
        while _parent_id(root) in by_id:
            root = by_id[_parent_id(root)]
        trace = hashed_id("\0".join(p.replace("{root}", document_id(root)) for p in spec.trace_id), spec.trace_bytes)
        drafts = write(story, ctx)
        ids = [hashed_id("\0".join(d["id"]), spec.span_bytes) for d in drafts]
        psid = _parent_id(story)
        for d, span_id in zip(drafts, ids, strict=True):
            parent = (root_spans.get(psid) if psid else None) if d.get("parent") is None else ids[d["parent"]]
            span: dict[str, Any] = {spec.trace_key: trace, spec.span_key: span_id}
            if parent:
                span[spec.parent_key] = parent
            span.update(d.get("fields") or {})
            start = d["start"] if spec.time_min is None else max(spec.time_min, d["start"])
            span[spec.start_key] = str(start)
            span[spec.end_key] = str(max(start, d["end"]))
            span[spec.attributes_key] = [attribute(spec, k, v) for k, v in d["attributes"]]
            span.update(spec.after)
            out.append(span)
        root_spans[document_id(story)] = ids[0]
    node: Any = out
    for level, around in zip(reversed(spec.nest[1:]), reversed(spec.envelope), strict=True):
        node = [{**around, level: node}]
    return _text({spec.nest[0]: node}, spec.indent)


def _text(value: Any, indent: int | None) -> str:
    return json.dumps(value, ensure_ascii=False, indent=indent) + "\n"
