"""Parse → validate → map → validate: any format into Storyline and back out.

`into_storyline` and `from_storyline` are the two halves of every conversion; `convert` is
their composition, so A → B always goes through the hub.  A format is `storyline` itself, a
spec from the catalog, or a codec (engine/codecs.py: a format that is not JSON, written as text);
the engine knows no format by name.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from mapc.engine import catalog as catalogs
from mapc.engine import envelope, functions, known, pointer, run, storyline
from mapc.engine.checks import iter_check_problems
from mapc.engine.limits import Limits
from mapc.engine.mapped import Mapped, Rebuilt
from mapc.engine.options import DEFAULT, Options
from mapc.engine.prepare import prepare
from mapc.engine.problems import MapcError, Problem, in_document_order
from mapc.engine.schema import compiled_validator
from mapc.engine.template import Template, parse_template
from mapc.engine.values import json_bytes, json_equal

if TYPE_CHECKING:
    from mapc.engine import codecs, loss, provenance
    from mapc.engine.catalog import Catalog
    from mapc.engine.program import Program
    from mapc.engine.redact import Redactor
    from mapc.engine.residual import Tree

# Codecs, loss reports and provenance are imported where they are used: a run of one spec over one file
# (`mapc run`) needs none of them.

STORYLINE = "storyline"
_RECORDS = parse_template("/{r}")
P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Unit:
    """One top-level document of an input file: where it is (array index or JSONL line) and it."""

    document: Any
    prefix: str = ""
    line: int | None = None
    lines: tuple[int, ...] = ()  # a row corpus read from JSONL: the line of each row

    def locate(self, problem: Problem, rows: Template | None = None) -> Problem:
        """Put this unit's location on a problem found inside it (for a row corpus from JSONL, whose
        problems point at `rows` positions, the line of the row)."""
        problem = problem.within(self.prefix) if self.prefix else problem
        if self.line is not None:
            return problem.on_line(self.line)
        if self.lines and rows is not None and problem.line is None:
            row = _row_position(rows, problem.pointer)
            if row is not None and row < len(self.lines):
                return problem.on_line(self.lines[row])
        return problem


def _row_position(rows: Template, ptr: str) -> int | None:
    """The row index in `ptr` when it points into the rows at `rows` (``/rows/{r}/…``)."""
    head = rows.literal() or ()
    try:
        tokens = pointer.parse(ptr)
    except pointer.PointerSyntaxError:
        return None
    if len(tokens) > len(head) and tokens[: len(head)] == head and pointer.is_array_index(tokens[len(head)]):
        return int(tokens[len(head)])
    return None


def read_units(data: bytes, *, jsonl: bool = False, rows: bool | str = False, options: Options = DEFAULT) -> list[Unit]:
    """Split an input file into top-level documents: an object, an array of them, or JSONL lines.

    For a row corpus (`rows`), an array or the JSONL lines are the rows of one document.  When
    `rows` names the rows' key (``session_steps``) and the first JSONL row holds the `_storyline`
    envelope (as `as_lines` writes it), the document is the object form, with the envelope."""
    allow = options.allow_duplicate_keys
    if jsonl:
        units = []
        for n, line in enumerate(data.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                units.append(Unit(storyline.loads(line, allow_duplicate_keys=allow), line=n))
            except MapcError as exc:
                raise MapcError([p.on_line(n) for p in exc.problems]) from None
        if not units:
            raise MapcError.single("input.empty", "", "the file holds no records; it cannot be empty")
        if not rows:
            return units
        if len(units) == 1 and type(units[0].document) is list:  # the records as one JSON array
            return [Unit(units[0].document)]
        documents = [u.document for u in units]
        lines = tuple(u.line or 0 for u in units)
        first = documents[0]
        if type(rows) is str and type(first) is dict and envelope.KEY in first:
            head = {k: v for k, v in first.items() if k != envelope.KEY}
            return [Unit({rows: [head, *documents[1:]], envelope.KEY: first[envelope.KEY]}, lines=lines)]
        return [Unit(documents, lines=lines)]
    doc = storyline.loads(data, allow_duplicate_keys=allow)
    if type(doc) is list and not rows:
        if not doc:
            raise MapcError.single("input.empty", "", "the array cannot be empty")
        return [Unit(d, prefix=f"/{i}") for i, d in enumerate(doc)]
    return [Unit(doc)]


def resolved(catalog: Catalog | None) -> Catalog:
    """`catalog`, or for a caller that passes none the one ``import mapc`` installed (the only
    place this module asks for it: every function below passes the one it resolved down)."""
    return catalog if catalog is not None else catalogs.installed()


def formats(catalog: Catalog | None = None) -> list[str]:
    """Every format name mapc reads and writes (of `catalog`; None: the installed one)."""
    from mapc.engine import codecs

    catalog = resolved(catalog)
    return [STORYLINE, *catalog.shipped_names(), *codecs.names(catalog)]


def program_for(fmt: str, catalog: Catalog | None = None) -> Program:
    """The compiled spec of a format name (or an alias a spec declares), or of a spec path."""
    if fmt == "events":
        raise MapcError.single(
            "format.events",
            "",
            "events live only in Lance: use `mapc events append` to store event records and "
            "`mapc events project` to turn them into Storylines or any other format",
        )
    return resolved(catalog).program(fmt)  # a name, an alias or a path


def _codec(fmt: str, catalog: Catalog) -> codecs.Codec | None:
    """The codec of `fmt`; a shipped spec's name is no codec, and asking costs no import of them."""
    if fmt in catalog.shipped_names() or fmt in catalog.aliases():
        return None
    from mapc.engine import codecs

    return codecs.lookup(fmt, catalog)


