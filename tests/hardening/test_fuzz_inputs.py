"""Fuzzing beside test_fuzz.py: hostile JSON text spliced anywhere in a document, hostile Python
values handed to `mapc.from_storyline`, the `_storyline` envelope, and spec loading.

Only a result or a `MapcError` whose problems have codes may come out (SECURITY.md).  The hostile
values are nesting 100 000 levels deep, huge strings, integers beyond 64 bits, ``NaN`` and
``Infinity`` literals, invalid UTF-8, lone surrogates, a UTF-8 byte order mark and a repeated key;
a document also loses, repeats or retypes keys.  Spec text is random, a mutated shipped spec, or a
shipped spec with a hostile YAML snippet in it.  The regressions at the end were each a crash.
"""

from __future__ import annotations

import copy
import functools
import importlib.resources
from collections.abc import Callable
from typing import Any

import orjson
import pytest
import yaml
from conftest import FIXTURES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import json_values

import mapc
from mapc.engine import catalog
from mapc.engine.compile import compile_spec
from mapc.engine.spec import load_spec

FORMATS = ("storyline", "atif", "actf", "openai-msg")  # every JSON format, the hub included
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DEEP = 100_000  # levels of nesting: far beyond any parser's or interpreter's recursion limit
BOM = b"\xef\xbb\xbf"


def outcome(call: Callable[[], Any]) -> Any:
    """Run `call`; a `MapcError` is an allowed outcome when every problem has a code."""
    try:
        return call()
    except mapc.MapcError as exc:
        assert exc.problems, "a MapcError without problems"
        assert all(type(p.code) is str and p.code for p in exc.problems), exc.problems
        return exc


# --- the inputs ----------------------------------------------------------------------------


@functools.cache
def fixtures() -> dict[str, list[Any]]:
    """The shared fixtures by format, and the Storylines made from them."""
    out: dict[str, list[Any]] = {fmt: [] for fmt in FORMATS}
    for fmt in FORMATS[1:]:
        for path in sorted((FIXTURES / fmt).glob("*.json")):
            doc = orjson.loads(path.read_bytes())
            out[fmt].append(doc)
            out["storyline"].extend(mapc.into_storyline(fmt, orjson.dumps(doc)))
    return out


@functools.cache
def enveloped() -> list[Any]:
    """Documents that carry a `_storyline` envelope: each fixture exported into the other format."""
    docs = []
    for src, dst in (("atif", "actf"), ("actf", "atif")):
        for doc in fixtures()[src]:
            out = mapc.convert(src, dst, orjson.dumps(doc))
            for d in out if type(out) is list else [out]:
                if type(d) is dict and "_storyline" in d:
                    docs.append((dst, d))
    assert docs
    return docs


def deep_list(levels: int = DEEP) -> Any:
    value: Any = 0
    for _ in range(levels):
        value = [value]
    return value


def deep_dict(levels: int = DEEP) -> Any:
    value: Any = 0
    for _ in range(levels):
        value = {"k": value}
    return value


# Hostile values as Python objects (what a caller of the Python API may hand over), made afresh
# for each use so that no mutation or run changes the next example's …
HOSTILE_VALUES: list[Callable[[], Any]] = [
    deep_list,
    deep_dict,
    lambda: "x" * 1_000_000,
    lambda: 2**64,
    lambda: -(2**70),
    lambda: 10**400,
    lambda: float("nan"),
    lambda: float("inf"),
    lambda: -float("inf"),
    lambda: "\ud800",
    lambda: "a\udfffb",
    lambda: {"\ud800": 1},
    lambda: "\ufeff",
    lambda: "\x00",
    lambda: "",
    lambda: None,
    lambda: [],
    lambda: {},
    lambda: True,
    lambda: 1.5,
]
HOSTILE = st.sampled_from(HOSTILE_VALUES).map(lambda make: make())
# … and as JSON text, spliced into a serialized document (what a file may hold).
HOSTILE_TEXTS = [
    b"[" * DEEP + b"]" * DEEP,
    b'{"k":' * DEEP + b"0" + b"}" * DEEP,
    b'"' + b"x" * 1_000_000 + b'"',
    b"18446744073709551616",
    b"-1180591620717411303424",
    b"1" * 500,
    b"1e400",
    b"NaN",
    b"Infinity",
    b"-Infinity",
    b'"\\ud800"',
    b'"\\udfff\\ud800"',
    b'"\xff\xfe"',
    b'"\xed\xa0\x80"',  # a surrogate encoded in UTF-8
    b'"\xc0\xaf"',  # an overlong encoding
    b'"\xef\xbb\xbf"',
    b"true",
    b"null",
]
MARK = "__mapc_fuzz_mark__"


