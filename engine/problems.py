"""Errors as values: a `Problem` carries a stable code and the JSON Pointer of what is wrong.

The engine never prints or exits. Checks yield `Problem`s; the Python API raises them, all at
once, inside one `MapcError`; the CLI renders them as ``FILE: POINTER: message [code]``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace


@dataclass(frozen=True, slots=True)
class SpecLocation:
    """Where a rule stands in a mapping spec: file, 1-based line and column, rule path."""

    file: str
    line: int
    column: int
    rule: str = ""

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}:{self.column}"
        return f"{where} {self.rule}" if self.rule else where


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a document or a spec.

    `code` is stable and machine-readable (``storyline.duplicate_turn_id``); `pointer` is the
    RFC 6901 pointer of the offending value in the input (``""`` is the whole document);
    `message` says what was expected.  `spec_at` names the spec rule involved, if any.
    """

    code: str
    pointer: str
    message: str
    spec_at: SpecLocation | None = None
    context: tuple[Problem, ...] = field(default=())
    line: int | None = None  # the input line, for JSONL files

    def __str__(self) -> str:
        text = f"{self.pointer or '/'}: {self.message} [{self.code}]"
        if self.line is not None:
            text = f"line {self.line}: {text}"
        return f"{text} ({self.spec_at})" if self.spec_at else text

    def within(self, prefix: str) -> Problem:
        """The same problem with `prefix` (an escaped pointer) put in front of its pointer."""
        return replace(self, pointer=prefix + self.pointer)

    def on_line(self, line: int) -> Problem:
        """The same problem located on `line` of a JSONL input."""
        return replace(self, line=line)

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready view, used by ``--json`` output and the conformance runner."""
        out: dict[str, object] = {"code": self.code, "pointer": self.pointer, "message": self.message}
        if self.line is not None:
            out["line"] = self.line
        if self.spec_at is not None:
            out["spec_at"] = str(self.spec_at)
        return out


def in_document_order(problems: Iterable[Problem]) -> list[Problem]:
    """Problems ordered by the array positions they point into (``/turns/2/…`` after ``/turns/1``).

    The sort is stable and looks only at array indices, so problems inside one element keep the
    order in which the checks found them (structure first, then the semantic rules).
    """

    def key(problem: Problem) -> tuple[int, ...]:
        return (problem.line or 0, *(int(t) for t in problem.pointer.split("/")[1:] if t.isdigit()))

    return sorted(problems, key=key)


class MapcError(Exception):
    """The one exception mapc raises for bad input or a bad spec: it holds every problem found."""

    def __init__(self, problems: Iterable[Problem], source: str | None = None) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        self.source = source
        super().__init__("\n".join(str(p) for p in self.problems) or "mapc error")

    @classmethod
    def single(cls, code: str, pointer: str, message: str, source: str | None = None) -> MapcError:
        """Shorthand for an error holding one problem."""
        return cls((Problem(code, pointer, message),), source)