def input_problems(program: Program, doc: Any) -> list[Problem]:
    """Shape (the spec's input schema) and declared checks of one source document."""
    spec = program.spec
    if spec.input_schema:
        problems = list(compiled_validator(spec.input_schema).iter_problems(doc))
        if problems:
            return problems
    return in_document_order(iter_check_problems(spec.checks, doc, program.children))


def forward_unit(
    program: Program,
    unit: Unit,
    path: str | None = None,
    options: Options = DEFAULT,
    catalog: Catalog | None = None,
) -> list[dict[str, Any]]:
    """Map one top-level source document to validated Storylines (`path`: the input's relative path;
    `catalog`: whose count trees the Storylines are checked against)."""
    trees = resolved(catalog).count_trees()
    try:
        doc, carried = envelope.take(unit.document, program.spec.envelope)
        doc = prepare(program.spec.prepare, doc)
        problems = input_problems(program, doc)
        if problems:
            raise MapcError(problems)
        mapped = run.forward(program, doc, path=path, parsed=True)  # units are parsed JSON (read_units)
        problems = envelope.attach(carried, {c: m.story for m in mapped for c in m.carriers}, program.spec.source)
        if problems:
            raise MapcError(problems)
        # What the format defines but no Storyline field says is provenance, not unknown (engine/known.py).
        split = [known.split(m.story, program) for m in mapped]
        moved = any(s is not m.story for s, m in zip(split, mapped, strict=True))
        mapped = [m if s is m.story else Mapped(s, m.carrier, m.also) for m, s in zip(mapped, split, strict=True)]
        stories = [m.story for m in mapped]
        if carried or moved or program.spec.rows is not None or program.spec.stream is not None:
            for story in stories:
                _recount(story, trees)
        problems = [_output_problem(m.carrier, p) for m in mapped for p in storyline.check(m.story, trees)]
        limits = Limits.of(options)
        problems += [_output_problem(m.carrier, p) for m in mapped for p in limits.problems(m.story)]
        if problems:
            raise MapcError(problems)
        return stories
    except MapcError as exc:
        rows = program.spec.rows.rows if program.spec.rows is not None else None
        if program.spec.stream is not None:
            rows = _RECORDS  # a stream's problems point at /{record}
        raise MapcError([unit.locate(p, rows) for p in exc.problems]) from None


def _output_problem(carrier: str, problem: Problem) -> Problem:
    # The input passed its own rules but makes an invalid Storyline (e.g. an empty `source`):
    # say so, pointing into the Storyline made from the node at `carrier`.
    node = carrier or "the document"
    return Problem(
        problem.code,
        carrier,
        f"the Storyline made from {node} is invalid at {problem.pointer}: {problem.message}",
    )


def _recount(story: dict[str, Any], trees: Mapping[str, Tree]) -> None:
    from mapc.engine.residual import recompute_counts

    counts = recompute_counts(story.get("unknown_fields") or {}, trees)
    if counts:
        story["unknown_key_counts"] = counts


# Frames a conversion may use: 1,024 parsed levels, a few frames each for the deepest walk.
_WALK_FRAMES = 20_000


def _bounded_depth(fn: Callable[P, R]) -> Callable[P, R]:
    """A value nested deeper than Python can walk is a problem of the input, not a crash: JSON is
    refused past 1,024 levels when parsed, but a format may nest what it holds further."""

    @functools.wraps(fn)
    def guarded(*args: P.args, **kwargs: P.kwargs) -> R:
        # The walks (comparison, diff, residuals) take a few frames per level, nested inside the
        # conversion's own: Python's default 1,000 ran out on values parsed well under 1,024 levels.
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, _WALK_FRAMES))
        try:
            return fn(*args, **kwargs)
        except RecursionError:
            raise MapcError.single("input.too_deep", "", "a value is nested too deeply to convert") from None
        finally:
            sys.setrecursionlimit(limit)

    return guarded


