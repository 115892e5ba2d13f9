"""Mapping specs: YAML files loaded, with their line numbers, into frozen values.

A spec is data that reads like an RFC mapping table (the header comments of the shipped specs in
mappings/ explain the vocabulary).
Loading checks the shape of every entry and reports mistakes as `Problem`s located at the YAML
file, line and column; `compile.py` then turns a `Spec` into runnable programs.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

from mapc.engine import plainyaml, pointer
from mapc.engine.ops import CONDITION_NAMES
from mapc.engine.pointer import PointerSyntaxError
from mapc.engine.problems import MapcError, Problem, SpecLocation
from mapc.engine.template import Template, parse_template
from mapc.engine.values import MISSING

SPEC_SCHEMA = "mapping-spec"  # schemas/mapping-spec.schema.json: the shape of a spec file
CONDITIONS = CONDITION_NAMES  # the `when:` vocabulary, defined once in ops.py
CHECK_KINDS = (
    "nonempty",
    "nonblank",
    "nonempty_any",
    "unique",
    "minimum",
    "timestamp",
    "increasing",
    "size_of",
    "at_most",
    "nonblank_keys",
    "same_if_both",
    "call",
)
# The rule vocabulary (the language's reference: schemas/mapping-spec.schema.json, docs/spec-language.md).  A rule takes
# its value `from` one source, the `first_of` several, a `const` or a `call` of `args`; writes it
# `to` targets `when` a condition holds (`keep_null`: a null too); `back` says how the reverse
# undoes it (`none`: a forward-only promotion) and `forward: none` makes a reverse-only row.
RULE_KEYS = ("from", "first_of", "const", "call", "args", "to", "when", "keep_null", "back", "forward")
# The sub-keys of `back:`: what the reverse writes when no target holds a value (`default`), only
# when Storyline pointers hold values (`when`), the Storyline values it falls back on (`or`, or
# `or_foreign`: only for a Storyline that did not come from this format), a function applied to
# the value written back (`call`), or, with `to`, a function of `args` whose results go to `to`;
# `home`: where a value a computed first_of candidate made goes back to.
BACK_KEYS = ("default", "when", "or", "or_foreign", "call", "args", "to", "home")
# The keys of the first vocabulary, still read (with a SpecDeprecationWarning), and their new form.
DEPRECATED_RULE_KEYS = {
    "nonempty": "when: nonempty",
    "derived": "back: none",
    "reverse_only": "forward: none",
    "reverse_call": "back: {call: FN}",
    "reverse_default": "back: {default: VALUE}",
    "reverse_when": "back: {when: {POINTER: VALUE}}",
    "with": "args: [...] beside from/first_of",
    "reverse_first_of": "back: {or: [...]}",
    "reverse": "back: {call: FN, args: [...], to: POINTER}",
    "write_back_call": "back: {home: FN}",
    "synthesized": "back: {or_foreign: [...]}",
}
# Where the internal key of a rule stands in a spec written in the new vocabulary.
_NEW_PLACE = {
    "with": ("args",),
    "reverse": ("back",),
    "reverse_call": ("back", "call"),
    "write_back_call": ("back", "home"),
    "reverse_when": ("back", "when"),
    "reverse_first_of": ("back", "or"),
}


class SpecDeprecationWarning(FutureWarning):
    """A spec uses the first rule vocabulary; it still works, `mapc spec upgrade` rewrites it."""


# Kinds whose own key holds a value (a number, a pointer to compare with, a function) while
# `at` names the values checked.
_CHECK_AT = {"minimum", "at_most", "call"}


@dataclass(frozen=True, slots=True)
class ParentRef:
    """``{parent: /ptr}``: a value of the parent document's Storyline (for nested documents)."""

    target: Template

    def __str__(self) -> str:
        return f"parent:{self.target}"


@dataclass(frozen=True, slots=True)
class StoryRef:
    """``{story: /ptr}``: a value of the Storyline being written (read after the rules that write it)."""

    target: Template

    def __str__(self) -> str:
        return f"story:{self.target}"


@dataclass(frozen=True, slots=True)
class SourceRef:
    """``{source: /ptr}``: in a reverse, a value of the source document being rebuilt."""

    target: Template

    def __str__(self) -> str:
        return f"source:{self.target}"


@dataclass(frozen=True, slots=True)
class VarRef:
    """``{var: a}``: the object key or array position a variable of the spec is bound to."""

    name: str

    def __str__(self) -> str:
        return "{" + self.name + "}"


