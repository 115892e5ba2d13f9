"""The loss report: whether a conversion A → B is exact, and if not, what B could not say.

"Exact" (issue 15, docs/lossless.md) means the law A → B → A holds with B's native values alone,
without mapc's `_storyline` envelope.  The export (engine/provenance.py) already carries in the
envelope exactly what B cannot give back, so a conversion is exact when its output needs no
envelope entry; every entry is a value *carried* (or, under `--no-envelope`, *dropped*).  For a
Storyline input (the hub has no document of its own to rebuild), the values B's reading of the
output does not give back are *lost*.  Values B's reading says that the input did not (an agent
name a format without one synthesizes, default timestamps) are *synthesized*: reported, and not a
loss when the way back does not write them.

The report is plain data: small frozen values, every entry located by a JSON Pointer, built by
`assess` from the conversion's input Storylines and its output; the CLI prints `Report.line()` and
writes `Report.as_dict()` for `--report`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from mapc.engine import envelope, pointer
from mapc.engine.problems import MapcError, Problem
from mapc.engine.values import MISSING, json_bytes, json_equal

VERSION = 1
CARRIED, DROPPED = "carried", "dropped"
# Storyline keys that say where a Storyline came from rather than what it says: a hop changes them
# by definition (origin) or they are the residual bookkeeping the carried entries already report.
_BOOKKEEPING = ("origin", "schema_version", "unknown_fields", "unknown_key_counts")


@dataclass(frozen=True, slots=True)
class Carried:
    """One value B could not say: of `source` (the format whose document it belongs to; the hub's
    own ``storyline`` for the keys that tie a tree together), at `pointer` in that document, carried
    by the node at `carrier` in B's output (or dropped with it, under `--no-envelope`)."""

    source: str
    pointer: str
    carrier: str
    bytes: int
    absent: bool = False  # not a value: a key B's way back adds where A had none, to leave out

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        out = {"source": self.source, "pointer": self.pointer, "carrier": self.carrier, "bytes": self.bytes}
        if self.absent:
            out["absent"] = True
        return out


