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
- for members that are documents (``document.each``): each member becomes a Storyline (``""``);
- a source read through an array's fallback (``else``) is listed beside the primary source: the
  same rows read the elements of both arrays;
- the key or position a variable is bound to (``{var: a}``) is a row of its own (``{a}``);
- the pointer ``document.id`` copies reaches the residuals' ``source_document_id``;
- the unmapped keys of every known object reach ``/unknown_fields/sources/{source}/fields/{E(P)}``.

Reverse-only rows are not part of the forward table.
"""

from __future__ import annotations

from dataclasses import dataclass

from mapc.engine import fanout as fanout_module
from mapc.engine import pointer
from mapc.engine.lint import arrays, source_pointers
from mapc.engine.spec import RuleSpec, Spec, VarRef
from mapc.engine.template import Template, Var, format_tokens
from mapc.engine.values import MISSING

IDENTITY = ("trajectory", "session")  # the hub's document identity: /trajectory, else /session


@dataclass(frozen=True, slots=True)
class Row:
    """One table row: source pointer(s), target pointers, and the rules it comes from."""

    sources: tuple[str, ...]
    targets: tuple[str, ...]
    rules: tuple[int, ...] = ()


def _reverse_only(rule: RuleSpec) -> bool:
    return rule.reverse_only


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
    if spec.each is not None:
        _add(rows, (spec.each.text,), ['""'])
    for rule in forward:
        for source in source_pointers(rule):  # sources, computed candidates' args, `with` args
            _add(rows, (source.text,), [t.text for t in rule.targets], rule.index)
        for var in _variables(rule):
            _add(rows, (str(var),), [t.text for t in rule.targets], rule.index)
    # values reached inside a value copied whole
    whole = [r for r in forward if r.op == "copy" and not r.derived and not r.call]
    for key in list(rows):
        if not key[0].startswith("/"):
            continue  # a variable's key or position
        src = _template(key[0])
        for rule in whole:
            s = rule.sources[0]
            if isinstance(s, Template) and len(s.tokens) < len(src.tokens) and src.starts_with(s):
                rest = src.tokens[len(s.tokens) :]
                _add(rows, key, [format_tokens((*t.tokens, *rest)) for t in rule.targets], rule.index)
    # a source that is a declared array (or its fallback) reaches the Storyline array
    for src, dst, fallback in arrays(spec):
        for array in (src, fallback) if fallback is not None else (src,):
            container = format_tokens(array.tokens[:-1])
            if (container,) in rows:
                _add(rows, (container,), [format_tokens(dst.tokens[:-1])])
    if spec.children is not None:
        _children_rows(spec, forward, rows)
    _group_rows(spec, rows)
    doc_id = spec.document_id
    if doc_id is not None and doc_id.op == "copy":
        at = f"/unknown_fields/sources/{pointer.escape(spec.source)}/source_document_id"
        for source in source_pointers(doc_id):
            _add(rows, (source.text,), [at])
    rows = _with_fallbacks(spec, rows)
    unmapped = [format_tokens((*t.tokens, Var("unmapped-" + _singular(t)))) for t, _, _ in spec.objects]
    if unmapped:
        field = f"/unknown_fields/sources/{pointer.escape(spec.source)}/fields/{{E(P)}}"
        _add(rows, tuple(unmapped), [field])
    return [Row(k, tuple(targets), tuple(rules)) for k, (targets, rules) in rows.items()]


def _variables(rule: RuleSpec) -> list[VarRef]:
    """The variables whose key or position the forward of `rule` reads (through computed refs)."""
    out: list[VarRef] = []

    def walk(refs: tuple[object, ...]) -> None:
        for ref in refs:
            if isinstance(ref, VarRef):
                out.append(ref)
            else:
                walk(getattr(ref, "args", ()) or ())

    walk((*rule.sources, *rule.with_args))
    return out


Rows = dict[tuple[str, ...], tuple[list[str], list[int]]]


def _with_fallbacks(spec: Spec, rows: Rows) -> Rows:
    """Rows whose source lies below an array element with a fallback array list the fallback's
    pointer beside it (``/steps/{s}/tools/{c}/name`` and ``…/tool_calls/{c}/name``)."""
    pairs = [(src.tokens, fb.tokens) for src, _, fb in arrays(spec) if fb is not None]
    if not pairs:
        return rows
    out: Rows = {}
    for key, value in rows.items():
        new: tuple[str, ...] = key
        if len(key) == 1 and not key[0].startswith("{"):
            tokens = _template(key[0]).tokens
            for primary, fallback in pairs:
                if tokens[: len(primary)] == primary:
                    new = (key[0], format_tokens((*fallback, *tokens[len(primary) :])))
                    break
        if new in out:
            targets, rules = out[new]
            targets.extend(t for t in value[0] if t not in targets)
            rules.extend(r for r in value[1] if r not in rules)
        else:
            out[new] = value
    return out


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
    for row, (targets, _) in rows.items():
        if row[0].startswith(kids.text + "/") and child_link in targets:
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


def _group_rows(spec: Spec, rows: dict[tuple[str, ...], tuple[list[str], list[int]]]) -> None:
    """A row corpus's group values (`group:`): every row pointer of a candidate reaches the targets;
    its spread values (`spread:`) reach the turn's object (and, first, the Storyline's)."""
    if spec.rows is None:
        return
    at = spec.rows.rows.text
    for entry in spec.rows.group:
        targets = [pointer.format(t) for t in entry.to]
        for candidate in entry.candidates:
            for text in candidate.texts:
                _add(rows, (f"{at}/{{r}}{text}",), targets)
    if spec.rows.ids:  # the order key gives the turn ids
        _add(rows, (f"{at}/{{r}}{spec.rows.order_by.text}",), ["/turns/{t}/id"])
    for entry in spec.rows.spread:  # keyed and open values of a row reach its turn
        turn = "/turns/{t}" + pointer.format(entry.to)
        if entry.open is not None:
            _add(rows, (f"{at}/{{r}}{pointer.format(entry.open)}/{{key}}",), [turn + "/{key}"])
            for key in entry.row_keys:
                _add(rows, (f"{at}/{{r}}/{pointer.escape(key)}",), [f"{turn}/{pointer.escape(key)}"])
            continue
        for key, tokens in entry.keys:
            targets = [f"{turn}/{key}"]
            if entry.first_to is not None:
                targets.insert(0, f"{pointer.format(entry.first_to)}/{key}")
            _add(rows, (f"{at}/{{r}}{pointer.format(tokens)}",), targets)
    _fanout_rows(spec, rows)


def _fanout_rows(spec: Spec, rows: dict[tuple[str, ...], tuple[list[str], list[int]]]) -> None:
    """A row corpus's fan-out (`fanout:`): each field's sources reach its turn target; a result's
    values reach the turn's results."""
    fan = spec.rows.fanout if spec.rows is not None else None
    if fan is None:
        return
    at = f"{spec.rows.rows.text}/{{r}}"  # type: ignore[union-attr]
    for kind in fan.kinds:
        if kind.each is not None:
            homes = [f"{at}{pointer.format(kind.each)}/{{{kind.var}}}"]
        else:  # a selection: each place one of its alternatives looks
            alternatives = spec.rows.selections[kind.var].alternatives  # type: ignore[union-attr]
            homes = [at + pointer.format(a.at) + ("/{m}" if a.pick != "at" else "") for a in alternatives]
        for source, target in fanout_module.sources(kind):
            for home in [at] if source.root == "row" else homes:
                _add(rows, (home + pointer.format(source.tokens),), ["/turns/{t}" + target])
    res = fan.results
    if res is not None:
        each = f"{at}{pointer.format(res.each)}/{{m}}"
        for name, tokens in res.value:
            _add(rows, (each + pointer.format(tokens),), [f"/turns/{{t}}{pointer.format(res.to)}/{{k}}/{name}"])


