"""The registry of named functions that specs may call, and the engine's own small library.

A spec can call only what is registered here: no spec can import a module or run code.  Format
helpers register themselves with the same decorator, from the modules a catalog names
(engine/catalog.py), which `lookup` imports first.  The registry is one per process, as a library
of named functions is: a catalog says which modules fill it, not which names it hides.  Every
function takes JSON values (or `MISSING`) and returns a JSON value, or `MISSING` for "no value".
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mapc.engine import canonical, views
from mapc.engine.problems import MapcError
from mapc.engine.values import MISSING, json_equal

if TYPE_CHECKING:
    from mapc.engine.catalog import Catalog


@dataclass(frozen=True, slots=True)
class Function:
    """A registered function with the number of arguments a spec must pass."""

    name: str
    fn: Callable[..., Any]
    arity: int
    doc: str


REGISTRY: dict[str, Function] = {}


def register(name: str, arity: int) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register `fn` under `name` for specs to call with `arity` arguments."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        if name in REGISTRY and REGISTRY[name].fn is not fn:
            raise ValueError(f"function {name!r} is already registered")
        REGISTRY[name] = Function(name, fn, arity, ((fn.__doc__ or "").strip().splitlines() or [""])[0])
        return fn

    return decorate


def lookup(name: str, catalog: Catalog | None = None) -> Function | None:
    """The registered function called `name`, if any, importing the function modules `catalog`
    names (None: the installed catalog's) in turn until one registers it (`Catalog.function`).  A
    spec may name anything: a name that is not a string, or one starting with ``__``, is no function."""
    from mapc.engine import catalog as catalogs

    if type(name) is not str or name.startswith("__"):
        return None
    return (catalog or catalogs.installed()).function(name)


I64_MIN, I64_MAX, U64_MAX = -(2**63), 2**63 - 1, 2**64 - 1


@dataclass(frozen=True, slots=True)
class Kept:
    """A function's value and the parts of its first argument it did not map: residuals, by
    pointer tokens relative to that argument (a fan-out field keeps them under its source)."""

    value: Any
    residuals: dict[tuple[str | int, ...], Any]


@register("timestamp_checked", 1)
def timestamp_checked(value: Any) -> Any:
    """A timestamp (RFC 3339 text or epoch seconds) as it is; `TimestampError` for anything else."""
    from mapc.engine.timestamp import timestamp_ns

    timestamp_ns(value)
    return value


@register("int_ms", 1)
def int_ms(value: Any) -> Any:
    """Milliseconds as an i64: an integer as is, a float truncated, anything else no value.

    As the reference reads JSON numbers: an integer above i64 but within u64 is not an i64 (no
    value); a literal beyond u64 or below i64 is a float, and floats saturate at the i64 bounds.
    """
    t = type(value)
    if t is int:
        if I64_MIN <= value <= I64_MAX:
            return value
        if value <= U64_MAX:
            return MISSING if value > 0 else I64_MIN
        return I64_MAX
    if t is float and not math.isnan(value):
        if value >= I64_MAX:
            return I64_MAX
        if value <= I64_MIN:
            return I64_MIN
        return int(value)
    return MISSING


@register("rfc3339_text", 1)
def rfc3339_text(value: Any) -> Any:
    """A timestamp as RFC 3339 text: a string as is, epoch seconds formatted (UTC, ``Z``)."""
    if type(value) is str or value is MISSING or value is None:
        return value
    from mapc.engine.timestamp import format_rfc3339, timestamp_ns

    return format_rfc3339(timestamp_ns(value))


@register("space_offset_text", 1)
def space_offset_text(value: Any) -> Any:
    """A timestamp as ``YYYY-MM-DD HH:MM:SS[.f]+00:00`` text (a space, an offset): a string as is,
    epoch seconds formatted in UTC."""
    if type(value) is str or value is MISSING or value is None:
        return value
    from mapc.engine.timestamp import format_space_offset, timestamp_ns

    return format_space_offset(timestamp_ns(value))


@register("effective_kind", 2)
def effective_kind(src: Any, tool_calls: Any) -> str:
    """R-KIND for a turn without an explicit kind, from its `src` and `tool_calls`."""
    return views.effective_kind({"src": src, "tool_calls": tool_calls})


@register("blake3_document_id", 1)
def blake3_document_id(document: Any) -> str:
    """BLAKE3-256 hex of the canonical JSON of a whole source document (docs/envelope.md).

    A document that is not JSON (NaN, an integer no f64 holds, a lone surrogate, a non-string
    key: only a Python caller can hand such values over) is ``json.invalid``.
    """
    try:
        return canonical.document_id(document)
    except (ValueError, TypeError) as exc:
        raise MapcError.single("json.invalid", "", f"the document is not JSON and has no document id: {exc}") from None


# --- values of objects and text: what a spec passes `{const: V}` arguments to -------------------


def parsed_blake3_document_id(document: Any) -> str:
    """`blake3_document_id` of a document the JSON parser made: it cannot hold a NaN or an
    infinity, so the walk that looks for one is skipped (canonical_bytes, `parsed`)."""
    try:
        return canonical.document_id(document, parsed=True)
    except (ValueError, TypeError) as exc:
        raise MapcError.single("json.invalid", "", f"the document is not JSON and has no document id: {exc}") from None


# Registered functions with a faster twin for values the JSON parser made (run.forward, `parsed`).
_FOR_PARSED: dict[Callable[..., Any], Callable[..., Any]] = {blake3_document_id: parsed_blake3_document_id}


def for_parsed(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn`, or its twin for a value the JSON parser made (no NaN, no infinity can be in it)."""
    return _FOR_PARSED.get(fn, fn)


@register("object_of", 2)
def object_of(key: Any, value: Any) -> Any:
    """``{key: value}`` (no value: no object)."""
    return MISSING if value is MISSING or type(key) is not str else {key: value}


@register("without_keys", 2)
def without_keys(obj: Any, keys: Any) -> Any:
    """An object without `keys` (a list of names); anything but an object is no value."""
    if type(obj) is not dict:
        return MISSING
    return {k: v for k, v in obj.items() if k not in keys}


@register("with_defaults", 2)
def with_defaults(obj: Any, defaults: Any) -> Any:
    """An object with the keys of `defaults` it lacks filled in; anything but an object is no value."""
    if type(obj) is not dict:
        return MISSING
    out = dict(defaults)
    out.update(obj)
    return out


@register("with_fallbacks", 3)
def with_fallbacks(obj: Any, fallbacks: Any, more: Any) -> Any:
    """An object (anything else: ``{}``) with each ``[key, other, default]`` of `fallbacks` it lacks
    filled in turn: its own `other` key's value, else that key of the object `more`, else `default`."""
    out = dict(obj) if type(obj) is dict else {}
    more = more if type(more) is dict else {}
    for key, other, default in fallbacks if type(fallbacks) is list else ():
        if key not in out:
            out[key] = out[other] if other in out else more.get(other, default)
    return out


@register("same_or", 3)
def same_or(value: Any, want: Any, other: Any) -> Any:
    """`value` when it is `want` (JSON-equal), else `other`."""
    return value if json_equal(value, want) else other


@register("or_default", 2)
def or_default(value: Any, default: Any) -> Any:
    """`value`, or `default` when it is missing or null."""
    return default if value is MISSING or value is None else value


@register("json_text", 1)
def json_text(value: Any) -> Any:
    """A value as text: a string as is, ``""`` for none or null, anything else as compact JSON."""
    if type(value) is str:
        return value
    if value is MISSING or value is None:
        return ""
    import orjson

    return orjson.dumps(value).decode()


@register("renamed", 2)
def renamed(value: Any, names: Any) -> Any:
    """`value` renamed by the object `names` (``{old: new}``); a value it does not list is kept."""
    if type(value) is str and type(names) is dict and value in names:
        return names[value]
    return value


@register("joined_texts", 2)
def joined_texts(parts: Any, where: Any) -> Any:
    """The non-empty texts at pointer `where` of each part of a list, joined by a blank line;
    anything but a list is as it is."""
    if type(parts) is not list or type(where) is not str:
        return parts
    from mapc.engine import pointer

    tokens = pointer.parse(where)
    texts = [pointer.resolve(part, tokens) for part in parts]
    return "\n\n".join(t for t in texts if type(t) is str and t)
