"""Reads one snapshot split with DBLog watermarks and writes it (a Spark task's work).

low watermark → SELECT the chunk → high watermark → if the binlog moved, read the window
[low, high) for this table, keep the changes whose key is in the chunk, and fold them into
the chunk rows. The result is the chunk exactly as of the high watermark, read without a
lock; the emit rule later skips every change of this chunk before that watermark.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import MySQLdb.cursors

from sluice.binlog.emit_rule import image_chunks
from sluice.binlog.event_reader import read_window
from sluice.binlog.row_change import RowChange, RowKind
from sluice.sink.base import SinkWriter
from sluice.snapshot.key_order import KeyOrder, key_order_for
from sluice.snapshot.snapshot_split import SnapshotSplit
from sluice.source.connection import SourceEndpoint, connect_scan, current_offset, is_mariadb
from sluice.source.offset import BinlogOffset
from sluice.source.row_decoding import Row, RowDecoder
from sluice.source.schema import Column, TableSchema
from sluice.source.sql import qualified, quote

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SplitTask:
    """Everything an executor needs to read one split; shipped by Spark to the task."""

    split: SnapshotSplit
    schema: TableSchema
    endpoint: SourceEndpoint
    server_id: int
    fetch_size: int


@dataclass(frozen=True)
class SplitResult:
    split_id: str
    high_watermark: BinlogOffset
    rows: int


def _selected(column: Column) -> str:
    """The server prints a FLOAT to six digits, which loses bits; as a DOUBLE it prints the
    exact float32 value, which is also what the binlog holds."""
    name = quote(column.name)
    return f"({name} + 0e0) AS {name}" if column.data_type == "float" else name


def chunk_query(schema: TableSchema, split: SnapshotSplit) -> tuple[str, list[Any]]:
    key = quote(schema.chunk_key)
    columns = ", ".join(_selected(c) for c in schema.columns)
    conditions: list[str] = []
    params: list[Any] = []
    if split.start is not None:
        conditions.append(f"{key} >= %s")
        params.append(split.start)
    if split.end is not None:
        # NULL chunk keys (allowed without a primary key) sort first: the first chunk has them.
        conditions.append(f"({key} < %s{f' OR {key} IS NULL' if split.start is None else ''})")
        params.append(split.end)
    where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
    return f"SELECT {columns} FROM {qualified(schema.database, schema.table)}{where}", params


def read_split(task: SplitTask, conn: MySQLdb.connections.Connection) -> tuple[list[Row], BinlogOffset, int]:
    """Returns the chunk's rows as of the high watermark, the watermark, and the fold count.

    `conn` comes from connect_scan (autocommit: each SELECT sees the latest commits)."""
    schema, split = task.schema, task.split
    decoder = RowDecoder(schema)
    low = current_offset(conn)
    rows = scan_chunk(conn, *chunk_query(schema, split), decoder, task.fetch_size)
    high = current_offset(conn)
    if (high.file, high.pos) == (low.file, low.pos):
        return rows, high, 0
    changes = read_window(task.endpoint, task.server_id, low, high, {schema.table_id: schema}, is_mariadb(conn))
    in_chunk = _changes_in_chunk(list(changes), split, decoder, key_order_for(schema.column(schema.chunk_key), conn))
    if not in_chunk:
        return rows, high, 0
    return fold(rows, in_chunk, decoder), high, len(in_chunk)


def scan_chunk(
    conn: MySQLdb.connections.Connection, sql: str, params: list[Any], decoder: RowDecoder, fetch_size: int
) -> list[Row]:
    cur = conn.cursor(MySQLdb.cursors.SSCursor)
    try:
        cur.execute(sql, params)
        rows: list[Row] = []
        while batch := cur.fetchmany(fetch_size):
            rows.extend(map(decoder.from_select, batch))
        return rows
    finally:
        cur.close()


def _changes_in_chunk(
    changes: list[RowChange], split: SnapshotSplit, decoder: RowDecoder, order: KeyOrder
) -> list[tuple[RowChange, bool, bool]]:
    """Changes touching the chunk, each with whether its before and after images are inside."""
    if not changes:
        return []
    boundaries = [b for b in (split.start, split.end) if b is not None]
    target = 0 if split.start is None else 1
    indexes = image_chunks(changes, decoder, order, boundaries)
    result = []
    for i, change in enumerate(changes):
        before_in = change.before is not None and indexes[2 * i] == target
        after_in = change.after is not None and indexes[2 * i + 1] == target
        if before_in or after_in:
            result.append((change, before_in, after_in))
    return result


def fold(rows: list[Row], changes: list[tuple[RowChange, bool, bool]], decoder: RowDecoder) -> list[Row]:
    """Applies the window's changes to the chunk rows: the chunk as of the high watermark.

    An insert or update puts the after-image (the SELECT may already have seen it, so this
    is an upsert); a delete removes the row; an update that moves a row's key out of the
    chunk removes it here, and the chunk it moved into picks it up.
    """
    by_key = {decoder.row_key(row): row for row in rows}
    for change, before_in, after_in in changes:
        if change.kind is not RowKind.INSERT and before_in:
            by_key.pop(decoder.row_key(change.before), None)  # type: ignore[arg-type]
        if change.kind is not RowKind.DELETE and after_in:
            by_key[decoder.row_key(change.after)] = change.after  # type: ignore[arg-type,index]
    return list(by_key.values())


def read_splits(tasks: list[SplitTask]) -> Iterator[tuple[SplitTask, list[Row], SplitResult]]:
    """Reads splits one after another over one source connection."""
    conn = connect_scan(tasks[0].endpoint)
    try:
        for task in tasks:
            rows, high, _ = read_split(task, conn)
            yield task, rows, SplitResult(task.split.split_id, high, len(rows))
    finally:
        conn.close()


def run_splits(tasks: list[SplitTask], writer: SinkWriter) -> list[SplitResult]:
    """Reads and writes splits; each split commits on its own, so a failure part way keeps
    the splits before it."""
    results: list[SplitResult] = []
    for task, rows, result in read_splits(tasks):
        writer.write_snapshot_split(task.schema, task.split, rows, result.high_watermark)
        results.append(result)
    return results