@_bounded_depth
def into_storyline(
    fmt: str,
    data: bytes,
    *,
    jsonl: bool = False,
    path: str | None = None,
    options: Options = DEFAULT,
    catalog: Catalog | None = None,
) -> list[dict[str, Any]]:
    """Every Storyline in the file `data` of format `fmt`, validated; MapcError on bad input.

    `path` is the file's path relative to the corpus it belongs to: formats that name their
    documents by path (row corpora) use it, and reject an absolute one or one with `..`.
    `options` (engine/options.py) sets the limits and the duplicate-key check; `catalog` the formats
    (None: the installed one)."""
    catalog = resolved(catalog)
    trees = catalog.count_trees()
    codec = _codec(fmt, catalog)
    if codec is not None:  # a format that is not JSON: its own reader, then the hub's checks
        decoded = codec.decode(data, path, options)
        failed = storyline.check_all(decoded, len(decoded) > 1, trees) or _over_limits(
            decoded, len(decoded) > 1, options
        )
        if failed:
            raise MapcError(failed)
        return decoded
    if fmt == STORYLINE:
        units = read_units(data, jsonl=jsonl, options=options)
        found = [s for u in units for s in storyline.documents(u.document)]
        prefix = len(found) > 1 or type(units[0].document) is list
        failed = storyline.check_all(found, prefix, trees) or _over_limits(found, prefix, options)
        if failed:
            raise MapcError(failed)
        return found
    program = program_for(fmt, catalog)
    stream = program.spec.stream is not None  # an event stream is JSONL, whatever the file is called
    rows = _rows_key(program) or program.spec.rows is not None or stream
    stories: list[dict[str, Any]] = []
    problems: list[Problem] = []
    # The collector paused over the parse and every unit, not each unit alone: between units it would
    # walk the parsed input and the Storylines made so far again and again (a tenth of a chat JSONL's time).
    with run.paused_gc():
        units = read_units(data, jsonl=jsonl or stream, rows=rows, options=options)
        if stream and len(units) == 1 and _streams_of(units[0].document):  # several streams, as an array of them
            units = [Unit(records, prefix=f"/{k}") for k, records in enumerate(units[0].document)]
        for unit in units:  # every unit is checked, so one run reports every bad element or line
            try:
                stories.extend(forward_unit(program, unit, path, options, catalog))
            except MapcError as exc:
                problems.extend(exc.problems)
    if problems:
        raise MapcError(problems)
    return stories


def _streams_of(doc: Any) -> bool:
    # What an event-stream format writes for several Storylines: one array of records each.
    return type(doc) is list and len(doc) > 0 and all(type(d) is list for d in doc)


def _over_limits(stories: list[dict[str, Any]], prefix: bool, options: Options = DEFAULT) -> list[Problem]:
    """The residual limits (`--max-unknown-fields`, `--max-unknown-bytes`) hold for Storylines read as
    they are, as for those a mapping makes (`forward_unit`)."""
    limits = Limits.of(options)
    out: list[Problem] = []
    for i, story in enumerate(stories):
        found = limits.problems(story)
        out.extend(p.within(f"/{i}") for p in found) if prefix else out.extend(found)
    return out


@_bounded_depth
def from_storyline(
    fmt: str,
    stories: list[dict[str, Any]],
    *,
    carry: bool = True,
    hops: list[Hop] | None = None,
    catalog: Catalog | None = None,
) -> Any:
    """The document of format `fmt` for `stories`: one object, or an array for several roots (a
    codec's format: its text, a str).

    With `carry`, what `fmt` cannot say about the documents the Storylines came from travels in
    its `_storyline` envelope, so converting back gives those documents whole (engine/provenance.py).
    With `hops` (a list), every hop that tried is appended to it: the loss report reuses its
    reading of `fmt` rather than reading the output again.  `catalog`: the formats (None: the
    installed one)."""
    catalog = resolved(catalog)
    if not stories:
        raise MapcError.single("input.empty", "", "no Storyline to export")
    problems = storyline.check_all(stories, len(stories) > 1, catalog.count_trees())
    if problems:
        raise MapcError(problems)
    if fmt == STORYLINE:  # written in canonical form: empty prompt strings dropped (engine/serialize.py)
        from mapc.engine.serialize import canonical_prompts

        stories = [canonical_prompts(s) for s in stories]
        return stories[0] if len(stories) == 1 else stories
    codec = _codec(fmt, catalog)
    if codec is not None:
        return codec.encode(stories)  # text (str), not a JSON value
    program = program_for(fmt, catalog)
    if carry:
        # Only the formats the Storylines say they came from, or hold residuals of, can rebuild their
        # documents: a Storyline of `fmt` itself (or of no shipped format) needs no other spec compiled.
        homes = {origin for s in stories if (origin := _origin_name(s)) is not None}
        homes |= {src for s in stories for src in _residual_sources(s)}
        shipped = catalog.shipped_names()
        programs = {name: catalog.program(name) for name in sorted(homes - {program.spec.name}) if name in shipped}
        from mapc.engine import provenance

        export, read = _hops(catalog, hops)
        again = functools.partial(rebuild, catalog=catalog)
        stories = provenance.carry_home(stories, program.spec.name, programs, export, read, again)
    docs = []
    for k, rebuilt in enumerate(rebuild(program, stories, catalog)):
        doc = rebuilt.document
        # The rebuilt document must be one the format accepts (a Storyline may hold values the
        # format cannot say, e.g. an observation that is not {"results": [...]}).
        where = f"/{k}" if k else ""
        problems = [_export_problem(where, p, fmt) for p in input_problems(program, doc)]
        # A Storyline's foreign residuals ride once, under its first carrier (for a row corpus, its
        # first row): repeating them under every row made the envelope grow with the rows, not with
        # what was lost (issue 15).  Readers bind any of its carriers, and merge repeats.
        carriers = ((m.carrier, m.story) for m in rebuilt.stories)
        problems += envelope.write(doc, carriers, program.spec.source, program.spec.envelope)
        if problems:
            raise MapcError(problems)
        docs.append(doc)
    return docs[0] if len(docs) == 1 else docs


