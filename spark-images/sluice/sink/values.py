"""The values sink: prints every event, like Flink CDC's values sink. For debugging."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from sluice.binlog.row_change import RowKind
from sluice.sink.base import ChangeBatch, Sink, SinkWriter
from sluice.snapshot.snapshot_split import SnapshotSplit
from sluice.source.offset import BinlogOffset
from sluice.source.row_decoding import Row
from sluice.source.schema import TableSchema


def format_event(table_id: str, kind: RowKind, row: Row) -> str:
    return f"{table_id}> {kind.value}[{', '.join(map(repr, row))}]"


class ValuesWriter(SinkWriter):
    def write_snapshot_split(
        self, schema: TableSchema, split: SnapshotSplit, rows: Sequence[Row], high_watermark: BinlogOffset
    ) -> None:
        out = sys.stdout
        for row in rows:
            out.write(format_event(schema.table_id, RowKind.INSERT, row) + "\n")
        out.flush()

    def write_changes(self, batch: ChangeBatch, end: BinlogOffset, drop_split_records: bool) -> None:
        out = sys.stdout
        for schema, kind, row, _, _ in batch:
            out.write(format_event(schema.table_id, kind, row) + "\n")
        out.flush()


class ValuesSink(Sink):
    def prepare(self, schemas: Sequence[TableSchema]) -> None:
        for schema in schemas:
            sys.stdout.write(
                f"CreateTableEvent{{tableId={schema.table_id}, "
                f"columns={list(schema.column_names)}, "
                f"primaryKeys={list(schema.primary_key)}}}\n"
            )

    def writer(self) -> SinkWriter:
        return ValuesWriter()
