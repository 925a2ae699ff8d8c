"""Lakehouse targets for tests: an Iceberg catalog (SQLite) and a Delta Lake root in a
directory, and their tables read back with the formats' own libraries."""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable
from pyiceberg.catalog import load_catalog
from pyiceberg.table import Table

from sluice.pipeline.definition import parse_definition
from sluice.sink.arrow_rows import source_rows
from sluice.sink.factory import create_sink
from sluice.sink.lakehouse.iceberg import IcebergTables
from sluice.sink.lakehouse.sink import LakehouseSink
from sluice.sink.lakehouse.table_format import END, PIPELINE
from sluice.source.offset import BinlogOffset
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


def _loaded(sink: dict[str, Any], table_id: str) -> Table | DeltaTable | None:
    """The table as the format's library loads it; None while it is not there."""
    if sink["type"] == "iceberg":
        properties = {k.removeprefix("catalog.properties."): v for k, v in sink.items() if k.startswith("catalog.")}
        catalog = load_catalog(sink.get("catalog.name", "iceberg"), **properties)
        return catalog.load_table(table_id) if catalog.table_exists(table_id) else None
    database, table = table_id.split(".", 1)
    uri = f"{sink['path']}/{database}/{table}"
    return DeltaTable(uri) if DeltaTable.is_deltatable(uri) else None


def lakehouse_table(sink: dict[str, Any], table_id: str) -> pa.Table | None:
    """The table's rows as the format's library reads them; None while it is not there."""
    table = _loaded(sink, table_id)
    if table is None:
        return None
    if isinstance(table, Table):
        return table.scan().to_arrow()
    rows = pa.table(table.scan().read_all())  # delta-rs's reader: it applies deletion vectors
    arrow = pa.schema(table.schema().to_arrow())
    return rows.cast(pa.schema([arrow.field(name) for name in rows.column_names]))


def lakehouse_column_rows(sink: dict[str, Any], table_id: str, columns: Sequence[str]) -> list[tuple] | None:
    """The table's rows in these columns, sorted; None while the table or a column is not there."""
    table = lakehouse_table(sink, table_id)
    if table is None or not set(columns) <= set(table.column_names):
        return None
    return sorted(zip(*(table.column(c).to_pylist() for c in columns), strict=True))


def partitioned_by(sink: dict[str, Any], table_id: str) -> list[str]:
    """The table's partition fields as partition.key writes them (Iceberg's current spec,
    Delta's partition columns)."""
    table = _loaded(sink, table_id)
    assert table is not None, f"{table_id} is not there"
    if isinstance(table, DeltaTable):
        return list(table.metadata().partition_columns)
    schema = table.schema()
    fields = []
    for field in table.spec().fields:
        column = schema.find_column_name(field.source_id)
        fields.append(column if str(field.transform) == "identity" else f"{field.transform}({column})")
    return fields


def table_properties(sink: dict[str, Any], table_id: str) -> dict[str, str]:
    """Iceberg's table properties, Delta's table configuration."""
    table = _loaded(sink, table_id)
    assert table is not None, f"{table_id} is not there"
    return dict(table.metadata().configuration if isinstance(table, DeltaTable) else table.properties)


def lakehouse_rows(sink: dict[str, Any], schema: TableSchema) -> list[tuple] | None:
    """The table's rows in the source's forms; None while the table is not there."""
    table = lakehouse_table(sink, schema.table_id)
    return None if table is None else source_rows(schema, table)


@dataclass(frozen=True)
class TableFiles:
    """The files a table's current snapshot or version reads, as its format's library lists them."""

    sizes: dict[str, int]  # every file read (data and delete files), by path: its bytes
    data: set[str]  # paths of data files
    delete_files: set[str]  # paths of delete files (Iceberg)
    rows_in: dict[str, int]  # rows of each data file, deleted ones included
    deleted_in: dict[str, int]  # rows of each data file its deletes remove

    @property
    def rows(self) -> int:
        return sum(self.rows_in.values())

    @property
    def deleted_rows(self) -> int:
        return sum(self.deleted_in.values())

    def added_bytes(self, before: TableFiles) -> int:
        """Bytes of the files read now that were not read before."""
        return sum(size for path, size in self.sizes.items() if path not in before.sizes)

    def largely_deleted(self, ratio: float) -> list[str]:
        return [path for path, rows in self.rows_in.items() if self.deleted_in.get(path, 0) >= ratio * rows]


def table_files(sink: LakehouseSink, table_id: str) -> TableFiles:
    """The table's files, read with the format's library and pyarrow (not the sink's own code)."""
    if not isinstance(sink.tables, IcebergTables):
        return _delta_files(DeltaTable(sink.tables.uri(table_id)))
    table = sink.tables.catalog.load_table(table_id)
    tasks = list(table.scan().plan_files())
    deletes = {d.file_path: d for t in tasks for d in t.delete_files}
    deleted: dict[str, set[int]] = {}
    for path in deletes:
        with table.io.new_input(path).open() as stream:
            for file_path, pos in zip(*pq.read_table(stream).to_pydict().values(), strict=True):
                deleted.setdefault(file_path, set()).add(pos)
    return TableFiles(
        {t.file.file_path: t.file.file_size_in_bytes for t in tasks}
        | {p: d.file_size_in_bytes for p, d in deletes.items()},
        {t.file.file_path for t in tasks},
        set(deletes),
        {t.file.file_path: t.file.record_count for t in tasks},
        {path: len(positions) for path, positions in deleted.items()},
    )


def _delta_files(table: DeltaTable) -> TableFiles:
    """A Delta table's data files (absolute paths) and their deletion vectors, as delta-rs reads them."""
    root = table.table_uri.removeprefix("file://").rstrip("/")
    adds = pa.table(table.get_add_actions(flatten=True)).to_pylist()
    data = {f"{root}/{unquote(a['path'])}": a for a in adds}
    deleted = {
        unquote(v["filepath"].removeprefix("file://")): v["selection_vector"].count(False)
        for v in pa.table(table.deletion_vectors()).to_pylist()
    }
    vectors = {str(p): p.stat().st_size for p in Path(root).glob("deletion_vector_*.bin")}
    return TableFiles(
        {path: a["size_bytes"] for path, a in data.items()} | vectors,
        set(data),
        set(vectors),
        {path: a["num_records"] for path, a in data.items()},
        deleted,
    )


def lakehouse_sink(definition: str, env: dict[str, str]) -> LakehouseSink:
    """The sink a pipeline definition (its YAML or JSON text) makes, outside a run."""
    sink = create_sink(parse_definition(definition, env=env))
    assert isinstance(sink, LakehouseSink)
    return sink


def assert_no_change_committed_twice(pipeline: Path, env: dict[str, str], table_id: str) -> None:
    """The pipeline's records in the table, newest first, never go back in the binlog: no
    commit holds a change an earlier one holds (each skips what its table committed)."""
    sink = lakehouse_sink(pipeline.read_text(), env)
    records = [r for r in sink.tables.records(table_id) if r.get(PIPELINE) == sink.pipeline]
    ends = [BinlogOffset.from_json(json.loads(r[END])) for r in records if END in r]  # none: a table just joined
    for newer, older in itertools.pairwise(ends):
        assert not newer.is_before(older), f"{table_id}: a commit ending at {newer} after one ending at {older}"