def _origin_name(story: dict[str, Any]) -> str | None:
    fmt = (story.get("origin") or {}).get("format")
    return fmt if type(fmt) is str else None


def _residual_sources(story: dict[str, Any]) -> list[str]:
    """The sources `story` holds residuals of (a shipped format's source is its name)."""
    uf = story.get("unknown_fields")
    sources = uf.get("sources") if type(uf) is dict else None
    return [k for k in sources if type(k) is str] if type(sources) is dict else []


def rebuild(program: Program, stories: list[dict[str, Any]], catalog: Catalog | None = None) -> list[Rebuilt]:
    """The documents of `program`'s format for `stories`: the reverse rules, then the spec's
    `document.finish` function (which may move values into the format's extension slots), looked
    up in `catalog` (None: the installed one)."""
    whole = [known.merged(s, program) for s in stories]  # origin.kept back among the residuals
    bare, notes = _absent_notes(program, whole)
    rebuilt = run.reverse(program, bare)
    # What the reverse and `finish` see (`bare`, `whole`), by the caller's Storyline.
    seen = {id(s): w for s, w in zip(stories, whole, strict=True)}
    absent = {id(s): notes[id(w)] for s, w in zip(stories, whole, strict=True) if id(w) in notes}
    if notes or any(w is not s for w, s in zip(whole, stories, strict=True)):
        # the Mapped name the caller's Storylines, not the copies without the notes
        originals = {id(b): s for b, s in zip(bare, stories, strict=True)}
        rebuilt = [
            Rebuilt(r.document, tuple(Mapped(originals[id(m.story)], m.carrier, m.also) for m in r.stories))
            for r in rebuilt
        ]
    if program.spec.finish is not None:
        fn = functions.lookup(program.spec.finish, resolved(catalog))
        if fn is None:
            raise MapcError.single(
                "spec.unknown_function", "", f"document.finish names no function {program.spec.finish!r}"
            )
        rebuilt = [
            Rebuilt(fn.fn(r.document, [seen.get(id(m.story), m.story) for m in r.stories]), r.stories) for r in rebuilt
        ]
    if absent:
        out = []
        for r in rebuilt:
            doc, own = r.document, set[int]()
            for m in r.stories:
                for ptr in absent.get(id(m.story), ()):
                    doc = _remove(doc, ptr, own)
            out.append(Rebuilt(doc, r.stories))
        rebuilt = out
    return rebuilt


def _absent_notes(program: Program, stories: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[int, list[str]]]:
    """The Storylines without the notes of what the way back leaves out (envelope.ABSENT, under
    the format's own source), and those notes' pointers by the Storyline (its id) they came with."""
    source = program.spec.source
    bare: list[dict[str, Any]] = []
    absent: dict[int, list[str]] = {}
    for story in stories:
        uf = story.get("unknown_fields")
        entry = (uf.get("sources") or {}).get(source) if type(uf) is dict else None
        fields = entry.get("fields") if type(entry) is dict else None
        if type(fields) is not dict or envelope.ABSENT not in fields:
            bare.append(story)
            continue
        assert type(uf) is dict and type(entry) is dict  # as `fields` is a dict: for the type checker
        notes = fields[envelope.ABSENT]
        absent[id(story)] = [p for p in notes if type(p) is str] if type(notes) is list else []
        rest = {p: v for p, v in fields.items() if p != envelope.ABSENT}
        sources = dict(uf["sources"])
        if rest:
            sources[source] = {**entry, "fields": rest}
        else:
            del sources[source]
        others = {k: v for k, v in story.items() if k not in ("unknown_fields", "unknown_key_counts")}
        bare.append({**others, "unknown_fields": {**uf, "sources": sources}} if sources else others)
    return bare, absent


