"""Static checks of a mapping spec: what a spec author should know before anyone runs it.

`lint_path` checks a spec file in three layers, each reported as `Problem`s located at the YAML
file, line and column (``spec_at``) with a pointer into the spec document:

1. its shape against ``schemas/mapping-spec.schema.json`` (code ``lint.schema``);
2. loading (``spec.*`` from `engine/spec.py`);
3. `iter_lint_problems`: compilation (``spec.*`` from `engine/compile.py`: unknown functions,
   unbound variables, two rows writing one target, …) and the analysis below.

Defect classes of the analysis, one code each:

- ``lint.unknown_target``: a target names no place in a Storyline (``storyline-v1`` schema);
- ``lint.unknown_schema``: ``input_schema`` names no shipped schema;
- ``lint.overlapping_targets``: one row writes inside what another row writes, with values
  that are not the same data (inverted, the two would fight over the source; a ``derived``
  row never claims a value when inverted, so an overlap with one is fine);
- ``lint.required_target``: a key Storyline requires (``session``, ``agent/id``,
  ``turns/{t}/msg``, ``tool_calls/{c}/fn``, …) that no row writes;
- ``lint.unreachable_row``: a row that can never fire (an authoritative copy of a key the
  object's known keys do not list, which is captured as a residual instead, or a first_of chain
  of such keys only; a literal index into a declared array; a first_of source after one that is
  always present, or repeated; a later row with the same source and targets; a ``when``
  condition the input schema rules out);
- ``lint.no_reverse``: a row whose reverse is undefined (a ``call`` row that is not ``derived``
  and has no ``reverse``; a converting copy without ``reverse_call``; a copy from an enclosing
  element into every element of an array, which many values would write back into one);
- ``lint.ambiguous_reverse``: a copy whose target is also another row's primary target;
- ``lint.reverse_conflict``: two rows that write back into the same source value;
- ``lint.unread_key``: a known key that no row, array or nested document reads (its value
  would be dropped: neither mapped nor kept in ``unknown_fields``).

A fallback array (``else`` of an ``arrays`` entry) holds elements of the same kind as its primary
array and the same rows read them: its element pattern is an alias of the primary one.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mapc.engine import functions, pointer
from mapc.engine.compile import compile_spec
from mapc.engine.ops import authoritative
from mapc.engine.problems import MapcError, Problem, SpecLocation
from mapc.engine.schema import compiled_validator, load_schema
from mapc.engine.spec import RuleSpec, Spec, _Located, load_spec, parse_yaml, read_spec_text
from mapc.engine.template import Template, Var

SPEC_SCHEMA = "mapping-spec"
STORYLINE_SCHEMA = "storyline-v1"

_FREE = object()  # a schema node that holds any JSON: every pointer below it is fine


def lint_path(path: str | Path, text: str | None = None) -> list[Problem]:
    """Every problem of the spec file at `path` (or `text` named by `path`), in file order."""
    path = Path(path)
    try:
        data, located = parse_yaml(path.name, read_spec_text(path) if text is None else text)
    except MapcError as exc:
        return list(exc.problems)
    problems = list(_schema_problems(data, located))
    try:
        spec = load_spec(path, text)
    except MapcError as exc:
        loaded = list(exc.problems)
        lines = {(p.spec_at.line if p.spec_at else 0) for p in loaded}
        problems = [p for p in problems if (p.spec_at.line if p.spec_at else 0) not in lines]
        return _in_file_order(problems + loaded)
    problems.extend(_relocate(p, data, located) for p in iter_lint_problems(spec))
    return _in_file_order(problems)


def lint_span_tree(path: str | Path, text: str) -> list[Problem]:
    """Every problem of the span-tree spec `text` (engine/spans.py) named by `path`, each located at
    its YAML file, line and column."""
    from mapc.engine import spans

    try:
        data, located = parse_yaml(Path(path).name, text)
    except MapcError as exc:
        return list(exc.problems)
    out = []
    for p in spans.iter_spec_problems(data):
        where = located.at(*_Located.path_of(data, p.pointer))
        out.append(Problem(p.code, p.pointer, p.message, where))
    return _in_file_order(out)


def _relocate(problem: Problem, data: Any, located: _Located) -> Problem:
    """Point a problem at the exact YAML node its spec pointer names (``/rules/3/to``)."""
    if not problem.pointer.startswith("/"):
        return problem
    rule = problem.spec_at.rule if problem.spec_at else ""
    at = located.at(*_Located.path_of(data, problem.pointer), rule=rule)
    return Problem(problem.code, problem.pointer, problem.message, at)


def _in_file_order(problems: list[Problem]) -> list[Problem]:
    unique: dict[tuple[str, str, int, int], Problem] = {}
    for p in problems:
        at = p.spec_at or SpecLocation("", 0, 0)
        unique.setdefault((p.code, p.message, at.line, at.column), p)
    return sorted(unique.values(), key=lambda p: (p.spec_at.line, p.spec_at.column) if p.spec_at else (0, 0))


def _schema_problems(data: Any, located: _Located) -> Iterator[Problem]:
    for problem in compiled_validator(SPEC_SCHEMA).iter_problems(data):
        path = _Located.path_of(data, problem.pointer)
        message = f"{problem.message} (schemas/{SPEC_SCHEMA}.schema.json: {problem.code})"
        yield Problem("lint.schema", problem.pointer, message, located.at(*path))


# --- the analysis --------------------------------------------------------------------------


def iter_lint_problems(spec: Spec) -> Iterator[Problem]:
    """Compilation problems of `spec`, then every defect the static analysis finds."""
    try:
        compile_spec(spec)
    except MapcError as exc:
        yield from (_rule_pointer(spec, p) for p in exc.problems)
    if spec.rows is not None:
        yield from _rows_problems(spec)
        return
    if spec.stream is not None:
        yield from _stream_problems(spec)
        return
    analysis = _Analysis(spec)
    yield from analysis.problems()


def _stream_problems(spec: Spec) -> Iterator[Problem]:
    """An event stream (engine/stream.py): its functions exist, and its story rules write what
    Storyline requires."""
    stream = spec.stream
    rules = [*stream.story, *(r for e in stream.entries for r in e.rules)]
    names = [n for r in rules for n in (r.call, r.back) if n] + [
        n for e in stream.entries for n in (e.test, e.head) if isinstance(n, str)
    ]
    for name in names:
        found = functions.lookup(name)
        if found is None or found.arity != 1:
            yield Problem("spec.unknown_function", "/document/stream", f"{name!r} is no function of one value", spec.at)
    written = {r.to for r in stream.story}
    for want in (("schema_version",), ("session",), ("agent", "id")):
        if want not in written:
            shown = "/" + "/".join(want)
            yield Problem(
                "lint.required_target",
                "/document/stream/story",
                f"Storyline requires {shown}, and no story rule writes it",
                spec.at,
            )


def _rows_problems(spec: Spec) -> Iterator[Problem]:
    """A row corpus maps through its two named functions: they must exist and take what is passed."""
    assert spec.rows is not None
    named = (
        ()
        if spec.rows.fanout is not None
        else (("call", spec.rows.call, 1), ("reverse_call", spec.rows.reverse_call, 3))
    )
    for key, name, arity in named:
        fn = functions.lookup(name)
        if fn is None:
            yield Problem("lint.unknown_function", f"/document/map/{key}", f"unknown function {name!r}", spec.at)
        elif fn.arity != arity:
            message = f"{name!r} takes {fn.arity} arguments; document.map.{key} passes {arity}"
            yield Problem("lint.arity", f"/document/map/{key}", message, spec.at)
    for consume in spec.rows.consume:
        if not any(consume.at.tokens[:-1] == t.tokens for t, _, _ in spec.objects):
            message = f"{consume.at} is not a key of an object the spec declares in `objects`"
            yield Problem("lint.consume_outside_objects", f"/consume/{consume.at.text}", message, consume.location)


def _rule_pointer(spec: Spec, problem: Problem) -> Problem:
    """Give a compile problem (pointer "") the pointer of its rule in the spec, when known."""
    if problem.pointer or problem.spec_at is None:
        return problem
    for rule in spec.rules:
        if rule.at == problem.spec_at:
            return Problem(problem.code, f"/rules/{rule.index}", problem.message, problem.spec_at)
    return problem


def _reverse_only(rule: RuleSpec) -> bool:
    return rule.reverse_only


def _forward(rule: RuleSpec) -> bool:
    """The rule writes Storyline values in the forward direction."""
    return not _reverse_only(rule)


def _authoritative(rule: RuleSpec) -> bool:
    """The rule's reverse writes its first source back (ops.authoritative: the one definition)."""
    return authoritative(rule)


