"""Redaction: secrets in a JSON value replaced by a marker before it is shown or exported.

`Redactor` holds compiled patterns: the built-in ones (API keys of common providers, bearer tokens,
credentials in header-like ``name: value`` text) and any the user adds.  `redact` walks a JSON
value and returns a copy in which every string has each match replaced by ``[REDACTED]``, and every
string under a credential-like key (``authorization``, ``api_key``, ``password``, …) replaced whole;
keys and the shape of the value are kept (only strings change), so a redacted document still validates.  Nothing here
knows a format: it sees only JSON values.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

MARK: Final = "[REDACTED]"

# (name, pattern): the name says in errors and docs what a pattern is for.  A pattern with a group
# named `keep` keeps that part (a header's name) and replaces the rest of the match.
BUILTIN: Final[tuple[tuple[str, str], ...]] = (
    ("provider API key (sk-…)", r"\bsk-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_-]{16,}"),
    ("AWS access key id", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("GitHub token", r"\bgh[pousr]_[A-Za-z0-9]{20,}\b|\bgithub_pat_[A-Za-z0-9_]{20,}\b"),
    ("Slack token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    ("Google API key", r"\bAIza[0-9A-Za-z_-]{30,}"),
    ("Hugging Face token", r"\bhf_[A-Za-z0-9]{20,}\b"),
    ("private key block", r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----"),
    ("bearer token", r"(?P<keep>\b[Bb]earer\s+)(?!\[REDACTED\])[A-Za-z0-9._~+/=-]{8,}"),
    (
        "credential header or assignment",
        r"(?P<keep>(?i:\b(?:proxy-)?authorization|\bx-api-key|\bapi[_-]?key|\baccess[_-]?token|\bsecret[_-]?key"
        r"|\bpassword|\bpasswd)[\"']?\s*[:=]\s*[\"']?(?:(?i:bearer|basic|token)\s+)?)"
        r"(?!\[REDACTED\]|(?i:bearer|basic|token)\s)[^\s\"',;}]{4,}",
    ),
)

# Keys whose whole value is a credential, compared lower-case with `-` read as `_`.
SECRET_KEYS: Final = frozenset(
    {
        "authorization",
        "proxy_authorization",
        "x_api_key",
        "api_key",
        "apikey",
        "access_token",
        "refresh_token",
        "secret",
        "client_secret",
        "secret_key",
        "password",
        "passwd",
        "cookie",
        "set_cookie",
    }
)


class PatternError(ValueError):
    """A user pattern that is not a regular expression; `pattern` is the text given."""

    def __init__(self, pattern: str, message: str) -> None:
        super().__init__(f"--redact-pattern {pattern!r} is not a regular expression: {message}")
        self.pattern = pattern


@dataclass(frozen=True)
class Redactor:
    """Compiled redaction patterns; `count` is how many replacements `redact` made so far."""

    patterns: tuple[re.Pattern[str], ...]
    counter: list[int] = field(default_factory=lambda: [0])

    @property
    def count(self) -> int:
        return self.counter[0]

    def text(self, value: str) -> str:
        """`value` with every match of every pattern replaced."""
        for pattern in self.patterns:
            value = pattern.sub(self._replace, value)
        return value

    def _replace(self, match: re.Match[str]) -> str:
        self.counter[0] += 1
        keep = match.groupdict().get("keep")
        return (keep or "") + MARK

    def redact(self, value: Any) -> Any:
        """A copy of the JSON `value` with secrets replaced (strings only; numbers and keys stay)."""
        t = type(value)
        if t is str:
            return self.text(value)
        if t is list:
            return [self.redact(item) for item in value]
        if t is dict:
            out = {}
            for key, item in value.items():
                if type(item) is str and item not in ("", MARK) and _is_secret_key(key):
                    self.counter[0] += 1
                    out[key] = MARK
                else:
                    out[key] = self.redact(item)
            return out
        return value


def _is_secret_key(key: str) -> bool:
    return key.lower().replace("-", "_") in SECRET_KEYS


def redactor(extra: Iterable[str] = (), *, builtin: bool = True) -> Redactor:
    """A `Redactor` of the built-in patterns (unless `builtin` is false) and the `extra` ones.

    Raises `PatternError` naming the first user pattern that does not compile.
    """
    compiled = [re.compile(p) for _, p in BUILTIN] if builtin else []
    for text in extra:
        try:
            compiled.append(re.compile(text))
        except re.error as exc:
            raise PatternError(text, str(exc)) from None
    return Redactor(tuple(compiled))