@dataclass(frozen=True, slots=True)
class Said:
    """A value of B's reading of the output that differs from the input Storyline's, at `pointer`
    into the Storyline (``/k/…`` when there are several): `value` is what B says (for a value lost,
    what the input said), `was` what the input said, as a 1-tuple, or () when it had none (a
    tuple rather than a marker, so a report pickles to a worker and back unchanged)."""

    pointer: str
    value: Any
    was: tuple[Any, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view (`was` only when the input had a value)."""
        out = {"pointer": self.pointer, "value": self.value}
        if self.was:
            out["was"] = self.was[0]
        return out


@dataclass(frozen=True, slots=True)
class Rewritten:
    """A value of the input document that a conversion into its own format gives back otherwise:
    at `pointer` in the input, `was` what the input said and `now` what the output says, each a
    1-tuple, or () where there is no value (a key the output leaves out, or adds)."""

    pointer: str
    was: tuple[Any, ...]
    now: tuple[Any, ...]

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view (`was` / `now` only where there is a value)."""
        out: dict[str, Any] = {"pointer": self.pointer}
        if self.was:
            out["was"] = self.was[0]
        if self.now:
            out["now"] = self.now[0]
        return out

    def text(self) -> str:
        """``/a/b null → ""`` (``(none)`` for no value)."""
        shown = [_short(v[0]) if v else "(none)" for v in (self.was, self.now)]
        return f"{self.pointer or '/'} {shown[0]} → {shown[1]}"


@dataclass(frozen=True, slots=True)
class Report:
    """What one conversion kept and lost.

    `carried` are the envelope's entries (`mode` says whether the output keeps them, ``carried``,
    or they were left out, ``dropped``); `lost` the Storyline values B does not give back that no
    envelope carries (a Storyline input); `synthesized` what B says instead of, or beside, the
    input; `problems` what could not be assessed (B's reading of its own output failed)."""

    from_format: str
    to_format: str
    mode: str = CARRIED
    carried: tuple[Carried, ...] = ()
    lost: tuple[Said, ...] = ()
    synthesized: tuple[Said, ...] = ()
    problems: tuple[Problem, ...] = field(default=())
    path: str | None = None
    invalid: tuple[Problem, ...] = ()  # the output's problems under its format owner's rules
    owner: str = ""  # whose rules `invalid` are
    redacted: tuple[tuple[str, int], ...] = ()  # `--redact`: replacements by pattern name (engine/redact.py)
    rewritten: tuple[Rewritten, ...] = ()  # A → A: input values the output says otherwise

    @property
    def exact(self) -> bool:
        """Whether B's native values give A back: nothing carried, dropped, lost or redacted, nothing unassessed."""
        return not (self.carried or self.lost or self.problems or self.redacted or self.rewritten)

    def with_redacted(self, counts: Mapping[str, int]) -> Report:
        """The same report saying what `--redact` replaced (pattern name → replacements; none: unchanged)."""
        if not any(counts.values()):
            return self
        return dataclasses.replace(self, redacted=tuple(sorted((k, n) for k, n in counts.items() if n)))

    def with_input(self, data: bytes, output: Any, *, lines: bool = False) -> Report:
        """The same report, for a conversion into the input's own format, saying which values of
        the input (`data`: JSON, or JSON lines with `lines`) the output gives back otherwise — a
        default written over a null, rows reordered: a same-format conversion is exact only when it
        gives the document back.  Other conversions, and inputs that are not JSON, are unchanged."""
        if self.from_format != self.to_format:
            return self
        try:
            source = [orjson.loads(x) for x in data.splitlines() if x.strip()] if lines else orjson.loads(data)
        except orjson.JSONDecodeError:
            return self  # not JSON (a text format): the Storylines' comparison is all there is
        if type(output) is str:
            return self
        if lines and type(output) is list and output and all(type(x) is list for x in output):
            output = output[0]  # a tree of streams: the input file's own stream is the first
        elif lines and type(output) is not list:
            output = [output]  # the one line of a file of lines, written as its document
        changes = tuple(
            Rewritten(ptr, () if was is MISSING else (was,), () if now is MISSING else (now,))
            for ptr, was, now in _leaf_diff(source, output, "")
        )
        return dataclasses.replace(self, rewritten=changes) if changes else self

    def at(self, path: str | None) -> Report:
        """The same report for the file `path`."""
        return dataclasses.replace(self, path=path)

    def checked(self, owner: str, invalid: tuple[Problem, ...]) -> Report:
        """The same report with what `owner`'s validator says of the output (issue 15: exactness wins
        over the owner's validity, and the report says when the output is not valid there)."""
        return dataclasses.replace(self, owner=owner, invalid=invalid)

    def summary(self) -> str:
        """One clause per kind: ``/agent/name synthesized as "Agent"; 3 values carried in _storyline (a 3)``."""
        parts = []
        if self.synthesized:
            parts.append("synthesized: " + _grouped(self.synthesized, as_value=True))
        if self.carried:
            values = [c for c in self.carried if not c.absent]
            n, gone = len(values), len(self.carried) - len(values)
            by = _counts(c.source for c in values)
            how = "carried in _storyline" if self.mode == CARRIED else "dropped (no envelope)"
            also = f"; and {gone} key{'s' if gone != 1 else ''} the way back adds to leave out" if gone else ""
            parts.append(
                f"{n} value{'s' if n != 1 else ''} {how} ({by}: {_templates(c.pointer for c in values)}{also})"
            )
        if self.lost:
            n = len(self.lost)
            parts.append(f"{n} value{'s' if n != 1 else ''} not said by {self.to_format}: {_grouped(self.lost)}")
        if self.rewritten:
            n = len(self.rewritten)
            shown = ", ".join(r.text() for r in self.rewritten[:3]) + (f", … {n - 3} more" if n > 3 else "")
            parts.append(f"{n} value{'s' if n != 1 else ''} of the input written otherwise: {shown}")
        if self.redacted:
            n = sum(c for _, c in self.redacted)
            by = " ".join(f"{k}={c}" for k, c in self.redacted)
            parts.append(f"{n} value{'s' if n != 1 else ''} redacted ({by})")
        parts += [f"not assessed: {p}" for p in self.problems]
        if self.invalid:
            first = self.invalid[0]
            more = f" (and {len(self.invalid) - 1} more)" if len(self.invalid) > 1 else ""
            parts.append(f"not valid for {self.owner}: {first.pointer or '/'}: {first.message}{more}")
        return "; ".join(parts) if parts else "exact"

    @property
    def noteworthy(self) -> bool:
        """Whether the CLI prints a line for it: not exact, or not valid in the owner's tools."""
        return not self.exact or bool(self.invalid)

    def line(self) -> str:
        """The line the CLI prints for a conversion that is not exact (or not valid for its owner)."""
        head = f"{self.path}: " if self.path else ""
        state = "exact" if self.exact else "not exact"
        return f"{head}{state} ({self.from_format} → {self.to_format}): {self.summary()}"

    def as_dict(self) -> dict[str, Any]:
        """The report as data (the entries of `mapc convert --report FILE.json`)."""
        return {
            "path": self.path,
            "from": self.from_format,
            "to": self.to_format,
            "exact": self.exact,
            "envelope": self.mode == CARRIED,
            "carried" if self.mode == CARRIED else "dropped": [c.as_dict() for c in self.carried],
            "lost": [s.as_dict() for s in self.lost],
            "synthesized": [s.as_dict() for s in self.synthesized],
            "problems": [p.as_dict() for p in self.problems],
            "valid_for_owner": None if not self.owner else not self.invalid,
            "owner": self.owner or None,
            "invalid": [p.as_dict() for p in self.invalid],
            "redacted": dict(self.redacted),
            "rewritten": [r.as_dict() for r in self.rewritten],
        }


def _template(ptr: str) -> str:
    """`ptr` with array indices written ``*`` (``/steps/3/x`` → ``/steps/*/x``)."""
    return "/".join("*" if t.isdigit() else t for t in ptr.split("/"))


def _counts(items: Iterator[str] | Any) -> str:
    counts: dict[str, int] = {}
    for item in items:
        counts[item] = counts.get(item, 0) + 1
    return ", ".join(f"{k} {n}" for k, n in counts.items())


def _templates(ptrs: Iterator[str] | Any, limit: int = 4) -> str:
    counts: dict[str, int] = {}
    for p in ptrs:
        t = _template(p) or "the whole document"
        counts[t] = counts.get(t, 0) + 1
    shown = [f"{t} ×{n}" if n > 1 else t for t, n in list(counts.items())[:limit]]
    more = len(counts) - limit
    return ", ".join(shown) + (f", … {more} more" if more > 0 else "")


def _short(value: Any, limit: int = 40) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _grouped(said: tuple[Said, ...], as_value: bool = False, limit: int = 4) -> str:
    groups: dict[tuple[str, str], int] = {}
    for s in said:
        key = (_template(s.pointer) or "the whole document", _short(s.value) if as_value else "")
        groups[key] = groups.get(key, 0) + 1
    shown = [
        f"{t}{f' as {v}' if as_value else ''}{f' ×{n}' if n > 1 else ''}" for (t, v), n in list(groups.items())[:limit]
    ]
    more = len(groups) - limit
    return ", ".join(shown) + (f", … {more} more" if more > 0 else "")


# --- assessing --------------------------------------------------------------------------------


def envelope_entries(documents: list[Any], at: str) -> tuple[Carried, ...]:
    """Every value carried in the envelopes of `documents` (B's output documents, envelope at `at`),
    located ``/k…`` when there are several; the envelope's own slot note is not a value."""
    out: list[Carried] = []
    for k, doc in enumerate(documents):
        try:
            _, carried = envelope.take(doc, at)
        except MapcError:
            continue  # not an envelope mapc wrote; the reader says what is wrong with it
        base = f"/{k}" if len(documents) > 1 else ""
        for carrier, entry in carried.items():
            for source, body in entry["sources"].items():
                if source == envelope.SLOT:
                    continue
                for ptr, value in body["fields"].items():
                    if ptr == envelope.ABSENT and type(value) is list:
                        out += [Carried(source, p, base + carrier, 0, True) for p in value if type(p) is str]
                    else:
                        out.append(Carried(source, ptr, base + carrier, _size(value)))
    return tuple(out)


def without_envelopes(documents: list[Any], at: str) -> list[Any]:
    """`documents` as the pure target format: each one's envelope taken out."""
    out = []
    for doc in documents:
        try:
            out.append(envelope.take(doc, at)[0])
        except MapcError:
            out.append(doc)
    return out


def _size(value: Any) -> int:
    data = json_bytes(value)
    if data is not None:
        return len(data)
    return len(json.dumps(value, ensure_ascii=False, default=repr))  # not JSON (a Python caller's value)


def story_changes(
    before: list[dict[str, Any]], after: list[dict[str, Any]]
) -> tuple[tuple[Said, ...], tuple[Said, ...]]:
    """(lost, synthesized) between the input Storylines and B's reading of the output: values the
    reading lacks, and values it has that differ or are new (Storylines matched by position; a
    different number of them is one loss at ``""``)."""
    if len(before) != len(after):
        return (Said("", f"{len(before)} Storylines read back as {len(after)}"),), ()
    lost: list[Said] = []
    made: list[Said] = []
    for k, (a, b) in enumerate(zip(before, after, strict=True)):
        base = f"/{k}" if len(before) > 1 else ""
        a = {key: v for key, v in a.items() if key not in _BOOKKEEPING}
        b = {key: v for key, v in b.items() if key not in _BOOKKEEPING}
        for ptr, was, now in _leaf_diff(a, b, base):
            if now is MISSING:
                lost.append(Said(ptr, was))
            else:
                made.append(Said(ptr, now, () if was is MISSING else (was,)))
    return tuple(lost), tuple(made)


def residuals_made(before: list[dict[str, Any]], after: list[dict[str, Any]], source: str) -> tuple[Said, ...]:
    """Values the export wrote into B's records that no Storyline value said: B's reading keeps them
    as residuals of B's own `source`, which the input Storyline (one read from B, holding such
    residuals) lacked — e.g. the ids of a record written for a turn appended after the Storyline
    was read.  Located in B's reading: ``/unknown_fields/sources/{source}/fields/{pointer}``."""
    if len(before) != len(after):
        return ()
    made: list[Said] = []
    for k, (a, b) in enumerate(zip(before, after, strict=True)):
        had = _fields(a, source)
        if had is None:  # not read from B: written anew, as the format's notes say (docs/formats.md)
            continue
        base = f"/{k}" if len(before) > 1 else ""
        at = f"{base}/unknown_fields/sources/{pointer.escape(source)}/fields/"
        for ptr, value in (_fields(b, source) or {}).items():
            if ptr not in had:
                made.append(Said(at + pointer.escape(ptr), value))
    return tuple(made)


def _fields(story: Any, source: str) -> dict[str, Any] | None:
    body = (((story.get("unknown_fields") or {}).get("sources") or {}).get(source)) if type(story) is dict else None
    fields = body.get("fields") if type(body) is dict else None
    return fields if type(fields) is dict and fields else None


def _leaf_diff(a: Any, b: Any, at: str) -> Iterator[tuple[str, Any, Any]]:
    """(pointer, input value or MISSING, output value or MISSING) where `a` and `b` differ, as deep
    as both are objects or arrays.  Each node is visited once, and a pointer is made only on the
    way to a difference (the report runs on every conversion: most values are equal)."""
    ta = type(a)
    if ta is dict and type(b) is dict:
        for key in {**a, **b}:
            x, y = a.get(key, MISSING), b.get(key, MISSING)
            if _same(x, y):
                continue
            yield from _leaf_diff(x, y, f"{at}/{pointer.escape(key)}")
        return
    if ta is list and type(b) is list:
        for i in range(max(len(a), len(b))):
            x = a[i] if i < len(a) else MISSING
            y = b[i] if i < len(b) else MISSING
            if _same(x, y):
                continue
            yield from _leaf_diff(x, y, f"{at}/{i}")
        return
    if not json_equal(a, b):
        yield at, a, b


def _same(x: Any, y: Any) -> bool:
    """A cheap "equal" for the walk: the same object, or equal plain values of one type (containers
    are walked instead; a float is compared, never taken as itself: NaN is unequal to everything)."""
    tx = type(x)
    if x is y:
        return tx is not float or x == x
    return tx is type(y) and tx is not dict and tx is not list and json_equal(x, y)


def combined(reports: list[Report], from_format: str, to_format: str) -> Report:
    """One report for the documents of one file converted one by one (a JSONL input streamed):
    the k-th report's entries located under ``/k`` of the output, as the array it writes."""
    if len(reports) == 1:
        return reports[0]
    carried: list[Carried] = []
    lost: list[Said] = []
    made: list[Said] = []
    problems: list[Problem] = []
    redacted: dict[str, int] = {}
    for k, r in enumerate(reports):
        for name, n in r.redacted:
            redacted[name] = redacted.get(name, 0) + n
        carried += [Carried(c.source, c.pointer, f"/{k}{c.carrier}", c.bytes) for c in r.carried]
        lost += [Said(f"/{k}{s.pointer}", s.value, s.was) for s in r.lost]
        made += [Said(f"/{k}{s.pointer}", s.value, s.was) for s in r.synthesized]
        problems += [p.within(f"/{k}") for p in r.problems]
    mode = reports[0].mode if reports else CARRIED
    out = Report(from_format, to_format, mode, tuple(carried), tuple(lost), tuple(made), tuple(problems))
    return out.with_redacted(redacted)
