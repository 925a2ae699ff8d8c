"""Row changes read from the binlog, and the changelog rows they become."""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from sluice.source.offset import BinlogOffset
from sluice.source.row_decoding import Row
from sluice.source.schema import TableSchema


class RowKind(str, enum.Enum):
    """Flink's changelog kinds: an update is a retraction (-U) and an addition (+U)."""

    INSERT = "+I"
    UPDATE_BEFORE = "-U"
    UPDATE_AFTER = "+U"
    DELETE = "-D"


class ChangeRow(NamedTuple):
    """One changelog row with its metadata: table, kind, op time, binlog position."""

    schema: TableSchema
    kind: RowKind
    row: Row
    timestamp: int  # seconds since the epoch, from the event header
    offset: BinlogOffset


class RowChange(NamedTuple):
    """One row of a rows event. `offset` is where the event starts, with the row's index.
    (A tuple: the reader makes one per row, and a tuple is the cheapest object to make.)"""

    table_id: str
    kind: RowKind  # INSERT, UPDATE_AFTER (carrying `before`) or DELETE
    before: Row | None
    after: Row | None
    offset: BinlogOffset
    timestamp: int  # seconds since the epoch, from the event header

    def changelog(self, schema: TableSchema) -> list[ChangeRow]:
        """The change as changelog rows: +I, -U/+U, or -D."""
        if self.kind is RowKind.INSERT:
            return [ChangeRow(schema, RowKind.INSERT, self.after, self.timestamp, self.offset)]  # type: ignore[arg-type]
        if self.kind is RowKind.DELETE:
            return [ChangeRow(schema, RowKind.DELETE, self.before, self.timestamp, self.offset)]  # type: ignore[arg-type]
        return [
            ChangeRow(schema, RowKind.UPDATE_BEFORE, self.before, self.timestamp, self.offset),  # type: ignore[arg-type]
            ChangeRow(schema, RowKind.UPDATE_AFTER, self.after, self.timestamp, self.offset),  # type: ignore[arg-type]
        ]

    def one_side(self, schema: TableSchema, kind: RowKind) -> ChangeRow:
        """Half of an update, as a delete of its before image or an insert of its after
        image: what the emit rule keeps when the snapshot already holds the other half."""
        row = self.before if kind is RowKind.DELETE else self.after
        return ChangeRow(schema, kind, row, self.timestamp, self.offset)  # type: ignore[arg-type]


@dataclass
class ChangeBatch:
    """Changelog rows of whole transactions, in binlog order, committed together."""

    rows: list[ChangeRow] = field(default_factory=list)

    def extend(self, rows: list[ChangeRow]) -> None:
        self.rows.extend(rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[ChangeRow]:
        return iter(self.rows)
