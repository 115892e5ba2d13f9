"""Test helpers shared by the format suites: one format's document through the public API and back."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import orjson
import pytest

from mapc.engine import pointer
from mapc.engine.convert import from_storyline, into_storyline
from mapc.engine.problems import MapcError


@dataclass(frozen=True)
class Format:
    """Helpers bound to one format name."""

    name: str

    def forward(self, doc: Any, **kw: Any) -> list[dict[str, Any]]:
        """A document value → Storylines, through the public API (bytes in)."""
        return into_storyline(self.name, orjson.dumps(doc), **kw)

    def reverse(self, stories: list[dict[str, Any]]) -> Any:
        """Storylines → the format's document (a copy of the Storylines goes in)."""
        return from_storyline(self.name, copy.deepcopy(stories))

    def roundtrip(self, doc: Any) -> Any:
        return self.reverse(self.forward(doc))

    def problems(self, doc: Any, **kw: Any) -> list[tuple[str, str]]:
        """(code, pointer) of every problem `doc` is rejected with."""
        data = doc if isinstance(doc, bytes) else orjson.dumps(doc)
        with pytest.raises(MapcError) as info:
            into_storyline(self.name, data, **kw)
        return [(p.code, p.pointer) for p in info.value.problems]

    def reverse_problems(self, stories: list[dict[str, Any]]) -> list[tuple[str, str]]:
        """(code, pointer) of every problem exporting `stories` fails with."""
        with pytest.raises(MapcError) as info:
            self.reverse(stories)
        return [(p.code, p.pointer) for p in info.value.problems]


def at(doc: Any, ptr: str) -> Any:
    """The value at pointer text `ptr` (MISSING when absent)."""
    return pointer.resolve(doc, pointer.parse(ptr))
