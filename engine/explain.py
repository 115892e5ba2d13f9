"""Where a value went, or where it came from, named by rule and spec line.

`explain_source` takes a source document and a pointer into it: it maps the document and says
which rules read that value (exactly, as part of a value read whole, or a part of it; as a
source, a computed candidate's argument, a `with` argument, or the key or position a variable
is bound to), whether each fired, and the Storyline pointer(s) the value reached; or that it
was kept in ``unknown_fields``, or dropped.  A rule may read the value from a scope below it
(a tool call reads its step's ``step_id``): it is asked in every element of its scope there.
With ``document.each`` a value outside the members (the task id of a document whose members are attempts) is read by the
rules of every member's Storyline.

`explain_target` takes Storylines and a pointer into one of them: it says which rules write that
place and from which source pointer (with the member key and array positions filled in), or
which residual it is.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from mapc.engine import envelope, pointer, run
from mapc.engine.compile import Program
from mapc.engine.coverage import context, frame, items, node_contexts
from mapc.engine.problems import MapcError
from mapc.engine.program import Context, Frame, Path, Rule, Scope, Source
from mapc.engine.spec import CallRef, ConstRef, CountRef, ParentRef, Ref, RuleSpec, SourceRef, StoryRef, VarRef
from mapc.engine.template import Template, Var, format_tokens
from mapc.engine.values import MISSING, is_empty


@dataclass(frozen=True, slots=True)
class Finding:
    """One fact about the explained value.

    `kind` is one of ``read`` (a rule reads exactly this value), ``inside`` (a rule reads a
    value holding it), ``part`` (a rule reads a part of it), ``key`` (a rule reads the key or
    position it is bound to), ``array`` (an array element or array), ``document`` (a node that
    became its own Storyline, or the document id), ``residual``, ``dropped``, ``written`` (a
    rule writes this Storyline place), ``engine`` (the engine writes it).
    """

    kind: str
    message: str
    rule: RuleSpec | None = None
    source: str | None = None
    targets: tuple[str, ...] = ()
    fired: bool | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "message": self.message}
        if self.rule is not None:
            out["rule"] = self.rule.label
            out["at"] = str(self.rule.at)
        if self.source is not None:
            out["source"] = self.source
        if self.targets:
            out["targets"] = list(self.targets)
        if self.fired is not None:
            out["fired"] = self.fired
        return out


def _fail(message: str, at: str = "") -> MapcError:
    return MapcError.single("explain.not_found", at, message)


def _fill(template: Template, bindings: dict[str, Any]) -> tuple[str, ...]:
    return tuple(str(bindings.get(t.name, "{" + t.name + "}")) if isinstance(t, Var) else t for t in template.tokens)


def _chains(program: Program) -> list[list[Scope]]:
    """Each scope with its ancestors, root first."""
    out: list[list[Scope]] = []

    def walk(scope: Scope, chain: list[Scope]) -> None:
        here = [*chain, scope]
        out.append(here)
        for child in scope.children:
            walk(child, here)

    walk(program.root, [])
    return out


@dataclass(slots=True)
class _Level:
    """One element on the way down to the explained value (or one element a rule runs on)."""

    scope: Scope
    elem: Any
    rest: tuple[str, ...] | None  # the value's tokens below `elem` (None: the value is not below it)
    bindings: dict[str, Any]
    up: tuple[Any, ...] = ()  # the elements of the levels above
    idx: tuple[Any, ...] = (MISSING,)  # the document key, then each level's position
    ptr: tuple[str, ...] = ()  # where the element is in the input (or the Storyline, target side)
    dst: tuple[str, ...] = ()  # where the element's Storyline element is, below the Storyline
    notes: list[Finding] = field(default_factory=list)

    @property
    def frame(self) -> Frame:
        return frame(self.elem, self.up, self.idx)


def _bind(bindings: dict[str, Any], child: Scope, i: int) -> dict[str, Any]:
    inner = dict(bindings)
    for template in (child.src, child.dst):
        last = template.tokens[-1] if template.tokens else None
        if isinstance(last, Var):
            inner[last.name] = i
    return inner


def _descend(scope: Scope, level: _Level, levels: list[_Level], *, target_side: bool = False) -> None:
    """The levels from `level` down to the deepest element that holds the value."""
    levels.append(level)
    elem, rest = level.elem, level.rest or ()
    if type(elem) is not dict:
        return
    for child in scope.children:
        if target_side:
            rel, found = child.dst_rel, pointer.resolve(elem, child.dst_rel)
        else:
            found, rel = items(child, elem)
            unused = child.fallback_rel if rel == child.src_rel else child.src_rel
            if unused is not None and rest[: len(unused)] == unused and len(rest) >= len(unused):
                level.notes.append(_unused_array(child, rel, unused, level))
                continue
        if len(rest) > len(rel) and rest[: len(rel)] == rel:
            token = rest[len(rel)]
            if type(found) is list and pointer.is_array_index(token) and int(token) < len(found):
                i = int(token)
                below = _Level(
                    child,
                    found[i],
                    rest[len(rel) + 1 :],
                    _bind(level.bindings, child, i),
                    (*level.up, elem),
                    (*level.idx, i),
                    (*level.ptr, *rel, token),
                    (*level.dst, *child.dst_rel, token),
                )
                _descend(child, below, levels, target_side=target_side)
                return


def _unused_array(child: Scope, used: Path, unused: Path, level: _Level) -> Finding:
    at = pointer.format((*level.ptr, *unused))
    other = pointer.format((*level.ptr, *used))
    if unused == child.fallback_rel:
        message = (
            f"{at} is read only when {other} is empty (arrays: {child.src} else …); here it is not, so its "
            "elements are not mapped: it is kept in unknown_fields unless it is a copy of the other array, "
            "which the reverse writes back to both"
        )
    else:
        message = f"{at} is empty, so the elements of {other} (its fallback, arrays: {child.src} else …) are mapped"
    return Finding("array", message, source=at)


def _relation(path: Path, rest: tuple[str, ...]) -> str | None:
    if path == rest:
        return "read"
    if len(path) < len(rest) and rest[: len(path)] == path:
        return "inside"
    if len(rest) < len(path) and path[: len(rest)] == rest:
        return "part"
    return None


def _why_not(rule: Rule, i: int, level: _Level, ctx: Context, prefix: str) -> str:
    spec = rule.spec
    if i < 0:
        return "the row gives no value"
    fr = level.frame
    value = rule.sources[i].read(fr, ctx)
    if value is MISSING:
        return "the value is absent here"
    if spec.op == "first_of":
        chosen, _ = rule.choose(fr, ctx)
        if chosen >= 0 and chosen != i:
            return f"first_of chose {_ref_text(spec.sources[chosen], level.bindings, prefix)} instead"
        if spec.nonempty and is_empty(value):
            return "first_of skips an empty value (nonempty)"
    if value is None and not spec.keep_null and spec.op != "call":
        return "null is absent (the row has no keep_null)"
    if spec.when:
        return f"the value does not satisfy when: {spec.when}"
    if spec.call:
        return f"{spec.call} gives no value for it"
    return "the row gives no value"


# --- which rules read a value -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Leaf:
    """A value a rule reads: `index` is the rule source it belongs to (-1: a `with` argument),
    `via` the function of the computed candidate it is an argument of."""

    index: int
    source: Source
    via: str | None
    role: str  # source | with


def _leaves(rule: Rule) -> Iterator[_Leaf]:
    def walk(ref: Ref | None, source: Source, index: int, via: str | None, role: str) -> Iterator[_Leaf]:
        if source.kind == "call":
            name = ref.call if isinstance(ref, CallRef) else via
            refs = ref.args if isinstance(ref, CallRef) else ()
            for k, arg in enumerate(source.args):
                yield from walk(refs[k] if k < len(refs) else None, arg, index, name, role)
        else:
            yield _Leaf(index, source, via, role)

    spec = rule.spec
    for i, source in enumerate(rule.sources):
        yield from walk(spec.sources[i] if i < len(spec.sources) else None, source, i, None, "source")
    for k, source in enumerate(rule.with_args):
        yield from walk(spec.with_args[k] if k < len(spec.with_args) else None, source, -1, None, "with")


def _frames(chain: list[Scope], levels: list[_Level]) -> list[_Level]:
    """The elements of `chain[-1]` a rule runs on that agree with the explained value's levels."""
    j = 0
    while j + 1 < len(levels) and j + 1 < len(chain) and levels[j + 1].scope is chain[j + 1]:
        j += 1
    out = [levels[j]] if j < len(chain) else []
    for scope in chain[j + 1 :]:
        nxt = []
        for lv in out:
            found, rel = items(scope, lv.elem) if type(lv.elem) is dict else (MISSING, ())
            for i, item in enumerate(found if type(found) is list else ()):
                nxt.append(
                    _Level(
                        scope,
                        item,
                        None,
                        _bind(lv.bindings, scope, i),
                        (*lv.up, lv.elem),
                        (*lv.idx, i),
                        (*lv.ptr, *rel, str(i)),
                        (*lv.dst, *scope.dst_rel, str(i)),
                    )
                )
        out = nxt
    return out