@dataclass(frozen=True, slots=True)
class CountRef:
    """``{count: documents}``: in a reverse, how many Storylines make the document."""

    what: str

    def __str__(self) -> str:
        return f"count:{self.what}"


@dataclass(frozen=True, slots=True)
class ConstRef:
    """``{const: V}``: a value written in the spec, as an argument of a function (only in `args`)."""

    value: Any

    def __str__(self) -> str:
        return f"const:{self.value!r}"


@dataclass(frozen=True, slots=True)
class CallRef:
    """``{call: fn, args: [...]}``: a value computed by a registered function (a chain candidate)."""

    call: str
    args: tuple[Ref, ...]

    def __str__(self) -> str:
        return f"{self.call}({', '.join(map(str, self.args))})"


Ref: TypeAlias = Template | ParentRef | StoryRef | SourceRef | VarRef | CountRef | ConstRef | CallRef


@dataclass(frozen=True, slots=True)
class ReverseSpec:
    """``reverse: {call, args, to}``: how a computed row is undone (args on the Storyline side)."""

    call: str
    args: tuple[Ref, ...]
    targets: tuple[Template, ...]


@dataclass(frozen=True, slots=True)
class ArraySpec:
    """A source array mapped element by element onto a Storyline array.

    `fallback` is read when the source array is empty (both are written back); with `omit_empty`
    an empty result writes nothing, and the reverse writes empty arrays.
    """

    src: Template
    dst: Template
    fallback: Template | None = None
    omit_empty: bool = False


@dataclass(frozen=True, slots=True)
class RuleSpec:
    """One row of a mapping table.

    `op` is ``copy`` (one source), ``first_of`` (the first present, or non-empty, source),
    ``const`` (a value) or ``call`` (a registered function of `args`).  `call` on a copy or
    first_of rule converts the chosen value.  A `derived` rule is a forward-only promotion.
    """

    index: int
    at: SpecLocation
    op: str
    sources: tuple[Ref, ...]
    targets: tuple[Template, ...]
    call: str | None = None
    value: Any = None
    when: str | None = None
    nonempty: bool = False
    keep_null: bool = False
    derived: bool = False
    reverse_only: bool = False
    reverse_call: str | None = None
    reverse_default: Any = MISSING
    reverse_when: tuple[tuple[Template, Any], ...] = ()
    with_args: tuple[Ref, ...] = ()
    reverse_first_of: tuple[Ref, ...] = ()
    reverse: ReverseSpec | None = None
    write_back_call: str | None = None
    synthesized: bool = False  # reverse fallbacks only for a Storyline that did not come from this format

    @property
    def label(self) -> str:
        """How messages name this rule: ``rules[3]``."""
        return f"rules[{self.index}]"


@dataclass(frozen=True, slots=True)
class CheckSpec:
    """A declared input constraint (beyond the input JSON Schema)."""

    index: int
    at: SpecLocation
    kind: str
    pointers: tuple[Template, ...]
    documents: str = "all"  # all | top | children
    across: str = "document"  # document | tree
    value: Any = None  # minimum: the bound; call: the function name
    other: Template | None = None  # size_of: `equals`; at_most: the limit
    each: Template | None = None  # run once per match of this template, pointers relative to it


@dataclass(frozen=True, slots=True)
class Consume:
    """A key read only under a condition (`consume:`): kept as a residual unless `when` holds of its
    value (a condition name, or ``empty``: null, [] or {}), or it equals the value `equals` names."""

    at: Template
    when: str | None
    equals: Any  # a pointer template (same variables), {story: ptr}, {const: v} or {first_of: [...]}
    location: SpecLocation


@dataclass(frozen=True, slots=True)
class RowsSpec:
    """A row corpus (`document.rows`): one Storyline per group of rows, mapped by named functions.

    The rows are the array at `rows` (or a bare top-level array, or JSONL lines); rows are grouped
    by the value at `group_by` (first appearance first) and stably sorted by the integer at
    `order_by`.  `call` maps one group, `reverse_call` gives back the rows of Storylines.
    """

    rows: Template
    group_by: Template
    order_by: Template
    call: str
    reverse_call: str
    decode_json: tuple[Template, ...] = ()
    consume: tuple[Consume, ...] = ()
    tables: Any = None
    selections: Any = None  # name -> engine.select.Selection, from `select:`
    group: tuple[Any, ...] = ()  # engine.group.GroupValue entries, from `group:`
    spread: tuple[Any, ...] = ()  # engine.spread.Spread entries, from `spread:`
    ids: Any = None  # name -> engine.group.TurnId, from `ids:`
    fanout: Any = None  # engine.fanout.FanOut: rows ⇄ turns as data (`turns:`, `results:`, `back:`)


