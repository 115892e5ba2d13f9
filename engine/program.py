"""The compiled form of a spec: scopes of rules over pre-parsed paths, and the accessors they use.

`compile.py` builds a `Program` from a `Spec`; `codegen.py` turns its scopes into Python; `run.py`
executes it.  Rule objects hold the semantics of each row in one place; generated code calls them
wherever a row is richer than a copy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mapc.engine.pointer import escape
from mapc.engine.residual import Tree
from mapc.engine.spec import RuleSpec, Spec
from mapc.engine.template import Template
from mapc.engine.values import MISSING, is_empty, json_equal

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


CONDITIONS: dict[str, Callable[[Any], bool]] = {
    "nonempty": lambda v: not is_empty(v),
    "integer": lambda v: type(v) is int and -(2**63) <= v < 2**63,  # an i64, as Storyline integers
    "number": lambda v: type(v) in (int, float),
    "string": lambda v: type(v) is str,
    "object": lambda v: type(v) is dict,
    "array": lambda v: type(v) is list,
    "boolean": lambda v: type(v) is bool,
}


# --- run-time context ----------------------------------------------------------------------


@dataclass(slots=True)
class Context:
    """What a forward run of one document node carries: residuals and the parent's Storyline."""

    residual: dict[str, Any]
    parent: dict[str, Any] | None
    story: dict[str, Any]


# --- rules ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Source:
    """A rule input: a path below the scope element, or a value of the parent Storyline."""

    path: Path
    parent: bool = False

    def read(self, src: Any, ctx: Context) -> Any:
        if self.parent:
            return get_in(ctx.parent, self.path) if ctx.parent is not None else MISSING
        return get_in(src, self.path)


@dataclass(frozen=True, slots=True)
class Rule:
    """A compiled rule.  `value` computes the forward value; `forward` also writes and captures."""

    spec: RuleSpec
    sources: tuple[Source, ...]
    targets: tuple[Path, ...]
    convert: Callable[[Any], Any] | None
    condition: Callable[[Any], bool] | None
    owned: tuple[bool, ...]  # per source: no other authoritative rule reads it
    reverse_convert: Callable[[Any], Any] | None
    reverse_when: tuple[tuple[Path, Any], ...]

    @property
    def authoritative(self) -> bool:
        """A rule whose source the forward consumes (so unmapped values become residuals)."""
        spec = self.spec
        return not spec.derived and not spec.reverse_only and spec.op in ("copy", "first_of")

    def choose(self, src: Any, ctx: Context) -> tuple[int, Any]:
        """The index and value of the source the rule takes, or (-1, MISSING)."""
        spec = self.spec
        if spec.op == "const":
            return -1, spec.value
        if spec.op == "call":
            args = [s.read(src, ctx) for s in self.sources]
            assert self.convert is not None
            return -1, self.convert(*args)
        for i, source in enumerate(self.sources):
            v = source.read(src, ctx)
            if v is MISSING:
                continue
            if spec.op == "first_of":
                if spec.nonempty and is_empty(v):
                    continue
                return i, v
            if v is None and not spec.keep_null:
                return -1, MISSING
            return i, v
        return -1, MISSING

    def value(self, src: Any, ctx: Context) -> Any:
        """The forward value of this rule for the source element `src` (MISSING: none)."""
        i, v = self.choose(src, ctx)
        if v is MISSING or i < 0:
            return v
        if self.condition is not None and not self.condition(v):
            return MISSING
        if self.convert is not None:
            return self.convert(v)
        return v

    def forward(self, src: Any, dst: dict[str, Any], ctx: Context, prefix: str) -> None:
        i, v = self.choose(src, ctx)
        spec = self.spec
        if i >= 0 and v is not MISSING:
            raw = v
            if self.condition is not None and not self.condition(v):
                v = MISSING
            elif self.convert is not None:
                v = self.convert(v)
            if v is MISSING and self.authoritative and raw is not None:
                # What no rule maps is kept, so that the reverse can put it back.
                ctx.residual[prefix + pointer_text(self.sources[i].path)] = raw
        if v is MISSING:
            if self.authoritative:
                self._keep_unchosen(src, ctx, prefix, i)
            return
        for target in self.targets:
            put_in(dst, target, v)
        if spec.op == "first_of" and self.authoritative:
            self._keep_unchosen(src, ctx, prefix, i)
            if i == 0 and json_equal(self._without_first(src, ctx), v):
                # The rest of the chain derives the same value: the reverse would not write the
                # first source back, so keep it here.
                ctx.residual[prefix + pointer_text(self.sources[0].path)] = v

    def _keep_unchosen(self, src: Any, ctx: Context, prefix: str, chosen: int) -> None:
        for j, source in enumerate(self.sources):
            if j == chosen or not self.owned[j] or source.parent:
                continue
            v = source.read(src, ctx)
            if v is not MISSING and v is not None:
                ctx.residual[prefix + pointer_text(source.path)] = v

    def _without_first(self, src: Any, ctx: Context) -> Any:
        for source in self.sources[1:]:
            v = source.read(src, ctx)
            if v is MISSING or (self.spec.nonempty and is_empty(v)):
                continue
            return v
        return MISSING

    # -- reverse --

    def reverse(self, story_elem: Any, out: dict[str, Any], story: dict[str, Any]) -> None:
        """Write this authoritative copy back into the source element `out`."""
        v: Any = MISSING
        if all(json_equal(get_in(story, p), want) for p, want in self.reverse_when):
            for target in self.targets:
                v = get_in(story_elem, target)
                if v is not MISSING and (v is not None or self.spec.keep_null):
                    break
                v = MISSING
        if v is MISSING:
            v = self.spec.reverse_default
            if v is MISSING:
                return
        if self.reverse_convert is not None:
            v = self.reverse_convert(v)
        put_in(out, self.sources[0].path, v)

    @property
    def write_back(self) -> Path | None:
        """Where the reverse writes a derived value that the forward would not derive again."""
        if self.spec.op == "first_of" or (self.spec.op == "copy" and self.spec.derived):
            for source in self.sources:
                if not source.parent:
                    return source.path
        return None


# --- scopes --------------------------------------------------------------------------------


@dataclass(slots=True)
class Scope:
    """One level of array iteration, with its rules, known-key objects and inner arrays."""

    src: Template
    dst: Template
    src_rel: Path = ()
    dst_rel: Path = ()
    rules: list[Rule] = field(default_factory=list)
    objects: list[tuple[Path, frozenset[str]]] = field(default_factory=list)
    children: list[Scope] = field(default_factory=list)
    pointer_prefix: str = ""


ScopeFn = Callable[..., None]


@dataclass(frozen=True, slots=True)
class Program:
    """A compiled spec: the root scope, document-level settings and the generated functions."""

    spec: Spec
    root: Scope
    children: Path | None
    document_id: Rule | None
    count_tree: Tree
    forward_root: ScopeFn
    reverse_root: ScopeFn
    source: str = field(repr=False)
