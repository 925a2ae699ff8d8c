"""The snapshot enumerator's state: the split plan and which splits are finished.

The plan is made once and saved before any split is read, so a rerun reads the same
chunks even if the table changed meanwhile; finished splits keep their high watermarks,
which the binlog split's emit rule needs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sluice.binlog.binlog_split import BinlogSplit
from sluice.binlog.emit_rule import TableWatermarks
from sluice.snapshot.snapshot_split import SnapshotSplit
from sluice.source.offset import BinlogOffset
from sluice.source.schema import TableSchema


@dataclass(frozen=True)
class FinishedSplit:
    high_watermark: BinlogOffset
    rows: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"hw": self.high_watermark.to_json(), "rows": self.rows}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FinishedSplit:
        return cls(BinlogOffset.from_json(data["hw"]), int(data.get("rows", 0)))


@dataclass
class SnapshotAssignerState:
    tables: dict[str, TableSchema]
    splits: list[SnapshotSplit]
    finished: dict[str, FinishedSplit] = field(default_factory=dict)

    @property
    def remaining(self) -> list[SnapshotSplit]:
        return [s for s in self.splits if s.split_id not in self.finished]

    @property
    def is_finished(self) -> bool:
        return len(self.finished) >= len(self.splits)

    @property
    def rows_done(self) -> int:
        return sum(f.rows for f in self.finished.values())

    def record(self, split_id: str, high_watermark: BinlogOffset, rows: int) -> None:
        self.finished[split_id] = FinishedSplit(high_watermark, rows)

    def binlog_split(self) -> BinlogSplit:
        """The binlog split that follows this finished snapshot: it starts at the smallest
        high watermark and carries each table's chunk boundaries and high watermarks."""
        watermarks: dict[str, TableWatermarks] = {}
        for table_id in self.tables:
            splits = sorted((s for s in self.splits if s.table_id == table_id), key=lambda s: s.index)
            watermarks[table_id] = TableWatermarks(
                boundaries=[s.start for s in splits[1:]],
                high_watermarks=[self.finished[s.split_id].high_watermark for s in splits],
            )
        start = min(hw for t in watermarks.values() for hw in t.high_watermarks)
        return BinlogSplit(BinlogOffset(start.file, start.pos, 0, start.gtid), watermarks)

    def adopt_committed(self, committed: Mapping[str, BinlogOffset]) -> list[str]:
        """Takes the target's committed splits as finished (the target is the truth)."""
        known = {s.split_id for s in self.splits}
        adopted = [i for i in committed if i in known and i not in self.finished]
        for split_id in adopted:
            self.finished[split_id] = FinishedSplit(committed[split_id])
        return adopted

    def to_json(self) -> dict[str, Any]:
        return {
            "tables": {t: s.to_json() for t, s in self.tables.items()},
            "splits": [s.to_json() for s in self.splits],
            "finished": {i: f.to_json() for i, f in self.finished.items()},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SnapshotAssignerState:
        return cls(
            tables={t: TableSchema.from_json(s) for t, s in data["tables"].items()},
            splits=[SnapshotSplit.from_json(s) for s in data["splits"]],
            finished={i: FinishedSplit.from_json(f) for i, f in data.get("finished", {}).items()},
        )

    @classmethod
    def plan(cls, schemas: Iterable[TableSchema], splits: Iterable[SnapshotSplit]) -> SnapshotAssignerState:
        return cls(tables={s.table_id: s for s in schemas}, splits=list(splits))