def _remove(doc: Any, ptr: str, own: set[int]) -> Any:
    """`doc` with the value at `ptr` taken out (an array item: the items after it move up); a
    pointer to nothing is passed over.  The rebuilt document shares values with the Storylines it
    was made from, so every object or array on the way is copied once (`own`: the ids of the
    copies made already), never changed in place: the caller's Storylines stay as they were."""
    try:
        tokens = pointer.parse(ptr)
    except pointer.PointerSyntaxError:
        return doc
    if not tokens or type(doc) not in (dict, list):
        return doc
    root = node = _owned(doc, own)
    last = len(tokens) - 1
    for n, token in enumerate(tokens):
        if type(node) is dict and token in node:
            key: str | int = token
        elif type(node) is list and pointer.is_array_index(token) and int(token) < len(node):
            key = int(token)
        else:
            return root
        if n == last:
            del node[key]  # type: ignore[arg-type]
            return root
        child = node[key]  # type: ignore[index]
        if type(child) not in (dict, list):
            return root
        child = _owned(child, own)
        node[key] = child  # type: ignore[index]
        node = child
    return root


def _owned(value: Any, own: set[int]) -> Any:
    """`value` itself when it is a copy `own` lists, else a shallow copy of it, listed."""
    if id(value) in own:
        return value
    copy = dict(value) if type(value) is dict else list(value)
    own.add(id(copy))
    return copy


def _hops(catalog: Catalog, hops: list[Hop] | None) -> tuple[provenance.Export, provenance.Import]:
    """The export and read of one hop through `catalog`'s formats (without carrying provenance
    again); with `hops` (a list), each completed hop is appended to it (`_recorded`)."""

    def export(fmt: str, stories: list[dict[str, Any]]) -> Any:
        return from_storyline(fmt, stories, carry=False, catalog=catalog)

    def read(fmt: str, data: bytes) -> list[dict[str, Any]]:
        return into_storyline(fmt, data, catalog=catalog)

    return (export, read) if hops is None else _recorded(hops, export, read)


@dataclass(frozen=True, slots=True)
class Hop:
    """One hop provenance tried: the Storylines it exported, the output (envelope and all), and
    what reading that output as the same format gave."""

    stories: list[dict[str, Any]]
    output: Any
    back: list[dict[str, Any]]


def _recorded(
    hops: list[Hop], hop_out: provenance.Export, hop_in: provenance.Import
) -> tuple[provenance.Export, provenance.Import]:
    """`hop_out` and `hop_in` that append each completed hop to `hops` (a read follows its export)."""
    pending: list[tuple[list[dict[str, Any]], Any]] = []

    def export(fmt: str, stories: list[dict[str, Any]]) -> Any:
        out = hop_out(fmt, stories)
        pending[:] = [(stories, out)]
        return out

    def read(fmt: str, data: bytes) -> list[dict[str, Any]]:
        back = hop_in(fmt, data)
        if pending:
            hops.append(Hop(pending[0][0], pending[0][1], back))
            pending.clear()
        return back

    return export, read


def _export_problem(where: str, problem: Problem, fmt: str) -> Problem:
    return Problem(
        "export.invalid",
        where + problem.pointer,
        f"the {fmt} document made from these Storylines would be invalid: {problem.message} [{problem.code}]",
    )


def streamable(from_fmt: str, to_fmt: str, catalog: Catalog | None = None) -> bool:
    """Whether a JSONL input converts line by line with the result of converting it whole: each line
    maps alone (not a row corpus, whose rows group across lines) and the target writes each tree of
    Storylines as its own document (Storyline itself, or a format without members or rows)."""
    catalog = resolved(catalog)
    if _codec(from_fmt, catalog) is not None or _codec(to_fmt, catalog) is not None:
        return False
    if from_fmt != STORYLINE and not _one_document_a_line(program_for(from_fmt, catalog)):
        return False
    if to_fmt == STORYLINE:
        return True
    target = program_for(to_fmt, catalog)
    return target.each is None and _one_document_a_line(target)


def _one_document_a_line(program: Program) -> bool:
    # A row corpus groups rows across lines; an event stream is the whole file.
    return program.spec.rows is None and program.spec.stream is None