def constants(spec: Spec) -> list[tuple[str, object]]:
    """(target, value) of every constant row: values with no source pointer (a group value's
    constant candidate too: the value when no row gives one)."""
    out = [(t.text, r.value) for r in spec.rules if r.op == "const" and not _reverse_only(r) for t in r.targets]
    seen: set[tuple[str, str, object]] = set()
    for entry in spec.rows.group if spec.rows is not None else ():
        out += [(pointer.format(t), c.const) for c in entry.candidates if c.const is not MISSING for t in entry.to]
    fan = spec.rows.fanout if spec.rows is not None else None
    for kind in fan.kinds if fan is not None else ():
        for f in kind.fields:
            for c in f.candidates:
                if c.src is None and (kind.name, f.text, c.const) not in seen:
                    seen.add((kind.name, f.text, c.const))
                    out.append((f"/turns/{{t}}{f.text} ({kind.name})", c.const))
    return out


def _cell(pointers: tuple[str, ...]) -> str:
    return " ".join(f"`{p}`" for p in pointers)


def markdown(spec: Spec) -> str:
    """The table as Markdown, with the constants listed under it."""
    import json

    if spec.stream is not None:
        return _stream_markdown(spec)
    lines = [f"| {spec.title} pointer | Storyline pointer(s) |", "|---|---|"]
    rows = mapping_rows(spec)
    for row in rows:
        lines.append(f"| {_cell(row.sources)} | {_cell(row.targets)} |")
    bound = [r.sources[0] for r in rows if r.sources[0].startswith("{")]
    if bound:
        lines.append("")
        lines.append(f"{', '.join(f'`{b}`' for b in bound)}: the key or position the variable is bound to.")
    if spec.each is not None:
        lines.append("")
        lines.append(f'`""`: each member at `{spec.each.text}` becomes one Storyline.')
    consts = constants(spec)
    if consts:
        lines.append("")
        lines.append("Constants (no source pointer):")
        for target, value in consts:
            lines.append(f"- `{target}` = `{json.dumps(value, ensure_ascii=False)}`")
    for f in spec.fold:
        array, into = pointer.format(f.array), pointer.format(f.into)
        where = ", ".join(f"`{pointer.format(p)}` = `{json.dumps(v, ensure_ascii=False)}`" for p, v in f.where)
        take = ", ".join(f"`{k}` ← `{pointer.format(p)}`" for k, p in f.take)
        lines.append("")
        lines.append(
            f"Folded: an element of `{array}` where {where} is moved into `{into}` of the element before it, "
            f"as {{{take}}}; the reverse writes each item back as an element of its own after that one."
        )
    return "\n".join(lines) + "\n"


