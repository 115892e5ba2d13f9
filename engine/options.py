"""The settings of one conversion job, as one explicit value.

`Options` holds what a caller may tighten: the largest input file, how many unknown fields (and
bytes of them) a Storyline may carry, and whether JSON that repeats a key in one object is let through.
It is a small frozen value, so it is passed down as an argument and pickled with the work it goes
with: a corpus job's worker processes and Ray tasks get exactly the settings of the command that
started them, whatever their environment holds.  The engine never reads the environment.

Where the command line sets them: ``mapc --max-input-bytes 10MB …`` and the other root options
(cli/main.py, docs/cli.md); the ``MAPC_*`` variables are only another way to give those options.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Options:
    """Settings of a conversion; the defaults are mapc's (no limits, repeated keys refused).

    - `max_input_bytes`: refuse an input file larger than this (``input.too_large``), before reading it.
    - `max_unknown_fields`, `max_unknown_bytes`: refuse a Storyline carrying more unknown fields, or
      more bytes of them (``unknown_fields.limit``; docs/envelope.md, "Limits").
    - `allow_duplicate_keys`: keep the last value of a key repeated in one JSON object; by default such
      input is refused (``json.duplicate_key``).
    """

    max_input_bytes: int | None = None
    max_unknown_fields: int | None = None
    max_unknown_bytes: int | None = None
    allow_duplicate_keys: bool = False

    def __post_init__(self) -> None:
        for name in ("max_input_bytes", "max_unknown_fields", "max_unknown_bytes"):
            value = getattr(self, name)
            if value is not None and (type(value) is not int or value < 1):
                raise TypeError(f"Options.{name} must be a positive int or None, not {value!r}")
        if type(self.allow_duplicate_keys) is not bool:
            raise TypeError(f"Options.allow_duplicate_keys must be a bool, not {self.allow_duplicate_keys!r}")


DEFAULT = Options()