def _paths(doc: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a node of a JSON document, the root included (not into a hostile deep value
    a mutation put there)."""
    out = [at]
    if len(at) < 30 and type(doc) is dict:
        for k, v in doc.items():
            out.extend(_paths(v, (*at, k)))
    elif len(at) < 30 and type(doc) is list:
        for i, v in enumerate(doc):
            out.extend(_paths(v, (*at, i)))
    return out


def _parent(doc: Any, path: tuple[Any, ...]) -> Any:
    for token in path[:-1]:
        doc = doc[token]
    return doc


@st.composite
def mutated(draw: st.DrawFn, docs: list[Any], under: str | None = None) -> Any:
    """A deep copy of one of `docs` with one to three structural mutations (Python level)."""
    doc = copy.deepcopy(draw(st.sampled_from(docs)))
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(doc)[1:]
        if under is not None:
            paths = [p for p in paths if p and p[0] == under] or paths
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = _parent(doc, path)
        key = path[-1]
        action = draw(st.sampled_from(("delete", "duplicate", "retype", "hostile")))
        if action == "delete":
            del parent[key]
        elif action == "duplicate":  # the value again (the same object), under another key or index
            if type(parent) is dict:
                parent[draw(st.sampled_from(("", "~", "/", "0", "_storyline", f"{key}2")))] = parent[key]
            else:
                parent.insert(key, parent[key])
        elif action == "retype":
            parent[key] = draw(json_values())
        else:
            parent[key] = draw(HOSTILE)
    return doc


@st.composite
def mutated_text(draw: st.DrawFn, docs: list[Any]) -> bytes:
    """A serialized document from `docs` with one node replaced by hostile JSON text, or a key
    repeated in the text, or a byte order mark in front."""
    doc = copy.deepcopy(draw(st.sampled_from(docs)))
    action = draw(st.sampled_from(("splice", "splice", "duplicate_key", "bom")))
    if action == "bom":
        return BOM + orjson.dumps(doc)
    path = draw(st.sampled_from(_paths(doc)[1:] or [()]))
    if not path:
        return draw(st.sampled_from(HOSTILE_TEXTS))
    parent = _parent(doc, path)
    if action == "duplicate_key" and type(parent) is dict:
        text = orjson.dumps(doc)
        key = orjson.dumps(path[-1])
        # {"k": v, ...} -> {"k": v, "k": <other>, ...}: the same key twice in one object
        return text.replace(key + b":", key + b":" + orjson.dumps(draw(json_values())) + b"," + key + b":", 1)
    parent[path[-1]] = MARK
    return orjson.dumps(doc).replace(f'"{MARK}"'.encode(), draw(st.sampled_from(HOSTILE_TEXTS)), 1)


# --- into_storyline --------------------------------------------------------------------------


@FUZZ
@given(fmt=st.sampled_from(FORMATS), data=st.data())
def test_hostile_json_text_in_the_fixtures(fmt: str, data: st.DataObject):
    text = data.draw(mutated_text(fixtures()[fmt]))
    outcome(lambda: mapc.into_storyline(fmt, text))
    outcome(lambda: mapc.into_storyline(fmt, text + b"\n" + text, jsonl=True))


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_byte_order_mark_is_rejected_as_not_json(fmt: str):
    """RFC 8259 forbids writing a BOM and lets a parser reject it; mapc (like the Rust reference's
    serde_json) rejects it, saying so, for JSON and for every JSONL line."""
    doc = orjson.dumps(fixtures()[fmt][0])
    for jsonl in (False, True):
        error = outcome(functools.partial(mapc.into_storyline, fmt, BOM + doc, jsonl=jsonl))
        assert isinstance(error, mapc.MapcError)
        [problem] = error.problems
        assert (problem.code, problem.pointer) == ("json.invalid", "")
        assert "BOM" in problem.message or "byte order mark" in problem.message
    assert mapc.detect("x.json", BOM + doc) is None


# --- from_storyline --------------------------------------------------------------------------


@FUZZ
@given(fmt=st.sampled_from(FORMATS), data=st.data())
def test_from_storyline_with_mutated_storylines(fmt: str, data: st.DataObject):
    stories = data.draw(st.lists(mutated(fixtures()["storyline"]), min_size=1, max_size=2))
    outcome(lambda: mapc.from_storyline(fmt, stories))


@FUZZ
@given(fmt=st.sampled_from(FORMATS), value=HOSTILE, data=st.data())
def test_from_storyline_with_a_hostile_value_anywhere(fmt: str, value: Any, data: st.DataObject):
    story = copy.deepcopy(data.draw(st.sampled_from(fixtures()["storyline"])))
    path = data.draw(st.sampled_from(_paths(story)[1:]))
    _parent(story, path)[path[-1]] = value
    outcome(lambda: mapc.from_storyline(fmt, [story]))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("stories", [[], [None], [1], ["s"], [[]], [deep_list()], [deep_dict()], {"a": 1}, "s"])
def test_from_storyline_with_what_is_not_a_storyline(fmt: str, stories: Any):
    if not isinstance(stories, dict | list):  # not Storylines at all: a TypeError with a plain message (issue 22)
        with pytest.raises(TypeError, match="stories must be a Storyline"):
            mapc.from_storyline(fmt, stories)
        return
    outcome(lambda: mapc.from_storyline(fmt, stories))


# --- the _storyline envelope -------------------------------------------------------------------


@FUZZ
@given(data=st.data())
def test_mutated_envelopes(data: st.DataObject):
    fmt, doc = data.draw(st.sampled_from(enveloped()))
    doc = data.draw(mutated([doc], under="_storyline"))
    try:
        text = orjson.dumps(doc)
    except orjson.JSONEncodeError:
        return
    outcome(lambda: mapc.into_storyline(fmt, text))


@FUZZ
@given(data=st.data())
def test_hostile_text_in_envelopes(data: st.DataObject):
    fmt, doc = data.draw(st.sampled_from(enveloped()))
    envelope = {"_storyline": doc["_storyline"]}
    text = data.draw(mutated_text([envelope]))
    spliced = orjson.dumps({k: v for k, v in doc.items() if k != "_storyline"})[:-1] + b"," + text.strip()[1:]
    outcome(lambda: mapc.into_storyline(fmt, spliced))


# --- spec loading ---------------------------------------------------------------------------


def load_and_compile(text: str) -> Any:
    return compile_spec(load_spec("fuzz.yaml", text))


def catalog_text(name: str) -> str:
    return importlib.resources.files("mapc.mappings").joinpath(f"{name}.yaml").read_text(encoding="utf-8")


@functools.cache
def shipped_specs() -> list[Any]:
    return [yaml.safe_load(catalog_text(name)) for name in catalog.shipped_names()]


@FUZZ
@given(text=st.text(max_size=300))
def test_random_spec_text(text: str):
    outcome(lambda: load_and_compile(text))


@FUZZ
@given(data=st.data())
def test_structured_mutations_of_the_shipped_specs(data: st.DataObject):
    spec = data.draw(mutated(shipped_specs()))
    try:
        text = yaml.safe_dump(spec, allow_unicode=True)
    except (yaml.YAMLError, RecursionError):  # PyYAML cannot write it (too deep): nothing to read
        return
    outcome(lambda: load_and_compile(text))


HOSTILE_YAML = [
    "!!python/object/apply:os.system ['true']",
    "!!python/name:os.system",
    "!!python/module:os",
    "!!python/object/new:builtins.dict []",
    "!!binary aGVsbG8=",
    "!!set {a, b}",
    "!!omap [{a: 1}]",
    "!local x",
    "2026-01-01",
    ".nan",
    "-.inf",
    '"\\ud800"',
    "[" * 2000 + "]" * 2000,
    "&a [*a]",
    "{<<: {a: 1}}",
    "18446744073709551616",
    "? [a, b]\n  : c",
    "\ufeffx",
    "\x00",
]


@FUZZ
@given(data=st.data(), snippet=st.sampled_from(HOSTILE_YAML))
def test_hostile_yaml_in_the_shipped_specs(data: st.DataObject, snippet: str):
    lines = catalog_text(data.draw(st.sampled_from(catalog.shipped_names()))).splitlines()
    n = data.draw(st.integers(0, len(lines) - 1))
    line = lines[n]
    if ": " in line:  # the value of a key becomes the snippet
        lines[n] = line.split(": ", 1)[0] + ": " + snippet
    else:
        lines.insert(n, f"zz_fuzz: {snippet}")
    outcome(lambda: load_and_compile("\n".join(lines) + "\n"))


# --- regressions -----------------------------------------------------------------------------
# Each was an exception other than MapcError before the fix named beside it.


def _nested_text(doc: Any, path: tuple[Any, ...], raw: bytes) -> bytes:
    doc = copy.deepcopy(doc)
    _parent(doc, path)[path[-1]] = MARK
    return orjson.dumps(doc).replace(f'"{MARK}"'.encode(), raw)


@pytest.mark.parametrize("value", ["\ud800", 2**70, deep_list(300)], ids=["surrogate", "bigint", "deep"])
def test_a_hop_whose_export_json_cannot_hold_still_answers(value: Any):
    """provenance._lost_in_hop serialized the hop's export with orjson: a lone surrogate, an integer
    beyond 64 bits or 300 levels of nesting (handed over from Python) raised orjson.JSONEncodeError."""
    story = copy.deepcopy(next(s for s in fixtures()["storyline"] if s["origin"]["format"] == "actf"))
    call = next(c for t in story["turns"] for c in t.get("tool_calls", []))
    call["args"] = {"value": value}
    for target in ("atif", "openai-msg"):
        outcome(lambda: mapc.from_storyline(target, [story]))  # noqa: B023 (called at once)


@pytest.mark.parametrize("value", [float("nan"), 10**400, "\udc00"], ids=["nan", "huge", "surrogate"])
def test_a_document_id_of_what_is_not_json_is_a_mapc_error(value: Any):
    """functions.blake3_document_id let canonical's ValueError through (NaN, an integer no f64
    holds, a lone surrogate in a Storyline handed over from Python)."""
    story = copy.deepcopy(next(s for s in fixtures()["storyline"] if s["origin"]["format"] == "actf"))
    call = next(c for t in story["turns"] for c in t.get("tool_calls", []))
    call["args"] = {"value": value}
    for target in FORMATS:
        outcome(lambda: mapc.from_storyline(target, [story]))  # noqa: B023 (called at once)


def test_the_cli_writes_what_it_read_however_deep(runner, tmp_path):
    from mapc.cli.main import cli

    path = tmp_path / "deep.json"
    path.write_bytes(_nested_text(fixtures()["atif"][0], ("zz_deep",), b"[" * 300 + b"]" * 300))
    result = runner.invoke(cli, ["run", "atif", str(path)])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code in (0, 1)