@dataclass(slots=True)
class _Reading:
    """What one rule does with the explained value, over the elements it runs on."""

    rule: Rule
    leaf: _Leaf
    relation: str
    at: tuple[str, ...]  # the pointer of what the rule reads, in the input
    below: tuple[str, ...]  # the value's tokens below that (for `inside`)
    prefix: str = ""  # what source pointers of the rule are relative to (a nested document's carrier)
    targets: list[str] = field(default_factory=list)
    fired_targets: list[str] = field(default_factory=list)
    first: tuple[_Level, Context] | None = None


def _readings(
    program: Program,
    levels: list[_Level],
    tokens: tuple[str, ...],
    ctx: Context,
    story_at: str,
    found: dict[tuple[int, int, int], _Reading],
) -> None:
    """Add what each rule does with the value at `tokens` in one document node to `found`."""
    prefix = "" if program.each is not None else pointer.format(levels[0].ptr)
    for chain in _chains(program):
        scope = chain[-1]
        for rule in scope.rules:
            if rule.spec.reverse_only:
                continue
            for n, leaf in enumerate(_leaves(rule)):
                source = leaf.source
                relation: str | None = None
                at: tuple[str, ...] = ()
                below: tuple[str, ...] = ()
                if source.kind == "top":
                    relation, at = _relation(source.path, tokens), source.path
                    below = tokens[len(source.path) :]
                    if relation == "inside" and program.each is not None and program.each[: len(at)] == at:
                        continue  # it reads the members (their number), not this value
                elif source.kind in ("elem", "var") and source.level < len(levels):
                    lv = levels[source.level]
                    if lv.scope is not chain[source.level] or lv.rest is None:
                        continue
                    if source.kind == "var":
                        relation = "key" if not lv.rest and source.level == len(levels) - 1 else None
                        at = lv.ptr
                    else:
                        relation, at = _relation(source.path, lv.rest), (*lv.ptr, *source.path)
                        below = lv.rest[len(source.path) :]
                if relation is None:
                    continue
                key = (id(rule), n, id(scope))
                reading = found.setdefault(key, _Reading(rule, leaf, relation, at, below, prefix))
                frames = _frames(chain, levels)
                if not frames:
                    reading.targets.extend(_template_targets(rule, chain, levels, story_at))
                for fl in frames:
                    fr = fl.frame
                    whole = rule.spec.op == "copy" and not rule.spec.call and leaf.via is None and leaf.index == 0
                    extra = below if relation == "inside" and whole else ()
                    targets = [story_at + pointer.format((*fl.dst, *t, *extra)) for t in rule.targets]
                    reading.targets.extend(t for t in targets if t not in reading.targets)
                    if reading.first is None:
                        reading.first = (fl, ctx)
                    fired = rule.value(fr, ctx) is not MISSING
                    if fired and rule.spec.op == "first_of" and leaf.index >= 0:
                        fired = rule.choose(fr, ctx)[0] == leaf.index
                    if fired:
                        reading.fired_targets.extend(t for t in targets if t not in reading.fired_targets)


