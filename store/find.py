"""`mapc find`: full-text search over messages and tool results, with the Lance INVERTED indexes of `mapc index`.

The searched cells are ``steps.message_json`` (what was said), ``steps.observation_json`` (the tool results a
turn saw) and ``tool_calls.result_json`` (a tool output carried on the call).  Each is searched on its own
(BM25, Lance's default tokenizer: words, lower-cased; JSON keys are words too), at the version ``CURRENT``
names; rows stored since the last `mapc index` are searched unindexed.  Hits from all cells are merged by
score, best first (scores of different columns are BM25 scores of different corpora: an ordering, not a
measure).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from mapc.engine.problems import MapcError
from mapc.store import dataset, rows

SEARCHED: Final = (
    ("steps", "message_json", ("document_id", "session_id", "step_id")),
    ("steps", "observation_json", ("document_id", "session_id", "step_id")),
    ("tool_calls", "result_json", ("document_id", "session_id", "step_id", "call_index")),
)
SNIPPET: Final = 100


@dataclass(frozen=True, slots=True)
class Hit:
    """One matching cell: where it is, its BM25 score and a snippet around the first matching word."""

    table: str
    column: str
    document_id: str
    session_id: str
    step_id: int
    call_index: int | None
    score: float
    snippet: str

    def as_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}


def snippet(text: str, words: list[str], width: int = SNIPPET) -> str:
    """About `width` characters of `text` around the first of `words` found (case-insensitive), on one line."""
    flat = " ".join(text.split())
    lower = flat.lower()
    found = [i for i in (lower.find(w.lower()) for w in words) if i >= 0]
    at = min(found) if found else 0
    start = max(0, at - width // 3)
    cut = flat[start : start + width]
    return ("…" if start else "") + cut + ("…" if start + width < len(flat) else "")


def search(root: Path, text: str, *, limit: int = 20) -> list[Hit]:
    """The best `limit` hits of `text` over the searched cells; `MapcError` when no cell has an index."""
    from lance.query import MatchQuery

    tables = dataset.open_tables(root)
    words = re.findall(r"\w+", text)
    hits: list[Hit] = []
    indexed = 0
    for table, column, keys in SEARCHED:
        ds = tables[table]
        if ds is None:
            continue
        problems = rows.schema_problems(table, ds.schema)
        if problems:
            raise MapcError(problems)
        if not any(column in index.field_names and "Inverted" in index.type_url for index in ds.describe_indices()):
            continue
        indexed += 1
        found = ds.to_table(
            columns=[*keys, column, "_score"], full_text_query=MatchQuery(text, column), limit=limit
        ).to_pylist()
        for row in found:
            hits.append(
                Hit(
                    table,
                    column,
                    row["document_id"],
                    row["session_id"],
                    row["step_id"],
                    row.get("call_index"),
                    float(row["_score"]),
                    snippet(row[column] or "", words),
                )
            )
    if not indexed:
        raise MapcError.single(
            "store.no_text_index", "", f"{root} has no full-text index yet: run `mapc index {root}` first"
        )
    hits.sort(key=lambda h: (-h.score, h.document_id, h.step_id, h.table, h.column, h.call_index or 0))
    return hits[:limit]
