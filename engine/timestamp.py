"""Storyline timestamps (docs/storyline.md, R-TS): RFC 3339 text or epoch seconds, as i64 nanoseconds.

The reference parses strings with chrono 0.4.44 ``DateTime::parse_from_rfc3339`` and numbers with an
"exactly representable in nanoseconds" check; this module reproduces both, and chrono's two output
forms, with one compiled regex and integer arithmetic (no `datetime`, whose years stop at 1 and
whose precision stops at microseconds).

Leap seconds: chrono accepts second ``60`` in any minute and stores it as second 59 plus
1 000 000 000 ns, and its ``timestamp_nanos_opt`` adds those nanoseconds back.  So
``23:59:60.5`` is the same instant as ``00:00:00.5`` of the next minute, which is what treating
60 as an ordinary second count gives; formatting that instant yields the next-minute text.
"""

from __future__ import annotations

import functools
import re
from functools import lru_cache
from typing import Final

from mapc.engine.values import json_type

NS_PER_SECOND: Final = 1_000_000_000
MIN_NS: Final = -(2**63)
"""1677-09-21T00:12:43.145224192Z, the earliest instant chrono can give in i64 nanoseconds."""
MAX_NS: Final = 2**63 - 1
"""2262-04-11T23:47:16.854775807Z, the latest."""

