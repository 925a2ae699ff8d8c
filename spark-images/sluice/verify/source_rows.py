"""The source's rows of one key range as of a given binlog position: the position a target
committed, which is behind the source by the pipeline's lag. The range is read in a
consistent view whose position is known (as a snapshot split is) and the changes between
the two positions are wound back (split_reader.unfold): no lag, however large, makes the
comparison wrong, and the pipeline is never asked to wait."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import Any

import MySQLdb

from sluice.binlog.rows.event_reader import read_window
from sluice.errors import SluiceError
from sluice.event.projection import projection
from sluice.event.row_change import RowChange
from sluice.event.snapshot_split import SplitTask
from sluice.snapshot.chunk_scan import ChunkScan
from sluice.snapshot.split_reader import (
    begin_consistent_snapshot,
    changes_in_chunk,
    end_split,
    read_split,
    unfold,
)
from sluice.source.key_order import key_order_for
from sluice.source.offset import BinlogOffset
from sluice.source.row_decoding import Row, RowDecoder
from sluice.source.schema import TableSchema
from sluice.source.server_flavour import is_mariadb
from sluice.source.sql import qualified, selected
from sluice.verify.forward_windows import ForwardWindows


class PositionInsideTransaction(SluiceError):
    """The target committed part of a huge transaction: its position is not a place the
    binlog can be wound back to. Retried once the pipeline has committed the rest."""

    troubleshooting = "position-inside-transaction"

    transient = True


def _check_windable(position: BinlogOffset) -> None:
    if position.row or position.transaction:
        raise PositionInsideTransaction(f"the target's position {position} is inside a transaction")


def source_rows_as_of(
    task: SplitTask, position: BinlogOffset, target: TableSchema, conn: Any, windows: ForwardWindows | None = None
) -> list[Row]:
    """The split's rows at the source as of `position`, in the target's columns. `conn`: a
    scan connection (connect_scan) left as it was given; `windows`: where the changes since
    `position` are read (else on a connection of their own)."""
    _check_windable(position)
    schema = task.schema
    try:
        rows, read_at, _ = read_split(task, conn)
        rows = list(rows)
        end_split(conn)
        if position.is_after(read_at):
            raise SluiceError(
                f"the target's position {position} is after the source's {read_at}: is this the server the "
                "pipeline reads?"
            )
        if read_at.is_after(position):
            decoder = RowDecoder(schema)
            if windows is not None:
                changes: Iterable[RowChange] = windows.window(position, read_at, schema.table_id)
            else:
                changes = read_window(
                    task.endpoint, task.server_id, position, read_at, {schema.table_id: schema}, is_mariadb(conn)
                )
            order = key_order_for(schema.column(schema.chunk_key), conn)
            rows = unfold(rows, changes_in_chunk(changes, task.split, decoder, order), decoder)
    finally:
        with contextlib.suppress(MySQLdb.Error):  # a connection gone says so above
            end_split(conn)
    project = projection(schema, target)
    return rows if project is None else [project(row) for row in rows]


def rows_matching_as_of(
    task: SplitTask, where: str, position: BinlogOffset, target: TableSchema, conn: Any
) -> tuple[list[tuple[Any, ...]], list[Row]]:
    """The keys of the source's rows that match `where` (SQL of the source's dialect, as
    Debezium's additional-conditions), and those rows as of `position` in the target's
    columns (a key without a row there: made after it). Needs MariaDB's exact read view.
    `conn`: a scan connection, left as it was given."""
    _check_windable(position)
    schema = task.schema
    try:
        if not is_mariadb(conn):
            raise SluiceError(
                f"a condition needs the read view's exact binlog position, which only MariaDB gives: "
                f"read {schema.table_id} again whole instead"
            )
        read_at = begin_consistent_snapshot(conn)
        columns = ", ".join(selected(c) for c in schema.columns)
        sql = f"SELECT {columns} FROM {qualified(schema.database, schema.table)} WHERE ({where})"
        decoder = RowDecoder(schema)
        try:
            rows = list(ChunkScan(conn, sql, [], decoder, task.fetch_size))
        except MySQLdb.Error as exc:
            raise SluiceError(
                f"{schema.table_id}: the condition '{where}' failed at the source: {exc.args[-1]}"
            ) from exc
        end_split(conn)
        keys = {decoder.row_key(row) for row in rows}
        if read_at.is_after(position):
            changes = read_window(task.endpoint, task.server_id, position, read_at, {schema.table_id: schema}, True)
            touching = []
            for change in changes:
                before_in = change.before is not None and decoder.row_key(change.before) in keys
                after_in = change.after is not None and decoder.row_key(change.after) in keys
                if before_in or after_in:
                    touching.append((change, before_in, after_in))
            rows = unfold(rows, touching, decoder)
    finally:
        with contextlib.suppress(MySQLdb.Error):  # a connection gone says so above
            end_split(conn)
    project = projection(schema, target)
    as_tuples = [key if isinstance(key, tuple) else (key,) for key in keys]
    return as_tuples, rows if project is None else [project(row) for row in rows]