def _absent(reading: _Reading) -> bool:
    """The part a reading names is absent in the element it was asked on."""
    if reading.first is None:
        return True
    level, ctx = reading.first
    return reading.leaf.source.read(level.frame, ctx) is MISSING


def _template_targets(rule: Rule, chain: list[Scope], levels: list[_Level], story_at: str) -> list[str]:
    """The targets of a rule whose scope has no element here, with the positions left as variables."""
    j = 0
    while j + 1 < len(levels) and j + 1 < len(chain) and levels[j + 1].scope is chain[j + 1]:
        j += 1
    tail: list[Any] = []
    for scope in chain[j + 1 :]:
        last = scope.dst.tokens[-1] if scope.dst.tokens else Var("i")
        tail += [*scope.dst_rel, last]
    base = story_at + pointer.format(levels[j].dst)
    return [base + format_tokens((*tail, *t)) for t in rule.targets]


def _reading_finding(reading: _Reading, text: str) -> Finding:
    rule, leaf, spec = reading.rule, reading.leaf, reading.rule.spec
    fired = bool(reading.fired_targets)
    targets = tuple(reading.fired_targets if fired else reading.targets)
    shown = ", ".join(targets)
    label = f"{spec.label} ({spec.at})"
    what = {"read": "it", "inside": f"the enclosing {pointer.format(reading.at)}", "key": "its key or position"}.get(
        reading.relation, f"its part {pointer.format(reading.at)}"
    )
    if reading.relation == "key":
        value = reading.first[0].idx[leaf.source.level] if reading.first else "?"
        what = f"its {'key' if isinstance(value, str) else 'position'} {value!r}"
    if leaf.via is not None:
        verb = f"passes {what} to {leaf.via}"
        if spec.op == "first_of":
            verb += f" (first_of candidate {leaf.index + 1} of {len(rule.sources)})"
        message = f"{label} {verb} for {shown}"
    elif leaf.role == "with":
        message = f"{label} passes {what} to {spec.call} (with) for {shown}"
    elif spec.op == "copy":
        verb = "copies" if reading.relation in ("read", "inside", "key") else "reads"
        message = f"{label} {verb} {what} to {shown}" if verb == "copies" else f"{label} reads {what} for {shown}"
        if reading.relation == "inside" and not spec.call:
            message = f"{label} copies {what}, so it reaches {shown}"
    elif spec.op == "first_of":
        message = f"{label} takes {what} (first_of source {leaf.index + 1} of {len(rule.sources)}) for {shown}"
    else:
        message = f"{label} passes {what} to {spec.call} for {shown}"
    if spec.call and spec.op != "call" and leaf.role == "source" and leaf.via is None:
        message += f", converted by {spec.call}"
    if spec.derived:
        message += " (derived: forward only)"
    if not fired:
        if reading.first is None:
            message += "; here it did not fire: the row's array has no element here"
        else:
            level, ctx = reading.first
            message += f"; here it did not fire: {_why_not(rule, leaf.index, level, ctx, reading.prefix)}"
    kind = reading.relation
    return Finding(kind, message, spec, text, targets, fired)


