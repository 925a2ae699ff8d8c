"""Lakehouse targets for tests: an Iceberg catalog (SQLite) and a Delta Lake root in a
directory, and their tables read back with the formats' own libraries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from deltalake import DeltaTable
from pyiceberg.catalog import load_catalog

from sluice.sink.arrow_rows import source_rows
from sluice.source.schema import TableSchema


def iceberg_sink(directory: Path) -> dict[str, Any]:
    directory.mkdir(parents=True, exist_ok=True)
    return {
        "type": "iceberg",
        "catalog.properties.type": "sql",
        "catalog.properties.uri": f"sqlite:///{directory}/catalog.db",
        "catalog.properties.warehouse": f"file://{directory}/warehouse",
    }


def delta_sink(directory: Path) -> dict[str, Any]:
    return {"type": "delta", "path": str(directory)}


def lakehouse_rows(sink: dict[str, Any], schema: TableSchema) -> list[tuple] | None:
    """The table's rows as the format's library reads them, in the source's forms; None
    while the table is not there."""
    if sink["type"] == "iceberg":
        properties = {k.removeprefix("catalog.properties."): v for k, v in sink.items() if k.startswith("catalog.")}
        catalog = load_catalog(sink.get("catalog.name", "iceberg"), **properties)
        if not catalog.table_exists(schema.table_id):
            return None
        table = catalog.load_table(schema.table_id).scan().to_arrow()
    else:
        uri = f"{sink['path']}/{schema.database}/{schema.table}"
        if not DeltaTable.is_deltatable(uri):
            return None
        table = DeltaTable(uri).to_pyarrow_table()
    return source_rows(schema, table)
