"""Canonical JSON bytes and the BLAKE3 document id (docs/envelope.md, `source_document_id`).

The canonical form is what the reference gets from ``serde_json::to_vec`` of a value whose maps
are BTreeMaps: object keys sorted, compact separators, raw UTF-8, the minimal escapes, and numbers
printed the way serde_json 1.0.149 prints the *parsed* value (integers in the i64/u64 range as
digits, everything else as an f64 through its shortest round-trip digits).

orjson with ``OPT_SORT_KEYS`` writes exactly these bytes for the values it accepts (the tests
compare it with a reference encoder), so it is the fast path.  Where it cannot be trusted (an
integer beyond 64 bits, nesting deeper than orjson allows, NaN or infinity, or an orjson older
than 3.11.7 whose float text differs) a pure-Python encoder takes over.
"""

from __future__ import annotations

import math
import re
from typing import Any, Final

import blake3
import orjson

_I64_MIN: Final = -(2**63)
_U64_END: Final = 2**64

_ESCAPES: Final = {chr(c): f"\\u{c:04x}" for c in range(0x20)} | {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}
_NEEDS_ESCAPE: Final = re.compile(r'["\\\x00-\x1f]')


def format_float(x: float) -> str:
    """Print a finite float as serde_json 1.0.149 (zmij) does.

    The digits are the shortest that read back as the same float (Python's ``repr`` gives them).
    With e the decimal exponent of the first digit, ``-5 <= e <= 15`` prints plain decimals with
    ``.0`` for integral values (``1.0``, ``0.00001``, ``1000000000000000.0``); anything else prints
    ``d[.ddd]e±N`` with the sign always written and no zero padding (``1e+16``, ``1e-6``).
    Raises ValueError for NaN and infinities, which JSON cannot hold.
    """
    if not math.isfinite(x):
        raise ValueError(f"{x!r} is not a JSON number")
    text = repr(x)
    sign = "-" if text[0] == "-" else ""
    mantissa, _, exponent = text.lstrip("-").partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    # `point` = how many digits stand before the decimal point once the exponent is applied.
    point = len(whole) + int(exponent or 0)
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    if not digits:
        return sign + "0.0"
    e = point - 1
    if -5 <= e <= 15:
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        if point >= len(digits):
            return f"{sign}{digits}{'0' * (point - len(digits))}.0"
        return f"{sign}{digits[:point]}.{digits[point:]}"
    head = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{sign}{head}e{'+' if e >= 0 else '-'}{abs(e)}"


def _orjson_floats_exact() -> bool:
    """Whether this orjson prints floats exactly as `format_float` (true from orjson 3.11.7)."""
    probes = [1.0, -0.0, 0.1, 1e-5, 1e-6, 1.5e-7, 1e15, 1e16, 1.2e30, 5e-324, 1.7976931348623157e308]
    expected = "[" + ",".join(format_float(p) for p in probes) + "]"
    return orjson.dumps(probes) == expected.encode()


_ORJSON_FLOATS_EXACT: Final = _orjson_floats_exact()


def _has_float(value: Any) -> bool:
    """True when `value` holds a float anywhere; raises ValueError at a NaN or an infinity."""
    t = type(value)
    if t is float:
        return _has_float([value])
    if t is not dict and t is not list:
        return False
    stack = [value]
    found = False
    isfinite = math.isfinite
    while stack:
        node = stack.pop()
        for item in node.values() if type(node) is dict else node:
            t = type(item)
            if t is dict or t is list:
                stack.append(item)
            elif t is float:
                if not isfinite(item):
                    raise ValueError(f"{item!r} is not a JSON number")
                found = True
    return found


def _format_int(n: int) -> str:
    """An integer as serde_json prints it after parsing its literal.

    serde_json keeps integers in the i64/u64 range exact and reads any other integer literal
    (``>= 2**64`` or ``< -2**63``) as an f64, so those print through `format_float`.
    """
    if _I64_MIN <= n < _U64_END:
        return str(n)
    try:
        return format_float(float(n))
    except OverflowError:
        raise ValueError(f"integer {n} is out of range for an f64") from None