# --- the source side ----------------------------------------------------------------------


def explain_source(program: Program, document: Any, text: str) -> list[Finding]:
    """Where the value at `text` in the source `document` goes, rule by rule."""
    try:
        tokens = pointer.parse(text)
    except pointer.PointerSyntaxError:
        raise _fail(f"{text!r} is not a JSON Pointer") from None
    if pointer.resolve(document, tokens) is MISSING:
        raise _fail(f"the input has no value at {text or '/'}", text)
    if (envelope.KEY in tokens and pointer.is_prefix(pointer.parse(program.spec.envelope), tokens)) or (
        tokens and tokens[0] == envelope.KEY
    ):
        return [
            Finding(
                "residual",
                "the _storyline envelope: residuals of other formats, attached to the "
                "Storyline of each carrier and not mapped by rules",
            )
        ]
    doc, _ = envelope.take(document, program.spec.envelope)
    if program.spec.stream is not None:  # an event stream: record by record (engine/stream.py)
        from mapc.engine import stream

        return [
            Finding(k, m, targets=t, fired=k == "read" or None)
            for k, m, t in stream.explain(program.spec.stream, doc, tokens)
        ]
    mapped = run.forward(program, doc)
    contexts = node_contexts(program, doc, mapped)
    holders = [k for k, m in enumerate(mapped) if pointer.is_prefix(pointer.parse(m.carrier), tokens)]
    findings: list[Finding] = []
    found: dict[tuple[int, int, int], _Reading] = {}
    if holders:
        best = max(holders, key=lambda k: len(pointer.parse(mapped[k].carrier)))
        members = [best]
    else:  # outside the members of the document (document.each): read by the rules of every member
        best, members = -1, list(range(len(mapped)))
        findings.extend(_outside_members(program, tokens, mapped))
    last: _Level | None = None
    for k in members:
        m = mapped[k]
        carrier = pointer.parse(m.carrier)
        node, ctx, key = contexts[k]
        bindings = _member_bindings(program, key)
        if k == best:
            rel = tokens[len(carrier) :]
            levels: list[_Level] = []
            _descend(program.root, _Level(program.root, node, rel, bindings, (), (key,), carrier), levels)
            last = levels[-1]
        else:
            levels = [_Level(program.root, node, None, bindings, (), (key,), carrier)]
        _readings(program, levels, tokens, ctx, f"/{k}", found)
    if last is not None:
        findings.extend(_element_findings(program, mapped, best, tokens, last))
    node = (holders and not tokens[len(pointer.parse(mapped[best].carrier)) :]) or not tokens or tokens == program.each
    # a document node: its parts are the document's values (explain those), not facts about it;
    # the parts an element does not have are left out
    findings.extend(
        _reading_finding(r, text)
        for r in found.values()
        if not (r.relation == "part" and (node or (not r.fired_targets and _absent(r))))
    )
    findings.extend(_residual_findings([(mapped[k].story, f"/{k}") for k in members], program.spec.source, text))
    if program.spec.rows is not None:
        findings[:0] = _row_findings(program, tokens)
    if not any(f.fired or f.kind in ("residual", "array", "document") for f in findings):
        findings.append(Finding("dropped", _dropped_reason(findings)))
    return findings


