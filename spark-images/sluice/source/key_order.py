"""Places chunk-key values into chunks in the source server's own order.

Chunk boundaries come from the server's ORDER BY. For numbers, dates and binary strings
Python orders values the same way; for strings under a collation ('a' = 'A', accents
ignored) it does not, so the server is asked instead, in one query per batch of keys.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from datetime import date, datetime
from typing import Any, Protocol

from sluice.source.schema import Column

_BATCH = 200


class KeyOrder(Protocol):
    def chunk_indexes(self, keys: Sequence[Any], boundaries: Sequence[Any]) -> list[int]:
        """For each key, the index of the chunk holding it, given the inner boundaries."""


class PythonKeyOrder:
    def chunk_indexes(self, keys: Sequence[Any], boundaries: Sequence[Any]) -> list[int]:
        # NULL sorts first in MySQL and belongs to the first chunk.
        try:
            return [0 if k is None else bisect.bisect_right(boundaries, k) for k in keys]
        except TypeError:  # a date no calendar has ('0000-00-00') among dates: compare their text
            texts = [_text(b) for b in boundaries]
            return [0 if k is None else bisect.bisect_right(texts, _text(k)) for k in keys]


def _text(value: Any) -> Any:
    """A date's ISO text, which orders as MySQL orders dates, zero and partial ones included."""
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    return value.isoformat() if isinstance(value, date) else value


class ServerKeyOrder:
    """Counts, on the server, how many boundaries are <= each key under the column's
    collation: a binary search over the boundaries, each step one query for a batch of keys
    (so a table of many chunks costs a few queries a batch, not keys x boundaries)."""

    def __init__(self, conn: Any, column: Column) -> None:
        self._conn = conn
        charset = (column.collation or "utf8mb4_general_ci").split("_", 1)[0]
        self._value = f"CONVERT(%s USING {charset}) COLLATE {column.collation}"

    def chunk_indexes(self, keys: Sequence[Any], boundaries: Sequence[Any]) -> list[int]:
        result: list[int] = []
        for offset in range(0, len(keys), _BATCH):
            batch = keys[offset : offset + _BATCH]
            # Boundaries below low are <= the key, those from high on are after it.
            low = [0] * len(batch)
            high = [0 if key is None else len(boundaries) for key in batch]  # NULL sorts first
            while pending := [i for i in range(len(batch)) if low[i] < high[i]]:
                middle = {i: (low[i] + high[i]) // 2 for i in pending}
                answers = self._not_before([(batch[i], boundaries[middle[i]]) for i in pending])
                for i, not_before in zip(pending, answers, strict=True):
                    if not_before:
                        low[i] = middle[i] + 1
                    else:
                        high[i] = middle[i]
            result.extend(low)
        return result

    def _not_before(self, pairs: list[tuple[Any, Any]]) -> list[bool]:
        """For each (key, boundary): key >= boundary, in one query."""
        sql = "SELECT " + ", ".join(f"{self._value} >= {self._value}" for _ in pairs)
        with self._conn.cursor() as cur:
            cur.execute(sql, [value for pair in pairs for value in pair])
            return [bool(answer) for answer in cur.fetchone()]


class EnumKeyOrder:
    """An ENUM's chunks are ranges of its members' index (MySQL's order of the column):
    values, as rows and targets hold them, are members' text; '' (an invalid value stored
    in a lax sql_mode) is index 0."""

    def __init__(self, column: Column) -> None:
        self._index = {member: i for i, member in enumerate(column.members, start=1)}
        self._folded = {member.casefold(): i for member, i in reversed(self._index.items())}

    def chunk_indexes(self, keys: Sequence[Any], boundaries: Sequence[Any]) -> list[int]:
        return PythonKeyOrder().chunk_indexes([None if k is None else self._number(k) for k in keys], boundaries)

    def _number(self, value: str) -> int:
        # A member as a target spells it back (a case-insensitive collation may fold it).
        return self._index.get(value) or self._folded.get(value.casefold(), 0)


def key_order_for(column: Column, conn: Any) -> KeyOrder:
    # `conn`: a source connection of either driver.
    if column.data_type == "enum":
        return EnumKeyOrder(column)
    return PythonKeyOrder() if column.orders_like_python else ServerKeyOrder(conn, column)
