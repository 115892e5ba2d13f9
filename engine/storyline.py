"""The Storyline hub (`storyline/v1`): read a Storyline file and check documents.

`check` runs the compiled JSON Schema first and the semantic rules (engine/rules.py) after,
reporting every problem of a document in document order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from mapc.engine import catalog, duplicates, rules
from mapc.engine.problems import MapcError, Problem, in_document_order
from mapc.engine.residual import Tree
from mapc.engine.schema import compiled_validator

SCHEMA = "storyline-v1"


def check(doc: Any, count_trees: Mapping[str, Tree] | None = None) -> list[Problem]:
    """Every problem of one Storyline document; empty when it is valid.

    `count_trees` (per residual source, the count tree of its ``unknown_key_counts``) is what the
    check needs of the formats; None takes the installed catalog's (engine/catalog.py)."""
    version = rules.version_problem(doc)
    if version is not None:
        return [version]
    problems = list(compiled_validator(SCHEMA).iter_problems(doc))
    problems.extend(rules.iter_problems(doc, catalog.count_trees() if count_trees is None else count_trees))
    return in_document_order(problems) if len(problems) > 1 else problems


def documents(data: Any) -> list[Any]:
    """The documents of a parsed Storyline file: one object, or a non-empty array of them."""
    if type(data) is list:
        if not data:
            raise MapcError.single("storyline.empty", "", "a Storyline array cannot be empty")
        return data
    return [data]


def check_all(stories: list[Any], prefix: bool, count_trees: Mapping[str, Tree] | None = None) -> list[Problem]:
    """Problems of several documents; pointers get ``/i`` in front when `prefix` (an array file);
    `count_trees` as for `check`."""
    out: list[Problem] = []
    for i, story in enumerate(stories):
        found = check(story, count_trees)
        out.extend(p.within(f"/{i}") for p in found) if prefix else out.extend(found)
    return out


def loads(data: bytes | str, *, allow_duplicate_keys: bool = False) -> Any:
    """Parse JSON bytes with orjson, as a data problem when they are not JSON or hold a key twice in
    one object (unless `allow_duplicate_keys`, from a job's `Options`: the last value is kept)."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise MapcError.single("json.invalid", "", f"not valid JSON: {exc}") from None
    if not allow_duplicate_keys:
        found = duplicates.problems_of(data, doc)
        if found:
            raise MapcError(found)
    return doc
