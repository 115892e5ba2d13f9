"""engine/canonical.py: serde_json float text, canonical bytes and the BLAKE3 document id."""

from __future__ import annotations

import math
import random
from decimal import Decimal
from pathlib import Path
from typing import Any
from unittest import mock

import blake3
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mapc.engine import canonical
from mapc.engine.canonical import canonical_bytes, document_id, format_float

FIXTURES = Path(__file__).parents[1] / "data" / "fixtures"

# --- a straightforward reference encoder, written from docs/envelope.md alone ------------------


def _ref_string(text: str) -> str:
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch in "\b\f\n\r\t":
            out.append({"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}[ch])
        elif code < 0x20:
            out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _ref(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value) if -(2**63) <= value <= 2**64 - 1 else format_float(float(value))
    if isinstance(value, float):
        return format_float(value)
    if isinstance(value, str):
        return _ref_string(value)
    if isinstance(value, list):
        return "[" + ",".join(_ref(v) for v in value) + "]"
    # BTreeMap<String, _> order: byte-wise UTF-8.
    keys = sorted(value, key=lambda k: k.encode("utf-8"))
    return "{" + ",".join(_ref_string(k) + ":" + _ref(value[k]) for k in keys) + "}"


def reference_bytes(value: Any) -> bytes:
    return _ref(value).encode("utf-8")


# --- strategies ---------------------------------------------------------------------------------

# Controls, DEL, `/`, quotes, the BMP edge around the surrogates and astral characters.
_AWKWARD = st.sampled_from(
    [*'\x00\x01\x1f\x7f/"\\\b\f\n\r\t\u2028é\ud7ff\ue000\uffff\U00010000\U0001f600\U0010ffff~', "~1", "~01"]
)
TEXT = st.lists(st.one_of(_AWKWARD, st.characters(codec="utf-8")), max_size=8).map("".join)
NUMBERS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1]),
    st.floats(allow_nan=False, allow_infinity=False),
)
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, TEXT)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(TEXT, inner, max_size=5)),
    max_leaves=30,
)
JSON_WITHOUT_FLOATS = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), TEXT),
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(TEXT, inner, max_size=5)),
    max_leaves=30,
)

# --- format_float ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("x", "text"),
    [
        (1.0, "1.0"),
        (-0.0, "-0.0"),
        (0.0, "0.0"),
        (0.1, "0.1"),
        (123.456, "123.456"),
        (1e-5, "0.00001"),
        (1.5e-5, "0.000015"),
        (-1.25, "-1.25"),
        (9.999999999999999e-6, "9.999999999999999e-6"),
        (1e-6, "1e-6"),
        (1.5e-7, "1.5e-7"),
        (1e15, "1000000000000000.0"),
        (1234567890123456.0, "1234567890123456.0"),
        (9999999999999998.0, "9999999999999998.0"),
        (1e16, "1e+16"),
        (1.2e30, "1.2e+30"),
        (3.439070283483335e35, "3.439070283483335e+35"),
        (1785578400.25, "1785578400.25"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (-1e100, "-1e+100"),
    ],
    ids=str,
)
def test_format_float_examples(x: float, text: str) -> None:
    assert format_float(x) == text


@pytest.mark.parametrize("x", [math.nan, math.inf, -math.inf], ids=["nan", "inf", "-inf"])
def test_format_float_refuses_what_json_cannot_hold(x: float) -> None:
    with pytest.raises(ValueError):
        format_float(x)


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_format_float_reads_back_as_the_same_float(x: float) -> None:
    text = format_float(x)
    assert float(text) == x
    assert math.copysign(1.0, float(text)) == math.copysign(1.0, x)
    # JSON number grammar, no `+` in the mantissa and no zero-padded exponent.
    assert orjson.loads(text) == x
    assert "e+0" not in text and "e-0" not in text


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_format_float_switches_notation_at_the_documented_exponents(x: float) -> None:
    text = format_float(x)
    if x == 0:
        assert text in ("0.0", "-0.0")
    else:
        e = Decimal(repr(x)).adjusted()  # decimal exponent of the first significant digit
        assert ("e" in text) == (not -5 <= e <= 15)
        assert text.endswith(".0") == (-5 <= e <= 15 and float(x).is_integer())


