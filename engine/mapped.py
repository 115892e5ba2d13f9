"""What a run produces: Storylines bound to the source nodes that carry them, and rebuilt documents."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Mapped:
    """One Storyline and the pointer of the source node it came from (its envelope carrier).

    `also` names further carriers of the same Storyline: a story made of several rows is carried
    by each of them, so its envelope entry is repeated per row (docs/envelope.md).
    """

    story: dict[str, Any]
    carrier: str
    also: tuple[str, ...] = ()

    @property
    def carriers(self) -> tuple[str, ...]:
        """Every carrier pointer of this Storyline, the first one first."""
        return (self.carrier, *self.also)


@dataclass(frozen=True, slots=True)
class Rebuilt:
    """One rebuilt top-level source document and the Storylines it came from, with carriers."""

    document: dict[str, Any]
    stories: tuple[Mapped, ...]
