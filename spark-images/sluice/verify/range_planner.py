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
from sluice.source.key_walk import KeyWalk
from sluice.source.schema import TableSchema
from sluice.verify.round_keys import rounder_keys


def plan_ranges(conn: Any, schema: TableSchema, chunk_size: int) -> list[SnapshotSplit]:
    """The table's ranges in key order, from -inf to +inf. `conn`: a source connection."""
    if schema.single_split:
        return [SnapshotSplit(schema.table_id, 0, None, None)]
    boundaries = _boundaries(KeyWalk(conn, schema), order_of(conn, schema), chunk_size)
    return SnapshotSplit.covering(schema.table_id, list(boundaries))


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


def _boundaries(walk: KeyWalk, order: KeyOrder, chunk_size: int) -> Iterator[Any]:
    half = max(chunk_size // 2, 1)
    start: Any = None  # -inf: NULL keys sort first, so the first range holds them
    while (may_end := walk.key_at(start, half)) is not None and (must_end := walk.key_at(start, chunk_size)):
        end = _end(walk, order, start, may_end[0], must_end)
        if end is None:
            return
        yield end
        start = end


def _end(walk: KeyWalk, order: KeyOrder, start: Any, may_end: Any, must_end: tuple[Any, bool]) -> Any:
    """The roundest key after `may_end` up to `must_end`, or the next key after `start`
    where more than a chunk of rows share it (None: no key follows)."""
    key, same_as_start = must_end
    if key is None:  # more than a chunk of NULL keys: the first range holds them all
        return walk.next_key(None)
    candidates = rounder_keys(key)
    not_after = 0 if may_end is None else order.chunk_indexes([may_end], candidates)[0]
    if not_after < len(candidates):
        return candidates[not_after]
    if start is not None and same_as_start:
        return walk.next_key(start)  # its rows fill the chunk and more
    return key