@pytest.mark.skipif(not canonical._ORJSON_FLOATS_EXACT, reason="orjson < 3.11.7 prints floats differently")
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_format_float_agrees_with_orjson(x: float) -> None:
    # orjson >= 3.11.7 and serde_json 1.0.149 both print with zmij: an independent implementation.
    assert format_float(x) == orjson.dumps(x).decode()


def test_format_float_agrees_with_orjson_on_random_bit_patterns() -> None:
    if not canonical._ORJSON_FLOATS_EXACT:
        pytest.skip("orjson < 3.11.7 prints floats differently")
    rng = random.Random(20260823)
    for _ in range(20000):
        x = float.fromhex(f"{rng.getrandbits(52) | 1 << 52:x}p{rng.randrange(-1074, 972)}")
        assert format_float(x) == orjson.dumps(x).decode(), x


# --- canonical_bytes ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "encoded"),
    [
        ('"', b'"\\""'),
        ("\\", b'"\\\\"'),
        ("\b\f\n\r\t", b'"\\b\\f\\n\\r\\t"'),
        ("\x00\x01\x1f", b'"\\u0000\\u0001\\u001f"'),
        ("\x1b", b'"\\u001b"'),
        ("\x7f", b'"\x7f"'),
        ("a/b", b'"a/b"'),
        ("é中\u2028", '"é中\u2028"'.encode()),
        ("\U0001f600", '"\U0001f600"'.encode()),
    ],
    ids=[
        "quote",
        "backslash",
        "short-escapes",
        "u00xx-lowercase",
        "escape-char",
        "del",
        "slash",
        "bmp",
        "astral",
    ],
)
def test_string_escapes(text: str, encoded: bytes) -> None:
    assert canonical_bytes(text) == encoded
    assert canonical_bytes({text: text}) == b"{" + encoded + b":" + encoded + b"}"


def test_keys_sort_by_utf8_bytes_even_around_the_surrogate_block() -> None:
    # UTF-16 order would put U+10000 (a surrogate pair) before U+E000; UTF-8 order does not.
    value = {"\U00010000": 1, "\uffff": 2, "\ue000": 3, "z": 4, "é": 5, "": 6}
    expected = '{"":6,"z":4,"é":5,"\ue000":3,"\uffff":2,"\U00010000":1}'.encode()
    assert canonical_bytes(value) == expected


@given(st.lists(TEXT))
def test_python_string_order_is_utf8_byte_order(keys: list[str]) -> None:
    assert sorted(keys) == sorted(keys, key=lambda k: k.encode("utf-8"))


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (2**63 - 1, b"9223372036854775807"),
        (2**64 - 1, b"18446744073709551615"),
        (-(2**63), b"-9223372036854775808"),
        (2**64, b"1.8446744073709552e+19"),
        (-(2**63) - 1, b"-9.223372036854776e+18"),
        (10**30, b"1e+30"),
        ([1, 1.0, -0.0, 1e-7, None], b"[1,1.0,-0.0,1e-7,null]"),
        ({"b": [2**64], "a": True}, b'{"a":true,"b":[1.8446744073709552e+19]}'),
    ],
    ids=["i64-max", "u64-max", "i64-min", "u64-max+1", "i64-min-1", "1e30-int", "mixed", "nested-bigint"],
)
def test_numbers(value: Any, text: bytes) -> None:
    assert canonical_bytes(value) == text


def test_nulls_and_array_order_are_kept() -> None:
    assert canonical_bytes({"z": [3, None, 1], "a": None}) == b'{"a":null,"z":[3,null,1]}'


@given(JSON)
def test_canonical_bytes_matches_the_reference_encoder(value: Any) -> None:
    assert canonical_bytes(value) == reference_bytes(value)


@given(JSON)
def test_pure_python_path_matches_the_reference_encoder(value: Any) -> None:
    assert canonical._encode(value) == reference_bytes(value)


