"""Which format a file is in: by its path first, then by its content (docs/formats.md, "Detection").

Each spec says how its files look (`detect:` in its YAML): path patterns, and content rules with
an `order` that places them among every other format's rules.  A content rule is data: `has`
(pointers that must be present), `prefix` (a pointer whose string value starts with a text),
`first` (test the first element of an array, or the first JSONL line, instead of the root),
`any` (one of several rules), or `call` (a registered predicate).  A codec (engine/codecs.py)
declares path patterns, and a content test asked only about input that is not JSON.  Storyline,
the hub, is the engine's own: ``*.storyline.json``, or a ``schema_version`` starting with ``storyline/``.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

import orjson

from mapc.engine import catalog as catalogs
from mapc.engine import codecs, functions, pointer
from mapc.engine.values import MISSING

if TYPE_CHECKING:
    from mapc.engine.catalog import Catalog

STORYLINE = "storyline"

Predicate = Callable[[Any], bool]


@dataclass(frozen=True, slots=True)
class ContentRule:
    """One content rule: `test` on the root (or on the first element, with `first`)."""

    order: float
    format: str
    test: Predicate
    first: bool = False


def _has(tokens: pointer.Tokens) -> Predicate:
    return lambda doc: pointer.resolve(doc, tokens) is not MISSING


def _prefix(tokens: pointer.Tokens, text: str) -> Predicate:
    return lambda doc: str(pointer.resolve(doc, tokens) or "").startswith(text)


def _predicate(rule: dict[str, Any], catalog: Catalog | None = None) -> Predicate:
    tests: list[Predicate] = [_has(pointer.parse(ptr)) for ptr in rule.get("has", [])]
    tests += [_prefix(pointer.parse(ptr), text) for ptr, text in (rule.get("prefix") or {}).items()]
    if "any" in rule:
        alternatives = [_predicate(r, catalog) for r in rule["any"]]
        tests.append(lambda doc: any(p(doc) for p in alternatives))
    if "call" in rule:
        fn = functions.lookup(rule["call"], catalog)
        if fn is None:
            raise ValueError(f"unknown detection function {rule['call']!r}")
        call = fn.fn
        tests.append(lambda doc: bool(call(doc)))
    return lambda doc: type(doc) is dict and all(t(doc) for t in tests)


def _rules(catalog: Catalog | None = None) -> tuple[list[tuple[str, str]], list[ContentRule]]:
    """The path and content rules of every format of `catalog` (None: the installed one), made
    once per catalog."""
    catalog = catalog or catalogs.installed()
    return catalog.memo("detect", lambda: _make_rules(catalog))


def _make_rules(catalog: Catalog) -> tuple[list[tuple[str, str]], list[ContentRule]]:
    paths = [("*.storyline.json", STORYLINE)]
    content = [
        ContentRule(1, STORYLINE, _predicate({"prefix": {"/schema_version": "storyline/"}})),
        ContentRule(1, STORYLINE, _predicate({"prefix": {"/schema_version": "storyline/"}}), first=True),
    ]
    for name in catalog.shipped_names():
        detect = catalog.spec_field(name, "detect") or {}  # from the spec's data: nothing is compiled to detect
        paths.extend((pattern, name) for pattern in detect.get("paths", []))
        for rule in detect.get("content", []):
            test = _predicate(rule, catalog)
            content.append(ContentRule(float(rule.get("order", 100)), name, test, bool(rule.get("first"))))
    for codec in codecs.codecs(catalog):
        paths.extend((pattern, codec.name) for pattern in codec.path_patterns)
    content.sort(key=lambda r: r.order)
    return paths, content


def path_rules(catalog: Catalog | None = None) -> list[tuple[str, str]]:
    """``(pattern, format)`` of every path rule, in the order `by_path` tries them."""
    return list(_rules(catalog)[0])


def by_path(path: str, catalog: Catalog | None = None) -> str | None:
    """The format a file's name says, if any."""
    name = PurePath(path).name
    for pattern, fmt in _rules(catalog)[0]:
        if fnmatch.fnmatchcase(name, pattern) if "/" not in pattern else fnmatch.fnmatchcase(path, pattern):
            return fmt
    return None


def by_content(data: bytes, *, jsonl: bool = False, catalog: Catalog | None = None) -> str | None:
    """The format a file's content says (JSON, or the first non-empty line of JSONL), if any."""
    try:
        if jsonl:
            line = next((ln for ln in data.splitlines() if ln.strip()), b"")
            doc = orjson.loads(line)
        else:
            doc = orjson.loads(data)
    except (orjson.JSONDecodeError, StopIteration):
        return _by_text(data, catalog)
    first = doc[0] if type(doc) is list and doc else (doc if jsonl else MISSING)
    for rule in _rules(catalog)[1]:
        target = first if rule.first else doc
        if target is not MISSING and rule.test(target):
            return rule.format
    return None


def _by_text(data: bytes, catalog: Catalog | None = None) -> str | None:
    """The codec whose content test accepts `data`, input that is not JSON (a JSON input belongs
    to the content rules above, even when a string in it looks like a codec's marker)."""
    for codec in codecs.codecs(catalog):
        if codec.content_test is not None and codec.content_test(data):
            return codec.name
    return None


def detect(path: str, data: bytes | None = None, catalog: Catalog | None = None) -> str | None:
    """The format of the file at `path` (its bytes may be given): path first, then content."""
    fmt = by_path(path, catalog)
    if fmt is not None:
        return fmt
    if data is None:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            return None
    return by_content(data, jsonl=path.endswith((".jsonl", ".ndjson")), catalog=catalog)