@dataclass(frozen=True, slots=True)
class Spec:
    """A loaded mapping spec."""

    name: str
    title: str
    source: str
    path: str
    input_schema: str | None
    document_id: RuleSpec | None
    children: Template | None
    each: Template | None
    arrays: tuple[ArraySpec, ...]
    objects: tuple[tuple[Template, frozenset[str], SpecLocation], ...]
    rules: tuple[RuleSpec, ...]
    checks: tuple[CheckSpec, ...]
    at: SpecLocation
    detect: Any = None  # how files of this format are recognized (engine/detect.py)
    prepare: Any = None  # variant shapes rewritten before the checks (engine/prepare.py)
    aliases: tuple[str, ...] = ()  # other names the format is known by
    rows: RowsSpec | None = None  # a row corpus (engine/rows.py) instead of one document tree
    fold: Any = ()  # elements folded into the one before them (engine/fold.py), parsed
    deprecated: tuple[str, ...] = ()  # old-vocabulary keys, as ``rules[3].reverse_default`` (see upgrade.py)
    envelope: str = "/_storyline"  # where a document's `_storyline` envelope rides (engine/envelope.py)
    finish: str | None = None  # a registered (document, Storylines) → document run on every export
    stream: Any = None  # a JSONL event stream (engine/stream.py: StreamSpec) instead of one document tree


# --- YAML with locations -------------------------------------------------------------------


MAX_NAME = 64  # characters of a spec name (a format name: it is part of output file names)
SPEC_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", re.ASCII)  # MAX_NAME characters
MAX_SPEC_NODES = 200_000  # far above any real spec (the shipped ones have a few thousand values)
MAX_SPEC_DEPTH = 64  # levels of YAML nesting; the shipped specs have at most seven


def read_spec_text(path: Path) -> str:
    """The text of the spec file at `path`: ``spec.not_found`` when it cannot be read,
    ``spec.yaml`` when it is not UTF-8."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise MapcError.single("spec.not_found", "", f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = SpecLocation(path.name, 1, 1)
        raise MapcError(
            [Problem("spec.yaml", "", f"not UTF-8 text: {exc.reason} at byte {exc.start}", where)]
        ) from None


SPEC_LIMITS = plainyaml.Limits(max_nodes=MAX_SPEC_NODES, max_depth=MAX_SPEC_DEPTH)
_Located = plainyaml.Located  # lint places problems with it too


def parse_yaml(file: str, text: str) -> tuple[Any, _Located]:
    """The plain data of spec text and where each of its nodes stands; MapcError (``spec.yaml``,
    ``spec.duplicate_key``) for text that is not plain YAML data (engine/plainyaml.py).

    With the spec cache on (engine/cache.py), text parsed before is not parsed again: its data comes
    back as JSON, and is checked by the reader as any spec's data is."""
    from mapc.engine import cache

    hit = cache.spec_data(text)
    if type(hit) is dict and type(hit.get("marks")) is list:
        try:
            located = _Located(file)
            located.marks = {tuple(path): (int(line), int(column)) for path, line, column in hit["marks"]}
            return hit.get("data"), located
        except (TypeError, ValueError):
            pass  # not what this code writes: parse the text
    data, located = _parse_yaml(file, text)
    marks = [[list(path), line, column] for path, (line, column) in located.marks.items()]
    cache.store_spec_data(text, {"data": data, "marks": marks})
    return data, located


def _parse_yaml(file: str, text: str) -> tuple[Any, _Located]:
    try:
        return plainyaml.load(file, text, SPEC_LIMITS)
    except plainyaml.YamlDataError as exc:
        code = "spec.duplicate_key" if exc.kind == "duplicate_key" else "spec.yaml"
        message = f"{exc.message} (at {exc.pointer})" if exc.kind == "duplicate_key" else exc.message
        raise MapcError([Problem(code, "", message, SpecLocation(file, exc.line, exc.column))]) from None


def load_spec(path: str | Path, text: str | None = None) -> Spec:
    """Load and shape-check the spec at `path` (or `text` named by `path`); raise MapcError."""
    path = Path(path)
    try:
        data, located = parse_yaml(path.name, read_spec_text(path) if text is None else text)
    except MapcError as exc:
        raise MapcError(exc.problems, source=str(path)) from None
    return spec_from_data(data, path, located)