# Whole epoch seconds whose nanosecond count still fits in i64.
_MIN_SECONDS: Final = -(-MIN_NS // NS_PER_SECOND)
_MAX_SECONDS: Final = MAX_NS // NS_PER_SECOND

_RANGE_TEXT: Final = "1677-09-21T00:12:43.145224192Z to 2262-04-11T23:47:16.854775807Z"
_EXAMPLE: Final = "an RFC 3339 timestamp like 2026-08-20T00:00:00Z or 2026-08-20 00:00:00.5+02:00"

# `[0-9]`, not `\d`, because chrono only takes ASCII digits; used with fullmatch so nothing
# may lead or trail.  The sign class holds U+2212 MINUS SIGN, which chrono accepts in offsets.
_RFC3339: Final = re.compile(
    r"([0-9]{4}-[0-9]{2}-[0-9]{2})[Tt ]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]+))?"
    r"(?:[Zz]|([-+\u2212])([0-9]{2}):([0-9]{2}))"
)

# The grammar again, one piece at a time, only to say where a rejected string went wrong: patterns
# compiled when a message is made (re keeps them), not by every run that imports this module.
_DATE_TIME_STEPS: Final = (
    (r"[0-9]{4}", "a 4-digit year"),
    (r"-", "'-' after the year"),
    (r"[0-9]{2}", "a 2-digit month"),
    (r"-", "'-' after the month"),
    (r"[0-9]{2}", "a 2-digit day"),
    (r"[Tt ]", "'T', 't' or a space between the date and the time"),
    (r"[0-9]{2}", "a 2-digit hour"),
    (r":", "':' after the hour"),
    (r"[0-9]{2}", "2-digit minutes"),
    (r":", "':' after the minutes (seconds are required)"),
    (r"[0-9]{2}", "2-digit seconds"),
    (r"(?:\.[0-9]+|(?!\.))", "at least one digit after '.'"),
)
_ZULU_OR_SIGN: Final = r"[Zz]|([-+\u2212])"
_OFFSET_STEPS: Final = (
    (r"[0-9]{2}", "2-digit offset hours"),
    (r":", "':' between offset hours and minutes (±HH:MM)"),
    (r"[0-9]{2}", "2-digit offset minutes"),
)

# Days before each month in a common year; a leap year adds one from March on.
_DAYS_BEFORE_MONTH: Final = (0, 0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334)
_DAYS_IN_MONTH: Final = (0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_ORDINAL_1970: Final = 719_163  # proleptic Gregorian day number of 1970-01-01 (0001-01-01 is 1)
_FRACTION_SCALE: Final = (0, 100_000_000, 10_000_000, 1_000_000, 100_000, 10_000, 1000, 100, 10, 1)


class TimestampError(ValueError):
    """A timestamp that R-TS rejects; the message says what was expected."""


@functools.lru_cache(maxsize=1 << 16)
def parse_rfc3339(text: str) -> int:
    """Parse `text` as chrono's ``parse_from_rfc3339`` does; return nanoseconds since the Unix epoch.

    Accepts ``T``, ``t`` or a space between date and time, second 60, any number of fraction
    digits (beyond nine truncated) and an offset ``Z``, ``z`` or ``±HH:MM`` (``+``, ``-`` or
    U+2212, below 24 hours).  Raises `TimestampError` for anything else, for an invalid date and
    for an instant outside i64 nanoseconds.  Results are memoized: one conversion checks the same
    timestamp text on the way in and again in the Storyline it makes.
    """
    m = _RFC3339.fullmatch(text)
    if m is None:
        raise TimestampError(_syntax_message(text))
    date, hour_s, minute_s, second_s, frac, sign, off_h, off_m = m.groups()
    try:
        days = _date_days(date)
    except TimestampError as e:
        raise TimestampError(f"{e} in {_show(text)}") from None
    hour, minute, second = int(hour_s), int(minute_s), int(second_s)
    if hour > 23:
        raise TimestampError(f"expected an hour from 00 to 23 in {_show(text)}")
    if minute > 59:
        raise TimestampError(f"expected minutes from 00 to 59 in {_show(text)}")
    if second > 60:
        raise TimestampError(f"expected seconds from 00 to 60 in {_show(text)}")
    seconds = days * 86_400 + hour * 3600 + minute * 60 + second
    if sign is not None:
        offset_hours, offset_minutes = int(off_h), int(off_m)
        if offset_hours > 23 or offset_minutes > 59:
            raise TimestampError(f"expected a UTC offset from -23:59 to +23:59 in {_show(text)}")
        offset = offset_hours * 3600 + offset_minutes * 60
        seconds = seconds - offset if sign == "+" else seconds + offset
    ns = seconds * NS_PER_SECOND
    if frac is not None:
        # Only the first nine digits count; chrono skips the rest without rounding.
        ns += int(frac[:9]) * _FRACTION_SCALE[min(len(frac), 9)]
    if not MIN_NS <= ns <= MAX_NS:
        raise TimestampError(f"{_show(text)} is outside the nanosecond range ({_RANGE_TEXT})")
    return ns


def epoch_to_ns(value: int | float) -> int:
    """Convert Unix epoch seconds to nanoseconds, refusing any loss of precision.

    Integers are exact at any size.  A float is judged by its shortest round-trip text
    (``repr``), as the reference judges serde_json's rendering of the parsed f64: so
    ``1767225600.1234567891`` (read as ``1767225600.1234567``) is accepted.  Raises
    `TimestampError` for precision finer than 1 ns, for a result outside i64 nanoseconds, and
    for anything that is not a finite int or float (a bool included).
    """
    if type(value) is int:
        if not _MIN_SECONDS <= value <= _MAX_SECONDS:
            raise TimestampError(_out_of_range(value))
        return value * NS_PER_SECOND
    if type(value) is not float:
        raise TimestampError(f"expected epoch seconds as a number, got {json_type(value)}")
    text = repr(value)
    if text in ("inf", "-inf", "nan"):
        raise TimestampError(f"expected finite epoch seconds, got {text}")
    mantissa, _, exponent = text.partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = int(whole + fraction)  # the sign rides along on `whole`
    scale = (int(exponent) if exponent else 0) - len(fraction) + 9
    if digits == 0:
        return 0
    if scale > 19:  # at least 10**20 ns: far beyond i64, and spares building a huge power
        raise TimestampError(_out_of_range(value))
    ns: int
    if scale >= 0:
        ns = digits * 10**scale
    else:
        divisor: int = 10**-scale
        if digits % divisor:  # a non-zero digit would be dropped (sign-safe: only tests for zero)
            raise TimestampError(f"epoch seconds {text} are more precise than one nanosecond")
        ns = digits // divisor
    if not MIN_NS <= ns <= MAX_NS:
        raise TimestampError(_out_of_range(value))
    return ns


def timestamp_ns(value: object) -> int:
    """Nanoseconds for a JSON timestamp scalar: a string is RFC 3339, a number is epoch seconds.

    Anything else (bool, null, object, array) raises `TimestampError`; callers treat a JSON null
    as an absent timestamp before getting here.
    """
    if type(value) is str:
        return parse_rfc3339(value)
    if type(value) is int or type(value) is float:
        return epoch_to_ns(value)
    raise TimestampError(f"expected an RFC 3339 string or epoch seconds, got {json_type(value)}")


def format_rfc3339(ns: int) -> str:
    """Format as chrono's ``to_rfc3339_opts(SecondsFormat::AutoSi, true)`` in UTC.

    The fraction has 0, 3, 6 or 9 digits, the fewest that are exact; the suffix is ``Z``:
    ``2026-08-20T00:00:00Z``, ``2026-08-20T00:00:00.120Z``.
    """
    return _format(ns, "T", "Z")


def format_space_offset(ns: int) -> str:
    """Format as chrono's ``%Y-%m-%d %H:%M:%S%.f%:z`` in UTC: ``2026-08-20 00:00:00+00:00``.

    ``%.f`` writes nothing for a zero fraction, else 3, 6 or 9 digits, like `format_rfc3339`.
    """
    return _format(ns, " ", "+00:00")


def _format(ns: int, separator: str, zone: str) -> str:
    if not MIN_NS <= ns <= MAX_NS:
        raise TimestampError(f"expected nanoseconds within i64, got {ns}")
    seconds, fraction = divmod(ns, NS_PER_SECOND)
    days, of_day = divmod(seconds, 86_400)
    hour, rest = divmod(of_day, 3600)
    minute, second = divmod(rest, 60)
    return f"{_date_text(days)}{separator}{hour:02d}:{minute:02d}:{second:02d}{_fraction(fraction)}{zone}"


@lru_cache(maxsize=4096)
def _date_text(days: int) -> str:
    """``YYYY-MM-DD`` for days since 1970-01-01 (memoized like `_date_days`)."""
    year, month, day = _civil_from_days(days)
    return f"{year:04d}-{month:02d}-{day:02d}"


def _fraction(ns: int) -> str:
    """chrono's AutoSi / ``%.f`` fraction: empty, or the shortest of 3, 6, 9 digits that is exact."""
    if ns == 0:
        return ""
    if ns % 1_000_000 == 0:
        return f".{ns // 1_000_000:03d}"
    if ns % 1_000 == 0:
        return f".{ns // 1_000:06d}"
    return f".{ns:09d}"


# A document's timestamps share few dates, so a small memo skips most of the calendar work.
@lru_cache(maxsize=4096)
def _date_days(date: str) -> int:
    """Days from 1970-01-01 to ``YYYY-MM-DD`` (syntax already checked), or `TimestampError`."""
    year, month, day = int(date[:4]), int(date[5:7]), int(date[8:])
    if not 1 <= month <= 12:
        raise TimestampError("expected a month from 01 to 12")
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if not 1 <= day <= (29 if leap and month == 2 else _DAYS_IN_MONTH[month]):
        raise TimestampError("expected a valid calendar date")
    return _days_since_epoch(year, month, day, leap)


def _days_since_epoch(year: int, month: int, day: int, leap: bool) -> int:
    """Days from 1970-01-01 to a valid proleptic Gregorian date (year 0 included)."""
    y = year - 1  # floor division keeps year 0 right: it is a leap year of 366 days
    ordinal = y * 365 + y // 4 - y // 100 + y // 400 + _DAYS_BEFORE_MONTH[month] + day
    if leap and month > 2:
        ordinal += 1
    return ordinal - _ORDINAL_1970


def _civil_from_days(days: int) -> tuple[int, int, int]:
    """(year, month, day) for days since 1970-01-01 (H. Hinnant's ``civil_from_days``)."""
    z = days + 719_468  # shift the epoch to 0000-03-01 so leap days fall at the end of a year
    era = z // 146_097
    day_of_era = z - era * 146_097
    year_of_era = (day_of_era - day_of_era // 1460 + day_of_era // 36_524 - day_of_era // 146_096) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    month_index = (5 * day_of_year + 2) // 153  # 0 = March
    day = day_of_year - (153 * month_index + 2) // 5 + 1
    month = month_index + 3 if month_index < 10 else month_index - 9
    year = year_of_era + era * 400 + (month <= 2)
    return year, month, day


def _syntax_message(text: str) -> str:
    """Say which part of the grammar `text` breaks first, and at which character."""
    if text == "":
        return f"expected {_EXAMPLE}, got an empty string"
    pos = 0
    for pattern, expected in _DATE_TIME_STEPS:
        m = re.compile(pattern).match(text, pos)
        if m is None:
            return f"expected {expected} at character {pos} of {_show(text)}; {_EXAMPLE}"
        pos = m.end()
    m = re.compile(_ZULU_OR_SIGN).match(text, pos)
    if m is None:
        expected = "a UTC offset ('Z' or ±HH:MM)"
        return f"expected {expected} at character {pos} of {_show(text)}; {_EXAMPLE}"
    pos = m.end()
    if m.group(1) is not None:
        for pattern, expected in _OFFSET_STEPS:
            m = re.compile(pattern).match(text, pos)
            if m is None:
                return f"expected {expected} at character {pos} of {_show(text)}; {_EXAMPLE}"
            pos = m.end()
    return f"expected the end of the timestamp at character {pos} of {_show(text)}; {_EXAMPLE}"


def _show(text: str) -> str:
    """The value quoted for a message, cut short if long."""
    return repr(text) if len(text) <= 60 else repr(text[:57] + "...")


def _out_of_range(value: int | float) -> str:
    # str() of a gigantic int is slow and capped by Python, so such a value is not echoed.
    shown = str(value) if isinstance(value, float) or value.bit_length() <= 256 else "that large"
    return f"epoch seconds {shown} are outside the nanosecond range ({_RANGE_TEXT})"
