"""A repeated key is refused by default, in every format (issue 14 §7; mapc's decision, stricter
than the reference): JSON inputs, AgenticMD headers, bodies and frontmatter, OTel traces; a string
holding JSON with a repeated key is kept as the string.

engine/duplicates.py has two checks, the C scanner (engine/_dupscan.c, built at install time when a
compiler is there) and the pure-Python one (colons counted, a second parse with the standard library
to name the keys).  Both must say what a parse with every object's pairs says, for any JSON text:
the same verdicts and the same pointers, in the same order."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import json_values

import mapc
from mapc.cli.main import cli
from mapc.engine import duplicates
from mapc.engine.convert import into_storyline
from mapc.engine.options import Options
from mapc.engine.problems import MapcError
from mapc.mappings import openai_chat

LAW = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ALLOW = Options(allow_duplicate_keys=True)
SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
# Keys drawn from few letters so that objects repeat them often; "é" and "🙂" need 2- and 4-byte UTF-8
# (and a surrogate pair when escaped), "/" and "~" need escaping in a pointer.
FEW_KEYS = st.text(alphabet='ab/~é🙂"\\\n', max_size=3)


@st.composite
def json_texts(draw: st.DrawFn, *, lone_surrogates: bool = False) -> str:
    """JSON text of a random value, written by hand: keys sometimes repeated (with another value,
    spelled another way: ``"a"`` and ``"\\u0061"``), every character of a string either raw or
    escaped (short escapes, ``\\uXXXX``, surrogate pairs), colons sometimes escaped as ``\\u003a``,
    whitespace around the separators, objects wide enough for the scanner's hash index.  With
    `lone_surrogates`, some keys hold an escaped lone surrogate (the standard library reads them;
    orjson refuses them)."""

    def text(value: Any) -> str:
        if isinstance(value, dict):
            items = []
            for key, item in value.items():
                items.append(pair(key, item))
                if draw(st.integers(0, 5)) == 0:  # the same key again
                    items.append(pair(key, draw(json_values(max_leaves=3))))
            return "{" + ",".join(items) + "}"
        if isinstance(value, list):
            return "[" + draw(st.sampled_from([",", ", ", " ,\n"])).join(text(v) for v in value) + "]"
        if isinstance(value, str):
            return string(value)
        return json.dumps(value)

    def pair(key: str, item: Any) -> str:
        space = draw(st.sampled_from(["", " ", "\n ", "\t"]))
        return string(key) + space + ":" + draw(st.sampled_from(["", " "])) + text(item)

    def string(value: str) -> str:
        out = ['"']
        for ch in value:
            how = draw(st.integers(0, 3))
            if how == 0 or ch in SHORT_ESCAPES or ord(ch) < 0x20:
                if how < 2 and ch in SHORT_ESCAPES:
                    out.append(SHORT_ESCAPES[ch])
                else:
                    out.append(json.dumps(ch, ensure_ascii=True)[1:-1] if ord(ch) > 0x7F else f"\\u{ord(ch):04x}")
            else:
                out.append(ch)
        if lone_surrogates and draw(st.integers(0, 9)) == 0:
            out.append(draw(st.sampled_from(["\\ud800", "\\udfff", "\\udc00\\ud800"])))
        return "".join(out) + '"'

    wide = st.dictionaries(FEW_KEYS, json_values(max_leaves=2), min_size=9, max_size=30)
    value = draw(
        st.one_of(json_values(max_leaves=12), wide, st.lists(wide, max_size=2), st.dictionaries(FEW_KEYS, wide))
    )
    return text(value)


def _pointers(problems: list[Any]) -> list[tuple[str, str, str]]:
    return [(p.code, p.pointer, p.message) for p in problems]


@LAW
@given(json_texts())
def test_both_checks_say_what_a_parse_with_every_pair_says(text: str) -> None:
    expected = duplicates.problems(text)  # the standard library, every object's pairs
    doc = orjson.loads(text)
    assert duplicates.python_problems_of(text, doc) == expected
    assert duplicates.native_problems(text) == (expected if duplicates.native else None)
    assert duplicates.problems_of(text, doc) == expected
    assert duplicates.problems_of(text.encode(), doc) == expected
    # `repeats` (a tool call's arguments) answers flat objects by counting colons: the same answer.
    assert duplicates.repeats(text, doc) is bool(expected)
    assert duplicates.repeats(text.encode(), doc) is bool(expected)


@LAW
@given(json_texts(lone_surrogates=True))
def test_the_scanner_compares_keys_as_python_strings_lone_surrogates_too(text: str) -> None:
    assert duplicates.native_problems(text) == (duplicates.problems(text) if duplicates.native else None)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=200), json_texts().map(lambda t: t.encode()[: len(t) // 2])))
def test_the_scanner_never_crashes_on_bytes_that_are_not_json(data: bytes) -> None:
    found = duplicates.native_problems(data)
    assert found is None or all(p.code == "json.duplicate_key" and p.pointer.startswith("/") for p in found)


@pytest.mark.parametrize(
    "data", [b'{{"a": 1, "a": 2}}', b'{[{"a": 1, "a": 2}]}', b'{"a": 1, {"b": 1, "b": 2}}', b'{"a"']
)
def test_the_scanner_gives_up_on_text_it_cannot_name(data: bytes) -> None:
    """A container where an object expects a key has no pointer: the scanner says so (None), never reads
    past what it holds; such text never reaches it after a parse."""
    assert duplicates.native_problems(data) is None


def test_this_installation_built_the_scanner() -> None:
    """README's install (pip, a compiler on the machine) builds engine/_dupscan.c; without one the
    pure-Python check is used (next test) and the other tests here check it alone, so this is the
    test that says the fast check is missing."""
    assert duplicates.native is not None, (
        "the C scanner engine/_dupscan.c is not built: reinstall with a C compiler and Python headers"
        " (pip install . , or pip install -e . in a checkout)"
    )


def test_without_the_scanner_the_python_check_decides(tmp_path) -> None:
    """An installation built without a compiler: the same verdicts, from the pure-Python check."""
    path = tmp_path / "dup.json"
    path.write_text('{"schema_version":"storyline/v1","session":"s","a":{"\\u0061":1,"a":2},"session":"t"}')
    program = (
        "import sys; sys.modules['mapc.engine._dupscan'] = None\n"  # the import fails, as with no built module
        "from mapc.engine import duplicates\n"
        "assert duplicates.native is None\n"
        "from mapc.cli.main import main\n"
        "main()\n"
    )
    run = subprocess.run([sys.executable, "-c", program, "validate", str(path)], capture_output=True, text=True)
    assert run.returncode == 1, run.stderr
    assert "/a/a: the key 'a' appears more than once in this object [json.duplicate_key]" in run.stderr
    assert "/session: the key 'session' appears more than once in this object [json.duplicate_key]" in run.stderr


@pytest.mark.parametrize(
    ("text", "pointers"),
    [
        ('{"a": 1, "a": 2}', ["/a"]),
        ('{"a:": 1, "a:": 1}', ["/a:"]),  # a colon in the repeated key
        ('{"x": "\\u003a", "a": 1, "a": 2}', ["/a"]),  # an escaped colon elsewhere balances one dropped key
        ('{"a": {"b": [1, {"c": 1, "c": ":"}]}}', ["/a/b/1/c"]),
        ('[{"k": 1}, {"k": 2, "k": 3}]', ["/1/k"]),
        ('{"a": 1, "\\u0061": 2}', ["/a"]),  # equal once unescaped
        ('{"/": 1, "\\/": 2}', ["/~1"]),
        ('{"🙂": 1, "\\ud83d\\ude42": 2}', ["/🙂"]),  # a surrogate pair is the code point
        ('{"~": {"": 1, "": 2}}', ["/~0/"]),
        ('{"a": {"x": 1, "x": 2}, "a": 3}', ["/a/x", "/a"]),  # the dropped value is searched too, in text order
        ('{"a": 1, "a": 2, "a": 3}', ["/a", "/a"]),  # every repeat
        ("{" + ",".join(f'"k{i}": {i}' for i in range(40)) + ', "k17": 0}', ["/k17"]),  # a wide object
        ('{"a": [{"a": 1}, {"a": 1}], "b": {"a": 1}}', []),  # the same key in different objects
    ],
)
def test_repeated_keys_are_found(text: str, pointers: list[str]) -> None:
    doc = orjson.loads(text)
    expected = duplicates.problems(text)
    assert [p.pointer for p in expected] == pointers
    assert duplicates.native_problems(text) == (expected if duplicates.native else None)
    assert duplicates.python_problems_of(text, doc) == expected


def test_a_repeated_key_deeper_than_orjson_writes_is_found() -> None:
    """Past 254 levels the Python check parses again; past the stdlib's recursion limit too (not a pass)."""
    text = "[" * 1000 + '{"a": 1, "a": 2}' + "]" * 1000
    doc = orjson.loads(text)
    for found in (duplicates.problems_of(text, doc), duplicates.python_problems_of(text, doc)):
        [problem] = found
        assert problem.pointer == "/0" * 1000 + "/a"