def spec_from_data(data: Any, path: str | Path, located: _Located | None = None) -> Spec:
    """The `Spec` of plain spec data (as YAML gives it) named by `path`; raise MapcError.  Without
    `located` (where each value stands in the file) problems are placed at line 1, column 1."""
    path = Path(path)
    located = _Located(path.name) if located is None else located
    problems: list[Problem] = []
    try:
        spec = _SpecReader(located, problems).read(data, str(path))
    except (AttributeError, TypeError, ValueError, KeyError, IndexError):
        # The reader met a value of a shape it does not expect: the schema says which, and where.
        if not (problems := _shape_problems(data, located)):
            raise
    if problems:
        raise MapcError(problems, source=str(path))
    assert spec is not None
    if spec.deprecated:
        warnings.warn(deprecation_message(spec), SpecDeprecationWarning, stacklevel=2)
    return spec


def deprecation_message(spec: Spec) -> str:
    """What a spec in the first vocabulary is told: each old key, its new form, and the tool."""
    keys = dict.fromkeys(k.rsplit(".", 1)[1] for k in spec.deprecated)
    forms = "; ".join(f"{k} -> {DEPRECATED_RULE_KEYS[k]}" for k in keys)
    where = ", ".join(spec.deprecated[:3]) + (", ..." if len(spec.deprecated) > 3 else "")
    return (
        f"{spec.path}: the rule keys {', '.join(keys)} are deprecated ({where}); write {forms}. "
        f"`mapc spec upgrade {spec.path}` rewrites the file"
    )


def _shape_problems(data: Any, located: _Located) -> list[Problem]:
    """Where `data` breaks `schemas/mapping-spec.schema.json`, as ``spec.invalid`` problems."""
    from mapc.engine.schema import compiled_validator

    return [
        Problem("spec.invalid", p.pointer, f"{p.message} ({p.code})", located.at(*located.path_of(data, p.pointer)))
        for p in compiled_validator(SPEC_SCHEMA).iter_problems(data)
    ]


