"""SQL over a dataset: DuckDB scans the three Lance tables as ``runs``, ``steps``, ``tool_calls``.

Each Lance table is registered as the dataset itself (``stored_runs``, …), opened at the version ``CURRENT``
names, and seen under its own name through a view that adds the typed convenience columns (store/columns.py).
A Lance dataset is a `pyarrow.dataset.Dataset`, so DuckDB reads it through Arrow and pushes
column projections and simple filters down into the Lance scanner instead of loading whole tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from mapc.engine.problems import MapcError
from mapc.store import columns, dataset, rows


class QueryError(MapcError):
    """DuckDB refused the SQL (syntax, unknown column, type error): a usage mistake."""


@dataclass(frozen=True, slots=True)
class Result:
    """Column names and rows (tuples of Python values) of a query."""

    columns: list[str]
    rows: list[tuple[Any, ...]]


STORED_PREFIX = "stored_"
"""The Lance tables are registered as ``stored_runs`` etc.; ``runs`` etc. are views adding the convenience columns."""


def connect(root: Path) -> Any:
    """A DuckDB connection on the dataset at `root`: each table a view of its Lance table (store/columns.py)."""
    import duckdb

    tables = dataset.open_tables(root)
    con = duckdb.connect(":memory:")
    try:
        for name, ds in tables.items():
            if ds is None:
                con.register(STORED_PREFIX + name, rows.SCHEMAS[name].empty_table())
            else:
                problems = rows.schema_problems(name, ds.schema)
                if problems:
                    raise MapcError(problems)
                con.register(STORED_PREFIX + name, ds)
            con.execute(f"CREATE VIEW {name} AS {columns.view_sql(name, STORED_PREFIX + name)}")
    except BaseException:  # the connection is closed whatever failed, and the failure re-raised
        con.close()
        raise
    return con


def run(root: Path, sql: str) -> Result:
    """Run `sql` over the dataset at `root`; `QueryError` when DuckDB rejects it."""
    import duckdb

    con = connect(root)
    try:
        try:
            cursor = con.execute(sql)
            names = [d[0] for d in cursor.description] if cursor.description else []
            return Result(names, cursor.fetchall())
        except duckdb.Error as exc:
            raise QueryError.single("query.sql", "", str(exc).strip()) from None
    finally:
        con.close()


def json_value(value: Any) -> Any:
    """A query value as JSON: timestamps as RFC 3339 text, decimals and others as strings."""
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, Decimal | timedelta):
        return str(value)
    return str(value)


def records(result: Result) -> list[dict[str, Any]]:
    """The rows as JSON objects keyed by column name (a repeated name keeps its last value)."""
    return [{c: json_value(v) for c, v in zip(result.columns, row, strict=True)} for row in result.rows]


def text_table(result: Result, *, width: int = 80) -> str:
    """A plain text table: a header, a rule, one line per row; cells longer than `width` are cut."""

    def cell(value: Any) -> str:
        if value is None:
            text = "NULL"
        elif isinstance(value, datetime | date | time):
            text = value.isoformat()
        else:
            text = str(value)
        text = text.replace("\n", "\\n").replace("\t", "\\t")
        return text if len(text) <= width else text[: width - 1] + "…"

    body = [[cell(v) for v in row] for row in result.rows]
    widths = [max([len(c), *(len(r[i]) for r in body)]) for i, c in enumerate(result.columns)]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(result.columns, widths, strict=True)).rstrip(),
        "  ".join("-" * w for w in widths),
    ]
    lines.extend("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in body)
    lines.append(f"({len(body)} row{'s' if len(body) != 1 else ''})")
    return "\n".join(lines)


def csv_text(result: Result) -> str:
    """RFC 4180 CSV with a header row; NULL is an empty field, nested values are JSON text."""
    import csv
    import io

    import orjson

    def cell(value: Any) -> Any:
        value = json_value(value)
        if value is None:
            return ""
        if isinstance(value, list | dict):
            return orjson.dumps(value).decode()
        if type(value) is bool:
            return "true" if value else "false"
        return value

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(result.columns)
    writer.writerows([cell(v) for v in row] for row in result.rows)
    return out.getvalue()


def jsonl_bytes(result: Result) -> bytes:
    """One compact JSON object per row, keyed by column name."""
    import orjson

    return b"".join(orjson.dumps(record) + b"\n" for record in records(result))


def matching_documents(root: Path, predicate: str) -> list[str]:
    """The ``document_id`` of the runs rows where the SQL `predicate` holds (over the runs view, so the
    convenience columns and subqueries on steps and tool_calls may be used); `QueryError` when DuckDB
    rejects it."""
    result = run(root, f"SELECT document_id FROM runs WHERE ({predicate})\n")
    return [row[0] for row in result.rows]
