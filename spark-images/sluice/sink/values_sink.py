"""The values sink: prints every event, like Flink CDC's values sink. For debugging."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from datetime import datetime, timezone, tzinfo
from typing import TYPE_CHECKING, Any

from sluice.event.row_change import ChangeBatch, RowKind
from sluice.event.schema_change import SchemaEvolution
from sluice.event.snapshot_split import ReadSplits, SplitResult, SplitTask
from sluice.sink.base import Sink, SinkWriter
from sluice.source.offset import BinlogOffset
from sluice.source.row_decoding import Row
from sluice.source.schema import TableSchema

if TYPE_CHECKING:
    from pyspark import SparkContext


class ValuesWriter(SinkWriter):
    def __init__(self, zone: tzinfo) -> None:
        self.zone = zone
        self._formats: dict[str, Callable[[Row], str]] = {}

    def _format(self, schema: TableSchema, kind: RowKind, row: Row) -> str:
        values = self._formats.get(schema.table_id)
        if values is None:
            values = self._formats[schema.table_id] = row_format(schema, self.zone)
        return f"{schema.table_id}> {kind.value}[{values(row)}]"

    def write_snapshot_rows(self, schema: TableSchema, rows: Sequence[Row]) -> None:
        out = sys.stdout
        for row in rows:
            out.write(self._format(schema, RowKind.INSERT, row) + "\n")
        out.flush()

    def apply_schema_change(self, change_id: str, evolution: SchemaEvolution) -> None:
        self._formats.clear()
        sys.stdout.write("".join(f"{event}\n" for event in evolution.events))
        sys.stdout.flush()

    def write_changes(self, batch: ChangeBatch, end: BinlogOffset, drop_split_records: bool) -> None:
        out = sys.stdout
        for schema, kind, row, _, _ in batch:
            out.write(self._format(schema, kind, row) + "\n")
        out.flush()


def row_format(schema: TableSchema, zone: tzinfo) -> Callable[[Row], str]:
    """Values as text; a TIMESTAMP (an instant, read in UTC) shown in `zone` with its offset."""
    instants = {i for i, c in enumerate(schema.columns) if c.data_type == "timestamp"}

    def show(i: int, value: Any) -> str:
        if i in instants and isinstance(value, datetime):
            return value.replace(tzinfo=timezone.utc).astimezone(zone).isoformat()
        return repr(value)

    return lambda row: ", ".join(show(i, v) for i, v in enumerate(row))


def _read(tasks: list[SplitTask], read: ReadSplits) -> list[tuple[TableSchema, list[Row], list[SplitResult]]]:
    return [(split.schema, list(split.rows), split.results()) for split in read(tasks)]


class ValuesSink(Sink):
    def __init__(self, zone: tzinfo) -> None:
        self.zone = zone  # source.server-time-zone

    def write_snapshot_job(self, sc: SparkContext, tasks: list[SplitTask], read: ReadSplits) -> list[SplitResult]:
        """Executors read; the driver prints (an executor's stdout is not the CLI's)."""
        (splits,) = sc.parallelize([tasks], 1).map(lambda t: _read(t, read)).collect()
        return self._print(splits)

    def write_splits_now(
        self, tasks: list[SplitTask], read: ReadSplits, on_split: Callable[[SplitResult], None] | None = None
    ) -> list[SplitResult]:
        results = self._print(_read(tasks, read))
        for result in results if on_split is not None else ():
            on_split(result)
        return results

    def _print(self, splits: list[tuple[TableSchema, list[Row], list[SplitResult]]]) -> list[SplitResult]:
        writer = ValuesWriter(self.zone)
        for schema, rows, _ in splits:
            writer.write_snapshot_rows(schema, rows)
        return [result for _, _, results in splits for result in results]

    def prepare(self, schemas: Sequence[TableSchema]) -> None:
        for schema in schemas:
            sys.stdout.write(
                f"CreateTableEvent{{tableId={schema.table_id}, "
                f"columns={list(schema.column_names)}, "
                f"primaryKeys={list(schema.primary_key)}}}\n"
            )

    def writer(self) -> SinkWriter:
        return ValuesWriter(self.zone)