def _quote(text: str) -> str:
    return '"' + _NEEDS_ESCAPE.sub(lambda m: _ESCAPES[m.group()], text) + '"'


def _encode(value: Any) -> bytes:
    """The pure-Python canonical encoder (the slow path; see `canonical_bytes`).

    It walks with its own stack, not Python's: JSON is parsed up to 1,024 levels deep, and a
    recursive walk ran out of frames below that (a 1,000-level value in a free-JSON slot)."""
    parts: list[str] = []
    append = parts.append
    # A pending item is a value to emit, or a str already encoded (a separator or a closing bracket).
    stack: list[tuple[bool, Any]] = [(False, value)]
    while stack:
        done, v = stack.pop()
        if done:
            append(v)
            continue
        t = type(v)
        if t is str:
            append(_quote(v))
        elif t is dict:
            append("{")
            keys = sorted(v)
            for key in keys:
                if type(key) is not str:
                    raise TypeError(f"object keys must be strings, not {type(key).__name__}")
            stack.append((True, "}"))
            for i in range(len(keys) - 1, -1, -1):
                stack.append((False, v[keys[i]]))
                stack.append((True, "," + _quote(keys[i]) + ":" if i else _quote(keys[i]) + ":"))
        elif t is list:
            append("[")
            stack.append((True, "]"))
            for i in range(len(v) - 1, -1, -1):
                stack.append((False, v[i]))
                if i:
                    stack.append((True, ","))
        elif v is None:
            append("null")
        elif v is True:
            append("true")
        elif v is False:
            append("false")
        elif t is int:
            append(_format_int(v))
        elif t is float:
            append(format_float(v))
        else:
            raise TypeError(f"{t.__name__} is not a JSON value")

    # "strict" refuses lone surrogates: serde strings are UTF-8 and cannot hold them.
    return "".join(parts).encode("utf-8")


def canonical_bytes(value: Any, *, parsed: bool = False) -> bytes:
    """The canonical JSON bytes of a JSON value (dict, list, str, int, float, bool, None).

    Object keys are sorted recursively (Python's code-point order is UTF-8 byte order), separators
    are compact, non-ASCII is raw UTF-8, and only ``"``, ``\\``, ``\\b \\f \\n \\r \\t`` and
    ``\\u00xx`` (other controls) are escaped.  Integers in the i64/u64 range print as digits;
    larger integers print as the f64 serde_json would parse them into; floats go through
    `format_float`.  Raises ValueError for NaN, infinities and lone surrogates, TypeError for
    values that are not JSON.  Other Python types orjson happens to accept are not checked.

    `parsed`: the value is one the JSON parser made (or JSON values made from one), so it holds
    no NaN or infinity (orjson.loads refuses them): the walk that looks for them is skipped, a
    fifth of the forward of a large document.
    """
    try:
        out = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        # An integer beyond 64 bits, nesting deeper than orjson's limit, or not JSON at all.
        return _encode(value)
    # orjson writes NaN and infinities as null: without a null in sight there can be none.
    if _ORJSON_FLOATS_EXACT and (parsed or b"null" not in out):
        return out
    if _has_float(value) and not _ORJSON_FLOATS_EXACT:
        return _encode(value)
    return out


def document_id(value: Any, *, parsed: bool = False) -> str:
    """Lowercase hex BLAKE3-256 of `canonical_bytes(value)`, a content-derived ``source_document_id``.

    The caller decides what `value` is: a format spec may say to hash one top-level document
    without its ``_storyline`` envelope key, for instance.  `parsed`: see `canonical_bytes`.
    """
    return blake3.blake3(canonical_bytes(value, parsed=parsed)).hexdigest()
