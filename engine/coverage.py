"""How a spec's rows fare over a corpus: which fired how often, which never did, and what went to
``unknown_fields`` (the report a spec author reads to decide what to map next).

Each input document is checked and mapped as `convert` would; then the compiled rules are asked
again, element by element, whether they give a value (`Rule.value`): a row *fires* on an element
of its scope (the document, a step, a tool call …) when it writes a value there.  For a
``first_of`` row the report also counts which source was chosen.  Residuals are counted by
their normalized key (array positions as ``*``, as ``unknown_key_counts`` does, and the member
key of a document that holds several, ``document.each``, as ``*`` too).  With ``document.each``
each member is a document node of its own: the rows of the root scope are tried once per member.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from mapc.engine import envelope, pointer, run
from mapc.engine.compile import Program
from mapc.engine.convert import input_problems, read_units
from mapc.engine.problems import MapcError, Problem
from mapc.engine.program import Context, Frame, Rule, Scope, Source, get_in, pointer_text
from mapc.engine.residual import normalize
from mapc.engine.values import MISSING

# --- asking compiled rules again, outside the generated code --------------------------------


def context(parent: dict[str, Any] | None, story: dict[str, Any], top: Any, key: Any = MISSING) -> Context:
    """A run context for asking rules of one document node (the whole input is `top`, and `key`
    the member key the node is bound to, with ``document.each``)."""
    return Context({}, parent, story, top=top, key=key)


def frame(elem: Any, up: tuple[Any, ...], idx: tuple[Any, ...]) -> Frame:
    """What a rule reads from: the scope element, its ancestors (outermost first) and the key or
    position of each, the document's member key first (as the generated scope functions get)."""
    return Frame(elem, up, idx)


def plain(source: Source) -> bool:
    """True for a source that is a pointer below an element (of this scope or an enclosing one)."""
    return source.kind == "elem"


def items(scope: Scope, elem: Any) -> tuple[Any, tuple[str, ...]]:
    """The array a scope walks below `elem` (its fallback when that one is empty) and where it is."""
    found = get_in(elem, scope.src_rel)
    if scope.fallback_rel is not None and (type(found) is not list or not found):
        return get_in(elem, scope.fallback_rel), scope.fallback_rel
    return found, scope.src_rel


def document_key(program: Program, tokens: tuple[str, ...]) -> Any:
    """The member key a document is bound to (``document.each``), or MISSING."""
    each = program.each
    if each and len(tokens) > len(each) and tuple(tokens[: len(each)]) == tuple(each):
        return tokens[len(each)]
    return MISSING


def node_contexts(program: Program, doc: Any, mapped: list[run.Mapped]) -> list[tuple[Any, Context, Any]]:
    """(node, context, key) of each mapped document node, with its parent's Storyline."""
    by_carrier = {m.carrier: m.story for m in mapped}
    depth = len(program.children) + 1 if program.children is not None else 0
    out = []
    for m in mapped:
        tokens = pointer.parse(m.carrier)
        node = pointer.resolve(doc, tokens)
        parent = by_carrier.get(pointer.format(tokens[:-depth])) if tokens and depth else None
        key = document_key(program, tokens)
        out.append((node, context(parent, m.story, doc, key), key))
    return out


@dataclass(slots=True)
class RowCount:
    """How often one rule fired, out of the elements of its scope it was tried on."""

    rule: Rule
    scope: str
    fired: int = 0
    tried: int = 0
    chosen: list[int] = field(default_factory=list)  # first_of: times each source was chosen


@dataclass(slots=True)
class KeyCount:
    """A normalized residual key: how many stored pointers, in how many documents."""

    occurrences: int = 0
    documents: int = 0


@dataclass(slots=True)
class Coverage:
    """The report over a corpus."""

    program: Program
    files: int = 0
    documents: int = 0
    storylines: int = 0
    rows: list[RowCount] = field(default_factory=list)
    residuals: dict[str, KeyCount] = field(default_factory=dict)
    failures: list[tuple[str, Problem]] = field(default_factory=list)

    @property
    def never_fired(self) -> list[RowCount]:
        """Rows that gave no value anywhere in the corpus."""
        return [r for r in self.rows if r.fired == 0]


def _collect(scope: Scope, name: str, out: dict[int, RowCount]) -> None:
    for rule in scope.rules:
        if rule.spec.reverse_only:
            continue
        out[id(rule)] = RowCount(rule, name, chosen=[0] * len(rule.sources))
    for child in scope.children:
        _collect(child, child.src.text, out)


def measure(program: Program, inputs: Iterable[tuple[str, bytes, bool]]) -> Coverage:
    """Coverage of `program` over `inputs`: (file name, bytes, is JSONL) per file."""
    report = Coverage(program)
    counts: dict[int, RowCount] = {}
    _collect(program.root, program.root.src.text, counts)
    order = list(counts)
    for name, data, jsonl in inputs:
        report.files += 1
        try:
            units = read_units(data, jsonl=jsonl, rows=program.spec.rows is not None)
        except MapcError as exc:
            report.failures.extend((name, p) for p in exc.problems)
            continue
        for unit in units:
            try:
                doc, _ = envelope.take(unit.document, program.spec.envelope)
                problems = input_problems(program, doc)
                if problems:
                    raise MapcError(problems)
                mapped = run.forward(program, doc)
            except MapcError as exc:
                report.failures.extend((name, unit.locate(p)) for p in exc.problems)
                continue
            report.documents += 1
            report.storylines += len(mapped)
            _count_rows(program, doc, mapped, counts)
            _count_residuals(program, mapped, report.residuals)
    report.rows = sorted((counts[k] for k in order), key=lambda r: r.rule.spec.index)
    report.residuals = dict(sorted(report.residuals.items(), key=lambda kv: (-kv[1].occurrences, kv[0])))
    return report


