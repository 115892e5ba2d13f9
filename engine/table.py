"""A spec's mapping table in the RFCs' form: source pointer → Storyline pointer(s).

Each row of the table is one source pointer (or, for the parent link, the pointers a value may
come from) and every Storyline place its value reaches:

- the targets of every rule that reads it (each `first_of` source and each `call` argument is a
  row of its own; constants have no source and are listed apart, as the RFCs do);
- the places it reaches inside a value copied whole (``/steps/{s}/metrics/latency_ms`` reaches
  ``/turns/{t}/metrics/latency_ms`` through the ``metrics`` row);
- for a source that is a declared array, the Storyline array it becomes;
- for nested documents (``document.children``): the node becomes a new Storyline (``""``), its
  identity rows reach the parent's ``/children/{c}``, and the parent's identity sources reach the
  child's ``/parent/psid``;
- the unmapped keys of every known object reach ``/unknown_fields/sources/{source}/fields/{E(P)}``.

Reverse-only rows are not part of the forward table.
"""

from __future__ import annotations

from dataclasses import dataclass

from mapc.engine import pointer
from mapc.engine.lint import arrays, source_pointers
from mapc.engine.spec import RuleSpec, Spec
from mapc.engine.template import Template, Var, format_tokens

IDENTITY = ("trajectory", "session")  # the hub's document identity: /trajectory, else /session


@dataclass(frozen=True, slots=True)
class Row:
    """One table row: source pointer(s), target pointers, and the rules it comes from."""

    sources: tuple[str, ...]
    targets: tuple[str, ...]
    rules: tuple[int, ...] = ()


def _reverse_only(rule: RuleSpec) -> bool:
    return bool(getattr(rule, "reverse_only", False))


def _add(
    rows: dict[tuple[str, ...], tuple[list[str], list[int]]],
    sources: tuple[str, ...],
    targets: list[str],
    rule: int | None = None,
) -> None:
    have, rules = rows.setdefault(sources, ([], []))
    for t in targets:
        if t not in have:
            have.append(t)
    if rule is not None and rule not in rules:
        rules.append(rule)


def mapping_rows(spec: Spec) -> list[Row]:
    """The rows of `spec`'s table, in the order their first rule appears in the spec."""
    rows: dict[tuple[str, ...], tuple[list[str], list[int]]] = {}
    forward = [r for r in spec.rules if not _reverse_only(r) and r.op != "const"]
    for rule in forward:
        for source in source_pointers(rule):  # sources, computed candidates' args, `with` args
            _add(rows, (source.text,), [t.text for t in rule.targets], rule.index)
    # values reached inside a value copied whole
    whole = [r for r in forward if r.op == "copy" and not r.derived and not r.call]
    for key in list(rows):
        src = _template(key[0])
        for rule in whole:
            s = rule.sources[0]
            if isinstance(s, Template) and len(s.tokens) < len(src.tokens) and src.starts_with(s):
                rest = src.tokens[len(s.tokens) :]
                _add(rows, key, [format_tokens((*t.tokens, *rest)) for t in rule.targets], rule.index)
    # a source that is a declared array reaches the Storyline array
    for src, dst, _ in arrays(spec):
        container = format_tokens(src.tokens[:-1])
        if (container,) in rows:
            _add(rows, (container,), [format_tokens(dst.tokens[:-1])])
    if spec.children is not None:
        _children_rows(spec, forward, rows)
    unmapped = [format_tokens((*t.tokens, Var("unmapped-" + _singular(t)))) for t, _, _ in spec.objects]
    if unmapped:
        field = f"/unknown_fields/sources/{pointer.escape(spec.source)}/fields/{{E(P)}}"
        _add(rows, tuple(unmapped), [field])
    return [Row(k, tuple(targets), tuple(rules)) for k, (targets, rules) in rows.items()]


def _children_rows(
    spec: Spec, forward: list[RuleSpec], rows: dict[tuple[str, ...], tuple[list[str], list[int]]]
) -> None:
    assert spec.children is not None
    kids = spec.children
    var = kids.tokens[-1]
    _add(rows, (kids.text,), ['""'])
    identity = {name: [r for r in forward if any(t.tokens == (name,) for t in r.targets)] for name in IDENTITY}
    primary = next((name for name in IDENTITY if identity[name]), None)
    child_link = format_tokens(("children", var))
    for name in IDENTITY:
        for rule in identity[name]:
            for source in rule.sources:
                if not isinstance(source, Template):
                    continue
                key = (format_tokens((*kids.tokens, *source.tokens)),)
                targets = [f"/{name}"] + ([child_link] if name == primary else [])
                _add(rows, key, targets, rule.index)
    # the parent's identity sources reach the child's /parent/psid
    parents: list[str] = []
    for name in reversed(IDENTITY):  # session sources first, as the RFC tables list them
        for rule in identity[name]:
            for source in rule.sources:
                if isinstance(source, Template) and source.text not in parents:
                    parents.append(source.text)
    if parents:
        _add(rows, tuple(parents), ["/parent/psid"])
    # keep each child row's targets in a stable order: /children first, then identity
    for key, (targets, _) in rows.items():
        if key[0].startswith(kids.text + "/") and child_link in targets:
            targets[:] = [child_link] + [t for t in targets if t != child_link]


def _template(text: str) -> Template:
    from mapc.engine.template import parse_template

    return parse_template(text)


def _singular(template: Template) -> str:
    literal = [t for t in template.tokens if not isinstance(t, Var)]
    if not literal:
        return "root"
    name = str(literal[-1])
    return name[:-1] if name.endswith("s") and len(name) > 1 else name


def constants(spec: Spec) -> list[tuple[str, object]]:
    """(target, value) of every constant row: values with no source pointer."""
    return [(t.text, r.value) for r in spec.rules if r.op == "const" and not _reverse_only(r) for t in r.targets]


def _cell(pointers: tuple[str, ...]) -> str:
    return " ".join(f"`{p}`" for p in pointers)


def markdown(spec: Spec) -> str:
    """The table as Markdown, with the constants listed under it."""
    import json

    lines = [f"| {spec.title} pointer | Storyline pointer(s) |", "|---|---|"]
    for row in mapping_rows(spec):
        lines.append(f"| {_cell(row.sources)} | {_cell(row.targets)} |")
    consts = constants(spec)
    if consts:
        lines.append("")
        lines.append("Constants (no source pointer):")
        for target, value in consts:
            lines.append(f"- `{target}` = `{json.dumps(value, ensure_ascii=False)}`")
    return "\n".join(lines) + "\n"
