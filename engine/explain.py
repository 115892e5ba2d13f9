"""Where a value went, or where it came from, named by rule and spec line.

`explain_source` takes a source document and a pointer into it: it maps the document and says
which rules read that value (exactly, as part of a value copied whole, or a part of it), whether
each fired, and the Storyline pointer(s) the value reached; or that it was kept in
``unknown_fields``, or dropped.  `explain_target` takes Storylines and a pointer into one of
them: it says which rules write that place and from which source pointer (with the array
positions filled in), or which residual it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mapc.engine import envelope, pointer, run
from mapc.engine.compile import Program
from mapc.engine.coverage import context, frame, items, node_contexts, plain
from mapc.engine.problems import MapcError
from mapc.engine.program import Context, Path, Rule, Scope
from mapc.engine.spec import RuleSpec
from mapc.engine.template import Template, Var
from mapc.engine.values import MISSING, is_empty


@dataclass(frozen=True, slots=True)
class Finding:
    """One fact about the explained value.

    `kind` is one of ``read`` (a rule reads exactly this value), ``inside`` (a rule copies a
    value holding it), ``part`` (a rule reads a part of it), ``array`` (an array element or
    array), ``document`` (a node that became its own Storyline), ``residual``, ``dropped``,
    ``written`` (a rule writes this Storyline place), ``engine`` (the engine writes it).
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


def _fill(template: Template, bindings: dict[str, int]) -> tuple[str, ...]:
    return tuple(str(bindings.get(t.name, "{" + t.name + "}")) if isinstance(t, Var) else t for t in template.tokens)


@dataclass(slots=True)
class _Level:
    """One scope on the way down to the explained value."""

    scope: Scope
    elem: Any
    rest: tuple[str, ...]  # the value's tokens below `elem`
    bindings: dict[str, int]
    up: tuple[Any, ...] = ()  # the elements of the levels above
    idx: tuple[Any, ...] = (MISSING,)  # the document key, then each level's position

    @property
    def frame(self) -> Any:
        return frame(self.elem, self.up, self.idx)


def _descend(scope: Scope, level: _Level, levels: list[_Level], *, target_side: bool = False) -> None:
    levels.append(level)
    elem, rest = level.elem, level.rest
    for child in scope.children:
        if type(elem) is not dict:
            return
        if target_side:
            rel = child.dst_rel
            found = pointer.resolve(elem, rel)
        else:
            found, rel = items(child, elem)
        if len(rest) > len(rel) and rest[: len(rel)] == rel:
            token = rest[len(rel)]
            if type(found) is list and pointer.is_array_index(token) and int(token) < len(found):
                i = int(token)
                inner = dict(level.bindings)
                for template in (child.src, child.dst):
                    last = template.tokens[-1]
                    if isinstance(last, Var):
                        inner[last.name] = i
                below = _Level(child, found[i], rest[len(rel) + 1 :], inner, (*level.up, elem), (*level.idx, i))
                _descend(child, below, levels, target_side=target_side)
                return


def _relation(path: Path, rest: tuple[str, ...]) -> str | None:
    if path == rest:
        return "read"
    if len(path) < len(rest) and rest[: len(path)] == path:
        return "inside"
    if len(rest) < len(path) and path[: len(rest)] == rest:
        return "part"
    return None


def _why_not(rule: Rule, i: int, elem: Any, ctx: Context) -> str:
    spec = rule.spec
    value = rule.sources[i].read(elem, ctx)  # `elem` is a frame where the engine has them
    if value is MISSING:
        return "the value is absent here"
    if spec.op == "first_of":
        chosen, _ = rule.choose(elem, ctx)
        if chosen >= 0 and chosen != i:
            return f"first_of chose {spec.sources[chosen]} instead"
        if spec.nonempty and is_empty(value):
            return "first_of skips an empty value (nonempty)"
    if value is None and not spec.keep_null:
        return "null is absent (the row has no keep_null)"
    if spec.when:
        return f"the value does not satisfy when: {spec.when}"
    if spec.call:
        return f"{spec.call} gives no value for it"
    return "the row gives no value"


