"""The snapshot enumerator's state: the split plan and which splits are finished.

The plan is made once and saved before any split is read, so a rerun reads the same
chunks even if the table changed meanwhile; finished splits keep their high watermarks,
which the binlog split's emit rule needs. A table whose columns change while its splits
are read has its unfinished splits deferred: they are read again, with the new columns,
once the binlog reader has brought the target to them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sluice.binlog.binlog_split import BinlogSplit
from sluice.binlog.emit_rule import PENDING, TableWatermarks
from sluice.event.snapshot_split import SnapshotSplit
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
    planned_at: BinlogOffset | None = None  # before the schemas were read: no DDL after it is in them
    deferred: set[str] = field(default_factory=set)  # split ids to read again after a schema change

    @property
    def remaining(self) -> list[SnapshotSplit]:
        return [s for s in self.splits if s.split_id not in self.finished and s.split_id not in self.deferred]

    @property
    def is_finished(self) -> bool:
        return len(self.finished) + len(self.deferred) >= len(self.splits)

    def defer(self, table_id: str) -> list[str]:
        """The table changed during the snapshot: its unfinished splits wait for a reread."""
        ids = [s.split_id for s in self.splits if s.table_id == table_id and s.split_id not in self.finished]
        self.deferred.update(ids)
        return ids

    @staticmethod
    def splits_table(split_id: str) -> str:
        return split_id.rsplit(":", 1)[0]

    def deferred_splits(self, table_id: str) -> list[SnapshotSplit]:
        return [s for s in self.splits if s.table_id == table_id and s.split_id in self.deferred]

    @property
    def rows_done(self) -> int:
        return sum(f.rows for f in self.finished.values())

    def summary(self) -> dict[str, Any]:
        """What the state keeps of the plan once it is dropped: splits and rows, in all and per table."""
        finished = {split_id: done.rows for split_id, done in self.finished.items()}
        tables = per_table([split.table_id for split in self.splits], finished)
        return {"splits": len(self.splits), "rows": self.rows_done, "tables": tables}

    def record(self, split_id: str, high_watermark: BinlogOffset, rows: int) -> None:
        self.finished[split_id] = FinishedSplit(high_watermark, rows)
        self.deferred.discard(split_id)

    def binlog_split(self) -> BinlogSplit:
        """The binlog split that follows this finished snapshot: it starts at the smallest
        high watermark and carries each table's chunk boundaries and high watermarks."""
        watermarks: dict[str, TableWatermarks] = {}
        for table_id in self.tables:
            splits = sorted((s for s in self.splits if s.table_id == table_id), key=lambda s: s.index)
            watermarks[table_id] = TableWatermarks(
                boundaries=[s.start for s in splits[1:]],
                high_watermarks=[
                    self.finished[s.split_id].high_watermark if s.split_id in self.finished else PENDING for s in splits
                ],
            )
        starts = [hw for t in watermarks.values() for hw in t.high_watermarks if hw != PENDING]
        if self.deferred and self.planned_at is not None:  # the reader must see the DDL that deferred them
            starts.append(self.planned_at)
        start = min(starts)
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
            "plannedAt": self.planned_at.to_json() if self.planned_at else None,
            "deferred": sorted(self.deferred),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SnapshotAssignerState:
        return cls(
            tables={t: TableSchema.from_json(s) for t, s in data["tables"].items()},
            splits=[SnapshotSplit.from_json(s) for s in data["splits"]],
            finished={i: FinishedSplit.from_json(f) for i, f in data.get("finished", {}).items()},
            planned_at=BinlogOffset.from_json(data["plannedAt"]) if data.get("plannedAt") else None,
            deferred=set(data.get("deferred", [])),
        )

    @classmethod
    def plan(
        cls, schemas: Iterable[TableSchema], splits: Iterable[SnapshotSplit], planned_at: BinlogOffset | None = None
    ) -> SnapshotAssignerState:
        return cls(tables={s.table_id: s for s in schemas}, splits=list(splits), planned_at=planned_at)


def per_table(split_tables: Sequence[str], finished: Mapping[str, int]) -> dict[str, dict[str, int]]:
    """Per table, its splits, those finished and their rows: from each split's table and the
    finished splits' rows by split id (a plan, or its JSON form)."""
    tables: dict[str, dict[str, int]] = {}
    for table_id in split_tables:
        tables.setdefault(table_id, {"splits": 0, "done": 0, "rows": 0})["splits"] += 1
    for split_id, rows in finished.items():
        table = tables[SnapshotAssignerState.splits_table(split_id)]
        table["done"] += 1
        table["rows"] += rows
    return tables