def _row_findings(program: Program, tokens: tuple[str, ...]) -> list[Finding]:
    """A row corpus: the rows of its pointer table (`group:`, `spread:`, `fanout:`) whose source
    template matches `tokens` (a variable matches any one token)."""
    from mapc.engine.table import mapping_rows
    from mapc.engine.template import parse_template

    out = []
    for row in mapping_rows(program.spec):
        for source in row.sources:
            template = parse_template(source)
            if "unmapped" in source or len(template.tokens) != len(tokens):
                continue
            if all(isinstance(t, Var) or t == v for t, v in zip(template.tokens, tokens, strict=True)):
                message = f"read as {source} (the spec's row-corpus table) → {', '.join(row.targets)}"
                out.append(Finding("read", message, source=source, targets=row.targets, fired=True))
    return out


def _member_bindings(program: Program, key: Any) -> dict[str, Any]:
    spec = program.spec
    last = spec.each.tokens[-1] if spec.each is not None and spec.each.tokens else None
    return {last.name: key} if isinstance(last, Var) and key is not MISSING else {}


def _outside_members(program: Program, tokens: tuple[str, ...], mapped: list[run.Mapped]) -> list[Finding]:
    """Findings for a value outside the members of a document (document.each), or the document."""
    out = []
    each = program.each
    stories = tuple(f"/{k}" for k in range(len(mapped)))
    if each is not None and (tokens == each or not tokens):
        where = pointer.format(each)
        pairs = ", ".join(f"{m.carrier} → /{k}" for k, m in enumerate(mapped)) or "none here"
        what = "the document" if not tokens else where
        message = f"{what}: each member at {where}/… becomes its own Storyline (document.each): {pairs}"
        out.append(Finding("document", message, targets=stories))
    rule = program.document_id
    if rule is not None and rule.sources and rule.sources[0].kind == "top" and rule.sources[0].path == tokens:
        at = f"/unknown_fields/sources/{pointer.escape(program.spec.source)}/source_document_id"
        targets = tuple(f"/{k}{at}" for k, m in enumerate(mapped) if "unknown_fields" in m.story)
        message = (
            f"document.id ({rule.spec.at}) makes it the source_document_id of the residuals of every Storyline"
            + (f": {', '.join(targets)}" if targets else " (none has residuals here)")
        )
        out.append(Finding("document", message, rule.spec, pointer.format(tokens), targets, bool(targets)))
    return out


