"""The compiled form of a spec: scopes of rules over pre-parsed paths, and the accessors they use.

`compile.py` builds a `Program` from a `Spec`; `codegen.py` turns its scopes into Python; `run.py`
executes it.  Rule objects hold the semantics of each row in one place; the generated code writes
the same semantics out per row, and calls a rule's method only where it cannot (see codegen.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mapc.engine.ops import OPS, authoritative, is_candidate
from mapc.engine.pointer import escape
from mapc.engine.residual import Tree
from mapc.engine.spec import RuleSpec, Spec
from mapc.engine.template import Template
from mapc.engine.values import MISSING, json_equal

Path = tuple[str, ...]


# --- tiny accessors over pre-parsed relative paths ----------------------------------------


def get_in(obj: Any, path: Path) -> Any:
    """The value at `path` below `obj` (object keys only), or MISSING."""
    for key in path:
        if type(obj) is not dict:
            return MISSING
        obj = obj.get(key, MISSING)
        if obj is MISSING:
            return MISSING
    return obj


def put_in(obj: dict[str, Any], path: Path, value: Any) -> None:
    """Set `value` at `path` below `obj`, creating missing objects on the way.

    An object already on the path is shallow-copied first: another rule may have placed it there
    by reference from the input, which must not change.
    """
    if not path:  # the element itself: an object value is merged in
        if type(value) is dict:
            obj.update(value)
        return
    for key in path[:-1]:
        nxt = obj.get(key)
        nxt = obj[key] = nxt.copy() if type(nxt) is dict else {}
        obj = nxt
    obj[path[-1]] = value


def insert_copying(obj: dict[str, Any], path: Path, value: Any) -> bool:
    """Insert `value` at `path` unless a value is there; objects on the way are shallow-copied.

    Copying keeps the caller's input unchanged when an object on the path was shared with it.
    Returns False when the place is taken or a non-object stands on the path.
    """
    for key in path[:-1]:
        nxt = obj.get(key, MISSING)
        if nxt is MISSING:
            nxt = obj[key] = {}
        elif type(nxt) is dict:
            nxt = obj[key] = dict(nxt)
        else:
            return False
        obj = nxt
    if path[-1] in obj:
        return False
    obj[path[-1]] = value
    return True


def pointer_text(path: Path) -> str:
    """Escaped pointer text of a relative path."""
    return "".join("/" + escape(k) for k in path)


# --- run-time context ----------------------------------------------------------------------


@dataclass(slots=True)
class Context:
    """What a forward run of one document carries: residuals, the Storyline being written, the
    parent's Storyline, the whole input (`top`) and the key the document is bound to (`key`)."""

    residual: dict[str, Any]
    parent: dict[str, Any] | None
    story: dict[str, Any]
    top: Any = None
    key: Any = MISSING
    # Values kept only if the reverse gives them back, in rule order: (rule, frame, dst, at, raw) to
    # decide at the end, or what generated code decided: None (nothing kept) or (pointer, value).
    checks: list[Any] = field(default_factory=list)
    mirrors: dict[str, str] = field(default_factory=dict)  # chosen array pointer/ -> its copy's pointer/
    out: Frame | None = None  # in a reverse: the source element being rebuilt, with its ancestors
    count: int = 0  # in a reverse: how many Storylines make the document
    first: bool = True  # in a reverse: this is the document's first Storyline (it writes the root)
    pending: list[Any] = field(default_factory=list)  # in a reverse: write-backs (fn, want, out, ...), after residuals
    problems: list[Any] = field(default_factory=list)  # in a reverse: Storyline values it cannot write


@dataclass(slots=True)
class Frame:
    """Where a rule runs: the scope element, its ancestors (outermost first), and the index or key
    of each element in its array (the document key first)."""

    elem: Any
    up: tuple[Any, ...]
    idx: tuple[Any, ...]


