"""engine/timestamp.py: the R-TS timestamp rules (docs/storyline.md), checked example by example
and, for the laws, against `datetime` and `Decimal` as independent oracles."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from mapc.engine.timestamp import (
    MAX_NS,
    MIN_NS,
    TimestampError,
    epoch_to_ns,
    format_rfc3339,
    format_space_offset,
    parse_rfc3339,
    timestamp_ns,
)

S = 1_000_000_000
AUG_20 = 1_787_184_000 * S  # 2026-08-20T00:00:00Z, the spec's epoch example
JAN_1 = 1_767_225_600 * S  # 2026-01-01T00:00:00Z
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

ACCEPTED = [
    ("2026-08-20T00:00:00Z", AUG_20, "upper-t-z"),
    ("2026-08-20t00:00:00z", AUG_20, "lower-t-z"),
    ("2026-08-20 00:00:00Z", AUG_20, "space-separator"),
    ("2026-01-01 00:00:00+00:00", JAN_1, "space-and-offset"),
    ("2026-08-20T02:00:00+02:00", AUG_20, "plus-offset"),
    ("2026-08-19T22:30:00-01:30", AUG_20, "minus-offset"),
    ("2026-08-19T22:30:00\u221201:30", AUG_20, "u2212-minus-offset"),
    ("2026-08-20T00:00:00-00:00", AUG_20, "minus-zero-offset"),
    ("2026-08-20T23:59:00+23:59", AUG_20, "largest-positive-offset"),
    ("2026-08-19T00:01:00-23:59", AUG_20, "largest-negative-offset"),
    ("2026-08-20T00:00:00.5Z", AUG_20 + 500_000_000, "one-fraction-digit"),
    ("2026-08-20T00:00:00.000Z", AUG_20, "zero-fraction"),
    ("2026-08-20T00:00:00.123456789Z", AUG_20 + 123_456_789, "nine-fraction-digits"),
    ("2026-08-20T00:00:00.1234567891Z", AUG_20 + 123_456_789, "tenth-digit-truncated"),
    ("2026-08-20T00:00:00.99999999999999Z", AUG_20 + 999_999_999, "truncated-not-rounded"),
    ("2016-12-31T23:59:60Z", 1_483_228_800 * S, "leap-second-is-next-minute"),
    ("2016-12-31T23:59:60.5Z", 1_483_228_800 * S + 500_000_000, "leap-second-fraction"),
    ("2026-08-20T12:34:60+01:00", AUG_20 + (11 * 3600 + 35 * 60) * S, "leap-second-any-minute"),
    ("2024-02-29T00:00:00Z", 1_709_164_800 * S, "leap-day"),
    ("2000-02-29T00:00:00Z", 951_782_400 * S, "leap-day-400-year"),
    ("1970-01-01T00:00:00Z", 0, "epoch"),
    ("1969-12-31T23:59:59.999999999Z", -1, "one-ns-before-epoch"),
    ("1677-09-21T00:12:43.145224192Z", MIN_NS, "earliest-instant"),
    ("2262-04-11T23:47:16.854775807Z", MAX_NS, "latest-instant"),
    ("2262-04-12T00:47:16.854775807+01:00", MAX_NS, "latest-instant-via-offset"),
    ("1677-09-20T23:12:43.145224192-01:00", MIN_NS, "earliest-instant-via-offset"),
    ("2262-04-11T23:46:60.854775807Z", MAX_NS - 16 * S, "leap-second-near-the-end"),
]


@pytest.mark.parametrize(("text", "ns"), [c[:2] for c in ACCEPTED], ids=[c[2] for c in ACCEPTED])
def test_parse_rfc3339_accepts(text: str, ns: int) -> None:
    assert parse_rfc3339(text) == ns
    assert timestamp_ns(text) == ns


# Each rejection names a fragment the message must contain, so it says what was expected.
REJECTED = [
    ("", "empty string", "empty"),
    (" 2026-08-20T00:00:00Z", "4-digit year at character 0", "leading-space"),
    ("2026-08-20T00:00:00Z ", "end of the timestamp at character 20", "trailing-space"),
    ("2026-08-20T00:00:00Z\n", "end of the timestamp", "trailing-newline"),
    ("2026-08-20T00:00:00Zz", "end of the timestamp", "trailing-character"),
    ("2026-08-20T00:00:00+05:30:00", "end of the timestamp", "offset-with-seconds"),
    ("2026-08-20T00:00:00", "UTC offset", "missing-offset"),
    ("2026-08-20T00:00:00.5", "UTC offset", "fraction-missing-offset"),
    ("2026-08-20T00:00:00UTC", "UTC offset", "offset-as-name"),
    ("2026-08-20T00:00:00+0000", "':' between offset hours and minutes", "offset-without-colon"),
    ("2026-08-20T00:00:00+00", "':' between offset hours and minutes", "offset-hours-only"),
    ("2026-08-20T00:00:00+00:0", "2-digit offset minutes", "offset-one-minute-digit"),
    ("2026-08-20T00:00:00+24:00", "-23:59 to +23:59", "offset-24h"),
    ("2026-08-20T00:00:00+99:00", "-23:59 to +23:59", "offset-99h"),
    ("2026-08-20T00:00:00+00:60", "-23:59 to +23:59", "offset-60-minutes"),
    ("2026-08-20T00:00Z", "seconds are required", "missing-seconds"),
    ("2026-08-20T00:00:00.Z", "at least one digit after '.'", "dot-without-digits"),
    ("2026-08-20T00:00:00,5Z", "UTC offset", "comma-fraction"),
    ("2026/08/20 00:00:00Z", "'-' after the year", "slashes"),
    ("2026-08-20_00:00:00Z", "'T', 't' or a space", "underscore-separator"),
    ("2026-08-20", "'T', 't' or a space", "date-only"),
    ("2026-8-20T00:00:00Z", "2-digit month", "one-digit-month"),
    ("10000-01-01T00:00:00Z", "'-' after the year", "five-digit-year"),
    ("226-01-01T00:00:00Z", "4-digit year", "three-digit-year"),
    ("+2026-01-01T00:00:00Z", "4-digit year", "signed-year"),
    ("\u0662\u0660\u0662\u0666-08-20T00:00:00Z", "4-digit year", "non-ascii-digits"),
    ("2026-08-20T24:00:00Z", "hour from 00 to 23", "hour-24"),
    ("2026-08-20T00:60:00Z", "minutes from 00 to 59", "minute-60"),
    ("2026-08-20T00:00:61Z", "seconds from 00 to 60", "second-61"),
    ("2026-13-01T00:00:00Z", "month from 01 to 12", "month-13"),
    ("2026-00-10T00:00:00Z", "month from 01 to 12", "month-0"),
    ("2026-08-00T00:00:00Z", "valid calendar date", "day-0"),
    ("2026-08-32T00:00:00Z", "valid calendar date", "day-32"),
    ("2026-02-30T00:00:00Z", "valid calendar date", "february-30"),
    ("2025-02-29T00:00:00Z", "valid calendar date", "february-29-common-year"),
    ("1900-02-29T00:00:00Z", "valid calendar date", "february-29-century"),
    ("2026-04-31T00:00:00Z", "valid calendar date", "april-31"),
    ("0100-02-29T00:00:00Z", "valid calendar date", "february-29-year-100"),
    ("0000-01-01T00:00:00Z", "outside the nanosecond range", "year-0000"),
    ("0000-02-29T00:00:00Z", "outside the nanosecond range", "year-0000-is-leap"),
    ("9999-12-31T23:59:59Z", "outside the nanosecond range", "year-9999"),
    ("1677-09-21T00:12:43.145224191Z", "outside the nanosecond range", "one-ns-before-earliest"),
    ("2262-04-11T23:47:16.854775808Z", "outside the nanosecond range", "one-ns-after-latest"),
    ("2262-04-11T23:47:16.854775807-00:01", "outside the nanosecond range", "after-latest-via-offset"),
]


@pytest.mark.parametrize(("text", "fragment"), [c[:2] for c in REJECTED], ids=[c[2] for c in REJECTED])
def test_parse_rfc3339_rejects(text: str, fragment: str) -> None:
    with pytest.raises(TimestampError) as info:
        parse_rfc3339(text)
    assert fragment in str(info.value)
    assert "expected" in str(info.value) or "outside" in str(info.value)


def test_timestamp_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="offset"):
        parse_rfc3339("2026-08-20T00:00:00")


def test_long_rejected_text_is_cut_short_in_the_message() -> None:
    with pytest.raises(TimestampError) as info:
        parse_rfc3339("2026-08-20T00:00:00Z" + "x" * 1000)
    assert len(str(info.value)) < 300


EPOCH_ACCEPTED = [
    (0, 0, "zero"),
    (0.0, 0, "zero-float"),
    (-0.0, 0, "negative-zero"),
    (1, S, "one"),
    (1.0, S, "one-float"),
    (-1.25, -1_250_000_000, "negative-fraction"),
    (1e-9, 1, "one-ns"),
    (-1e-9, -1, "minus-one-ns"),
    (1785578400.25, 1_785_578_400_250_000_000, "quarter-second"),
    (1767225600.1234567891, 1_767_225_600_123_456_700, "shortest-f64-text-is-checked"),
    (1787184000, AUG_20, "integer-seconds"),
    (9_223_372_036, 9_223_372_036 * S, "largest-whole-second"),
    (-9_223_372_036, -9_223_372_036 * S, "smallest-whole-second"),
    (9.223372036e9, 9_223_372_036 * S, "largest-whole-second-float"),
    (1.5e9, 1_500_000_000 * S, "exponent-form"),
]


@pytest.mark.parametrize(("value", "ns"), [c[:2] for c in EPOCH_ACCEPTED], ids=[c[2] for c in EPOCH_ACCEPTED])
def test_epoch_to_ns_accepts(value: int | float, ns: int) -> None:
    assert epoch_to_ns(value) == ns
    assert timestamp_ns(value) == ns


EPOCH_REJECTED = [
    (1.0000000001, "more precise than one nanosecond", "eleven-decimals"),
    (1e-10, "more precise than one nanosecond", "tenth-of-a-ns"),
    (1.5e-9, "more precise than one nanosecond", "one-and-a-half-ns"),
    (5e-324, "more precise than one nanosecond", "smallest-subnormal"),
    (10_000_000_000, "outside the nanosecond range", "1e10-integer"),
    (-10_000_000_000, "outside the nanosecond range", "minus-1e10-integer"),
    (1e10, "outside the nanosecond range", "1e10-float"),
    (9_223_372_037, "outside the nanosecond range", "one-second-past-latest"),
    (-9_223_372_037, "outside the nanosecond range", "one-second-before-earliest"),
    (9223372036.854775807, "outside the nanosecond range", "latest-rounded-up-by-f64"),
    (2**64, "outside the nanosecond range", "two-to-the-64"),
    (10**5000, "outside the nanosecond range", "huge-integer"),
    (1e300, "outside the nanosecond range", "huge-float"),
    (float("inf"), "finite", "infinity"),
    (float("nan"), "finite", "nan"),
    (True, "got boolean", "bool"),
]


@pytest.mark.parametrize(("value", "fragment"), [c[:2] for c in EPOCH_REJECTED], ids=[c[2] for c in EPOCH_REJECTED])
def test_epoch_to_ns_rejects(value: int | float, fragment: str) -> None:
    with pytest.raises(TimestampError, match=re.escape(fragment)):
        epoch_to_ns(value)


@pytest.mark.parametrize(
    ("value", "kind"),
    [(True, "boolean"), (False, "boolean"), (None, "null"), ({}, "object"), ([], "array")],
    ids=["true", "false", "null", "object", "array"],
)
def test_timestamp_ns_rejects_other_json_types(value: object, kind: str) -> None:
    with pytest.raises(TimestampError, match=f"expected an RFC 3339 string or epoch seconds, got {kind}"):
        timestamp_ns(value)


@pytest.mark.parametrize(
    ("ns", "rfc3339", "space_offset"),
    [
        (AUG_20, "2026-08-20T00:00:00Z", "2026-08-20 00:00:00+00:00"),
        (AUG_20 + 120_000_000, "2026-08-20T00:00:00.120Z", "2026-08-20 00:00:00.120+00:00"),
        (AUG_20 + 123_000_000, "2026-08-20T00:00:00.123Z", "2026-08-20 00:00:00.123+00:00"),
        (AUG_20 + 123_456_000, "2026-08-20T00:00:00.123456Z", "2026-08-20 00:00:00.123456+00:00"),
        (AUG_20 + 1_000, "2026-08-20T00:00:00.000001Z", "2026-08-20 00:00:00.000001+00:00"),
        (AUG_20 + 123_456_789, "2026-08-20T00:00:00.123456789Z", "2026-08-20 00:00:00.123456789+00:00"),
        (AUG_20 + 1, "2026-08-20T00:00:00.000000001Z", "2026-08-20 00:00:00.000000001+00:00"),
        (0, "1970-01-01T00:00:00Z", "1970-01-01 00:00:00+00:00"),
        (-1, "1969-12-31T23:59:59.999999999Z", "1969-12-31 23:59:59.999999999+00:00"),
        (MIN_NS, "1677-09-21T00:12:43.145224192Z", "1677-09-21 00:12:43.145224192+00:00"),
        (MAX_NS, "2262-04-11T23:47:16.854775807Z", "2262-04-11 23:47:16.854775807+00:00"),
        (951_782_400 * S, "2000-02-29T00:00:00Z", "2000-02-29 00:00:00+00:00"),
    ],
    ids=[
        "whole-second",
        "millis-keep-trailing-zero",
        "millis",
        "micros",
        "one-micro",
        "nanos",
        "one-ns",
        "epoch",
        "before-epoch",
        "earliest",
        "latest",
        "leap-day",
    ],
)
def test_formats(ns: int, rfc3339: str, space_offset: str) -> None:
    assert format_rfc3339(ns) == rfc3339
    assert format_space_offset(ns) == space_offset


@pytest.mark.parametrize("ns", [MIN_NS - 1, MAX_NS + 1], ids=["below-i64", "above-i64"])
def test_formats_reject_nanoseconds_outside_i64(ns: int) -> None:
    with pytest.raises(TimestampError):
        format_rfc3339(ns)
    with pytest.raises(TimestampError):
        format_space_offset(ns)


instants = st.integers(MIN_NS, MAX_NS)


@given(instants)
@example(MIN_NS)
@example(MAX_NS)
@example(0)
@example(-1)
def test_format_rfc3339_parses_back(ns: int) -> None:
    assert parse_rfc3339(format_rfc3339(ns)) == ns


@given(instants)
@example(MIN_NS)
@example(MAX_NS)
def test_format_space_offset_parses_back(ns: int) -> None:
    assert parse_rfc3339(format_space_offset(ns)) == ns


@given(instants)
def test_format_agrees_with_datetime(ns: int) -> None:
    """The calendar part matches `datetime`; the fraction is the shortest of 0/3/6/9 exact digits."""
    text = format_rfc3339(ns)
    seconds, fraction = divmod(ns, S)
    expected = EPOCH + timedelta(seconds=seconds)
    assert text[:19] == expected.strftime("%Y-%m-%dT%H:%M:%S")
    match = re.fullmatch(r"\.([0-9]{3}|[0-9]{6}|[0-9]{9})Z|Z", text[19:])
    assert match is not None
    digits = match.group(1) or ""
    assert int(digits.ljust(9, "0") or "0") == fraction
    assert not digits.endswith("000")
    assert format_space_offset(ns) == f"{text[:10]} {text[11:-1]}+00:00"


offsets = st.integers(-(23 * 60 + 59), 23 * 60 + 59)


@given(
    local=st.datetimes(min_value=datetime(1678, 1, 1), max_value=datetime(2262, 4, 10)),
    nanos=st.integers(0, S - 1),
    offset_minutes=offsets,
    separator=st.sampled_from(["T", "t", " "]),
    minus=st.sampled_from(["-", "\u2212"]),
    zulu=st.sampled_from(["Z", "z", None]),
    extra_digits=st.text("0123456789", max_size=5),
)
def test_parse_agrees_with_datetime(
    local: datetime,
    nanos: int,
    offset_minutes: int,
    separator: str,
    minus: str,
    zulu: str | None,
    extra_digits: str,
) -> None:
    """Any text built from a wall-clock time, nanoseconds and an offset means local − offset."""
    local = local.replace(microsecond=0)
    if zulu is not None:
        offset_minutes = 0
        zone = zulu
    else:
        sign = "+" if offset_minutes >= 0 else minus
        zone = f"{sign}{abs(offset_minutes) // 60:02d}:{abs(offset_minutes) % 60:02d}"
    text = f"{local:%Y-%m-%d}{separator}{local:%H:%M:%S}.{nanos:09d}{extra_digits}{zone}"
    utc = local.replace(tzinfo=UTC) - timedelta(minutes=offset_minutes)
    assert parse_rfc3339(text) == (utc - EPOCH) // timedelta(seconds=1) * S + nanos


def _exact_ns(value: float) -> Decimal:
    """The oracle: the float's shortest text, in nanoseconds, as an exact decimal."""
    return Decimal(repr(value)) * S


