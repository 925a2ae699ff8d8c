"""A snapshot chunk replaces its key range in the target, so a chunk read again is exact
whatever the target held: rows the source deleted while no pipeline ran, a bag's rows
already copied once, the rows of an earlier pipeline into the same tables.

Where the target's order of the chunk key is the source's (numbers, temporal values, binary
strings) the chunk's own transaction deletes its range before it loads its rows. Strings
under a collation order otherwise in the target (PostgreSQL has no `utf8mb4_general_ci`),
so no range the target can evaluate is a chunk's: before such a table's splits are read,
the target's keys are placed into chunks by the source server (key_order) and the rows in
splits still to read are deleted. A target table that is empty needs neither: the first
snapshot into a new target costs one query per table.
"""

from __future__ import annotations

import logging
from typing import Any

from sluice.event.snapshot_split import SnapshotSplit
from sluice.sink.base import Sink
from sluice.snapshot.snapshot_split_assigner import SnapshotAssignerState
from sluice.source.key_order import key_order_for
from sluice.source.schema import TableSchema

log = logging.getLogger(__name__)


def tables_to_replace(target: Sink, source_conn: Any, snapshot: SnapshotAssignerState) -> set[str]:
    """The tables whose remaining chunks must replace their key ranges as they commit; the
    target's rows in unread chunks of collation-keyed tables are deleted here instead."""
    unread: dict[str, list[SnapshotSplit]] = {}
    for split in snapshot.remaining:
        unread.setdefault(split.table_id, []).append(split)
    holding = target.tables_holding_rows([snapshot.tables[t] for t in unread])
    replacing = set()
    for table_id in sorted(holding):
        schema = snapshot.tables[table_id]
        if schema.column(schema.chunk_key).orders_like_python:
            replacing.add(table_id)
            continue
        splits = sorted((s for s in snapshot.splits if s.table_id == table_id), key=lambda s: s.index)
        _clear_unread_chunks(target, source_conn, schema, splits, {s.index for s in unread[table_id]})
    return replacing


def _clear_unread_chunks(
    target: Sink, source_conn: Any, schema: TableSchema, splits: list[SnapshotSplit], unread: set[int]
) -> None:
    if len(unread) == len(splits):
        target.delete_chunk_keys(schema, None)  # no chunk of it is kept: the whole table goes
        return
    order = key_order_for(schema.column(schema.chunk_key), source_conn)
    boundaries = [split.end for split in splits[:-1]]
    deleted = 0
    for keys in target.chunk_keys(schema):
        gone = [key for key, index in zip(keys, order.chunk_indexes(keys, boundaries), strict=True) if index in unread]
        target.delete_chunk_keys(schema, gone)
        deleted += len(gone)
    log.info("%s: %d chunk keys of unread chunks deleted from the target", schema.table_id, deleted)