# --- sources -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Source:
    """A rule input.

    `kind` says where the value comes from: ``elem`` (the element of scope `level`, `path` below
    it), ``top`` (the whole input document), ``parent`` / ``story`` (the parent's or this
    Storyline), ``var`` (the key or index bound at scope `level`), ``call`` (`fn` of `args`),
    ``count`` (the number of Storylines, in a reverse) or ``const`` (`value`, an argument).
    """

    kind: str
    path: Path = ()
    level: int = 0
    fn: Callable[..., Any] | None = None
    args: tuple[Source, ...] = ()
    value: Any = None  # of a ``const`` argument

    def read(self, frame: Frame, ctx: Context) -> Any:
        """The value this source names in `frame` (MISSING if there is none)."""
        kind = self.kind
        if kind == "elem":
            depth = len(frame.up)
            node = frame.elem if self.level == depth else frame.up[self.level]
            return get_in(node, self.path)
        if kind == "var":
            return frame.idx[self.level] if self.level < len(frame.idx) else MISSING
        if kind == "top":
            return get_in(ctx.top, self.path)
        if kind == "story":
            return get_in(ctx.story, self.path)
        if kind == "parent":
            return get_in(ctx.parent, self.path) if ctx.parent is not None else MISSING
        if kind == "call":
            assert self.fn is not None
            return self.fn(*(a.read(frame, ctx) for a in self.args))
        if kind == "out":
            out = ctx.out
            if out is None:
                return MISSING
            return get_in(out.elem if self.level == len(out.up) else out.up[self.level], self.path)
        if kind == "count":
            return ctx.count
        if kind == "const":
            return self.value
        return MISSING

    @property
    def plain(self) -> bool:
        """A value at a pointer of the source document (one that can be kept as a residual)."""
        return self.kind in ("elem", "top")


def origin_format(story: Any) -> Any:
    """The `/origin/format` of a Storyline (None when it has none)."""
    origin = story.get("origin") if type(story) is dict else None
    return origin.get("format") if type(origin) is dict else None


def follow(copies: dict[int, tuple[Any, Any]], obj: Any) -> Any:
    """The object that stands for `obj` once residuals are restored: restoring copies the
    containers it writes into (`copies`: id of an original -> (original, its copy))."""
    while id(obj) in copies and copies[id(obj)][1] is not obj:
        obj = copies[id(obj)][1]
    return obj


def twin_write_back(entry: tuple[Any, ...], ctx: Context, copies: dict[int, tuple[Any, Any]]) -> None:
    """Give a copy the write-backs of its original (a pending entry ``(fn, original, copy, entries)``).

    `entries` are the original's write-backs, ``(fn, want, original)``, which read only the element
    they write, and have run: when restoring residuals changed neither element, the copy ends as
    the original did; else each is run again on the copy."""
    _, original, twin, entries = entry
    if copies and (id(original) in copies or id(twin) in copies):
        for fn, want, _ in entries:
            fn((fn, want, twin), ctx, copies)
        return
    twin.clear()
    twin.update(original)