STORY = '{"schema_version":"storyline/v1","session":"s","agent":{"id":"a"},"turns":[{"id":1,"src":"user","msg":"hi"}]}'
HEAD = "---\nformat: persisting\nstoryline:\n  schema_version: storyline/v1\n  session: s\n  agent:\n    id: a\n---\n\n"


def _block(header: str, body: str) -> str:
    return f"<!-- persisting:block:user {header} -->\n\n{body}\n"


AGENTICMD_CASES = [
    (
        HEAD
        + _block('{"type":"text","length":2,"source":"user","source":"agent","storyline":{"id":1,"src":"user"}}', "hi"),
        "/blocks/0/header/source",
    ),
    (
        HEAD + _block('{"type":"text","length":2,"storyline":{"id":1,"id":2,"src":"user"}}', "hi"),
        "/blocks/0/header/storyline/id",
    ),
    (
        HEAD
        + _block(
            '{"type":"json","length":16,"message_encoding":"json","storyline":{"id":1,"src":"user"}}',
            '{"a": 1, "a": 2}',
        ),
        "/blocks/0/body/a",
    ),
    (
        HEAD.replace("  session: s\n", "  session: s\n  session: t\n")
        + _block('{"type":"text","length":2,"storyline":{"id":1,"src":"user"}}', "hi"),
        "/frontmatter/storyline/session",
    ),
]
AGENTICMD_IDS = ["header key", "key of the header's storyline", "JSON body", "frontmatter"]