def convert_lines(
    from_fmt: str,
    to_fmt: str,
    lines: Iterable[bytes],
    *,
    path: str | None = None,
    options: Options = DEFAULT,
    reports: list[loss.Report] | None = None,
    strict: bool = False,
    keep_envelope: bool = True,
    redactor: Redactor | None = None,
    catalog: Catalog | None = None,
) -> Iterator[Any]:
    """`convert` for JSONL read lazily (see `streamable`): the documents of each line in turn, so
    memory holds one line at a time.  Every line is checked; MapcError, with every bad line, at the end.

    With `reports` (a list), each line's loss report is appended to it; `strict` makes a line that
    is not exact a problem of its line (`convert.not_exact`); without `keep_envelope` the documents
    are written without their envelopes; with `redactor` each line's Storylines are redacted before
    the export (engine/redact.py), the replacements counted in its report."""
    catalog = resolved(catalog)
    problems: list[Problem] = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            if reports is None and keep_envelope and not strict and redactor is None:
                result = convert(from_fmt, to_fmt, line, path=path, options=options, catalog=catalog)
            else:
                stories = into_storyline(from_fmt, line, path=path, options=options, catalog=catalog)
                counts: dict[str, int] = {}
                if redactor is not None:
                    stories, counts = redactor.stories(stories)
                result, report = from_storyline_reported(
                    to_fmt, stories, from_format=from_fmt, keep_envelope=keep_envelope, catalog=catalog
                )
                report = report.with_redacted(counts).with_input(line, result)
                if reports is not None:
                    reports.append(report)
                if strict and not report.exact:
                    raise MapcError.single(
                        "convert.not_exact",
                        "",
                        f"the conversion is not exact ({report.summary()}); --strict refuses it",
                    )
        except MapcError as exc:
            problems.extend(p.on_line(n) for p in exc.problems)
            continue
        if not problems:
            yield from result if type(result) is list and to_fmt == STORYLINE else [result]
    if problems:
        raise MapcError(problems)


def convert(
    from_fmt: str,
    to_fmt: str,
    data: bytes,
    *,
    jsonl: bool = False,
    path: str | None = None,
    options: Options = DEFAULT,
    catalog: Catalog | None = None,
) -> Any:
    """`from_storyline(to, into_storyline(from, data))`, both through `catalog` (None: the installed one)."""
    catalog = resolved(catalog)
    stories = into_storyline(from_fmt, data, jsonl=jsonl, path=path, options=options, catalog=catalog)
    return from_storyline(to_fmt, stories, catalog=catalog)


def from_storyline_reported(
    fmt: str,
    stories: list[dict[str, Any]],
    *,
    from_format: str | None = None,
    keep_envelope: bool = True,
    parsed: bool = False,
    catalog: Catalog | None = None,
) -> tuple[Any, loss.Report]:
    """`from_storyline(fmt, stories)` and its loss report (engine/loss.py).

    Without `keep_envelope` the output is the pure target format, and what its envelope would have
    carried is reported as dropped.  The report reads the output back as `fmt` (without its
    envelope) to see what the target says natively, or reuses that reading when the conversion
    already made it (`_known_reading`); `from_format` names the input's format.

    `parsed` says the Storylines are values as a JSON parser gives them (dicts, lists, str, int,
    float, bool, None; nested no deeper than a parser reads), e.g. rebuilt from stored rows: written
    as Storyline unchanged, such documents read back as themselves, and they were validated just now,
    so the read-back (a dump, a parse, a validation and a deep comparison) is not redone; what it
    would still find, the residual limits of reading, is checked on the documents themselves."""
    from mapc.engine import loss

    catalog = resolved(catalog)
    hops: list[Hop] = []
    output = from_storyline(fmt, stories, hops=hops, catalog=catalog)
    single = type(output) is not list
    documents = [output] if single else list(output)
    if parsed and fmt == STORYLINE and all(map(_unchanged, stories, documents)):
        found = _over_limits(documents, not single)
        unread = tuple(Problem(p.code, p.pointer, f"{fmt} does not read its own output: {p.message}") for p in found)
        origin = from_format or _origin_format(stories) or STORYLINE
        return output, loss.Report(origin, fmt, loss.CARRIED if keep_envelope else loss.DROPPED, (), (), (), unread)
    at = _envelope_place(fmt, catalog)
    carried = loss.envelope_entries(documents, at) if at is not None else ()
    native = loss.without_envelopes(documents, at) if carried and at is not None else documents
    if not keep_envelope:
        output = native[0] if single else native
    problems: tuple[Problem, ...] = ()
    lost: tuple[loss.Said, ...] = ()
    made: tuple[loss.Said, ...] = ()
    try:
        back = _known_reading(fmt, stories, native, at, hops)
        if back is None:
            data = native[0] if single else native
            raw = data.encode("utf-8") if isinstance(data, str) else json_bytes(data)
            if raw is None:
                raise MapcError.single("output.not_json", "", "the output is not JSON")
            back = into_storyline(fmt, raw, catalog=catalog)
    except MapcError as exc:
        problems = tuple(
            Problem(p.code, p.pointer, f"{fmt} does not read its own output: {p.message}") for p in exc.problems
        )
    else:
        lost, made = loss.story_changes(stories, back)
        if fmt != STORYLINE and _codec(fmt, catalog) is None:  # record values the export made up
            made += loss.residuals_made(stories, back, program_for(fmt, catalog).spec.source)
        if _carried_home(fmt, stories, catalog):
            lost = ()  # what A's way back needs of these is what the envelope carries
    report = loss.Report(
        from_format or _origin_format(stories) or STORYLINE,
        fmt,
        loss.CARRIED if keep_envelope else loss.DROPPED,
        carried,
        lost,
        made,
        problems,
    )
    return output, report


