"""Residual limits (REFERENCE.md §3 "Limits"): how many unknown fields, and how many bytes of them, a
Storyline may carry.  Unbounded by default; the CLI's `--max-unknown-fields` and `--max-unknown-bytes`
set them through the environment, so worker processes of a corpus job apply them too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from mapc.engine.problems import Problem
from mapc.engine.residual import unknown_size

FIELDS_ENV = "MAPC_MAX_UNKNOWN_FIELDS"
BYTES_ENV = "MAPC_MAX_UNKNOWN_BYTES"


@dataclass(frozen=True, slots=True)
class Limits:
    """The largest number of unknown fields and of their bytes (None: unbounded)."""

    fields: int | None = None
    bytes: int | None = None

    @classmethod
    def from_environment(cls) -> Limits:
        """The limits the environment sets (positive integers; anything else means unbounded)."""
        return cls(_positive(os.environ.get(FIELDS_ENV)), _positive(os.environ.get(BYTES_ENV)))

    def problems(self, story: dict[str, Any]) -> list[Problem]:
        """`unknown_fields.limit` problems of a Storyline over either limit."""
        if self.fields is None and self.bytes is None:
            return []
        n_fields, n_bytes = unknown_size(story.get("unknown_fields"))
        out = []
        if self.fields is not None and n_fields > self.fields:
            message = f"{n_fields} unknown fields, over the limit of {self.fields} (--max-unknown-fields)"
            out.append(Problem("unknown_fields.limit", "/unknown_fields", message))
        if self.bytes is not None and n_bytes > self.bytes:
            message = f"{n_bytes} bytes of unknown fields, over the limit of {self.bytes} (--max-unknown-bytes)"
            out.append(Problem("unknown_fields.limit", "/unknown_fields", message))
        return out


def _positive(text: str | None) -> int | None:
    return int(text) if text and text.isdigit() and int(text) > 0 else None