class _SpecReader:
    """Turns the plain data of a spec file into a `Spec`, collecting every problem."""

    def __init__(self, located: _Located, problems: list[Problem]) -> None:
        self.loc = located
        self.problems = problems
        self.deprecated: list[str] = []  # `rules[3].reverse_default`: old-vocabulary keys met
        self.place: dict[str, tuple[str, ...]] = {}  # internal key -> where it stands in this rule

    def fail(self, message: str, *path: Any, code: str = "spec.invalid") -> None:
        self.problems.append(Problem(code, "/" + "/".join(map(str, path)), message, self.loc.at(*path)))

    def template(self, text: Any, *path: Any) -> Template | None:
        if not isinstance(text, str):
            self.fail(f"expected a JSON Pointer string, got {text!r}", *path, code="spec.bad_pointer")
            return None
        try:
            return parse_template(text)
        except PointerSyntaxError:
            self.fail(f"{text!r} is not a JSON Pointer", *path, code="spec.bad_pointer")
            return None

    def ref(self, item: Any, *path: Any, consts: bool = False) -> Ref | None:
        """A reference; with `consts` (a function's arguments), ``{const: V}`` too."""
        if consts and isinstance(item, dict) and len(item) == 1 and "const" in item:
            return ConstRef(item["const"])
        if isinstance(item, str):
            return self.template(item, *path)
        if isinstance(item, dict) and len(item) == 1:
            ((kind, value),) = item.items()
            wraps = {"parent": ParentRef, "story": StoryRef, "source": SourceRef}
            if kind in wraps:
                target = self.template(value, *path, kind)
                return wraps[kind](target) if target else None
            if kind == "var" and isinstance(value, str):
                return VarRef(value)
            if kind == "count" and value == "documents":
                return CountRef(value)
        if isinstance(item, dict) and set(item) <= {"call", "args"} and isinstance(item.get("call"), str):
            args = [self.ref(a, *path, "args", i, consts=True) for i, a in enumerate(item.get("args") or [])]
            return None if None in args else CallRef(item["call"], tuple(a for a in args if a is not None))
        self.fail(
            "expected a pointer, {parent|story|source: pointer}, {var: name}, {count: documents} or "
            f"{{call: fn, args: [...]}}, got {item!r}",
            *path,
            code="spec.bad_pointer",
        )
        return None

    def refs(self, items: Any, *path: Any, consts: bool = False) -> list[Ref | None]:
        if not isinstance(items, list):
            self.fail("expected a list", *path)
            return [None]
        return [self.ref(x, *path, i, consts=consts) for i, x in enumerate(items)]

    def read(self, data: Any, path: str) -> Spec | None:
        if not isinstance(data, dict):
            self.fail("a spec is a YAML mapping")
            return None
        allowed = {
            "name",
            "title",
            "source",
            "input_schema",
            "document",
            "arrays",
            "objects",
            "rules",
            "checks",
            "detect",
            "prepare",
            "fold",
            "aliases",
            "decode_json",
            "consume",
            "tables",
            "select",
            "group",
            "spread",
            "ids",
            "fanout",
        }
        for key in data:
            if key not in allowed:
                self.fail(f"unknown spec key {key!r} (allowed: {', '.join(sorted(allowed))})", key)
        name = data.get("name")
        if not isinstance(name, str) or not name:
            self.fail("`name` must be a non-empty string", "name")
            name = "?"
        elif not SPEC_NAME.fullmatch(name):
            # The name becomes part of file names (outputs, `<mapc NAME.yaml>` in tracebacks).
            shown = repr(name) if len(name) <= 80 else f"{name[:40]!r}… ({len(name)} characters)"
            rule = f"1 to {MAX_NAME} letters, digits, '.', '_' or '-', starting with a letter or digit"
            self.fail(f"`name` {shown} must be {rule}", "name")
            name = "?"
        document = data.get("document") or {}
        doc_id = None
        if "id" in document:
            doc_id = self.rule(document["id"], -1, ("document", "id"))
        children = self.template(document["children"], "document", "children") if "children" in document else None
        each = self.template(document["each"], "document", "each") if "each" in document else None
        envelope_at = document.get("envelope", "/_storyline")
        if not (isinstance(envelope_at, str) and envelope_at.endswith("/_storyline") and pointer.is_valid(envelope_at)):
            self.fail("`document.envelope` is a JSON Pointer ending in /_storyline", "document", "envelope")
            envelope_at = "/_storyline"
        finish = document.get("finish")
        if finish is not None and not isinstance(finish, str):
            self.fail("`document.finish` is the name of a registered function", "document", "finish")
            finish = None
        arrays = [self.array(src, dst) for src, dst in (data.get("arrays") or {}).items()]
        objects = []
        for ptr, keys in (data.get("objects") or {}).items():
            t = self.template(ptr, "objects", ptr)
            if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
                self.fail("known keys are a list of strings", "objects", ptr)
            elif t:
                objects.append((t, frozenset(keys), self.loc.at("objects", ptr)))
        rules = [self.rule(item, i, ("rules", i)) for i, item in enumerate(data.get("rules") or [])]
        checks = [self.check(item, i) for i, item in enumerate(data.get("checks") or [])]
        rows = self.rows(document, data) if "rows" in document else None
        stream = None
        if "stream" in document:
            from mapc.engine import stream as stream_module  # here: the stream module reads checks, which read specs

            stream, bad = stream_module.parse(document["stream"])
            for p in bad:
                self.fail(
                    p.message, *[int(t) if t.isdigit() else pointer.unescape(t) for t in p.pointer.split("/")[1:]]
                )
            if "envelope" not in document:
                envelope_at = "/0/_storyline"  # a stream's envelope rides in its first record
        return Spec(
            name=name,
            title=str(data.get("title", name)),
            source=str(data.get("source", name)),
            path=path,
            input_schema=data.get("input_schema"),
            document_id=doc_id,
            children=children,
            each=each,
            arrays=tuple(a for a in arrays if a is not None),
            objects=tuple(objects),
            rules=tuple(r for r in rules if r is not None),
            checks=tuple(c for c in checks if c is not None),
            detect=data.get("detect"),
            prepare=data.get("prepare"),
            fold=self.folds(data),
            aliases=tuple(str(a) for a in data.get("aliases") or ()),
            rows=rows,
            stream=stream,
            envelope=envelope_at,
            finish=finish,
            at=self.loc.at(),
            deprecated=tuple(self.deprecated),
        )

    def folds(self, data: dict[str, Any]) -> Any:
        """`fold: [{array, where, into, take}]` (engine/fold.py), parsed; problems are spec problems."""
        entries = data.get("fold")
        if entries is None:
            return ()
        ok = isinstance(entries, list) and all(
            isinstance(e, dict)
            and set(e) == {"array", "where", "into", "take"}
            and all(isinstance(e[k], str) for k in ("array", "into"))
            and all(isinstance(e[k], dict) and e[k] for k in ("where", "take"))
            and all(isinstance(v, str) for v in e["take"].values())
            for e in entries
        )
        if not ok:
            self.fail("`fold` is a list of {array, where: {ptr: value}, into, take: {key: ptr}}", "fold")
            return ()
        from mapc.engine import fold as fold_module  # specs with a `fold` only: others need not import it

        bad = fold_module.problems_of(entries)
        for p in bad:
            self.fail(p.message, *p.pointer.strip("/").split("/"))
        if bad:
            return ()
        arrays = {}
        for src, dst in (data.get("arrays") or {}).items():
            to = dst.get("to") if isinstance(dst, dict) else dst
            if isinstance(to, str):
                arrays[src] = to
        return fold_module.parse(entries, arrays)

    def rows(self, document: dict[str, Any], data: dict[str, Any]) -> RowsSpec | None:
        """`document: {rows, group_by, order_by, map: {call, reverse_call}}` and its companions."""
        found = {k: self.template(document.get(k), "document", k) for k in ("rows", "group_by", "order_by")}
        mapping = document.get("map")
        if "fanout" in data and mapping is None:
            mapping = {"call": "", "reverse_call": ""}  # the fan-out is data (engine/fanout.py)
        if not isinstance(mapping, dict) or not all(isinstance(mapping.get(k), str) for k in ("call", "reverse_call")):
            self.fail(
                "`document.map` must be {call: fn, reverse_call: fn}, or the spec has `fanout:`", "document", "map"
            )
            return None
        decode = [self.template(t, "decode_json", i) for i, t in enumerate(data.get("decode_json") or [])]
        consume = []
        for ptr, how in (data.get("consume") or {}).items():
            t = self.template(ptr, "consume", ptr)
            if not isinstance(how, dict) or not set(how) or not set(how) <= {"when", "equals"}:
                self.fail("a consumed key is {when: condition} or {equals: value}", "consume", ptr)
            elif how.get("when") not in (None, "empty", *CONDITIONS):
                self.fail(f"unknown condition {how['when']!r}", "consume", ptr, "when")
            elif t:
                consume.append(Consume(t, how.get("when"), how.get("equals", MISSING), self.loc.at("consume", ptr)))
        # Row corpora only: the other specs' runs need not import these.
        from mapc.engine import fanout as fanout_module
        from mapc.engine import group as group_module
        from mapc.engine import spread as spread_module
        from mapc.engine.select import compile_selections

        try:
            selections = compile_selections(data.get("select"))
            group_values = group_module.parse(data.get("group"))
            spreads = spread_module.parse(data.get("spread"))
            ids = group_module.parse_ids(data.get("ids"))
            fan = fanout_module.parse(data, selections, ids)
        except MapcError as exc:
            for p in exc.problems:
                self.fail(p.message, *[t for t in p.pointer.split("/")[1:]], code=p.code)
            return None
        if None in found.values() or None in decode:
            return None
        return RowsSpec(
            found["rows"],  # type: ignore[arg-type]
            found["group_by"],  # type: ignore[arg-type]
            found["order_by"],  # type: ignore[arg-type]
            mapping["call"],
            mapping["reverse_call"],
            tuple(t for t in decode if t is not None),
            tuple(consume),
            data.get("tables"),
            selections,
            group_values,
            spreads,
            ids,
            fan,
        )

    def array(self, src: Any, dst: Any) -> ArraySpec | None:
        s = self.template(src, "arrays", src)
        if isinstance(dst, str):
            d = self.template(dst, "arrays", src)
            return ArraySpec(s, d) if s and d else None
        if not isinstance(dst, dict) or "to" not in dst or not set(dst) <= {"to", "else", "omit_empty"}:
            self.fail("an array maps to a pointer, or to {to, else?, omit_empty?}", "arrays", src)
            return None
        d = self.template(dst["to"], "arrays", src, "to")
        fallback = self.template(dst["else"], "arrays", src, "else") if "else" in dst else None
        if not (s and d) or ("else" in dst and fallback is None):
            return None
        return ArraySpec(s, d, fallback, bool(dst.get("omit_empty", False)))

    def rule(self, item: Any, index: int, path: tuple[Any, ...]) -> RuleSpec | None:
        at = self.loc.at(*path, rule=f"rules[{index}]" if index >= 0 else "document.id")
        if not isinstance(item, dict):
            self.fail("a rule is a mapping", *path)
            return None
        for key in item:
            if key not in RULE_KEYS and key not in DEPRECATED_RULE_KEYS:
                self.fail(f"unknown rule key {key!r} (known: {', '.join(RULE_KEYS)})", *path, key)
        item = self.internal_form(item, index, path)
        if item is None:
            return None
        kinds = [k for k in ("from", "first_of", "const") if k in item]
        if len(kinds) > 1:
            self.fail(f"a rule has one of from/first_of/const, not {kinds}", *path)
            return None
        op = kinds[0] if kinds else "call"
        if op == "call" and "call" not in item:
            self.fail("a rule needs `from`, `first_of`, `const` or `call`", *path)
            return None
        sources: list[Ref | None] = []
        if op == "from":
            op = "copy"
            sources = [self.ref(item["from"], *path, "from")]
        elif op == "first_of":
            raw = item["first_of"]
            if not isinstance(raw, list) or not raw:
                self.fail("`first_of` is a non-empty list of pointers", *path, "first_of")
                return None
            sources = [self.ref(x, *path, "first_of", i) for i, x in enumerate(raw)]
        elif op == "call":
            sources = [self.ref(x, *path, "args", i, consts=True) for i, x in enumerate(item.get("args") or [])]
        raw_to = item.get("to", [] if index < 0 else None)
        if raw_to is None:
            self.fail("a rule needs `to`", *path)
            return None
        if raw_to == [] and index >= 0:
            self.fail("`to` is a pointer or a non-empty list of pointers", *path, "to")
            return None
        for key in ("call", "reverse_call", "write_back_call"):
            if key in item and not isinstance(item[key], str):
                where = self.key(path, key)
                name = ".".join(map(str, where[len(path) :]))
                self.fail(f"`{name}` names a registered function (a string), got {item[key]!r}", *where)
                return None
        to_list = raw_to if isinstance(raw_to, list) else [raw_to]
        targets = [self.template(t, *path, "to") for t in to_list]
        when = item.get("when")
        if when is not None and when not in CONDITIONS:
            self.fail(f"unknown condition {when!r} (known: {', '.join(CONDITIONS)})", *path, "when")
        reverse_when = []
        for ptr, value in (item.get("reverse_when") or {}).items():
            t = self.template(ptr, *self.key(path, "reverse_when"))
            if t:
                reverse_when.append((t, value))
        with_args = self.refs(item.get("with", []), *self.key(path, "with"), consts=True)
        reverse_first_of = self.refs(item.get("reverse_first_of", []), *self.key(path, "reverse_first_of"))
        reverse = self.reverse(item["reverse"], *self.key(path, "reverse")) if "reverse" in item else None
        if None in sources or None in targets or None in with_args or None in reverse_first_of:
            return None
        if "reverse" in item and reverse is None:
            return None
        return RuleSpec(
            index=index,
            at=at,
            op=op,
            sources=tuple(s for s in sources if s is not None),
            targets=tuple(t for t in targets if t is not None),
            call=item.get("call"),
            value=item.get("const"),
            when=when,
            nonempty=bool(item.get("nonempty", False)),
            keep_null=bool(item.get("keep_null", False)),
            derived=bool(item.get("derived", False)),
            reverse_only=bool(item.get("reverse_only", False)),
            reverse_call=item.get("reverse_call"),
            reverse_default=item.get("reverse_default", MISSING),
            reverse_when=tuple(reverse_when),
            with_args=tuple(a for a in with_args if a is not None),
            reverse_first_of=tuple(a for a in reverse_first_of if a is not None),
            reverse=reverse,
            write_back_call=item.get("write_back_call"),
            synthesized=bool(item.get("synthesized", False)),
        )

    def key(self, path: tuple[Any, ...], key: str) -> tuple[Any, ...]:
        """The YAML path of internal rule key `key` (a new-vocabulary rule says it inside `back`)."""
        return (*path, *self.place.get(key, (key,)))

    def internal_form(self, item: dict[Any, Any], index: int, path: tuple[Any, ...]) -> dict[Any, Any] | None:
        """The rule `item` in the internal keys the rest of the reader takes (those of the first
        vocabulary): a `back:` block and `forward: none` are spread into them; old keys are noted."""
        self.place = {}
        old = [k for k in item if k in DEPRECATED_RULE_KEYS]
        if old:
            if "back" in item or "forward" in item:
                self.fail(f"a rule writes `back`/`forward` or the old keys {old}, not both", *path)
                return None
            label = f"rules[{index}]" if index >= 0 else "document.id"
            self.deprecated.extend(f"{label}.{k}" for k in old)
            return item
        out = {k: v for k, v in item.items() if k not in ("back", "forward")}
        if "forward" in item:
            if item["forward"] != "none":
                self.fail("`forward` is only `none` (a row only the reverse runs)", *path, "forward")
                return None
            out["reverse_only"] = True
        if "args" in item and ("from" in item or "first_of" in item):
            out["with"] = out.pop("args")  # the conversion's arguments after the value
        if item.get("when") == "nonempty" and "first_of" in item:
            del out["when"]  # a chain skips empty candidates (the one `nonempty` test, ops.py)
            out["nonempty"] = True
        back = item.get("back", MISSING)
        if back is MISSING:
            return out
        if back == "none":
            out["derived"] = True
            return out
        if not isinstance(back, dict) or not back:
            self.fail(f"`back` is `none` or a mapping of {', '.join(BACK_KEYS)}", *path, "back")
            return None
        for key in back:
            if key not in BACK_KEYS:
                self.fail(f"unknown `back` key {key!r} (known: {', '.join(BACK_KEYS)})", *path, "back", key)
                return None
        if "or" in back and "or_foreign" in back:
            self.fail("`back` has `or` or `or_foreign`, not both", *path, "back")
            return None
        if "to" in back:
            out["reverse"] = {k: back[k] for k in ("call", "args", "to") if k in back}
        elif "args" in back:
            self.fail("`back.args` are the arguments of `back.call` writing to `back.to`", *path, "back", "args")
            return None
        elif "call" in back:
            out["reverse_call"] = back["call"]
        if "default" in back:
            out["reverse_default"] = back["default"]
        if "when" in back:
            out["reverse_when"] = back["when"]
        if "or" in back:
            out["reverse_first_of"] = back["or"]
        if "or_foreign" in back:
            out["reverse_first_of"] = back["or_foreign"]
            out["synthesized"] = True
            self.place["reverse_first_of"] = ("back", "or_foreign")
        if "home" in back:
            out["write_back_call"] = back["home"]
        self.place = {**_NEW_PLACE, **self.place}
        return out

    def reverse(self, item: Any, *path: Any) -> ReverseSpec | None:
        if not isinstance(item, dict) or not isinstance(item.get("call"), str) or "to" not in item:
            self.fail("`reverse` is {call: fn, args: [...], to: pointer(s)}", *path)
            return None
        args = self.refs(item.get("args", []), *path, "args", consts=True)
        raw_to = item["to"] if isinstance(item["to"], list) else [item["to"]]
        if not raw_to:
            self.fail("`reverse.to` is a pointer or a non-empty list of pointers", *path, "to")
            return None
        targets = [self.template(t, *path, "to") for t in raw_to]
        if None in args or None in targets:
            return None
        return ReverseSpec(
            item["call"], tuple(a for a in args if a is not None), tuple(t for t in targets if t is not None)
        )

    def check(self, item: Any, index: int) -> CheckSpec | None:
        path = ("checks", index)
        if not isinstance(item, dict):
            self.fail("a check is a mapping", *path)
            return None
        kinds = [k for k in CHECK_KINDS if k in item]
        if len(kinds) != 1:
            self.fail(f"a check has exactly one of {', '.join(CHECK_KINDS)}", *path)
            return None
        kind = kinds[0]
        if kind == "call" and not isinstance(item["call"], str):
            self.fail(f"`call` names a registered function (a string), got {item['call']!r}", *path, "call")
            return None
        if kind in _CHECK_AT and "at" not in item:
            self.fail(f"a {kind} check names what it checks with `at`", *path)
            return None
        raw = item["at"] if kind in _CHECK_AT else item[kind]
        raw_list = raw if isinstance(raw, list) else [raw]
        pointers = [self.template(p, *path, kind) for p in raw_list]
        other_raw = item.get("equals") if kind == "size_of" else item.get(kind) if kind == "at_most" else None
        other = self.template(other_raw, *path, kind) if other_raw is not None else None
        if kind == "same_if_both" and len(raw_list) != 2:
            self.fail("a same_if_both check compares exactly two pointers", *path)
            return None
        if kind == "size_of" and other is None:
            self.fail("a size_of check says what the size `equals`", *path)
            return None
        each = self.template(item["each"], *path, "each") if "each" in item else None
        documents = item.get("documents", "all")
        across = item.get("across", "document")
        if documents not in ("all", "top", "children"):
            self.fail("`documents` is all, top or children", *path, "documents")
        if across not in ("document", "tree"):
            self.fail("`across` is document or tree", *path, "across")
        if None in pointers:
            return None
        return CheckSpec(
            index=index,
            at=self.loc.at(*path, rule=f"checks[{index}]"),
            kind=kind,
            pointers=tuple(p for p in pointers if p is not None),
            documents=documents,
            across=across,
            value=item.get("minimum") if kind == "minimum" else item.get("call"),
            other=other,
            each=each,
        )