def _known_reading(
    fmt: str, stories: list[dict[str, Any]], native: list[Any], at: str | None, hops: list[Hop]
) -> list[dict[str, Any]] | None:
    """What reading the output `native` (without its envelope) as `fmt` gives, when the conversion
    already knows it (None otherwise: the report reads the output): a Storyline output is its
    Storylines; else a hop provenance tried on these very Storylines, in this order, whose output
    is `native` once its envelope is out, was read back.  That reading differs from reading
    `native` only in what the envelope puts back: residuals (which the report does not compare) and
    the hub's own keys, which these Storylines do not carry."""
    from mapc.engine import loss

    if fmt == STORYLINE:
        return [d for d in native if type(d) is dict] if all(type(d) is dict for d in native) else None
    if at is None or any(envelope.HUB in ((s.get("unknown_fields") or {}).get("sources") or {}) for s in stories):
        return None
    for hop in hops:
        if len(hop.stories) != len(stories) or any(a is not b for a, b in zip(hop.stories, stories, strict=True)):
            continue
        docs = hop.output if type(hop.output) is list else [hop.output]
        if len(docs) == len(native) and json_equal(loss.without_envelopes(docs, at), native):
            return hop.back
    return None


def _unchanged(story: Any, written: Any) -> bool:
    """Whether `written` (the Storyline written for `story`) holds its very values, canonical form having
    had nothing to drop: the same object, or containers of the same type whose keys and items are so
    (only the containers written anew are walked)."""
    if written is story:
        return True
    kind = type(story)
    if kind is not type(written):
        return False
    if kind is dict:
        return story.keys() == written.keys() and all(_unchanged(v, written[k]) for k, v in story.items())
    if kind is list:
        return len(story) == len(written) and all(map(_unchanged, story, written))
    return False


def _envelope_place(fmt: str, catalog: Catalog) -> str | None:
    """Where `fmt`'s envelope rides; None for a format that has none (Storyline, a codec's)."""
    if fmt == STORYLINE or _codec(fmt, catalog) is not None:
        return None
    return program_for(fmt, catalog).spec.envelope


def _origin_format(stories: list[dict[str, Any]]) -> str | None:
    fmts = {(s.get("origin") or {}).get("format") for s in stories if type(s.get("origin")) is dict}
    return fmts.pop() if len(fmts) == 1 else None


def _carried_home(fmt: str, stories: list[dict[str, Any]], catalog: Catalog) -> bool:
    """Whether the export tried the hop home for every Storyline (engine/provenance.py): each comes
    from a shipped spec's format other than `fmt`, so the envelope holds all that way back needs."""
    names = set(catalog.shipped_names())
    return all((s.get("origin") or {}).get("format") in names - {fmt} for s in stories)


def _rows_key(program: Program) -> str | None:
    """The key of a row corpus's object form holding its rows (``session_steps``), when its rows
    are the array at one top-level key; None otherwise."""
    if program.spec.rows is None:
        return None
    tokens: tuple[str, ...] = program.spec.rows.rows.literal() or ()
    return tokens[0] if len(tokens) == 1 else None


def as_lines(fmt: str, output: Any, catalog: Catalog | None = None) -> Any:
    """`output` of format `fmt` as what a JSON Lines file holds, one item a line: a row corpus's
    rows (its envelope, if any, in a `_storyline` key of the first row, which reading lifts back
    out); any other output as it is (a list: one document a line)."""
    catalog = resolved(catalog)
    if fmt == STORYLINE or _codec(fmt, catalog) is not None or type(output) is not dict:
        return output
    key = _rows_key(program_for(fmt, catalog))
    if key is None or type(output.get(key)) is not list or set(output) - {key, envelope.KEY} or not output[key]:
        return output
    rows = list(output[key])
    if envelope.KEY in output:
        if type(rows[0]) is not dict or envelope.KEY in rows[0]:
            return output  # no place for it in a row: the object form, on one line
        rows[0] = {**rows[0], envelope.KEY: output[envelope.KEY]}
    return rows


# --- event streams: companion files and drift -------------------------------------------------------


def companions_pattern(fmt: str, catalog: Catalog | None = None) -> str | None:
    """For an event-stream format whose streams have child streams in files beside them (a
    session's subagent transcripts), the spec's glob of those files relative to the stream's file,
    with ``{stem}`` the file's name without its suffix; None otherwise."""
    catalog = resolved(catalog)
    if fmt == STORYLINE or _codec(fmt, catalog) is not None:
        return None
    spec = program_for(fmt, catalog).spec
    children = spec.stream.children if spec.stream is not None else None
    return children.files if children is not None and not children.by_parent else None