@given(JSON)
def test_floats_fall_back_when_orjson_is_not_trusted(value: Any) -> None:
    with mock.patch.object(canonical, "_ORJSON_FLOATS_EXACT", False):
        assert canonical_bytes(value) == reference_bytes(value)


@given(JSON_WITHOUT_FLOATS)
def test_orjson_is_the_fast_path_when_nothing_needs_python(value: Any) -> None:
    try:
        fast = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:  # integers beyond 64 bits
        return
    assert fast == reference_bytes(value)


def test_deep_nesting_beyond_orjsons_limit() -> None:
    value: Any = "x"
    for i in range(300):
        value = [value] if i % 2 else {"k": value}
    with pytest.raises(orjson.JSONEncodeError):  # so the pure-Python path is what runs
        orjson.dumps(value)
    assert canonical_bytes(value) == reference_bytes(value)


@pytest.mark.parametrize(
    "value",
    [math.nan, [math.inf], {"a": None, "b": [-math.inf]}, {"a": {"b": math.nan}}],
    ids=["top-nan", "inf-in-list", "-inf-beside-null", "nested-nan"],
)
def test_nan_and_infinity_are_refused(value: Any) -> None:
    with pytest.raises(ValueError):
        canonical_bytes(value)


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("\ud800", ValueError),
        ({"\udfff": 1}, ValueError),
        (10**400, ValueError),
        ({1: "a"}, TypeError),
        ({"a": {1, 2}}, TypeError),
        ([1, 2**64, b"bytes"], TypeError),
    ],
    ids=["lone-surrogate", "surrogate-key", "int-beyond-f64", "int-key", "set", "bytes-after-bigint"],
)
def test_values_that_are_not_json(value: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        canonical_bytes(value)


# --- document_id ------------------------------------------------------------------------------------

# docs/envelope.md; support-ticket.json is the `examples/data/atif/` one (not the onboard copy).
FIXTURE_IDS = {
    "dialogue_10.json": "16cb43b9c826b5d4f570a46367aafa8287aa7e357d92cb284067c974cc3aec75",
    "multimodal_18.json": "e8caa910523e7ec15bef0435d950b9e0681b5f99a477d12d53c7bb523b067922",
    "parallel_tools_14.json": "2fff302faa4d4be4716f83412800b9f49cd8b93f1653e2c95067cef50596f510",
    "sparse_13.json": "5a053caba630c022a9e60ac7c2e1cb49107d24c7d0d40f2dab34c9f8d1628515",
    "support-ticket.json": "e24d14fc0bc3d51f908b5114dfd44c92b5b391ea92a80167e5f570e84c32761c",
}


@pytest.mark.parametrize(("name", "digest"), FIXTURE_IDS.items(), ids=list(FIXTURE_IDS))
def test_fixture_document_ids(name: str, digest: str) -> None:
    value = orjson.loads((FIXTURES / "atif" / name).read_bytes())
    assert document_id(value) == digest


def test_document_id_is_blake3_of_the_canonical_bytes() -> None:
    value = {"b": 1.5, "a": ["é", None]}
    assert document_id(value) == blake3.blake3('{"a":["é",null],"b":1.5}'.encode()).hexdigest()


@given(st.dictionaries(TEXT, JSON, max_size=5), st.randoms())
def test_document_id_ignores_key_order(value: dict[str, Any], rnd: random.Random) -> None:
    items = list(value.items())
    rnd.shuffle(items)
    assert document_id(dict(items)) == document_id(value)


def test_the_slow_encoder_walks_past_pythons_frames():
    """`_encode` (past orjson's 254 levels) walked recursively and ran out of frames below the 1,024
    levels mapc parses; it is the same bytes as orjson's sorted encoding where both can write."""
    from mapc.engine.canonical import _encode

    deep: object = "x"
    for n in range(1_024):
        deep = [deep] if n % 2 else {"b": deep, "a": n}
    assert _encode(deep).startswith(b'[{"a":1022,"b":[{"a":1020,')
    shallow = {"b": [1, {"z": None, "a": "é\n"}, []], "a": True, "c": {}}
    assert _encode(shallow) == orjson.dumps(shallow, option=orjson.OPT_SORT_KEYS)
