"""engine/pointer.py: RFC 6901 parse/format/escape/resolve."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mapc.engine import pointer
from mapc.engine.values import MISSING


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("", ()),
        ("/", ("",)),
        ("/a/b", ("a", "b")),
        ("/a~1b", ("a/b",)),
        ("/m~0n", ("m~n",)),
        ("/~01", ("~1",)),  # ~1 is decoded before ~0: not "/"
        ("/0/01", ("0", "01")),
    ],
)
def test_parse(text, tokens):
    assert pointer.parse(text) == tokens
    assert pointer.format(tokens) == text


@pytest.mark.parametrize("text", ["x", "/bad~2", "/bad~", "a/b", "/~x"])
def test_parse_rejects_invalid(text):
    assert not pointer.is_valid(text)
    with pytest.raises(pointer.PointerSyntaxError):
        pointer.parse(text)


@given(st.lists(st.text(alphabet=st.sampled_from("ab/~01"), max_size=6), max_size=5))
def test_format_then_parse_is_identity(tokens):
    assert pointer.parse(pointer.format(tokens)) == tuple(tokens)


def test_resolve_distinguishes_missing_from_null():
    doc = {"a": [{"b": None}], "c/d": 1}
    assert pointer.resolve(doc, ("a", "0", "b")) is None
    assert pointer.resolve(doc, ("a", "0", "x")) is MISSING
    assert pointer.resolve(doc, ("a", "1")) is MISSING
    assert pointer.resolve(doc, ("a", "00")) is MISSING  # leading zero is not an index
    assert pointer.resolve(doc, ("c/d",)) == 1
    assert pointer.resolve(doc, ()) is doc


def test_array_index():
    assert pointer.is_array_index("0") and pointer.is_array_index("12")
    assert not pointer.is_array_index("01") and not pointer.is_array_index("-") and not pointer.is_array_index("+1")