def _own(rule: RuleSpec) -> list[Template]:
    """The rule's sources that are pointers into the source element (not parent/story/… refs)."""
    return [s for s in rule.sources if isinstance(s, Template)]


def _pointers_in(refs: Any) -> Iterator[Template]:
    """Every source pointer a list of refs reads, through computed refs (``{call, args}``)."""
    for ref in refs:
        if isinstance(ref, Template):
            yield ref
        else:
            yield from _pointers_in(getattr(ref, "args", ()) or ())


def source_pointers(rule: RuleSpec) -> list[Template]:
    """Every source pointer the forward of `rule` reads (sources, computed args, `with`)."""
    return [*_pointers_in(rule.sources), *_pointers_in(getattr(rule, "with_args", ()) or ())]


def arrays(spec: Spec) -> list[tuple[Template, Template, Template | None]]:
    """(source array, Storyline array, fallback source array or None) of each `arrays` entry."""
    out = []
    for entry in spec.arrays:
        if isinstance(entry, tuple):
            out.append((entry[0], entry[1], None))
        else:
            out.append((entry.src, entry.dst, getattr(entry, "fallback", None)))
    return out


def aliases(spec: Spec) -> list[tuple[tuple[Any, ...], tuple[Any, ...]]]:
    """(fallback element, primary element) generic tokens of each array with a fallback: the rows
    of the primary element read the fallback's elements too."""
    return [(_generic(fallback.tokens), _generic(src.tokens)) for src, _, fallback in arrays(spec) if fallback]