def _written_pattern(fmt: str, catalog: Catalog | None = None) -> str | None:
    """Where the reverse writes child streams, relative to the first stream's file (`children.files`)."""
    catalog = resolved(catalog)
    if fmt == STORYLINE or _codec(fmt, catalog) is not None:
        return None
    spec = program_for(fmt, catalog).spec
    return spec.stream.children.files if spec.stream is not None and spec.stream.children is not None else None


def linked_by_parent(fmt: str, catalog: Catalog | None = None) -> bool:
    """Whether `fmt` is an event-stream format whose child streams are files of their own whose
    Storylines name the session that spawned them (`children: {linked: parent}`)."""
    catalog = resolved(catalog)
    if fmt == STORYLINE or _codec(fmt, catalog) is not None:
        return False
    stream = program_for(fmt, catalog).spec.stream
    return stream is not None and stream.children is not None and stream.children.by_parent


def into_storyline_with(
    fmt: str,
    data: bytes,
    companions: Iterable[tuple[str, bytes]],
    *,
    path: str | None = None,
    options: Options = DEFAULT,
    catalog: Catalog | None = None,
) -> list[dict[str, Any]]:
    """`into_storyline` of an event stream and its companion streams (relative path, bytes): the
    stream's Storyline first, then one child Storyline per companion, linked by parent/children.
    Problems of a companion name it (its path before the pointer)."""
    from mapc.engine import stream

    catalog = resolved(catalog)
    program = program_for(fmt, catalog)
    spec = program.spec.stream
    stories = into_storyline(fmt, data, jsonl=True, path=path, options=options, catalog=catalog)
    if spec is None or spec.children is None:
        return stories
    children: list[tuple[dict[str, Any], Any]] = []
    problems: list[Problem] = []
    for rel, raw in companions:
        try:
            child = into_storyline(fmt, raw, jsonl=True, path=rel, options=options, catalog=catalog)
            children.append((child[0], [u.document for u in read_units(raw, jsonl=True, options=options)]))
        except MapcError as exc:
            problems.extend(dataclasses.replace(p, message=f"{rel}: {p.message}") for p in exc.problems)
    if problems:
        raise MapcError(problems)
    records = [u.document for u in read_units(data, jsonl=True, options=options)]
    stream.link(spec, stories[0], records, children)
    out = [stories[0], *(c for c, _ in children)]
    failed = storyline.check_all(out, True, catalog.count_trees())
    if failed:
        raise MapcError(failed)
    return out


def drift(fmt: str, data: bytes, options: Options = DEFAULT, catalog: Catalog | None = None) -> list[str]:
    """What an event stream holds that its format's spec does not know (record types, keys, versions
    it was not checked against), one message per kind; [] for every other format."""
    catalog = resolved(catalog)
    if fmt == STORYLINE or _codec(fmt, catalog) is not None:
        return []
    spec = program_for(fmt, catalog).spec.stream
    if spec is None:
        return []
    from mapc.engine import stream

    records = [u.document for u in read_units(data, jsonl=True, options=options)]
    return stream.drift(spec, records).messages(spec.checked)


def companion_files(
    fmt: str,
    result: Any,
    stem: str,
    stories: list[dict[str, Any]] | None = None,
    catalog: Catalog | None = None,
) -> list[tuple[str, Any]] | None:
    """Where the streams of `result` (what `from_storyline(fmt, …)` gave: several streams) go when
    the first is written to a file named `stem` (without suffix): the first at "" and each other one
    at the spec's companion path (``{stem}/subagents/agent-{key}.jsonl``, `key` its records' value at
    `children.key`, or with `linked: parent` the session of `stories`' Storyline); None when `fmt` has
    no companions or `result` is one stream."""
    from mapc.engine import pointer as ptr

    catalog = resolved(catalog)
    pattern = _written_pattern(fmt, catalog)
    if pattern is None or not _streams_of(result) or len(result) < 2:
        return None
    spec = program_for(fmt, catalog).spec.stream
    assert spec is not None and spec.children is not None
    out: list[tuple[str, Any]] = [("", result[0])]
    sessions: list[Any] = [s.get("session") for s in stories] if stories is not None and spec.children.by_parent else []
    for n, records in enumerate(result[1:], start=1):
        if n < len(sessions) and type(sessions[n]) is str:  # linked by parent: a child is named by its session
            key = sessions[n]
        else:
            key = next((v for r in records if type(v := ptr.resolve(r, spec.children.key)) is str and v), f"child-{n}")
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in key).lstrip(".") or f"child-{n}"
        out.append((pattern.replace("{stem}", stem).replace("{key}", safe), records))
    return out
