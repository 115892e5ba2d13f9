"""Residual limits (docs/envelope.md, "Limits"): how many unknown fields, and how many bytes of them, a
Storyline may carry.  Unbounded by default; they come from the job's `Options` (engine/options.py),
which the CLI's `--max-unknown-fields` and `--max-unknown-bytes` set.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mapc.engine.options import Options
from mapc.engine.problems import Problem
from mapc.engine.residual import unknown_size


@dataclass(frozen=True, slots=True)
class Limits:
    """The largest number of unknown fields and of their bytes (None: unbounded)."""

    fields: int | None = None
    bytes: int | None = None

    @classmethod
    def of(cls, options: Options) -> Limits:
        """The limits a job's options set."""
        return cls(options.max_unknown_fields, options.max_unknown_bytes)

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