def explain_source(program: Program, document: Any, text: str) -> list[Finding]:
    """Where the value at `text` in the source `document` goes, rule by rule."""
    try:
        tokens = pointer.parse(text)
    except pointer.PointerSyntaxError:
        raise _fail(f"{text!r} is not a JSON Pointer") from None
    if pointer.resolve(document, tokens) is MISSING:
        raise _fail(f"the input has no value at {text or '/'}", text)
    if tokens and tokens[0] == envelope.KEY:
        return [
            Finding(
                "residual",
                "the _storyline envelope: residuals of other formats, attached to the "
                "Storyline of each carrier and not mapped by rules",
            )
        ]
    doc, _ = envelope.take(document)
    mapped = run.forward(program, doc)
    source_name = program.spec.source
    best = max(
        (k for k, m in enumerate(mapped) if pointer.is_prefix(pointer.parse(m.carrier), tokens)),
        key=lambda k: len(pointer.parse(mapped[k].carrier)),
    )
    m = mapped[best]
    carrier = pointer.parse(m.carrier)
    rel = tuple(tokens[len(carrier) :])
    node = pointer.resolve(doc, carrier)
    story_at = f"/{best}"
    findings: list[Finding] = []
    if not rel:
        what = "the document" if not carrier else f"{text}, a nested document,"
        findings.append(
            Finding("document", f"{what} becomes Storyline {best} (pointer {story_at})", targets=(story_at,))
        )
        return findings
    _, ctx, key = node_contexts(program, doc, mapped)[best]
    levels: list[_Level] = []
    _descend(program.root, _Level(program.root, node, rel, {}, (), (key,)), levels)
    last = levels[-1]
    if not last.rest:
        dst = pointer.format((*_fill(last.scope.dst, last.bindings),))
        findings.append(
            Finding(
                "array",
                f"this element becomes {story_at}{dst} (arrays: {last.scope.src} → {last.scope.dst})",
                targets=(story_at + dst,),
            )
        )
    for child in last.scope.children:
        if last.rest in (child.src_rel, getattr(child, "fallback_rel", None)):
            dst = pointer.format((*_fill(last.scope.dst, last.bindings), *child.dst_rel))
            findings.append(
                Finding(
                    "array",
                    f"this array becomes {story_at}{dst}, element by element (arrays: {child.src} → {child.dst})",
                    targets=(story_at + dst,),
                )
            )
    for level in levels:
        findings.extend(_rules_reading(level, ctx, story_at, text))
    findings.extend(_residual_findings(m.story, source_name, text, story_at))
    if (
        program.children is not None
        and rel[: len(program.children)] == program.children
        and len(rel) == len(program.children)
    ):
        findings.append(Finding("document", "each element becomes its own Storyline, linked by /children and /parent"))
    if not any(f.fired or f.kind in ("residual", "array", "document") for f in findings):
        findings.append(Finding("dropped", _dropped_reason(program, rel, node, findings)))
    return findings


def _rules_reading(level: _Level, ctx: Context, story_at: str, text: str) -> list[Finding]:
    out: list[Finding] = []
    for rule in level.scope.rules:
        spec = rule.spec
        if getattr(spec, "reverse_only", False):
            continue
        fr = level.frame
        for i, source in enumerate(rule.sources):
            if not plain(source):
                continue
            relation = _relation(source.path, level.rest)
            if relation is None:
                continue
            fired = rule.value(fr, ctx) is not MISSING
            if fired and spec.op == "first_of":
                fired = rule.choose(fr, ctx)[0] == i
            base = _fill(level.scope.dst, level.bindings)
            below = level.rest[len(source.path) :] if relation == "inside" else ()
            whole = spec.op == "copy" and not spec.call
            targets = tuple(story_at + pointer.format((*base, *t, *(below if whole else ()))) for t in rule.targets)
            shown = ", ".join(targets)
            label = f"{spec.label} ({spec.at})"
            if relation == "read":
                if spec.op == "copy":
                    message = f"{label} copies it to {shown}"
                elif spec.op == "first_of":
                    message = f"{label} takes it (first_of source {i + 1} of {len(rule.sources)}) for {shown}"
                else:
                    message = f"{label} passes it to {spec.call} for {shown}"
                if spec.call and spec.op != "call":
                    message += f", converted by {spec.call}"
            elif relation == "inside":
                inner = pointer.format(level.rest[: len(source.path)])
                message = (
                    f"{label} copies the enclosing {inner}, so it reaches {shown}"
                    if whole
                    else f"{label} reads the enclosing {inner} for {shown}"
                )
            else:
                part = text + pointer.format(source.path[len(level.rest) :])
                message = f"{label} reads its part {part} for {shown}"
            if spec.derived:
                message += " (derived: forward only)"
            if not fired:
                message += f"; here it did not fire: {_why_not(rule, i, fr, ctx)}"
            out.append(Finding(relation, message, spec, text, targets, fired))
    return out