def _element_findings(
    program: Program, mapped: list[run.Mapped], best: int, tokens: tuple[str, ...], last: _Level
) -> list[Finding]:
    story_at = f"/{best}"
    out: list[Finding] = []
    text = pointer.format(tokens)
    carrier = mapped[best].carrier
    if not tokens[len(pointer.parse(carrier)) :]:
        if program.each is not None:
            what = f"{text}, a member of the document (document.each),"
        else:
            what = "the document" if not carrier else f"{text}, a nested document,"
        out.append(Finding("document", f"{what} becomes Storyline {best} (pointer {story_at})", targets=(story_at,)))
        return out
    if last.rest == () and last.scope is not program.root:
        dst = pointer.format(_fill(last.scope.dst, last.bindings))
        out.append(
            Finding(
                "array",
                f"this element becomes {story_at}{dst} (arrays: {last.scope.src} → {last.scope.dst})",
                targets=(story_at + dst,),
            )
        )
    for child in last.scope.children:
        used = items(child, last.elem)[1] if type(last.elem) is dict else child.src_rel
        if last.rest == used:
            dst = story_at + pointer.format((*last.dst, *child.dst_rel))
            fallback = " (the fallback array: the other one is empty)" if used == child.fallback_rel else ""
            out.append(
                Finding(
                    "array",
                    f"this array becomes {dst}, element by element (arrays: {child.src} → {child.dst}){fallback}",
                    targets=(dst,),
                )
            )
    for lv in [last]:
        out.extend(lv.notes)
    rel = tokens[len(pointer.parse(carrier)) :]
    if program.children is not None and rel == program.children:
        out.append(Finding("document", "each element becomes its own Storyline, linked by /children and /parent"))
    return out


def _residual_findings(stories: list[tuple[dict[str, Any], str]], source: str, text: str) -> list[Finding]:
    """Residuals at, above or below `text` in the Storylines (a document's own keys are kept with
    every member: one finding, with a target in each Storyline)."""
    tokens = pointer.parse(text)
    by_key: dict[str, tuple[str, list[str]]] = {}
    for story, story_at in stories:
        entry = ((story.get("unknown_fields") or {}).get("sources") or {}).get(source) or {}
        base = f"{story_at}/unknown_fields/sources/{pointer.escape(source)}/fields/"
        for key in entry.get("fields") or {}:
            try:
                key_tokens = pointer.parse(key)
            except pointer.PointerSyntaxError:
                continue
            if key == text:
                what = "no row maps it (or its row would lose it): kept in unknown_fields"
            elif pointer.is_prefix(key_tokens, tokens):
                what = f"it is inside the residual {key}, kept in unknown_fields"
            elif pointer.is_prefix(tokens, key_tokens):
                what = f"its part {key} is a residual, kept in unknown_fields"
            else:
                continue
            by_key.setdefault(key, (what, []))[1].append(base + pointer.escape(key))
    return [
        Finding("residual", f"{what} at {', '.join(targets)}", source=text, targets=tuple(targets), fired=True)
        for what, targets in by_key.values()
    ]


def _dropped_reason(findings: list[Finding]) -> str:
    if findings:
        return "no row gave it a value and it is not a residual: it is not in the Storylines"
    return (
        "no row reads it and it is not a residual (a known key no row reads, or a null that "
        "means absent): it is not in the Storylines"
    )


# --- Storyline side ------------------------------------------------------------------------


