"""The validators of a format's owner, for `mapc validate --strict` (issue 15).

mapc's default reading (docs/formats.md, "Reading levels": unknown keys kept, any `schema_version`, step ids
merely unique).  Where the owner of a format publishes a validator, `--strict` means exactly the
owner's rules; this table names them.  ATIF's owner is Harbor (`harbor.models.trajectories`,
ported in `atif_harbor.py`); the other formats publish none, so `--strict` is their default rules.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mapc.engine.problems import Problem
from mapc.mappings import atif_harbor


@dataclass(frozen=True, slots=True)
class Owner:
    """Whose rules, the check of one top-level document, and the warnings of the default level."""

    name: str
    problems: Callable[[Any], list[Problem]]
    warnings: Callable[[Any], list[Problem]]


def _atif_warnings(doc: Any) -> list[Problem]:
    """An ATIF `schema_version` Harbor 0.26 does not define (ATIF-v1.0 … v1.8): read, kept, said."""
    if type(doc) is not dict or "schema_version" not in doc or atif_harbor.is_known_version(doc["schema_version"]):
        return []
    return [
        Problem(
            "atif.unknown_version",
            "/schema_version",
            f"ATIF version {doc['schema_version']!r} is not one mapc knows (ATIF-v1.0 … ATIF-v1.8); "
            "read with the rules of ATIF-v1.8 and kept as it is",
        )
    ]


OWNERS: dict[str, Owner] = {
    "atif": Owner("Harbor 0.26 (harbor.models.trajectories.Trajectory)", atif_harbor.problems, _atif_warnings),
}
