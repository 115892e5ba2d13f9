"""Every table and column is documented in docs/store.md, generated from the schemas (so it cannot drift)."""

from __future__ import annotations

from pathlib import Path

from mapc.store import columns, query, rows

DOC = Path(__file__).resolve().parents[2] / "docs" / "store.md"


def test_docs_store_md_is_generated_from_the_schemas():
    assert DOC.read_text(encoding="utf-8") == columns.markdown(), (
        "docs/store.md is stale: python -m mapc.store.columns > docs/store.md"
    )


def test_every_stored_column_and_only_those_is_described():
    for table, schema in rows.SCHEMAS.items():
        assert list(columns.STORED[table]) == schema.names, table
        assert all(columns.STORED[table][name].strip() for name in schema.names)
    assert set(columns.STORED) == set(rows.SCHEMAS) == set(columns.DERIVED)


def test_the_documented_columns_are_what_query_shows(tmp_path):
    from mapc.store import dataset

    doc = {"schema_version": "storyline/v1", "session": "s", "agent": {"id": "a"}, "turns": []}
    dataset.store(tmp_path / "ds", [(dataset.Source("x.json"), doc)])
    for table, schema in rows.SCHEMAS.items():
        shown = query.run(tmp_path / "ds", f"select * from {table} limit 0").columns
        assert shown == [*schema.names, *(d.name for d in columns.DERIVED[table])]
        for name in shown:
            assert f"| `{name}` |" in DOC.read_text(encoding="utf-8")
