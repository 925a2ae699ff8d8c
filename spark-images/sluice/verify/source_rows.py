"""The source's rows of one key range as of a given binlog position: the position a target
committed, which is behind the source by the pipeline's lag. The range is read in a
consistent view whose position is known (as a snapshot split is) and the changes between
the two positions are wound back (split_reader.unfold): no lag, however large, makes the
comparison wrong, and the pipeline is never asked to wait."""

from __future__ import annotations

from sluice.binlog.event_reader import read_window
from sluice.errors import SluiceError
from sluice.event.projection import projection
from sluice.snapshot.snapshot_split import SplitTask
from sluice.snapshot.split_reader import changes_in_chunk, end_split, read_split, unfold
from sluice.source.connection import connect_scan, is_mariadb
from sluice.source.key_order import key_order_for
from sluice.source.offset import BinlogOffset
from sluice.source.row_decoding import Row, RowDecoder
from sluice.source.schema import TableSchema


class PositionInsideTransaction(SluiceError):
    """The target committed part of a huge transaction: its position is not a place the
    binlog can be wound back to. Retried once the pipeline has committed the rest."""

    transient = True


def source_rows_as_of(task: SplitTask, position: BinlogOffset, target: TableSchema) -> list[Row]:
    """The split's rows at the source as of `position`, in the target's columns."""
    if position.row or position.transaction:
        raise PositionInsideTransaction(f"the target's position {position} is inside a transaction")
    schema = task.schema
    conn = connect_scan(task.endpoint)
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
            changes = read_window(
                task.endpoint, task.server_id, position, read_at, {schema.table_id: schema}, is_mariadb(conn)
            )
            order = key_order_for(schema.column(schema.chunk_key), conn)
            rows = unfold(rows, changes_in_chunk(changes, task.split, decoder, order), decoder)
    finally:
        conn.close()
    project = projection(schema, target)
    return rows if project is None else [project(row) for row in rows]
