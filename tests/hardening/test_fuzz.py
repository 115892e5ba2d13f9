"""Fuzzing every decoder: random bytes and structured mutations of the shared fixtures.

The only allowed outcomes of reading, and of writing back what was read, are a result or a
`MapcError` whose every problem has a code and a pointer — no other exception (issue 10).  For
longer runs raise the example count: `MAPC_FUZZ_EXAMPLES=5000 .venv/bin/pytest tests/hardening/test_fuzz.py`.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import FIXTURES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mapc
from mapc.engine.problems import MapcError

FORMATS = ["storyline", "atif", "actf", "openai-msg", "agenticmd"]
FILES = sorted(FIXTURES.glob("*/*.json"))
SETTINGS = settings(
    max_examples=int(os.environ.get("MAPC_FUZZ_EXAMPLES", "60")), deadline=None, suppress_health_check=list(HealthCheck)
)
ODD = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.text(max_size=5),
    st.just("\ud800"),
    st.just(""),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


def survives(fmt: str, data: bytes) -> None:
    """Read `data` as `fmt` and write back each format; only results or MapcErrors may come out."""
    try:
        stories = mapc.into_storyline(fmt, data, jsonl=False, path="fuzz.json")
    except MapcError as exc:
        assert exc.problems and all(p.code and isinstance(p.pointer, str) for p in exc.problems)
        return
    for target in FORMATS:
        try:
            mapc.from_storyline(target, stories)
        except MapcError as exc:
            assert exc.problems and all(p.code for p in exc.problems)


@SETTINGS
@given(st.sampled_from(FORMATS), st.binary(max_size=200))
def test_random_bytes(fmt: str, data: bytes) -> None:
    survives(fmt, data)


def _paths(doc: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [at]
    if type(doc) is dict:
        for k, v in doc.items():
            out += _paths(v, (*at, k))
    elif type(doc) is list:
        for i, v in enumerate(doc):
            out += _paths(v, (*at, i))
    return out


@st.composite
def mutated(draw: Any) -> tuple[str, bytes]:
    path: Path = draw(st.sampled_from(FILES))
    doc = orjson.loads(path.read_bytes())
    for _ in range(draw(st.integers(1, 4))):
        doc = copy.deepcopy(doc)
        paths = _paths(doc)
        where = draw(st.sampled_from(paths))
        parent = doc
        for key in where[:-1]:
            parent = parent[key]
        action = draw(st.sampled_from(["retype", "delete", "duplicate", "nest"]))
        if not where:
            doc = draw(ODD) if action == "retype" else [doc, doc] if action == "duplicate" else doc
            continue
        key = where[-1]
        if action == "retype":
            parent[key] = draw(ODD)
        elif action == "delete":
            del parent[key]
        elif action == "duplicate" and type(parent) is list:
            parent.insert(key, copy.deepcopy(parent[key]))
        elif action == "nest":
            parent[key] = [[[[parent[key]]]]]
    fmt = path.parent.name
    try:
        data = orjson.dumps(doc)
    except (TypeError, orjson.JSONEncodeError):
        data = b"{"
    return fmt, data


@SETTINGS
@given(mutated())
def test_mutated_fixtures(case: tuple[str, bytes]) -> None:
    survives(*case)


MARKDOWN = mapc.from_storyline(
    "agenticmd", mapc.into_storyline("atif", (FIXTURES / "atif" / "parallel_tools_14.json").read_bytes())
).encode()


@SETTINGS
@given(st.binary(max_size=40), st.integers(0, len(MARKDOWN)), st.integers(0, 40))
def test_mutated_agenticmd(junk: bytes, at: int, cut: int) -> None:
    survives("agenticmd", MARKDOWN[:at] + junk + MARKDOWN[at + cut :])


@pytest.mark.parametrize("depth", [100, 5000, 100_000])
@pytest.mark.parametrize("fmt", FORMATS)
def test_deep_nesting_is_an_error_not_a_crash(fmt: str, depth: int) -> None:
    survives(fmt, b'{"schema_version": "storyline/v1", "x": ' + b"[" * depth + b"]" * depth + b"}")


@pytest.mark.parametrize(
    "data",
    [
        b"\xef\xbb\xbf{}",
        b'{"a": NaN}',
        b'{"a": Infinity}',
        b'{"a": 1e999}',
        b'"\\ud800"',
        b'{"a": "\xff"}',
        b"",
        b"null",
    ],
    ids=["bom", "nan", "infinity", "overflow", "lone-surrogate", "bad-utf8", "empty", "null"],
)
@pytest.mark.parametrize("fmt", FORMATS)
def test_hostile_scalars(fmt: str, data: bytes) -> None:
    survives(fmt, data)


def test_deep_values_in_agenticmd_and_beyond_python_recursion_are_errors() -> None:
    deep = "[" * 5000 + "]" * 5000
    head = "---\nformat: persisting\nstoryline: {agent: {id: a}, schema_version: storyline/v1, session: s}\n---\n\n"
    block = '<!-- persisting:block:user {"type":"json","length":%d,"message_encoding":"json","source":"user",'
    block += '"step_id":1,"storyline":{"id":1,"src":"user"}} -->\n\n%s\n\n'
    with pytest.raises(MapcError) as info:
        mapc.into_storyline("agenticmd", (head + block % (len(deep), deep)).encode())
    assert info.value.problems[0].code == "agenticmd.bad_block"
    # JSON under orjson's 1,024 levels, then written by a format that walks it in Python: a
    # conversion walks up to the parse limit (it was refused as input.too_deep from about 990
    # levels), and what it writes reads back.
    msg = "[" * 1000 + "]" * 1000
    doc = '{"schema_version":"storyline/v1","session":"s","agent":{"id":"a"},"turns":[{"id":1,"src":"user","msg":%s}]}'
    stories = mapc.into_storyline("storyline", (doc % msg).encode())
    text = mapc.from_storyline("agenticmd", stories)
    (back,) = mapc.into_storyline("agenticmd", text.encode())
    node, depth = back["turns"][0]["msg"], 0  # walked by hand: `==` would recurse too deep here
    while node:
        assert type(node) is list and len(node) == 1
        node, depth = node[0], depth + 1
    assert node == [] and depth == 999