decimal_seconds = st.builds(
    lambda digits, places: float(Decimal(digits).scaleb(-places)),
    st.integers(-(10**19), 10**19),
    st.integers(0, 12),
)


@given(st.floats(allow_nan=False, allow_infinity=False) | decimal_seconds)
@example(1767225600.1234567891)
@example(9223372036.854775)
@example(-9223372036.854775)
def test_epoch_float_matches_decimal_oracle(value: float) -> None:
    exact = _exact_ns(value)
    if exact == exact.to_integral_value() and MIN_NS <= exact <= MAX_NS:
        assert epoch_to_ns(value) == int(exact)
    else:
        with pytest.raises(TimestampError):
            epoch_to_ns(value)


@given(st.integers(-(2**70), 2**70) | st.integers(-9_223_372_040, 9_223_372_040))
def test_epoch_int_is_exact_when_in_range(value: int) -> None:
    if MIN_NS <= value * S <= MAX_NS:
        assert epoch_to_ns(value) == value * S
    else:
        with pytest.raises(TimestampError, match="outside the nanosecond range"):
            epoch_to_ns(value)


@given(st.integers(MIN_NS // S + 1, MAX_NS // S))
def test_epoch_and_rfc3339_agree_on_whole_seconds(seconds: int) -> None:
    assert parse_rfc3339(format_rfc3339(epoch_to_ns(seconds))) == seconds * S