def _stream_markdown(spec: Spec) -> str:
    """An event stream's table: per record kind (`/{r}` is any record of that kind), then the
    Storyline's own fields, pairing and threading (engine/stream.py)."""
    import json

    stream = spec.stream
    show = lambda tokens: pointer.format(tokens)  # noqa: E731
    lines = [f"| {spec.title} record pointer | Storyline pointer(s) |", "|---|---|"]
    for rule in stream.story:
        target = f"`{show(rule.to)}`"
        if rule.op == "copy":
            which = " (last record)" if rule.pick == "last" else " (first record)"
            which += "".join(f" where {show(p)} = {json.dumps(v, ensure_ascii=False)}" for p, v in rule.when)
            lines.append(f"| `/{{r}}{show(rule.src)}`{which} | {target} |")
        elif rule.op == "call":
            lines.append(f"| `{rule.call}(record)` | {target} |")
        else:
            lines.append(f"| `{json.dumps(rule.value, ensure_ascii=False)}` (constant) | {target} |")
    for entry in stream.entries:
        when = "".join(f", {show(p)} = {json.dumps(v, ensure_ascii=False)}" for p, v in entry.when)
        test = f", {entry.test}" if entry.test else ""
        kind = f"{show(stream.type)} = {json.dumps(entry.type)}{when}{test}"
        if not entry.turn:
            lines.append(f"| `/{{r}}` where {kind} | kept whole: `/unknown_fields/…/{{r}}` |")
            if entry.attach:  # it lends values to the turn after or before it (forward only)
                to = "".join(f" with {show(p)} = {json.dumps(v, ensure_ascii=False)}" for p, v in entry.attach_when)
                for rule in entry.rules:
                    src = f"`/{{r}}{show(rule.src)}`" if rule.op == "copy" else f"`{rule.call}(record)`"
                    if rule.op == "const":
                        src = f"`{json.dumps(rule.value, ensure_ascii=False)}` (constant)"
                    lines.append(f"| {src}, lent to the {entry.attach} turn{to} | `/turns/{{t}}{show(rule.to)}` |")
            continue
        place = "observation results of the turns it answers" if entry.paired else "`/turns/{t}`"
        lines.append(f"| `/{{r}}` where {kind} | {place} |")
        for rule in entry.rules:
            target = f"`/turns/{{t}}{show(rule.to)}`"
            if rule.op == "copy":
                lines.append(f"| `/{{r}}{show(rule.src)}` | {target} |")
            elif rule.op == "call":
                back = f", back: `{rule.back}(turn)`" if rule.back else ""
                last = " (last record of its group)" if rule.last_of_group else ""
                lines.append(f"| `{rule.call}(record)`{last}{back} | {target} |")
            else:
                lines.append(f"| `{json.dumps(rule.value, ensure_ascii=False)}` (constant) | {target} |")
    lines.append("")
    lines.append(
        "A record of a type no entry names, of another branch, or kept whole: `/unknown_fields/…/{r}`; "
        "every other value of a mapped record: `/unknown_fields/…/{r}/…` under its pointer."
    )
    if stream.thread is not None:
        parents = ", ".join(f"`{show(p)}`" for p in stream.thread.parents)
        lines.append(f"Threading: `{show(stream.thread.id)}` and parent {parents}: the active branch, in file order.")
    if stream.pair is not None:
        lines.append(
            f"Pairing: a result (`{show(stream.pair.results)}` … `{show(stream.pair.result_id)}`) joins the turn whose "
            f"call (`{show(stream.pair.calls)}` … `{show(stream.pair.call_id)}`) it answers."
        )
    if stream.checked:
        lines.append(f"Checked against versions: {', '.join(stream.checked)}.")
    return "\n".join(lines) + "\n"
