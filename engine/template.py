"""Pointer templates: RFC 6901 pointers whose tokens may be variables, as in the RFC tables.

``/steps/{s}/tool_calls/{c}/arguments`` has the literal tokens ``steps``, ``tool_calls`` and
``arguments`` and the variables ``s`` and ``c``.  A variable stands for an array position or an
object key; which one is declared by the spec that uses the template.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mapc.engine import pointer

_VAR = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True, slots=True)
class Var:
    """A variable token of a template."""

    name: str

    def __str__(self) -> str:
        return "{" + self.name + "}"


Token = str | Var


@dataclass(frozen=True, slots=True)
class Template:
    """A parsed pointer template; `text` is kept for messages and for printing tables."""

    text: str
    tokens: tuple[Token, ...]

    @property
    def variables(self) -> tuple[str, ...]:
        """The variable names in order of appearance."""
        return tuple(t.name for t in self.tokens if isinstance(t, Var))

    def starts_with(self, prefix: Template) -> bool:
        """True when `prefix`'s tokens (variables included) begin this template's tokens."""
        return self.tokens[: len(prefix.tokens)] == prefix.tokens

    def relative_to(self, prefix: Template) -> tuple[Token, ...]:
        """The tokens after `prefix` (which must be a prefix)."""
        return self.tokens[len(prefix.tokens) :]

    def literal(self) -> tuple[str, ...] | None:
        """The tokens when there is no variable, else None."""
        if any(isinstance(t, Var) for t in self.tokens):
            return None
        return self.tokens  # type: ignore[return-value]

    def __str__(self) -> str:
        return self.text


def parse_template(text: str) -> Template:
    """Parse template text; a token that is exactly ``{name}`` is a variable."""
    if not pointer.is_valid(text):
        raise pointer.PointerSyntaxError(f"not a JSON Pointer template: {text!r}")
    tokens: list[Token] = []
    for raw in pointer.parse(text):
        m = _VAR.fullmatch(raw)
        tokens.append(Var(m.group(1)) if m else raw)
    return Template(text, tuple(tokens))


def format_tokens(tokens: tuple[Token, ...]) -> str:
    """Template text for tokens (variables printed as ``{name}``)."""
    return "".join("/" + (str(t) if isinstance(t, Var) else pointer.escape(t)) for t in tokens)