# --- rules ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Rule:
    """A compiled row.  These methods hold the full semantics; generated code does the same work
    inline (codegen.py), and calls them only where it cannot.

    Forward, a source value is *consumed* only when the reverse gives it back; a value that a
    condition or a conversion would lose is kept as a residual under its source pointer.
    """

    spec: RuleSpec
    sources: tuple[Source, ...]
    targets: tuple[Path, ...]
    convert: Callable[..., Any] | None = None
    with_args: tuple[Source, ...] = ()
    condition: Callable[[Any], bool] | None = None
    owned: tuple[bool, ...] = ()  # per source: no other authoritative rule reads it
    reverse_convert: Callable[..., Any] | None = None
    reverse_when: tuple[tuple[Path, Any], ...] = ()
    reverse_first_of: tuple[Source, ...] = ()
    reverse_fn: Callable[..., Any] | None = None
    reverse_args: tuple[Source, ...] = ()
    reverse_targets: tuple[Path, ...] = ()
    write_back_fn: Callable[..., Any] | None = None
    format: str = ""  # the spec's format name (see `synthesized`)

    @property
    def authoritative(self) -> bool:
        """A rule whose source the forward consumes (so unmapped values become residuals)."""
        return authoritative(self.spec)

    @property
    def guarded(self) -> bool:
        """A copy whose conversion may not give its value back: checked after the forward."""
        return self.authoritative and self.spec.op == "copy" and self.convert is not None

    # -- forward --

    def choose(self, frame: Frame, ctx: Context) -> tuple[int, Any]:
        """The index and value of the source the rule takes, or (-1, MISSING): its op's choice."""
        return OPS[self.spec.op].choose(self, frame, ctx)

    def _convert(self, v: Any, frame: Frame, ctx: Context) -> Any:
        if self.convert is None:
            return v
        return self.convert(v, *(a.read(frame, ctx) for a in self.with_args))

    def value(self, frame: Frame, ctx: Context) -> Any:
        """The forward value of this rule in `frame` (MISSING: none)."""
        i, v = self.choose(frame, ctx)
        if v is MISSING or i < 0:
            return v
        if self.condition is not None and not self.condition(v):
            return MISSING
        return self._convert(v, frame, ctx)

    def forward(self, frame: Frame, dst: dict[str, Any], ctx: Context, prefix: str) -> None:
        """Write this rule's value into `dst`, keeping what it cannot map as residuals."""
        self._forward(frame, dst, ctx, prefix)
        if self.reverse_fn is not None and self.spec.op == "call":
            # A computed value with a reverse: what the reverse would not give back is kept
            # (decided once the Storyline is written, run._keep_what_the_reverse_loses).
            ctx.checks.append((self, frame, dst, prefix, None))

    def _forward(self, frame: Frame, dst: dict[str, Any], ctx: Context, prefix: str) -> None:
        i, v = self.choose(frame, ctx)
        spec = self.spec
        if i >= 0 and v is not MISSING:
            raw = v
            failed = self.condition is not None and not self.condition(v)
            v = MISSING if failed else self._convert(v, frame, ctx)
            lossy = v is MISSING or (spec.op == "copy" and self.convert is not None)
            # A null is kept too where the row would have copied it (keep_null, no conversion).
            keeps = raw is not None or (spec.keep_null and self.convert is None)
            if lossy and self.authoritative and keeps and self.sources[i].plain:
                # Kept unless the reverse gives it back (decided once the Storyline is written).
                ctx.checks.append((self, frame, dst, self.at(prefix, i), raw))
        if v is MISSING:
            if self.authoritative:
                self._keep_unchosen(frame, ctx, prefix, i)
            return
        for target in self.targets:
            put_in(dst, target, v)
        if spec.op == "first_of" and self.authoritative:
            self._keep_unchosen(frame, ctx, prefix, i)
            if i > 0 and self.sources[i].kind == "call" and self.write_back_fn is not None:
                ctx.checks.append((self, frame, dst, prefix, ("home", i, v)))
            if i > 0 and self.owned[i] and self.sources[i].plain:
                # The reverse writes the value back to the first source only: keep this one.
                ctx.residual[self.at(prefix, i)] = v
            elif i == 0 and json_equal(self._without_first(frame, ctx), v):
                # The rest of the chain derives the same value, so the reverse would not write
                # the first source back: keep it.
                ctx.residual[self.at(prefix, 0)] = v

    def pointer(self, i: int) -> str:
        """Escaped pointer text of source `i` below the scope element (from the root, for the
        input's own values: the caller's prefix is then left out, see `at`)."""
        return pointer_text(self.sources[i].path)

    def at(self, prefix: str, i: int) -> str:
        """The full source pointer of source `i` in the element at `prefix`."""
        return (prefix if self.sources[i].kind != "top" else "") + self.pointer(i)

    def _keep_unchosen(self, frame: Frame, ctx: Context, prefix: str, chosen: int) -> None:
        for j, source in enumerate(self.sources):
            if j == chosen:
                continue
            # A computed candidate that is not taken leaves its own inputs unmapped too.
            inputs = [(source, self.owned[j])] if source.plain else [(a, True) for a in source.args if a.plain]
            for item, owned in inputs:
                if not owned or not item.path or (item.kind == "elem" and item.level != len(frame.up)):
                    continue
                v = item.read(frame, ctx)
                if v is not MISSING and v is not None:
                    ctx.residual[("" if item.kind == "top" else prefix) + pointer_text(item.path)] = v

    def _without_first(self, frame: Frame, ctx: Context) -> Any:
        for source in self.sources[1:]:
            v = source.read(frame, ctx)
            if v is MISSING or not is_candidate(v, self.spec.nonempty, None):
                continue  # the chain's candidate test without the condition: see codegen._without_first
            return v
        return MISSING

    # -- reverse --

    def reverse_value(self, story_frame: Frame, ctx: Context) -> Any:
        """What the reverse of this authoritative copy writes to its source (MISSING: nothing)."""
        spec = self.spec
        v: Any = MISSING
        if all(json_equal(get_in(ctx.story, p), want) for p, want in self.reverse_when):
            for target in self.targets:
                v = get_in(story_frame.elem, target)
                if v is not MISSING and (v is not None or spec.keep_null):
                    break
                v = MISSING
            fallbacks = self.reverse_first_of
            if spec.synthesized and origin_format(ctx.story) == self.format:
                fallbacks = ()  # from this format, a missing value was missing in the source too
            for source in fallbacks if v is MISSING else ():
                v = source.read(story_frame, ctx)
                if v is not MISSING and v is not None:
                    break
                v = MISSING
        if v is MISSING:
            v = spec.reverse_default
            if v is MISSING:
                return MISSING
        if self.reverse_convert is not None:
            v = self.reverse_convert(v, *(a.read(ctx.out or story_frame, ctx) for a in self.with_args))
        return v

    def reverse(self, story_frame: Frame, out: dict[str, Any], ctx: Context) -> None:
        """Write this rule back into the source element `out` (`ctx.out` is its frame): its op's
        reverse (`ops.Op.reverse`), made of the three parts below."""
        OPS[self.spec.op].reverse(self, story_frame, out, ctx)

    def reverse_computed(self, story_frame: Frame, out: dict[str, Any], ctx: Context) -> bool:
        """A row with a computed reverse (`back: {call, args, to}`): its function's results written
        to their source pointers.  False when the row has none."""
        if self.reverse_fn is None:
            return False
        values = self.reverse_fn(*(a.read(story_frame, ctx) for a in self.reverse_args))
        if len(self.reverse_targets) == 1:
            values = (values,)
        for path, v in zip(self.reverse_targets, values, strict=True):
            if v is not MISSING:
                put_in(out, path, v) if path else out.update(v)
        return True

    def reverse_copy(self, story_frame: Frame, out: dict[str, Any], ctx: Context) -> None:
        """An authoritative or reverse-only copy's value, written to its source: the element, the
        document's own fields (from its first Storyline) or the document key."""
        if not (self.authoritative or self.spec.reverse_only):
            return
        source = self.sources[0]
        if source.kind == "var":
            ctx.key = self.reverse_value(story_frame, ctx)
        elif source.kind == "top":
            if ctx.first:  # the document's own fields: from its first Storyline
                v = self.reverse_value(story_frame, ctx)
                if v is not MISSING:
                    put_in(ctx.top, source.path, v)
        elif source.kind == "elem":
            v = self.reverse_value(story_frame, ctx)
            if v is not MISSING:
                put_in(out, source.path, v) if source.path else out.update(v)

    def queue_write_back(self, story_frame: Frame, out: dict[str, Any], ctx: Context) -> None:
        """The write-back of a derived value (a chain, a `back: none` copy), queued in
        ``ctx.pending`` until residuals are restored (`write_back_value` runs it)."""
        if self.write_back is None or not self.targets or any(s.kind == "top" for s in self.sources):
            return
        spec = self.spec
        target = self.targets[0]
        want = get_in(story_frame.elem, target)
        null = spec.op == "first_of" and not spec.nonempty and self.convert is None  # a null is a value
        if not target or (want is not MISSING and (null or want is not None)):
            here = ctx.out if ctx.out is not None else Frame(out, (), story_frame.idx)
            ctx.pending.append((_write_back, want, out, here.up, here.idx, ctx.story, ctx.parent, self))

    def write_back_value(self, want: Any, out: dict[str, Any], frame: Frame, ctx: Context) -> None:
        """Write `want` (the Storyline's value) back into the rebuilt element `out` unless this
        rule's forward derives it from `out` again (`frame`: `out` with its ancestors)."""
        if json_equal(self.value(frame, ctx), want):
            return
        if self.write_back_fn is not None:
            placed = self.write_back_fn(want, out)
            if placed is not MISSING and placed[0] not in out:
                out[placed[0]] = placed[1]
        elif self.write_back is not None:
            insert_copying(out, self.write_back, want)

    @property
    def write_back(self) -> Path | None:
        """Where the reverse writes a derived value that the forward would not derive again."""
        if self.spec.op == "first_of" or (self.spec.op == "copy" and self.spec.derived):
            for source in self.sources:
                if source.kind == "elem":
                    return source.path
        return None


