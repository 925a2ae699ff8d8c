"""Plans a table's verification ranges: each holds at most a chunk of rows, however the
keys are spread, and ends at the roundest key it can (verify/round_keys).

The snapshot's splitter may give an evenly spread integer key ranges of up to a thousand
chunks (Flink CDC's distribution factor), and one range for a key under a collation; a
verification range is what a repair rewrites while the pipeline waits, so here the key
index is walked for every range: from a range's start, the keys half a chunk and a whole
chunk on bound where it may end, and it ends at the roundest key between them. So a range
holds half a chunk to a chunk of rows, and its bounds are the same run after run unless
the rows around them changed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sluice.event.snapshot_split import SnapshotSplit
from sluice.source.key_order import KeyOrder, PythonKeyOrder, ServerKeyOrder
from sluice.source.schema import TableSchema
from sluice.source.sql import qualified, quote
from sluice.verify.round_keys import rounder_keys

_NO_ROW = object()


def plan_ranges(conn: Any, schema: TableSchema, chunk_size: int) -> list[SnapshotSplit]:
    """The table's ranges in key order, from -inf to +inf. `conn`: a source connection."""
    if schema.single_split:
        return [SnapshotSplit(schema.table_id, 0, None, None)]
    walk = _KeyWalk(conn, schema)
    edges: list[Any] = [None, *walk.boundaries(chunk_size), None]
    return [SnapshotSplit(schema.table_id, i, edges[i], edges[i + 1]) for i in range(len(edges) - 1)]


def place_keys(order: KeyOrder, keys: list[Any], splits: list[SnapshotSplit]) -> list[list[Any]]:
    """For each range, the keys in it (a key in none of them is left out)."""
    placed: list[list[Any]] = [[] for _ in splits]
    if not keys:
        return placed
    if _contiguous(splits):  # a table's plan: the inner bounds index the ranges
        for key, index in zip(keys, order.chunk_indexes(keys, [s.end for s in splits[:-1]]), strict=True):
            placed[index].append(key)
        return placed
    for split, inside in zip(splits, placed, strict=True):  # ranges named one by one
        after_start = [1] * len(keys) if split.start is None else order.chunk_indexes(keys, [split.start])
        before_end = [0] * len(keys) if split.end is None else order.chunk_indexes(keys, [split.end])
        inside += [k for k, a, b in zip(keys, after_start, before_end, strict=True) if a == 1 and b == 0]
    return placed


def _contiguous(splits: list[SnapshotSplit]) -> bool:
    ends = [s.end for s in splits[:-1]]
    return splits[0].start is None and splits[-1].end is None and ends == [s.start for s in splits[1:]]


def order_of(conn: Any, schema: TableSchema) -> KeyOrder:
    """How the chunk key's values compare: as Python compares them, else as the server's
    collation does. (An ENUM's or a BIT's boundaries are its number.)"""
    column = schema.column(schema.chunk_key)
    return PythonKeyOrder() if column.orders_like_python or column.keyed_by_number else ServerKeyOrder(conn, column)


class _KeyWalk:
    def __init__(self, conn: Any, schema: TableSchema) -> None:
        self._conn, self._order = conn, order_of(conn, schema)
        column = schema.column(schema.chunk_key)
        self._key = quote(schema.chunk_key)
        self._value = f"{self._key}+0" if column.keyed_by_number else self._key
        self._table = qualified(schema.database, schema.table)

    def boundaries(self, chunk_size: int) -> Iterator[Any]:
        half = max(chunk_size // 2, 1)
        start: Any = None  # -inf: NULL keys sort first, so the first range holds them
        while True:
            may_end = self._key_at(start, half)
            if may_end is _NO_ROW:
                return
            must_end = self._key_at(start, chunk_size)
            if must_end is _NO_ROW:
                return
            end = self._end(start, may_end, must_end)
            if end is None:
                return
            yield end
            start = end

    def _end(self, start: Any, may_end: Any, must_end: Any) -> Any:
        """The roundest key after `may_end` up to `must_end`, or the next key after `start`
        where more than a chunk of rows share it (None: no key follows)."""
        if must_end is None:  # more than a chunk of NULL keys: the first range holds them all
            return self._next_key(None)
        candidates = rounder_keys(must_end)
        not_after = 0 if may_end is None else self._order.chunk_indexes([may_end], candidates)[0]
        if not_after < len(candidates):
            return candidates[not_after]
        if start is not None and self._order.chunk_indexes([start], [must_end])[0]:
            return self._next_key(start)  # must_end equals start: its rows fill the chunk and more
        return must_end

    def _key_at(self, start: Any, offset: int) -> Any:
        """The key `offset` rows on from `start` in the server's order; _NO_ROW past the end."""
        where, params = ("", []) if start is None else (f" WHERE {self._key} >= %s", [start])
        with self._conn.cursor() as cur:
            cur.execute(
                f"SELECT {self._value} FROM {self._table}{where} ORDER BY {self._key} LIMIT 1 OFFSET %s",
                [*params, offset],
            )
            row = cur.fetchone()
        return _NO_ROW if row is None else _number(row[0], self._value != self._key)

    def _next_key(self, after: Any) -> Any:
        where, params = (f"{self._key} IS NOT NULL", []) if after is None else (f"{self._key} > %s", [after])
        with self._conn.cursor() as cur:
            cur.execute(f"SELECT MIN({self._value}) FROM {self._table} WHERE {where}", params)
            return _number(cur.fetchone()[0], self._value != self._key)


def _number(value: Any, by_number: bool) -> Any:
    return int(value) if by_number and value is not None else value
