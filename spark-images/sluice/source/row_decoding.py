"""Rows as the chunk SELECT reads them: tuples in column order, and the keys the snapshot
and the emit rule order them by.

The binlog side (binlog/rows/row_image_decoder.py) decodes row images straight into this same
form; if the two disagreed, the watermark fold would see the same row twice.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter
from typing import Any

from sluice.source.schema import TableSchema

Row = tuple[Any, ...]


class InvalidDate(str):
    """A DATE, DATETIME or TIMESTAMP value MySQL stores that no calendar has: a zero date
    ('0000-00-00', '0000-00-00 00:00:00'), a partial one ('2020-00-15') or year 0: its
    text as the server prints it. A MySQL-dialect target takes it as it is; for the others
    sink/target_values has the rule."""

    __slots__ = ()

    @classmethod
    def of(cls, year: int, month: int, day: int, time: str = "") -> InvalidDate:
        return cls(f"{year:04d}-{month:02d}-{day:02d}{' ' + time if time else ''}")


class FarDate(InvalidDate):
    """A date or timestamp past year 9999, as date arithmetic in a transform computes it
    (Flink CDC's Java dates go on to year 999999999): its text as Java prints it
    (+10000-01-01), and its days from 1970-01-01 (and microseconds into the day, for a
    timestamp). A target whose dates reach it takes the date (PostgreSQL's go to year
    5874897, Iceberg's and Delta Lake's further); the others take it as an invalid date."""

    days: int
    micros: int | None

    def __new__(cls, text: str, days: int, micros: int | None = None) -> FarDate:
        far = super().__new__(cls, text)
        far.days, far.micros = days, micros
        return far

    @property
    def iso(self) -> str:
        """Its ISO 8601 text without the sign Java prints (PostgreSQL reads that)."""
        return self.lstrip("+")


def _bits(value: bytes) -> int:
    """The drivers give BIT(n) as big-endian bytes; both paths give it as an int."""
    return int.from_bytes(value, "big")


class RowDecoder:
    """A table's SELECT rows in the shared form, and their row and chunk keys."""

    def __init__(self, schema: TableSchema) -> None:
        self.schema = schema
        self._bits = [i for i, c in enumerate(schema.columns) if c.data_type == "bit"]
        key_positions = [schema.position(name) for name in schema.row_key]
        self._chunk_position = schema.position(schema.chunk_key)
        self.row_key: Callable[[Row], Any]
        # A bag's row is only its values; a single-column key is the value, not a 1-tuple.
        self.row_key = itemgetter(*key_positions) if key_positions else tuple

    def key_text(self, row: Row) -> str:
        """How messages name a row: by its key (`id=5`), a bag's by its values."""
        if not self.schema.row_key:
            return f"row {row!r}"
        key = self.row_key(row)
        values = key if len(self.schema.row_key) > 1 else (key,)
        return ", ".join(f"{name}={value}" for name, value in zip(self.schema.row_key, values, strict=True))

    def chunk_key(self, row: Row) -> Any:
        return row[self._chunk_position]

    def from_select(self, row: Row) -> Row:
        if not self._bits:
            return row
        values = list(row)
        for i in self._bits:
            if values[i] is not None:
                values[i] = _bits(values[i])
        return tuple(values)
