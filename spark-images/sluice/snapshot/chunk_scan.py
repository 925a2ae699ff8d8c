"""A chunk's rows streamed from the source server: the SELECT of a key range, in the form
every reader compares rows in (RowDecoder), with COPY text where the table takes it."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

import MySQLdb.cursors

from sluice.event.snapshot_split import SnapshotSplit
from sluice.source.connection import decoding_surrogates
from sluice.source.row_decoding import Row, RowDecoder
from sluice.source.schema import TableSchema
from sluice.source.sql import qualified, quote, selected

log = logging.getLogger(__name__)


def chunk_query(schema: TableSchema, split: SnapshotSplit, select: str | None = None) -> tuple[str, list[Any]]:
    """The chunk's SELECT: its columns, or the given select list, over the split's key range."""
    columns = select or ", ".join(selected(c) for c in schema.columns)
    where, params = split.key_condition(quote(schema.chunk_key))
    return f"SELECT {columns} FROM {qualified(schema.database, schema.table)}{where}", params


class ChunkScan:
    """A chunk's rows inside the split's consistent snapshot, streamed from the server each
    time it is iterated: a sink that must write them twice (COPY, then an upsert) reads
    the very same rows again."""

    def __init__(
        self,
        conn: MySQLdb.connections.Connection,
        sql: str,
        params: list[Any],
        decoder: RowDecoder,
        fetch_size: int,
        copy_text_sql: str | None = None,
        in_read_view: bool = True,
    ) -> None:
        self._conn, self._sql, self._params = conn, sql, params
        self.decoder, self._fetch_size = decoder, fetch_size
        self._copy_text_sql = copy_text_sql
        # Outside a read view a pass that meets surrogates part way is refused (UnicodeDecodeError)
        # and the next decodes them from its start; inside one it goes on where it was.
        self.in_read_view, self.surrogates = in_read_view, False
        self.count = 0  # rows of the last complete pass
        self._cursor: MySQLdb.cursors.SSCursor | None = None

    def __iter__(self) -> Iterator[Row]:
        for batch in self._batches(self._sql):
            yield from map(self.decoder.from_select, batch)

    @property
    def has_copy_text(self) -> bool:
        return self._copy_text_sql is not None

    def copy_text(self) -> Iterator[str]:
        """The same rows as blocks of COPY text lines, rendered by the server (copy_text)."""
        assert self._copy_text_sql is not None
        for batch in self._batches(self._copy_text_sql):
            yield "\n".join([line for (line,) in batch]) + "\n"

    def _batches(self, sql: str) -> Iterator[list[tuple[Any, ...]]]:
        self.close()  # a pass abandoned part way (a COPY that failed)
        cur = self._execute(sql)
        count = 0
        try:
            try:
                while batch := cur.fetchmany(self._fetch_size):
                    count += len(batch)
                    yield batch
            except UnicodeDecodeError:  # a string holds surrogates (charsets): decoded in Python from now on
                if self.surrogates or not self.in_read_view:
                    self.surrogates = True
                    raise
                self.surrogates = True
                log.info("%s: a string holds UTF-16 surrogates: decoded in Python", self.decoder.schema.table_id)
                self.close()
                cur = self._execute(sql)  # the same rows in the same order: the same read view
                given, count = count, 0
                while batch := cur.fetchmany(self._fetch_size):
                    count += len(batch)
                    if count > given:
                        yield batch[max(0, len(batch) - (count - given)) :]
            self.count = count
        finally:
            if self._cursor is cur:  # not if a later pass took over
                self.close()

    def _execute(self, sql: str) -> MySQLdb.cursors.SSCursor:
        cur = self._cursor = self._conn.cursor(MySQLdb.cursors.SSCursor)
        with decoding_surrogates(self._conn) if self.surrogates else contextlib.nullcontext():
            cur.execute(sql, self._params)
        return cur

    def close(self) -> None:
        """Ends the current pass. The server streams the result: it must be read to its end
        before the connection takes another statement."""
        cur, self._cursor = self._cursor, None
        if cur is not None:
            # (If the connection went first, as a failure that ended the read closes it, nothing is left.)
            with contextlib.suppress(MySQLdb.OperationalError):
                cur.close()  # reads the rest in C, undecoded