def explain_target(
    program: Program, stories: list[dict[str, Any]], index: int, text: str, document: Any = None
) -> list[Finding]:
    """Where the value at `text` in Storyline `index` of `stories` comes from.

    With the source `document` (the Storylines were mapped from it), the findings also say
    which rules fired and which first_of source was chosen.
    """
    if not 0 <= index < len(stories):
        raise _fail(f"there is no Storyline {index} (there are {len(stories)})")
    try:
        tokens = pointer.parse(text)
    except pointer.PointerSyntaxError:
        raise _fail(f"{text!r} is not a JSON Pointer") from None
    story = stories[index]
    if pointer.resolve(story, tokens) is MISSING:
        raise _fail(f"Storyline {index} has no value at {text or '/'}", text)
    carriers = _carriers(program, stories, document)
    carrier = carriers.get(index, "")
    if tokens[:1] == ("unknown_fields",) or tokens[:1] == ("unknown_key_counts",):
        return _residual_origin(program, tokens)
    if tokens[:1] == ("children",) and program.children is not None:
        return [
            Finding(
                "engine",
                "the engine writes /children: the document ids (trajectory, else session) "
                f"of the nested documents at {pointer.format(program.children)}/…",
            )
        ]
    if tokens[:1] == ("parent",) and program.children is not None:
        return [
            Finding(
                "engine",
                "the engine writes /parent/psid: the parent Storyline's document id (trajectory, else session)",
            )
        ]
    key = document_key_of(program, carrier)
    levels: list[_Level] = []
    root = _Level(program.root, story, tuple(tokens), _member_bindings(program, key))
    _descend(program.root, root, levels, target_side=True)
    source_node, ctx = None, context(None, story, None, key)
    if document is not None:
        doc, _ = envelope.take(document, program.spec.envelope)
        source_node = pointer.resolve(doc, pointer.parse(carrier))
        found = [c for c in node_contexts(program, doc, run.forward(program, doc)) if c[0] is source_node]
        if found:
            _, ctx, key = found[0]
    prefix = "" if program.each is not None else carrier
    findings: list[Finding] = []
    for level in levels:
        elem = _source_frame(source_node, levels, level, key) if source_node is not None else None
        for rule in level.scope.rules:
            for t in rule.targets:
                relation = _relation(t, level.rest or ())
                if relation is None:
                    continue
                findings.append(_origin(rule, relation, level, prefix, elem, ctx))
    last = levels[-1]
    for child in last.scope.children:
        rest = last.rest or ()
        if len(rest) < len(child.dst_rel) + 1 and child.dst_rel[: len(rest)] == rest:
            src = prefix + pointer.format(_fill(Template("", child.src.tokens[:-1]), last.bindings))
            also = ""
            if child.fallback_rel is not None:
                other = Template("", (*child.src.tokens[: -1 - len(child.src_rel)], *child.fallback_rel))
                also = f" (else {prefix + pointer.format(_fill(other, last.bindings))}, when that one is empty)"
            findings.append(
                Finding(
                    "array",
                    f"its elements come from {src}{also}, element by element (arrays: {child.src} → {child.dst})",
                    source=src,
                )
            )
    if not findings:
        findings.append(Finding("dropped", "no row writes this place"))
    return findings


def document_key_of(program: Program, carrier: str) -> Any:
    """The member key of the document a carrier names (``document.each``), or MISSING."""
    each = program.each
    tokens: tuple[str, ...] = pointer.parse(carrier) if carrier else ()
    if each is not None and len(tokens) == len(each) + 1 and tokens[: len(each)] == each:
        return tokens[-1]
    return MISSING


def _carriers(program: Program, stories: list[dict[str, Any]], document: Any) -> dict[int, str]:
    if document is not None:
        doc, _ = envelope.take(document, program.spec.envelope)
        try:
            return {k: m.carrier for k, m in enumerate(run.forward(program, doc))}
        except MapcError:
            return {}
    try:
        rebuilt = run.reverse(program, stories)
    except MapcError:
        return {}
    ids = {id(s): k for k, s in enumerate(stories)}
    return {ids[id(m.story)]: m.carrier for r in rebuilt for m in r.stories if id(m.story) in ids}


def _source_frame(root: Any, levels: list[_Level], level: _Level, key: Any) -> Frame | None:
    """The source element matching `level` (same array positions), as a frame; or None."""
    node: Any = root
    up: tuple[Any, ...] = ()
    idx: tuple[Any, ...] = (key,)
    for step in levels[1 : levels.index(level) + 1]:
        found, _ = items(step.scope, node) if type(node) is dict else (MISSING, ())
        last = step.scope.src.tokens[-1]
        i = step.bindings.get(last.name) if isinstance(last, Var) else None
        if type(found) is not list or i is None or i >= len(found):
            return None
        node, up, idx = found[i], (*up, node), (*idx, i)
    return frame(node, up, idx)


