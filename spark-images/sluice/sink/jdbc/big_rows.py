"""Rows too big for one statement to a MySQL-dialect target, written in pieces.

A statement is one packet, and the target refuses a packet past its max_allowed_packet.
A row's escaped text can be twice its size (a binary value's bytes escaped), so a row
the source holds within its own max_allowed_packet can fail as one INSERT: the row goes
in with its big values empty, then each value is appended in pieces small enough for a
statement. A value bigger than the target's max_allowed_packet cannot be held there at
all (CONCAT gives NULL past it): that is an error naming the table, column, key and the
setting to raise.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pymysql

from sluice.errors import SinkError
from sluice.source.row_decoding import Row
from sluice.source.schema import BINARY_STRING_TYPES, TEXT_STRING_TYPES, Column, TableSchema

_UNBOUNDED = BINARY_STRING_TYPES | TEXT_STRING_TYPES | {"json"}
_MARGIN = 64 * 1024  # of a packet, for the statement around a value; values past it are appended


def packet_limit(conn: pymysql.connections.Connection) -> int:
    """The target's max_allowed_packet for this connection, asked once."""
    limit = getattr(conn, "_sluice_packet_limit", None)
    if limit is None:
        with conn.cursor() as cur:
            cur.execute("SELECT @@max_allowed_packet")
            limit = int(cur.fetchone()[0])
        conn._sluice_packet_limit = limit  # type: ignore[attr-defined]
    return limit


def can_pass(schema: TableSchema, limit: int) -> bool:
    """Whether a row of the table can be too big for one statement: only one with columns
    longer than a VARCHAR's can (the rows of others are not looked at one by one)."""
    return sum(map(_most_bytes, schema.columns)) * 2 + _MARGIN > limit


def _most_bytes(column: Column) -> int:
    if column.char_length:
        return 4 * column.char_length  # 4 bytes a character at most
    if column.data_type in _UNBOUNDED:  # a length not known (a column a DDL added): as long as it may be
        return 1 << 32
    return 16  # numbers, dates


def _size(value: Any) -> int:
    return len(value) if isinstance(value, (str, bytes, bytearray)) else 0


def in_statements(rows: Iterable[Row], limit: int) -> Iterator[tuple[list[Row], Row | None]]:
    """The rows in runs that multi-row statements take, each run followed by a row too big
    to go with others (None after the last run)."""
    run: list[Row] = []
    for row in rows:
        if sum(map(_size, row)) * 2 + _MARGIN > limit:
            yield run, row
            run = []
        else:
            run.append(row)
    yield run, None


def write_in_pieces(
    cur: Any, schema: TableSchema, sql: str, row: Row, limit: int, quote: Callable[[str], str], table: str
) -> None:
    """Upserts `row` (`sql` upserts one row) with its big values appended in pieces."""
    if not schema.row_key:
        raise SinkError(
            f"a row of {schema.table_id} ({sum(map(_size, row)):,} bytes) is too big for one statement to the "
            f"target (max_allowed_packet {limit:,}), and a table without a key cannot be written in pieces: raise "
            "the target's max_allowed_packet (SET GLOBAL max_allowed_packet)"
        )
    # A piece escaped at worst: a character of four bytes, each byte escaped to two.
    piece = max((limit - _MARGIN) // 8, 1)
    big = [i for i, value in enumerate(row) if _size(value) > _MARGIN]
    for i in big:
        value = row[i]
        if len(value.encode() if isinstance(value, str) else value) > limit - _MARGIN:
            key = {name: row[schema.position(name)] for name in schema.row_key}
            raise SinkError(
                f"{schema.table_id}.{schema.columns[i].name} of the row {key} holds {_size(value):,} bytes, more than "
                f"the target's max_allowed_packet ({limit:,}) lets it hold: raise it on the target "
                "(SET GLOBAL max_allowed_packet, and in its configuration)"
            )
    cur.execute(sql, [value[:0] if i in big else value for i, value in enumerate(row)])
    where = " AND ".join(f"{quote(name)} = %s" for name in schema.row_key)
    key_values = [row[schema.position(name)] for name in schema.row_key]
    for i in big:
        column = quote(schema.columns[i].name)
        for start in range(0, len(row[i]), piece):
            cur.execute(
                f"UPDATE {table} SET {column} = CONCAT({column}, %s) WHERE {where}",
                [row[i][start : start + piece], *key_values],
            )
