"""Nothing swallowed (issue 14 §6): a failure inside the lossless hop is handled completely or is
an error, never "nothing to carry".  A document holding a value nested deeper than orjson writes
(254 levels) still goes ATIF -> ACTF -> ATIF whole: the hop is serialized by the standard library,
as the CLI's output is."""

from __future__ import annotations

import copy
import json

from conftest import FIXTURES

import mapc
from mapc.engine.values import json_equal


def _deep(levels: int) -> object:
    value: object = "bottom"
    for _ in range(levels):
        value = {"d": value}
    return value


def test_a_deep_value_does_not_lose_the_documents_fields_in_a_hop() -> None:
    doc = json.loads((FIXTURES / "atif" / "support-ticket.json").read_text())
    doc["trajectory_id"] = "run-deep"
    doc["notes"] = "kept"
    doc.setdefault("extra", {})["deep"] = _deep(300)
    stories = mapc.into_storyline("atif", json.dumps(doc).encode())
    actf = mapc.from_storyline("actf", copy.deepcopy(stories))
    back = mapc.from_storyline("atif", mapc.into_storyline("actf", _dumps(actf)))
    assert back["trajectory_id"] == "run-deep"
    assert back["notes"] == "kept"
    assert back["agent"] == doc["agent"]
    assert [s["source"] for s in back["steps"]] == [s["source"] for s in doc["steps"]]
    assert json_equal(back, doc)


def _dumps(value: object) -> bytes:
    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(5_000)
    try:
        return json.dumps(value).encode()
    finally:
        sys.setrecursionlimit(limit)