def _ref_text(ref: Ref, bindings: dict[str, Any], prefix: str) -> str:
    """How a row's reference reads with the member key and array positions filled in."""
    if isinstance(ref, Template):
        return prefix + pointer.format(_fill(ref, bindings))
    if isinstance(ref, ParentRef):
        return f"the parent Storyline's {ref.target}"
    if isinstance(ref, StoryRef):
        return f"this Storyline's {ref.target}"
    if isinstance(ref, SourceRef):
        return f"the rebuilt source's {prefix + pointer.format(_fill(ref.target, bindings))}"
    if isinstance(ref, VarRef):
        value = bindings.get(ref.name)
        return f"the key or position {{{ref.name}}}" + (f" ({value!r})" if value is not None else "")
    if isinstance(ref, CountRef):
        return "the number of Storylines of the document"
    if isinstance(ref, ConstRef):
        return repr(ref.value)
    if isinstance(ref, CallRef):
        return f"{ref.call}({', '.join(_ref_text(a, bindings, prefix) for a in ref.args)})"
    return str(ref)


def _origin(rule: Rule, relation: str, level: _Level, prefix: str, fr: Frame | None, ctx: Context) -> Finding:
    spec = rule.spec
    label = f"{spec.label} ({spec.at})"
    sources = [_ref_text(s, level.bindings, prefix) for s in spec.sources]
    if spec.op == "const":
        message = f"{label} writes the constant {spec.value!r}"
    elif spec.op == "copy":
        message = f"{label} copies it from {sources[0]}"
    elif spec.op == "first_of":
        message = f"{label} takes the first {'non-empty ' if spec.nonempty else ''}present of {', '.join(sources)}"
    else:
        message = f"{label} computes it with {spec.call}({', '.join(sources)})"
    if spec.call and spec.op != "call":
        message += f", converted by {spec.call}"
    if spec.with_args:
        message += f" with {', '.join(_ref_text(a, level.bindings, prefix) for a in spec.with_args)}"
    if relation == "inside":
        message = message.replace(" it ", " the enclosing value ", 1)
    elif relation == "part":
        message += " (a part of this value)"
    if spec.derived:
        message += "; derived (forward only): the reverse writes it back only where the forward would not derive it"
    elif spec.reverse_only:
        message += "; reverse only: on export it is written back to the source"
    elif spec.reverse is not None:
        back = ", ".join(_ref_text(t, level.bindings, prefix) for t in spec.reverse.targets)
        message += f"; on export {spec.reverse.call} writes it back to {back}"
    elif spec.op in ("copy", "first_of"):
        message += f"; on export it is written back to {sources[0]}"
        if spec.write_back_call:
            message += f" (or where {spec.write_back_call} says, when the chain would not derive it again)"
    fired = None
    if fr is not None and not spec.reverse_only:
        fired = rule.value(fr, ctx) is not MISSING
        if fired and spec.op == "first_of":
            i, _ = rule.choose(fr, ctx)
            message += f"; here it came from {sources[i] if 0 <= i < len(sources) else '?'}"
        elif not fired:
            message += "; here this row gave no value"
    return Finding("written", message, spec, sources[0] if sources else None, (), fired)


def _residual_origin(program: Program, tokens: tuple[str, ...]) -> list[Finding]:
    if tokens[0] == "unknown_key_counts":
        return [
            Finding(
                "engine",
                "the engine writes unknown_key_counts: the stored pointers of each source counted "
                "by normalized key (array positions as *)",
            )
        ]
    if len(tokens) >= 5 and tokens[1] == "sources" and tokens[3] == "fields":
        source, key = tokens[2], tokens[4]
        own = source == program.spec.source
        where = "restored at that pointer on export" if own else "carried in the _storyline envelope on export"
        return [
            Finding(
                "residual",
                f"a residual of source {source!r}: the value at {key or '/'} of the source "
                f"document, which no row maps; {where}",
                source=key,
            )
        ]
    if len(tokens) >= 4 and tokens[1] == "sources" and tokens[3] == "source_document_id":
        rule = program.document_id
        how = f"document.id ({rule.spec.at})" if rule is not None else "the engine"
        return [Finding("engine", f"the source document's id, as {how} makes it", rule.spec if rule else None)]
    return [Finding("engine", "unknown_fields: residuals by source (the engine writes them)")]
