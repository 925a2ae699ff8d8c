"""A table's chunk key walked in the server's order, one indexed query a step: the key some
rows on from a start, and the next distinct key after one. The snapshot's chunk splitter and
verification's range planner both cut a table into ranges of at most a chunk of rows this way
(each decides where a range ends from what the walk finds)."""

from __future__ import annotations

from typing import Any

from sluice.source.schema import TableSchema
from sluice.source.sql import qualified, quote


class KeyWalk:
    def __init__(self, conn: Any, schema: TableSchema) -> None:
        column = schema.column(schema.chunk_key)
        self._conn = conn
        self._key = quote(schema.chunk_key)
        self._by_number = column.keyed_by_number  # an ENUM's or a BIT's boundaries are its number
        self._value = f"{self._key}+0" if self._by_number else self._key
        self._table = qualified(schema.database, schema.table)

    def key_at(self, start: Any, offset: int) -> tuple[Any, bool] | None:
        """The key `offset` rows on from `start` (None: from the first row, NULL keys sorting
        first), and whether it equals `start` as the server compares them (under a collation
        'a' = 'A': more than `offset` rows share the key); None past the last row."""
        where, params = ("", []) if start is None else (f" WHERE {self._key} >= %s", [start])
        same = "FALSE" if start is None else f"{self._key} = %s"
        with self._conn.cursor() as cur:
            cur.execute(
                f"SELECT {self._value}, {same} FROM {self._table}{where} ORDER BY {self._key} LIMIT 1 OFFSET %s",
                [*([] if start is None else [start]), *params, offset],
            )
            row = cur.fetchone()
        return None if row is None else (self._number(row[0]), bool(row[1]))

    def next_key(self, after: Any) -> Any:
        """The least key after `after` (None: the least key that is not NULL); None if no
        key follows."""
        where, params = (f"{self._key} IS NOT NULL", []) if after is None else (f"{self._key} > %s", [after])
        with self._conn.cursor() as cur:
            cur.execute(f"SELECT MIN({self._value}) FROM {self._table} WHERE {where}", params)
            return self._number(cur.fetchone()[0])

    def _number(self, value: Any) -> Any:
        return int(value) if self._by_number and value is not None else value
