"""Row changes read from the binlog, and the changelog kinds they become."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from sluice.source.offset import BinlogOffset
from sluice.source.row_decoding import Row


class RowKind(str, enum.Enum):
    """Flink's changelog kinds: an update is a retraction (-U) and an addition (+U)."""

    INSERT = "+I"
    UPDATE_BEFORE = "-U"
    UPDATE_AFTER = "+U"
    DELETE = "-D"


@dataclass(frozen=True)
class RowChange:
    """One row of a rows event. `offset` is where the event starts, with the row's index."""

    table_id: str
    kind: RowKind  # INSERT, UPDATE_AFTER (carrying `before`) or DELETE
    before: Row | None
    after: Row | None
    offset: BinlogOffset
    timestamp: int  # seconds since the epoch, from the event header

    def changelog(self) -> list[tuple[RowKind, Row]]:
        """The change as changelog rows: +I, -U/+U, or -D."""
        if self.kind is RowKind.INSERT:
            return [(RowKind.INSERT, self.after)]  # type: ignore[list-item]
        if self.kind is RowKind.DELETE:
            return [(RowKind.DELETE, self.before)]  # type: ignore[list-item]
        return [(RowKind.UPDATE_BEFORE, self.before), (RowKind.UPDATE_AFTER, self.after)]  # type: ignore[list-item]
