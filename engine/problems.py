"""Errors as values: a `Problem` carries a stable code and the JSON Pointer of what is wrong.

The engine never prints or exits. Checks yield `Problem`s; the Python API raises them, all at
once, inside one `MapcError`; the CLI renders them as ``FILE: POINTER: message [code]``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field


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

    def __str__(self) -> str:
        text = f"{self.pointer or '/'}: {self.message} [{self.code}]"
        return f"{text} ({self.spec_at})" if self.spec_at else text

    def within(self, prefix: str) -> Problem:
        """The same problem with `prefix` (an escaped pointer) put in front of its pointer."""
        return Problem(self.code, prefix + self.pointer, self.message, self.spec_at, self.context)

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready view, used by ``--json`` output and the conformance runner."""
        out: dict[str, object] = {"code": self.code, "pointer": self.pointer, "message": self.message}
        if self.spec_at is not None:
            out["spec_at"] = str(self.spec_at)
        return out


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
