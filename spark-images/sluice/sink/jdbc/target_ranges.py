"""A jdbc target's key ranges: which tables hold rows, their chunk keys, and a range read
or replaced at the pipeline's committed position. The snapshot's range replacement and
verification (read beside the streaming pipeline, repaired while its writes wait) use them."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from sluice.errors import SinkError
from sluice.event.snapshot_split import SnapshotSplit, chunk_keys_of
from sluice.sink.jdbc.dialect import BINLOG_SPLIT_ID
from sluice.sink.jdbc.target import JdbcTarget
from sluice.source.offset import BinlogOffset
from sluice.source.row_decoding import Row
from sluice.source.schema import TableSchema

KEY_BATCH = 1000  # chunk keys per query when a collation-keyed table's unread chunks are cleared


class TargetRanges:
    """The key-range operations of JdbcSink, over its `target`."""

    target: JdbcTarget

    def tables_holding_rows(self, schemas: Sequence[TableSchema]) -> set[str]:
        """The tables whose target holds rows: their chunks replace their key ranges
        (snapshot/range_replacement)."""
        table = self.target.dialect.target_table
        with contextlib.closing(self.target.connect()) as conn, contextlib.closing(conn.cursor()) as cur:
            holding = set()
            for schema in schemas:
                cur.execute(f"SELECT 1 FROM {table(schema)} LIMIT 1")
                if cur.fetchone() is not None:
                    holding.add(schema.table_id)
            conn.commit()
            return holding

    def chunk_keys(self, schema: TableSchema) -> Iterator[list[Any]]:
        """The target's distinct chunk keys, a batch at a time in the target's own order
        (NULL, if any, alone first)."""
        dialect = self.target.dialect
        key, table = dialect.quote(schema.chunk_key), dialect.target_table(schema)
        with contextlib.closing(self.target.connect()) as conn, contextlib.closing(conn.cursor()) as cur:
            cur.execute(f"SELECT 1 FROM {table} WHERE {key} IS NULL LIMIT 1")
            if cur.fetchone() is not None:
                yield [None]
            after: list[Any] = []
            while True:
                where = f"{key} IS NOT NULL" + (f" AND {key} > %s" if after else "")
                cur.execute(f"SELECT DISTINCT {key} FROM {table} WHERE {where} ORDER BY {key} LIMIT {KEY_BATCH}", after)
                keys = [row[0] for row in cur.fetchall()]
                conn.commit()
                if not keys:
                    return
                yield keys
                after = [keys[-1]]

    def delete_chunk_keys(self, schema: TableSchema, keys: Sequence[Any] | None) -> None:
        """Deletes the target's rows with these chunk keys (every row, for None), committed."""
        whole = SnapshotSplit(schema.table_id, 0, None, None)
        with contextlib.closing(self.target.connect()) as conn:
            self.target.dialect.delete_range(conn, schema, whole, None if keys is None else list(keys))
            conn.commit()

    def read_range(
        self,
        schema: TableSchema,
        split: SnapshotSplit,
        keys_as_of: Callable[[BinlogOffset], Sequence[Any]] | None = None,
        conn: Any = None,
    ) -> tuple[list[Row], BinlogOffset | None]:
        """The target's rows in a key range and the binlog position they are as of (the
        pipeline's committed one), read in one consistent view: nothing waits for it. With
        `keys_as_of`, the rows of the chunk keys it gives for that position instead (a
        range of a key the target orders otherwise than the source). `conn`: the caller's
        (reading_connection), left open; else one of its own."""
        if conn is None:
            with contextlib.closing(self.target.connect()) as own:
                return self.read_range(schema, split, keys_as_of, own)
        dialect = self.target.dialect
        try:
            dialect.begin_consistent_read(conn)
            position = dialect.load_offsets(conn, self.target.pipeline).get(BINLOG_SPLIT_ID)
            keys = None if keys_as_of is None or position is None else keys_as_of(position)
            return dialect.select_range(conn, schema, split, keys), position
        finally:
            with contextlib.suppress(Exception):  # a connection gone says so above
                conn.rollback()

    def reading_connection(self) -> Any:
        """A connection a verification reads every range on (read_range's `conn`)."""
        return self.target.connect()

    def replace_range(
        self,
        schema: TableSchema,
        split: SnapshotSplit,
        rows_as_of: Callable[[BinlogOffset], list[Row]],
        keys_also: Sequence[Any] | None = None,
    ) -> int:
        """Replaces the target's rows in a key range by `rows_as_of(position)`, the source's
        rows as of the pipeline's committed position. With `keys_also`, the range is the
        rows' chunk keys and these (see read_range). Returns the rows written."""

        def replace(conn: Any, position: BinlogOffset) -> int:
            rows = rows_as_of(position)
            keys = None if keys_also is None else chunk_keys_of(schema, rows, keys_also)
            self.target.dialect.delete_range(conn, schema, split, keys)
            self.target.dialect.insert_new(conn, schema, self.target.values.rows(schema, rows))
            return len(rows)

        return self._at_committed_position(replace)

    def replace_keys(
        self,
        schema: TableSchema,
        rows_as_of: Callable[[BinlogOffset], tuple[list[tuple[Any, ...]], list[Row]]],
    ) -> int:
        """Replaces the target's rows of the keys `rows_as_of(position)` gives by the rows it
        gives with them (the source's as of the pipeline's committed position)."""

        def replace(conn: Any, position: BinlogOffset) -> int:
            keys, rows = rows_as_of(position)
            for start in range(0, len(keys), self.target.batch_size):
                self.target.dialect.delete(conn, schema, keys[start : start + self.target.batch_size])
            self.target.dialect.insert_new(conn, schema, self.target.values.rows(schema, rows))
            return len(rows)

        return self._at_committed_position(replace)

    def _at_committed_position(self, write: Callable[[Any, BinlogOffset], int]) -> int:
        """Runs `write` in a transaction at the pipeline's committed binlog position: its
        writes wait meanwhile (the epoch row is locked), so the position holds until the
        rows are in; the pipeline pauses for as long as one write takes."""
        dialect = self.target.dialect
        with contextlib.closing(self.target.connect()) as conn:
            try:
                dialect.lock_epoch(conn, self.target.pipeline)
                position = dialect.load_offsets(conn, self.target.pipeline).get(BINLOG_SPLIT_ID)
                if position is None:
                    raise SinkError(f"sink {self.target!r}: pipeline {self.target.pipeline!r} has no binlog position")
                written = write(conn, position)
                conn.commit()
                return written
            except Exception:
                with contextlib.suppress(Exception):
                    conn.rollback()
                raise
