"""Splits a table into chunks by its chunk key, as Flink CDC's ChunkSplitter does.

Evenly distributed integer keys get fixed ranges computed from min and max without reading
the table; anything else (skewed ids, strings, dates) gets next-chunk-end queries that walk
the key index, so every chunk holds at most chunk-size rows however the keys are spread.
"""

from __future__ import annotations

import logging
from typing import Any

import pymysql

from sluice.event.snapshot_split import SnapshotSplit
from sluice.source.key_walk import KeyWalk
from sluice.source.schema import TableSchema
from sluice.source.sql import quote

log = logging.getLogger(__name__)

# Flink CDC's defaults for "evenly distributed": (max - min + 1) / rows within these bounds.
DISTRIBUTION_FACTOR_LOWER = 0.05
DISTRIBUTION_FACTOR_UPPER = 1000.0


def split_table(conn: pymysql.connections.Connection, schema: TableSchema, chunk_size: int) -> list[SnapshotSplit]:
    if schema.single_split:
        return [SnapshotSplit(schema.table_id, 0, None, None)]
    key = quote(schema.chunk_key)
    column = schema.column(schema.chunk_key)
    value = f"{key}+0" if column.keyed_by_number else key  # what boundaries are: an ENUM's index
    table = f"{quote(schema.database)}.{quote(schema.table)}"
    with conn.cursor() as cur:
        cur.execute(f"SELECT MIN({value}), MAX({value}) FROM {table}")
        low, high = cur.fetchone()
    if low is None:
        return [SnapshotSplit(schema.table_id, 0, None, None)]

    if column.is_integer or column.keyed_by_number:
        low, high = int(low), int(high)
        rows = approximate_row_count(conn, schema)
        factor = (high - low + 1) / max(rows, 1)
        if DISTRIBUTION_FACTOR_LOWER <= factor <= DISTRIBUTION_FACTOR_UPPER:
            step = max(int(chunk_size * factor), 1)
            return SnapshotSplit.covering(schema.table_id, _even_boundaries(low, high, step))
        log.info("%s: chunk key %s is skewed (factor %.1f)", schema.table_id, key, factor)
    return SnapshotSplit.covering(schema.table_id, _walked_boundaries(KeyWalk(conn, schema), low, chunk_size))


def approximate_row_count(conn: pymysql.connections.Connection, schema: TableSchema) -> int:
    """The server's row estimate; an exact count when the estimate is empty (new tables)."""
    estimate = estimated_rows(conn, schema)
    if estimate > 0:
        return estimate
    with conn.cursor() as cur:
        cur.execute(f"SELECT COUNT(*) FROM {quote(schema.database)}.{quote(schema.table)}")
        return int(cur.fetchone()[0])


def estimated_rows(conn: pymysql.connections.Connection, schema: TableSchema) -> int:
    """The server's row estimate (information_schema), 0 where it has none."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
            (schema.database, schema.table),
        )
        row = cur.fetchone()
    return int(row[0] or 0) if row else 0


def _even_boundaries(low: int, high: int, step: int) -> list[Any]:
    """Inner boundaries low+step, low+2*step, ... up to high (inclusive of the last chunk)."""
    return list(range(low + step, high + 1, step))


def _walked_boundaries(walk: KeyWalk, low: Any, chunk_size: int) -> list[Any]:
    """Each chunk ends at the chunk-size-th key from its start: the next chunk begins there."""
    boundaries: list[Any] = []
    start = low
    while (found := walk.key_at(start, chunk_size)) is not None:
        end, same = found
        if same:
            # More than chunk-size rows share this key (composite primary keys): the
            # chunk must hold them all, so it ends at the next distinct key.
            end = walk.next_key(start)
            if end is None:
                break
        boundaries.append(end)
        start = end
    return boundaries