@pytest.mark.parametrize(("text", "at"), AGENTICMD_CASES, ids=AGENTICMD_IDS)
def test_agenticmd_refuses_a_repeated_key_anywhere(text: str, at: str, monkeypatch) -> None:
    monkeypatch.setenv("MAPC_ALLOW_DUPLICATE_KEYS", "1")  # the engine reads no environment: still refused
    with pytest.raises(MapcError) as info:
        into_storyline("agenticmd", text.encode())
    assert [(p.code, p.pointer) for p in info.value.problems] == [("agenticmd.duplicate_key", at)]
    assert into_storyline("agenticmd", text.encode(), options=ALLOW)  # the job's Options: the last value


@pytest.mark.parametrize(("text", "at"), AGENTICMD_CASES, ids=AGENTICMD_IDS)
def test_agenticmd_takes_the_setting_from_the_api_and_the_command_line(text: str, at: str, runner, tmp_path) -> None:
    """The codec gets the job's Options (engine/codecs.py): `--allow-duplicate-keys` before or after
    the subcommand, its MAPC_ALLOW_DUPLICATE_KEYS form, and `mapc.Options` in the API."""
    with pytest.raises(MapcError):
        mapc.into_storyline("agenticmd", text.encode())
    [story] = mapc.into_storyline("agenticmd", text.encode(), options=mapc.Options(allow_duplicate_keys=True))
    path = tmp_path / "run.md"
    path.write_text(text)
    refused = runner.invoke(cli, ["convert", str(path), "--to", "storyline"])
    assert refused.exit_code == 1
    assert f"{at}: " in refused.stderr and "[agenticmd.duplicate_key]" in refused.stderr
    for args, env in (
        (["--allow-duplicate-keys", "convert", str(path), "--to", "storyline"], None),
        (["convert", str(path), "--to", "storyline", "--allow-duplicate-keys"], None),
        (["convert", str(path), "--to", "storyline"], {"MAPC_ALLOW_DUPLICATE_KEYS": "1"}),
    ):
        allowed = runner.invoke(cli, args, env=env)
        assert allowed.exit_code == 0, (args, allowed.stderr)
        assert orjson.loads(allowed.stdout) == story


def test_storyline_json_refuses_a_repeated_key() -> None:
    text = STORY.replace('"session":"s"', '"session":"s","session":"t"').encode()
    with pytest.raises(MapcError) as info:
        into_storyline("storyline", text)
    assert [(p.code, p.pointer) for p in info.value.problems] == [("json.duplicate_key", "/session")]
    [story] = into_storyline("storyline", text, options=ALLOW)
    assert story["session"] == "t"


def test_otel_refuses_a_repeated_key_in_the_file_and_in_its_json_attributes(runner) -> None:
    [story] = into_storyline("storyline", STORY.encode())
    trace = mapc.from_storyline("otel-genai", story)
    text = trace if isinstance(trace, str) else trace.decode()
    doubled = text.replace('"resourceSpans":', '"x":1,"x":2,"resourceSpans":', 1)
    with pytest.raises(MapcError) as info:
        into_storyline("otel-genai", doubled.encode())
    assert [(p.code, p.pointer) for p in info.value.problems] == [("json.duplicate_key", "/x")]
    assert into_storyline("otel-genai", doubled.encode(), options=ALLOW) == [story]
    inner = text.replace('\\"session\\":\\"s\\"', '\\"session\\":\\"t\\",\\"session\\":\\"s\\"', 1)
    assert inner != text  # the Storyline rides in an attribute as JSON text
    with pytest.raises(MapcError) as info:
        into_storyline("otel-genai", inner.encode())
    [problem] = info.value.problems
    assert problem.code == "json.duplicate_key" and "(at /session)" in problem.message
    assert into_storyline("otel-genai", inner.encode(), options=ALLOW) == [story]


def test_a_string_holding_json_with_a_repeated_key_stays_a_string() -> None:
    """Whatever the job allows: kept as the string, nothing is lost; decoded, "a" would be."""
    text = '{"path": "a", "path": "b"}'
    assert openai_chat.json_text_value(text) == text
    assert openai_chat.json_text_value('{"path": "a"}') == {"path": "a"}
