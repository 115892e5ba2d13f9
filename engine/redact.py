"""Redaction of secrets in text that leaves the machine or is shown: API keys, tokens, auth headers.

Patterns are named regular expressions; a match is replaced by ``[REDACTED:name]`` (a pattern with a
group named `keep` keeps that part, a header's name, and replaces the rest).  The shipped patterns
(`DEFAULT_PATTERNS`) catch common credential shapes; callers add their own (named ``user1``,
``user2``…).  A string under a credential-like key (``authorization``, ``api_key``, ``password``…) is
replaced whole (``[REDACTED:secret_key]``).  Only strings change: keys and shapes are kept, so a
redacted Storyline still validates.  This module knows no format: `Redactor.text` works on any
string, `Redactor.value` on the string leaves of any JSON value, and `Redactor.stories` on the
message and tool text of Storylines (turn `msg`, `reason`, `observation`, tool call `args` and
`result`, the prompts, the values kept in `unknown_fields`), returning what it replaced by pattern
name so the caller can report it: a redacted conversion is not exact, and says so.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

MARK: Final = "[REDACTED"  # every replacement starts so: `[REDACTED:api_key]`
_NOT_DONE = r"(?!\[REDACTED)"  # a pattern never matches its own replacement again (idempotent)

DEFAULT_PATTERNS: Final[dict[str, str]] = {
    # Provider keys with a recognizable prefix: OpenAI/Anthropic sk-…, AWS access key ids, GitHub,
    # Slack, Google and Hugging Face tokens.
    "api_key": (
        r"\bsk-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_-]{16,}|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"
        r"|\bgh[pousr]_[A-Za-z0-9]{20,}\b|\bgithub_pat_[A-Za-z0-9_]{20,}\b|\bxox[abposr]-[A-Za-z0-9-]{10,}"
        r"|\bAIza[0-9A-Za-z_-]{30,}|\bhf_[A-Za-z0-9]{20,}\b"
    ),
    "private_key": r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
    "bearer_token": r"(?P<keep>\b[Bb]earer\s+)" + _NOT_DONE + r"[A-Za-z0-9._~+/=-]{8,}",
    # A header (or key=value) naming a credential, up to the end of its value; `Basic`/`Token` kept.
    "auth_header": (
        r"(?P<keep>(?i:\b(?:proxy-)?authorization|\bx-api-key|\bapi[_-]?key|\baccess[_-]?token|\bsecret[_-]?key"
        r"|\bpassword|\bpasswd|\bcookie)[\"']?\s*[:=]\s*[\"']?(?:(?i:bearer|basic|token)\s+)?)"
        + _NOT_DONE
        + r"(?!(?i:bearer|basic|token)\s)[^\s\"',;}]{4,}"
    ),
}

# Keys whose whole string value is a credential, compared lower-case with `-` read as `_`.
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
TURN_TEXT = ("msg", "reason", "observation")
CALL_TEXT = ("args", "result")


@dataclass(frozen=True, slots=True)
class Redactor:
    """Compiled named patterns, applied in order."""

    patterns: tuple[tuple[str, re.Pattern[str]], ...]

    @classmethod
    def of(cls, extra: Iterable[str] = (), *, defaults: bool = True) -> Redactor:
        """The shipped patterns (unless `defaults` is false) and `extra` ones, named ``user1``, ``user2``…

        Raises ValueError naming the pattern that is not a regular expression."""
        named = list(DEFAULT_PATTERNS.items()) if defaults else []
        named += [(f"user{i}", p) for i, p in enumerate(extra, start=1)]
        out = []
        for name, text in named:
            try:
                out.append((name, re.compile(text)))
            except re.error as exc:
                raise ValueError(f"{text!r} is not a regular expression: {exc}") from None
        return cls(tuple(out))

    def text(self, value: str, counts: Counter[str]) -> str:
        """`value` with every match replaced; `counts` gains one per replacement, by pattern name."""
        for name, pattern in self.patterns:

            def replace(match: re.Match[str], name: str = name) -> str:
                counts[name] += 1
                return (match.groupdict().get("keep") or "") + f"[REDACTED:{name}]"

            value = pattern.sub(replace, value)
        return value

    def value(self, value: Any, counts: Counter[str]) -> Any:
        """A JSON value with its string leaves redacted (keys are kept as they are)."""
        if type(value) is str:
            return self.text(value, counts)
        if type(value) is list:
            return [self.value(v, counts) for v in value]
        if type(value) is dict:
            out = {}
            for key, item in value.items():
                if type(item) is str and item and not item.startswith(MARK) and _is_secret_key(key):
                    counts["secret_key"] += 1
                    out[key] = "[REDACTED:secret_key]"
                else:
                    out[key] = self.value(item, counts)
            return out
        return value

    def stories(self, stories: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], Counter[str]]:
        """Storylines with their message and tool text redacted, and the replacements by pattern."""
        counts: Counter[str] = Counter()
        out = []
        for story in stories:
            new = dict(story)
            if type(story.get("prompt")) is dict:
                new["prompt"] = self.value(story["prompt"], counts)
            turns = []
            for turn in story.get("turns") or []:
                t = dict(turn)
                for key in TURN_TEXT:
                    if key in t:
                        t[key] = self.value(t[key], counts)
                if type(t.get("prompt")) is dict:
                    t["prompt"] = self.value(t["prompt"], counts)
                if type(t.get("tool_calls")) is list:
                    t["tool_calls"] = [
                        {k: self.value(v, counts) if k in CALL_TEXT else v for k, v in c.items()}
                        if type(c) is dict
                        else c
                        for c in t["tool_calls"]
                    ]
                turns.append(t)
            if "turns" in story:
                new["turns"] = turns
            uf = story.get("unknown_fields")
            if type(uf) is dict and type(uf.get("sources")) is dict:
                # Residuals hold source text too (an argument string kept as written, a header).
                sources = {
                    name: {**entry, "fields": self.value(entry["fields"], counts)}
                    if type(entry) is dict and type(entry.get("fields")) is dict
                    else entry
                    for name, entry in uf["sources"].items()
                }
                new["unknown_fields"] = {**uf, "sources": sources}
            origin = story.get("origin")
            kept = origin.get("kept") if type(origin) is dict else None
            if type(kept) is dict and type(kept.get("fields")) is dict:  # known values kept (engine/known.py)
                new["origin"] = {**origin, "kept": {**kept, "fields": self.value(kept["fields"], counts)}}
            out.append(new)
        return out, counts


def _is_secret_key(key: str) -> bool:
    return key.lower().replace("-", "_") in SECRET_KEYS


def summary(counts: Counter[str]) -> str:
    """``redacted 3 values: api_key=2 bearer_token=1`` (or that nothing was)."""
    if not counts:
        return "redacted nothing: no pattern matched"
    total = sum(counts.values())
    return f"redacted {total} value{'s' if total != 1 else ''}: " + " ".join(
        f"{k}={v}" for k, v in sorted(counts.items())
    )
