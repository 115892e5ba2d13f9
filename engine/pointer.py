"""RFC 6901 JSON Pointers: parse, format, escape, resolve.

Pointers are parsed once into tuples of string tokens; walking a tuple is ~20x faster than
re-parsing text on every access.  `~1` is decoded before `~0`, so ``/~01`` names the key ``~1``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Any

from mapc.engine.values import MISSING

Tokens = tuple[str, ...]

_BAD_ESCAPE = re.compile(r"~(?![01])")
_ARRAY_INDEX = re.compile(r"0|[1-9][0-9]*")


class PointerSyntaxError(ValueError):
    """Raised by `parse` for text that is not an RFC 6901 pointer."""


def escape(token: str) -> str:
    """Escape one reference token (``~`` → ``~0`` first, then ``/`` → ``~1``)."""
    if "~" in token:
        token = token.replace("~", "~0")
    if "/" in token:
        token = token.replace("/", "~1")
    return token


def unescape(token: str) -> str:
    """Decode one reference token (``~1`` → ``/`` first, then ``~0`` → ``~``)."""
    if "~" in token:
        return token.replace("~1", "/").replace("~0", "~")
    return token


def is_valid(text: str) -> bool:
    """True when `text` is an RFC 6901 pointer: empty, or ``/``-led with only ``~0``/``~1`` escapes."""
    return text == "" or (text[:1] == "/" and _BAD_ESCAPE.search(text) is None)


def parse(text: str) -> Tokens:
    """Parse pointer text into its unescaped tokens (``""`` → ``()``).

    Short pointers are cached: a reverse parses every residual's pointer, and a corpus repeats them
    line after line (a long one, which input may hold, is not kept alive by the cache)."""
    if type(text) is str and len(text) <= 200:
        return _parse_short(text)
    return _parse(text)


@functools.lru_cache(maxsize=4096)
def _parse_short(text: str) -> Tokens:
    return _parse(text)


def _parse(text: str) -> Tokens:
    if not is_valid(text):
        raise PointerSyntaxError(f"not an RFC 6901 JSON Pointer: {text!r}")
    if text == "":
        return ()
    return tuple(unescape(t) for t in text[1:].split("/"))


def format(tokens: Iterable[str | int]) -> str:
    """Format tokens as pointer text, escaping each one."""
    return "".join("/" + escape(str(t)) for t in tokens)


def join(prefix: str, *tokens: str | int) -> str:
    """Append tokens (escaped) to an already-formatted pointer."""
    return prefix + "".join("/" + escape(str(t)) for t in tokens)


def is_array_index(token: str) -> bool:
    """RFC 6901 array index: ``0`` or digits without a leading zero."""
    return _ARRAY_INDEX.fullmatch(token) is not None


def resolve(doc: Any, tokens: Tokens) -> Any:
    """The value at `tokens` in `doc`, or `MISSING` if any step does not exist."""
    node = doc
    for token in tokens:
        t = type(node)
        if t is dict:
            node = node.get(token, MISSING)
            if node is MISSING:
                return MISSING
        elif t is list:
            if not is_array_index(token):
                return MISSING
            i = int(token)
            if i >= len(node):
                return MISSING
            node = node[i]
        else:
            return MISSING
    return node


def is_prefix(prefix: Tokens, tokens: Tokens) -> bool:
    """True when `prefix` addresses `tokens` or one of its ancestors."""
    return tokens[: len(prefix)] == prefix