def _residual_findings(story: dict[str, Any], source: str, text: str, story_at: str) -> list[Finding]:
    entry = ((story.get("unknown_fields") or {}).get("sources") or {}).get(source) or {}
    fields = entry.get("fields") or {}
    base = f"{story_at}/unknown_fields/sources/{pointer.escape(source)}/fields/"
    out = []
    tokens = pointer.parse(text)
    for key in fields:
        try:
            key_tokens = pointer.parse(key)
        except pointer.PointerSyntaxError:
            continue
        if key == text:
            out.append(
                Finding(
                    "residual",
                    f"no row maps it: kept in unknown_fields at {base}{pointer.escape(key)}",
                    source=text,
                    targets=(base + pointer.escape(key),),
                    fired=True,
                )
            )
        elif pointer.is_prefix(key_tokens, tokens):
            out.append(
                Finding(
                    "residual",
                    f"it is inside the residual {key}, kept at {base}{pointer.escape(key)}",
                    source=text,
                    targets=(base + pointer.escape(key),),
                    fired=True,
                )
            )
        elif pointer.is_prefix(tokens, key_tokens):
            out.append(
                Finding(
                    "residual",
                    f"its part {key} is a residual, kept at {base}{pointer.escape(key)}",
                    source=text,
                    targets=(base + pointer.escape(key),),
                    fired=True,
                )
            )
    return out


def _dropped_reason(program: Program, rel: tuple[str, ...], node: Any, findings: list[Finding]) -> str:
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
    findings: list[Finding] = []
    if tokens[:1] == ("unknown_fields",) or tokens[:1] == ("unknown_key_counts",):
        findings.extend(_residual_origin(program, tokens))
        return findings
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
    levels: list[_Level] = []
    _descend(program.root, _Level(program.root, story, tuple(tokens), {}), levels, target_side=True)
    source_node, ctx, key = None, context(None, story, None), MISSING
    if document is not None:
        doc, _ = envelope.take(document)
        source_node = pointer.resolve(doc, pointer.parse(carrier))
        found = [c for c in node_contexts(program, doc, run.forward(program, doc)) if c[0] is source_node]
        if found:
            _, ctx, key = found[0]
    for level in levels:
        elem = _source_frame(source_node, levels, level, key) if source_node is not None else None
        for rule in level.scope.rules:
            for t in rule.targets:
                relation = _relation(t, level.rest)
                if relation is None:
                    continue
                findings.append(_origin(rule, relation, level, carrier, elem, ctx))
    if not findings:
        findings.append(Finding("dropped", "no row writes this place"))
    return findings


def _carriers(program: Program, stories: list[dict[str, Any]], document: Any) -> dict[int, str]:
    if document is not None:
        doc, _ = envelope.take(document)
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


def _source_frame(root: Any, levels: list[_Level], level: _Level, key: Any) -> Any:
    """The source element matching `level` (same array positions), as a frame; or MISSING."""
    node: Any = root
    up: tuple[Any, ...] = ()
    idx: tuple[Any, ...] = (key,)
    for step in levels[1 : levels.index(level) + 1]:
        found, _ = items(step.scope, node) if type(node) is dict else (MISSING, ())
        last = step.scope.src.tokens[-1]
        i = step.bindings.get(last.name) if isinstance(last, Var) else None
        if type(found) is not list or i is None or i >= len(found):
            return MISSING
        node, up, idx = found[i], (*up, node), (*idx, i)
    return frame(node, up, idx)


def _origin(rule: Rule, relation: str, level: _Level, carrier: str, elem: Any, ctx: Context) -> Finding:
    spec = rule.spec
    base = _fill(level.scope.src, level.bindings)
    label = f"{spec.label} ({spec.at})"
    sources = []
    for s in spec.sources:
        if isinstance(s, Template):
            rel = s.tokens[len(level.scope.src.tokens) :]
            sources.append(carrier + pointer.format((*base, *rel)))
        else:
            sources.append(f"the parent Storyline's {s.target}")
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
    if relation == "inside":
        message = message.replace(" it ", " the enclosing value ", 1)
    elif relation == "part":
        message += " (a part of this value)"
    if spec.derived:
        message += "; derived (forward only): the reverse writes it back only where the forward would not derive it"
    elif getattr(spec, "reverse_only", False):
        message += "; reverse only: on export it is written back to the source"
    elif spec.op in ("copy", "first_of"):
        message += f"; on export it is written back to {sources[0]}"
    fired = None
    if elem is not None and elem is not MISSING and not getattr(spec, "reverse_only", False):
        fired = rule.value(elem, ctx) is not MISSING
        if fired and spec.op == "first_of":
            i, _ = rule.choose(elem, ctx)
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
    return [Finding("engine", "unknown_fields: residuals by source (the engine writes them)")]