def _count_rows(program: Program, doc: Any, mapped: list[run.Mapped], counts: dict[int, RowCount]) -> None:
    for node, ctx, key in node_contexts(program, doc, mapped):
        _visit(program.root, node, (), (key,), ctx, counts)


def _ask(rules: Any, fr: Any, ctx: Context, counts: dict[int, RowCount]) -> None:
    for rule in rules:
        row = counts.get(id(rule))
        if row is None:
            continue
        row.tried += 1
        if rule.value(fr, ctx) is MISSING:
            continue
        row.fired += 1
        if rule.spec.op == "first_of":
            i, _ = rule.choose(fr, ctx)
            if i >= 0:
                row.chosen[i] += 1


def _visit(
    scope: Scope,
    elem: Any,
    up: tuple[Any, ...],
    idx: tuple[Any, ...],
    ctx: Context,
    counts: dict[int, RowCount],
) -> None:
    if type(elem) is not dict:
        return
    _ask(scope.rules, frame(elem, up, idx), ctx, counts)
    for child in scope.children:
        found, _ = items(child, elem)
        if type(found) is list:
            for i, item in enumerate(found):
                _visit(child, item, (*up, elem), (*idx, i), ctx, counts)


def residual_key(program: Program, text: str) -> str:
    """The key a stored residual pointer is counted by over a corpus: normalized as
    ``unknown_key_counts`` does (array positions as ``*``), and the member key of a document
    (``document.each``: ``/attempts/1/…``) as ``*`` too, so members of all documents add up."""
    key = normalize(text, program.count_tree)
    if program.each is not None:
        base = pointer_text(program.each) + "/"
        if key.startswith(base) and len(key) > len(base):
            rest = key[len(base) :]
            cut = rest.find("/")
            key = base + "*" + (rest[cut:] if cut >= 0 else "")
    return key


def _count_residuals(program: Program, mapped: list[run.Mapped], out: dict[str, KeyCount]) -> None:
    source = program.spec.source
    seen: set[str] = set()
    pointers: set[str] = set()  # the input's own keys are kept with every member: count them once
    for m in mapped:
        entry = ((m.story.get("unknown_fields") or {}).get("sources") or {}).get(source) or {}
        for text in entry.get("fields") or {}:
            if text in pointers:
                continue
            pointers.add(text)
            key = residual_key(program, text)
            count = out.setdefault(key, KeyCount())
            count.occurrences += 1
            if key not in seen:
                count.documents += 1
                seen.add(key)


def as_json(report: Coverage) -> dict[str, Any]:
    """The report as plain JSON (for ``--json``)."""
    return {
        "spec": report.program.spec.name,
        "files": report.files,
        "documents": report.documents,
        "storylines": report.storylines,
        "rows": [
            {
                "rule": r.rule.spec.label,
                "at": str(r.rule.spec.at),
                "scope": r.scope or "/",
                "sources": [str(s) for s in r.rule.spec.sources],
                "targets": [t.text for t in r.rule.spec.targets],
                "fired": r.fired,
                "tried": r.tried,
                **({"chosen": r.chosen} if r.rule.spec.op == "first_of" else {}),
            }
            for r in report.rows
        ],
        "unknown_fields": {
            k: {"occurrences": c.occurrences, "documents": c.documents} for k, c in report.residuals.items()
        },
        "never_fired": [r.rule.spec.label for r in report.never_fired],
        "failures": [{"file": f, **p.as_dict()} for f, p in report.failures],
    }


def _row_text(row: RowCount) -> tuple[str, str]:
    spec = row.rule.spec
    if spec.op == "const":
        source = f"const {spec.value!r}"
    else:
        parts = [str(s) for s in spec.sources]
        if spec.op == "first_of":
            parts = [f"{p} ({n})" for p, n in zip(parts, row.chosen, strict=True)]
        source = f"first_of({', '.join(parts)})" if spec.op == "first_of" else ", ".join(parts)
        if spec.call:
            source = f"{spec.call}({source})"
    return source, " ".join(t.text for t in spec.targets)


def markdown(report: Coverage) -> str:
    """The report as Markdown: rows, unknown keys, rows that never fired, failures."""
    spec = report.program.spec
    lines = [
        f"# Coverage of {spec.name} over {report.documents} document(s) in {report.files} file(s) "
        f"({report.storylines} Storyline(s))",
        "",
        "## Rows",
        "",
        "| rule | line | source | Storyline pointer(s) | fired | tried |",
        "|---|---|---|---|---:|---:|",
    ]
    for row in report.rows:
        source, targets = _row_text(row)
        spec_row = row.rule.spec
        cells = [
            spec_row.label,
            str(spec_row.at.line),
            f"`{source}`",
            f"`{targets}`",
            str(row.fired),
            str(row.tried),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"## Keys that went to unknown_fields ({len(report.residuals)})", ""]
    if report.residuals:
        lines += ["| normalized key | occurrences | documents |", "|---|---:|---:|"]
        lines += [f"| `{k}` | {c.occurrences} | {c.documents} |" for k, c in report.residuals.items()]
    else:
        lines.append("None.")
    never = report.never_fired
    lines += ["", f"## Rows that never fired ({len(never)})", ""]
    if never:
        for row in never:
            source, targets = _row_text(row)
            lines.append(f"- {row.rule.spec.label} ({row.rule.spec.at}): `{source}` → `{targets}`")
    else:
        lines.append("None.")
    if report.failures:
        lines += ["", f"## Inputs that did not map ({len(report.failures)} problem(s))", ""]
        lines += [f"- {file}: {problem}" for file, problem in report.failures]
    return "\n".join(lines) + "\n"