def _write_back(entry: tuple[Any, ...], ctx: Context, copies: dict[int, tuple[Any, Any]]) -> None:
    """A write-back entry of ``ctx.pending`` queued by `Rule.reverse`, run once residuals are
    restored: ``(fn, want, out, oup, idx, story, parent, rule)``."""
    _, want, out, oup, idx, story, parent, rule = entry
    if copies:
        out = follow(copies, out)
        oup = tuple([follow(copies, u) for u in oup])
    ctx.story, ctx.parent = story, parent
    rule.write_back_value(want, out, Frame(out, oup, idx), ctx)


# --- scopes --------------------------------------------------------------------------------


@dataclass(slots=True)
class Scope:
    """One level of array iteration, with its rules, known-key objects and inner arrays.

    `src_rel`/`dst_rel` lead from the parent's element to the array; `fallback_rel` is the array
    read instead when that one is empty.  `objects` are known-key objects below the element:
    their paths may hold variables (``("tools", VAR)``), whose arrays are walked for residuals.
    """

    src: Template
    dst: Template
    level: int = 0
    src_rel: Path = ()
    dst_rel: Path = ()
    fallback_rel: Path | None = None
    omit_empty: bool = False
    rules: list[Rule] = field(default_factory=list)
    objects: list[tuple[tuple[Any, ...], frozenset[str]]] = field(default_factory=list)
    children: list[Scope] = field(default_factory=list)
    pointer_prefix: str = ""

    @property
    def variable(self) -> str | None:
        """The name of the variable this scope binds (None for the root)."""
        last = self.src.tokens[-1] if self.src.tokens else None
        return getattr(last, "name", None)


ScopeFn = Callable[..., None]


@dataclass(frozen=True, slots=True)
class Program:
    """A compiled spec: the root scope, document-level settings and the generated functions."""

    spec: Spec
    root: Scope
    children: Path | None
    each: Path | None  # the members that are documents (``/attempts/{a}``), or None: the input is one
    top_objects: tuple[tuple[Path, frozenset[str]], ...]  # known-key objects outside the members
    document_id: Rule | None
    count_tree: Tree
    forward_root: ScopeFn
    reverse_root: ScopeFn
    source: str = field(repr=False)