def _primary(tokens: tuple[Any, ...], alias: list[tuple[tuple[Any, ...], tuple[Any, ...]]]) -> tuple[Any, ...]:
    """Generic `tokens` with a fallback element prefix replaced by its primary element."""
    for fallback, primary in alias:
        if _is_prefix(fallback, tokens):
            return (*primary, *tokens[len(fallback) :])
    return tokens


def _undone(rule: RuleSpec) -> bool:
    """The row says how its reverse is done (`reverse: {call, args, to}`)."""
    return getattr(rule, "reverse", None) is not None


def _generic(tokens: tuple[Any, ...]) -> tuple[Any, ...]:
    """Tokens with every variable the same (``*``): templates compare by shape."""
    return tuple("*" if isinstance(t, Var) else t for t in tokens)


def _shape(template: Template) -> str:
    return "".join("/" + ("{*}" if isinstance(t, Var) else pointer.escape(t)) for t in template.tokens)


def _is_prefix(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return len(a) <= len(b) and b[: len(a)] == a


class _Analysis:
    """One pass of the static checks over a loaded spec."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.story_schema = load_schema(STORYLINE_SCHEMA)
        self.input_schema: dict[str, Any] | None = None
        self.schema_problem: Problem | None = None
        if spec.input_schema:
            try:
                self.input_schema = load_schema(spec.input_schema)
            except MapcError:
                self.schema_problem = Problem(
                    "lint.unknown_schema",
                    "/input_schema",
                    f"input_schema {spec.input_schema!r} names no shipped schema "
                    f"(schemas/{spec.input_schema}.schema.json)",
                    spec.at,
                )

    def problems(self) -> Iterator[Problem]:
        if self.schema_problem is not None:
            yield self.schema_problem
        yield from self.unknown_targets()
        yield from self.overlapping_targets()
        yield from self.required_targets()
        yield from self.unreachable_rows()
        yield from self.undefined_reverses()
        yield from self.unread_keys()
        yield from self.detect_functions()

    # -- targets ----------------------------------------------------------------

    def unknown_targets(self) -> Iterator[Problem]:
        for rule in self.spec.rules:
            for target in rule.targets:
                found = _resolve(self.story_schema, self.story_schema, target.tokens)
                if found is None:
                    yield Problem(
                        "lint.unknown_target",
                        f"/rules/{rule.index}/to",
                        f"{rule.label} writes {target}, which is no place in a Storyline "
                        f"(schemas/{STORYLINE_SCHEMA}.schema.json)",
                        rule.at,
                    )

    def overlapping_targets(self) -> Iterator[Problem]:
        writers = [(rule, t) for rule in self.spec.rules if _forward(rule) and rule.op != "const" for t in rule.targets]
        for rule, target in writers:
            for other, inner in writers:
                if other is rule:
                    continue
                outer_t, inner_t = _generic(target.tokens), _generic(inner.tokens)
                if len(inner_t) <= len(outer_t) or not _is_prefix(outer_t, inner_t):
                    continue
                if _mirrors(rule, target, other, inner):
                    continue
                if other.derived or rule.derived:
                    continue  # a promotion never claims a value when inverted
                yield Problem(
                    "lint.overlapping_targets",
                    f"/rules/{other.index}/to",
                    f"{other.label} writes {inner}, inside {target} that {rule.label} ({rule.at}) "
                    "writes from another source: one would overwrite the other, and inverted both "
                    "would claim the value",
                    other.at,
                )

    def written(self) -> list[tuple[Any, ...]]:
        """Generic token tuples of every Storyline place the forward direction writes."""
        out = [_generic(t.tokens) for rule in self.spec.rules if _forward(rule) for t in rule.targets]
        for _, dst, _ in arrays(self.spec):
            out.append(_generic(dst.tokens))
        if self.spec.children is not None:
            out += [("children",), ("parent", "psid")]
        if self.spec.objects:
            out += [("unknown_fields",), ("unknown_key_counts",)]
        return out

    def required_targets(self) -> Iterator[Problem]:
        written = self.written()
        for place, required in _required_keys(self.story_schema):
            if place and not any(len(w) > len(place) and _is_prefix(place, w) for w in written):
                continue  # the spec writes nothing in this object
            for key in required:
                want = (*place, key)
                if not any(_is_prefix(want, w) for w in written):
                    shown = "".join("/" + ("{*}" if t == "*" else pointer.escape(t)) for t in want)
                    yield Problem(
                        "lint.required_target",
                        "/rules",
                        f"Storyline requires {shown}, and no row writes it",
                        self.spec.at,
                    )

    # -- rows that never fire ---------------------------------------------------------

    def unreachable_rows(self) -> Iterator[Problem]:
        objects = [(t, keys) for t, keys, _ in self.spec.objects]
        array_parents = {_generic(src.tokens[:-1]) for src, _, _ in arrays(self.spec)}
        array_parents |= {_generic(fb.tokens[:-1]) for _, _, fb in arrays(self.spec) if fb is not None}
        seen: dict[tuple[Any, ...], RuleSpec] = {}
        for rule in self.spec.rules:
            if _reverse_only(rule):
                continue
            at = f"/rules/{rule.index}"
            yield from self._unlisted_sources(rule, at, objects)
            for source in source_pointers(rule):
                for i in range(1, len(source.tokens)):
                    if _generic(source.tokens[:i]) in array_parents and not isinstance(source.tokens[i], Var):
                        array = _shape(Template("", source.tokens[:i]))
                        yield Problem(
                            "lint.unreachable_row",
                            at,
                            f"{rule.label} reads {source} with a literal position into {array}, an array "
                            "declared in arrays (walked element by element, so the row never fires)",
                            rule.at,
                        )
                        break
            if rule.op == "first_of":
                yield from self._shadowed_chain(rule, at)
            if rule.when and self.input_schema is not None:
                yield from self._impossible_condition(rule, at)
            if rule.op in ("copy", "first_of") and rule.targets:
                key = (
                    rule.op,
                    tuple(str(s) for s in rule.sources),
                    tuple(_generic(t.tokens) for t in rule.targets),
                )
                if key in seen:
                    first = seen[key]
                    yield Problem(
                        "lint.unreachable_row",
                        at,
                        f"{rule.label} repeats {first.label} ({first.at}): same source and targets",
                        rule.at,
                    )
                seen.setdefault(key, rule)

    def _unlisted_sources(
        self, rule: RuleSpec, at: str, objects: list[tuple[Template, frozenset[str]]]
    ) -> Iterator[Problem]:
        """A row that only reads keys its objects do not list: their values are residuals.

        Only an authoritative copy is told (a derived row, a call or a first_of chain may read
        a key kept whole in unknown_fields on purpose, as a later or computed candidate); a
        first_of chain is told when every candidate is such a key.
        """
        if not _authoritative(rule) or rule.op not in ("copy", "first_of"):
            return
        if not rule.sources or not all(isinstance(s, Template) for s in rule.sources):
            return
        found = [_unlisted_key(s, objects) for s in rule.sources]  # type: ignore[arg-type]
        if None in found:
            return
        for source, (obj, key) in zip(rule.sources, found, strict=True):  # type: ignore[misc]
            chain = " (and every other first_of candidate is one too)" if rule.op == "first_of" else ""
            yield Problem(
                "lint.unreachable_row",
                at,
                f"{rule.label} reads {source}, but {key!r} is not a known key of {obj or '/'} "
                f"(objects){chain}: the value goes to unknown_fields instead (add the key to objects)",
                rule.at,
            )
            break

    def _shadowed_chain(self, rule: RuleSpec, at: str) -> Iterator[Problem]:
        shown: set[str] = set()
        for i, source in enumerate(rule.sources):
            text = str(source)
            if text in shown:
                yield Problem(
                    "lint.unreachable_row",
                    f"{at}/first_of/{i}",
                    f"{rule.label}: {text} is already earlier in the first_of chain, so it is never chosen",
                    rule.at,
                )
            shown.add(text)
        if rule.nonempty or self.input_schema is None:
            return
        for i, source in enumerate(rule.sources[:-1]):
            if isinstance(source, Template) and _always_present(self.input_schema, source.tokens):
                later = ", ".join(str(s) for s in rule.sources[i + 1 :])
                yield Problem(
                    "lint.unreachable_row",
                    f"{at}/first_of/{i + 1}",
                    f"{rule.label}: {source} is always present (the input schema requires it and "
                    f"forbids null), so {later} can never be chosen",
                    rule.at,
                )
                return

    def _impossible_condition(self, rule: RuleSpec, at: str) -> Iterator[Problem]:
        assert self.input_schema is not None
        for source in _own(rule):
            types = _input_types(self.input_schema, source.tokens)
            if types is None:
                continue
            wanted = {
                "integer": {"integer", "number"},
                "number": {"integer", "number"},
                "string": {"string"},
                "object": {"object"},
                "array": {"array"},
                "boolean": {"boolean"},
            }.get(rule.when or "")
            if wanted is not None and not wanted & types:
                yield Problem(
                    "lint.unreachable_row",
                    f"{at}/when",
                    f"{rule.label} maps only a{'n' if rule.when in ('integer', 'object', 'array') else ''} "
                    f"{rule.when}, but the input schema says {source} is {' or '.join(sorted(types))}",
                    rule.at,
                )

    # -- reverse ----------------------------------------------------------------------

    def undefined_reverses(self) -> Iterator[Problem]:
        spec = self.spec
        for rule in spec.rules:
            at = f"/rules/{rule.index}"
            if (
                rule.op == "call"
                and not rule.derived
                and not _reverse_only(rule)
                and not _undone(rule)
                and rule.targets
            ):
                yield Problem(
                    "lint.no_reverse",
                    at,
                    f"{rule.label} computes {', '.join(map(str, rule.targets))} with call {rule.call} "
                    "and has no reverse: mark it derived (forward only) if its sources are mapped "
                    "by other rows, or map them with copy rows",
                    rule.at,
                )
            if _authoritative(rule) and rule.call and not rule.reverse_call and not _undone(rule):
                yield Problem(
                    "lint.no_reverse",
                    at,
                    f"{rule.label} converts with call {rule.call} but has no reverse_call: the reverse "
                    "would write the converted value back as the source (mark it derived, or add "
                    "reverse_call)",
                    rule.at,
                )
        yield from self._many_to_one()
        yield from self._ambiguous_reverses()
        yield from self._reverse_conflicts()

    def _many_to_one(self) -> Iterator[Problem]:
        """An authoritative copy from a value of an enclosing element (or of the document) into
        every element of an array: the reverse has one place for many values."""
        for rule in self.spec.rules:
            if not _authoritative(rule) or _reverse_only(rule) or not rule.targets:
                continue
            first = rule.sources[0] if rule.sources else None
            if not isinstance(first, Template):
                continue
            target = rule.targets[0]
            if self._target_depth(target) > self._source_depth(first):
                yield Problem(
                    "lint.no_reverse",
                    f"/rules/{rule.index}",
                    f"{rule.label} copies {first}, a value of an enclosing element, to {target} in every "
                    "element: the reverse would have many values for one place (mark it derived)",
                    rule.at,
                )

    def _source_depth(self, template: Template) -> int:
        tokens = _generic(template.tokens)
        heads = [_generic(src.tokens) for src, _, _ in arrays(self.spec)]
        heads += [_generic(fb.tokens) for _, _, fb in arrays(self.spec) if fb is not None]
        return sum(1 for h in heads if _is_prefix(h, tokens))

    def _target_depth(self, template: Template) -> int:
        tokens = _generic(template.tokens)
        return sum(1 for _, dst, _ in arrays(self.spec) if _is_prefix(_generic(dst.tokens), tokens))

    def _ambiguous_reverses(self) -> Iterator[Problem]:
        rules = [r for r in self.spec.rules if r.targets]
        for rule in rules:
            if not (_authoritative(rule) or _reverse_only(rule)) or rule.op != "copy":
                continue
            for target in rule.targets:
                for other in rules:
                    if other is rule or other.op == "const":
                        continue
                    if _generic(other.targets[0].tokens) != _generic(target.tokens):
                        continue
                    if other.sources and rule.sources and str(other.sources[0]) == str(rule.sources[0]):
                        continue
                    if _authoritative(other) and _forward(other) and _forward(rule):
                        continue  # two authoritative writers: compile reports spec.duplicate_target
                    yield Problem(
                        "lint.ambiguous_reverse",
                        f"/rules/{rule.index}/to",
                        f"{rule.label} copies {rule.sources[0]} to {target}, which is also the primary "
                        f"target of {other.label} ({other.at}): the reverse cannot tell whose value it reads",
                        rule.at,
                    )

    def _reverse_conflicts(self) -> Iterator[Problem]:
        backs: list[tuple[RuleSpec, Template]] = []
        for rule in self.spec.rules:
            if (_authoritative(rule) or _reverse_only(rule)) and rule.op in ("copy", "first_of"):
                own = _own(rule)
                if own:
                    backs.append((rule, own[0]))
            reverse = getattr(rule, "reverse", None)
            if reverse is not None and not rule.derived:
                backs.extend((rule, t) for t in reverse.targets)
        for i, (rule, source) in enumerate(backs):
            for other, other_source in backs[i + 1 :]:
                a, b = _generic(source.tokens), _generic(other_source.tokens)
                if not (_is_prefix(a, b) or _is_prefix(b, a)):
                    continue
                outer, inner = (other, rule) if len(b) < len(a) else (rule, other)
                if len(a) != len(b) and _mirrors(outer, outer.targets[0], inner, inner.targets[0]):
                    continue
                yield Problem(
                    "lint.reverse_conflict",
                    f"/rules/{other.index}",
                    f"{other.label} and {rule.label} ({rule.at}) both write back into "
                    f"{source if len(a) <= len(b) else other_source} when reversed",
                    other.at,
                )

    # -- known keys -------------------------------------------------------------------

    def unread_keys(self) -> Iterator[Problem]:
        spec = self.spec
        readers: list[tuple[Any, ...]] = [_generic(s.tokens) for rule in spec.rules for s in source_pointers(rule)]
        for src, _, fallback in arrays(spec):
            readers.append(_generic(src.tokens))
            if fallback is not None:
                readers.append(_generic(fallback.tokens[:-1]))  # its elements: aliases of the primary's
        for rule in spec.rules:
            reverse = getattr(rule, "reverse", None)
            readers += [_generic(t.tokens) for t in (reverse.targets if reverse is not None else ())]
        each = getattr(spec, "each", None)
        if each is not None:
            readers.append(_generic(each.tokens))
        readers += [_generic(t.tokens) for t, _, _ in spec.objects]
        if spec.children is not None:
            readers.append(_generic(spec.children.tokens))
        if spec.document_id is not None:
            readers += [_generic(s.tokens) for s in source_pointers(spec.document_id)]
        alias = aliases(spec)
        readers = [_primary(r, alias) for r in readers]
        for template, keys, at in spec.objects:
            base = _primary(_generic(template.tokens), alias)
            for key in sorted(keys):
                place = (*base, key)
                if not any(_is_prefix(place, r) for r in readers):
                    yield Problem(
                        "lint.unread_key",
                        f"/objects/{pointer.escape(template.text)}",
                        f"{key!r} is a known key of {template.text or '/'} but no row reads it: its value "
                        "would be neither mapped nor kept in unknown_fields",
                        at,
                    )

    # -- detection and preparation ----------------------------------------------------

    def detect_functions(self) -> Iterator[Problem]:
        """A `call` of a detection rule or a prepare step names no registered function."""
        detect = getattr(self.spec, "detect", None)
        content = detect.get("content") if isinstance(detect, dict) else None

        def walk(rules: Any, at: str) -> Iterator[Problem]:
            for i, rule in enumerate(rules if isinstance(rules, list) else ()):
                if not isinstance(rule, dict):
                    continue
                name = rule.get("call")
                if isinstance(name, str) and functions.lookup(name) is None:
                    yield Problem(
                        "spec.unknown_function",
                        f"{at}/{i}/call",
                        f"detection calls {name!r}, which is no registered function",
                        self.spec.at,
                    )
                yield from walk(rule.get("any"), f"{at}/{i}/any")

        yield from walk(content, "/detect/content")
        prepare = getattr(self.spec, "prepare", None)
        for i, step in enumerate(prepare if isinstance(prepare, list) else ()):
            name = step.get("call") if isinstance(step, dict) else None
            if isinstance(name, str) and functions.lookup(name) is None:
                yield Problem(
                    "spec.unknown_function",
                    f"/prepare/{i}/call",
                    f"prepare calls {name!r}, which is no registered function",
                    self.spec.at,
                )


def _mirrors(outer: RuleSpec, outer_target: Template, inner: RuleSpec, inner_target: Template) -> bool:
    """True when `inner` copies a part of what `outer` copies to the same part of its target:
    the two writes agree, so neither the forward nor the reverse is ambiguous."""
    if outer.op != "copy" or inner.op != "copy" or outer.call or inner.call:
        return False
    os_, is_ = _own(outer), _own(inner)
    if not os_ or not is_:
        return False
    s_out, s_in = _generic(os_[0].tokens), _generic(is_[0].tokens)
    t_out, t_in = _generic(outer_target.tokens), _generic(inner_target.tokens)
    if not (_is_prefix(s_out, s_in) and _is_prefix(t_out, t_in)):
        return False
    return s_in[len(s_out) :] == t_in[len(t_out) :]


def _unlisted_key(source: Template, objects: list[tuple[Template, frozenset[str]]]) -> tuple[str, str] | None:
    """The (object, key) when `source` passes through a key its declared object does not list."""
    tokens = _generic(source.tokens)
    best: tuple[Template, frozenset[str]] | None = None
    for template, keys in objects:
        t = _generic(template.tokens)
        if len(t) < len(tokens) and _is_prefix(t, tokens) and (best is None or len(t) > len(best[0].tokens)):
            best = (template, keys)
    if best is None:
        return None
    template, keys = best
    key = source.tokens[len(template.tokens)]
    if isinstance(key, Var) or key in keys:
        return None
    return template.text, key


# --- JSON Schema walking (navigation only: properties, items, $ref) -------------------------


def _deref(root: dict[str, Any], node: Any) -> Any:
    seen = 0
    while isinstance(node, dict) and "$ref" in node and seen < 32:
        ref = node["$ref"]
        target = pointer.resolve(root, pointer.parse(ref[1:])) if ref.startswith("#") else None
        if not isinstance(target, dict):
            return node
        merged = {k: v for k, v in node.items() if k != "$ref"}
        node = {**target, **merged}
        seen += 1
    return node


def _types(node: dict[str, Any]) -> set[str] | None:
    t = node.get("type")
    if t is None:
        return None
    return {t} if isinstance(t, str) else set(t)


def _resolve(root: dict[str, Any], node: Any, tokens: tuple[Any, ...]) -> Any:
    """The schema node at template `tokens` below `node`, `_FREE` below free JSON, None when the
    schema has no such place."""
    for token in tokens:
        node = _deref(root, node)
        if node is True or node == {}:
            return _FREE
        if not isinstance(node, dict):
            return None
        types = _types(node)
        structural = {"properties", "items", "additionalProperties", "patternProperties"} & node.keys()
        if not structural:
            if types is None or types & {"object", "array"}:
                return _FREE
            return None
        if isinstance(token, Var):
            if "items" in node:
                node = node["items"]
            elif isinstance(node.get("additionalProperties"), dict):
                node = node["additionalProperties"]
            elif node.get("additionalProperties", True) is not False and "properties" not in node:
                return _FREE
            else:
                return None
            continue
        props = node.get("properties") or {}
        if token in props:
            node = props[token]
        elif isinstance(node.get("additionalProperties"), dict):
            node = node["additionalProperties"]
        elif node.get("additionalProperties", True) is False or (types is not None and "object" not in types):
            return None
        else:
            return _FREE
    return node


def _required_keys(root: dict[str, Any]) -> list[tuple[tuple[Any, ...], list[str]]]:
    """(generic place, required keys) for every object of the schema reachable by properties and
    items (``*`` for an array position), root first."""
    out: list[tuple[tuple[Any, ...], list[str]]] = []

    def walk(node: Any, place: tuple[Any, ...], depth: int) -> None:
        node = _deref(root, node)
        if not isinstance(node, dict) or depth > 12:
            return
        required = node.get("required")
        if isinstance(required, list) and required:
            out.append((place, [k for k in required if isinstance(k, str)]))
        for key, sub in (node.get("properties") or {}).items():
            walk(sub, (*place, key), depth + 1)
        if isinstance(node.get("items"), dict):
            walk(node["items"], (*place, "*"), depth + 1)

    walk(root, (), 0)
    return out


def _input_node(schema: dict[str, Any], tokens: tuple[Any, ...]) -> tuple[Any, bool]:
    """The input schema node at `tokens` and whether every step of the way is required."""
    node: Any = schema
    always = True
    for token in tokens:
        node = _deref(schema, node)
        if not isinstance(node, dict):
            return None, False
        if isinstance(token, Var):
            if "items" not in node:
                return None, False
            node = node["items"]
            continue
        props = node.get("properties") or {}
        if token not in props:
            return None, False
        if token not in (node.get("required") or []):
            always = False
        node = props[token]
    return _deref(schema, node), always


def _always_present(schema: dict[str, Any], tokens: tuple[Any, ...]) -> bool:
    node, always = _input_node(schema, tokens)
    if not always or not isinstance(node, dict):
        return False
    types = _types(node)
    return types is not None and "null" not in types


def _input_types(schema: dict[str, Any], tokens: tuple[Any, ...]) -> set[str] | None:
    node, _ = _input_node(schema, tokens)
    if not isinstance(node, dict):
        return None
    types = _types(node)
    if types is None:
        return None
    return types - {"null"} or None
