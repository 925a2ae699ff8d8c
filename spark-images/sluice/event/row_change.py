"""Row changes read from the binlog, and the changelog rows they become."""

from __future__ import annotations

import enum
from collections.abc import Iterable
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

    def one_side(self, schema: TableSchema, kind: RowKind) -> ChangeRow:
        """Half of an update, as a delete of its before image or an insert of its after
        image: what the emit rule keeps when the snapshot already holds the other half."""
        row = self.before if kind is RowKind.DELETE else self.after
        return ChangeRow(schema, kind, row, self.timestamp, self.offset)  # type: ignore[arg-type]


_INSERT, _DELETE = RowKind.INSERT, RowKind.DELETE
_UPDATE_BEFORE, _UPDATE_AFTER = RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER


def changelog(changes: Iterable[RowChange], schema: TableSchema) -> list[ChangeRow]:
    """The changes as changelog rows, in order: +I, -U/+U, or -D each. (One loop over the
    changes, not a call per change, and rows made as tuples, not through the named tuple's
    constructor, a Python call: the binlog phase runs this for every row it reads.)"""
    rows: list[ChangeRow] = []
    append, new, row = rows.append, tuple.__new__, ChangeRow
    for _, kind, before, after, offset, timestamp in changes:
        if kind is _INSERT:
            append(new(row, (schema, _INSERT, after, timestamp, offset)))
        elif kind is _DELETE:
            append(new(row, (schema, _DELETE, before, timestamp, offset)))
        else:
            append(new(row, (schema, _UPDATE_BEFORE, before, timestamp, offset)))
            append(new(row, (schema, _UPDATE_AFTER, after, timestamp, offset)))
    return rows
