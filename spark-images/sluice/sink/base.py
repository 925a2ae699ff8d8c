"""What every sink does: a driver-side part (prepare, read progress) and an executor-side writer.

Sinks are built from plain configuration so Spark can ship them to executors; they open
connections lazily, on the side that uses them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from sluice.binlog.row_change import RowKind
from sluice.snapshot.snapshot_split import SnapshotSplit
from sluice.source.offset import BinlogOffset
from sluice.source.row_decoding import Row
from sluice.source.schema import TableSchema


@dataclass
class ChangeBatch:
    """Changelog rows of whole transactions, in binlog order, committed together."""

    rows: list[tuple[TableSchema, RowKind, Row, int]] = field(default_factory=list)

    def add(self, schema: TableSchema, kind: RowKind, row: Row, timestamp: int) -> None:
        self.rows.append((schema, kind, row, timestamp))

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[tuple[TableSchema, RowKind, Row, int]]:
        return iter(self.rows)


class SinkWriter(ABC):
    """Executor side. One writer per task; closed when the task ends."""

    @abstractmethod
    def write_snapshot_split(
        self, schema: TableSchema, split: SnapshotSplit, rows: Sequence[Row], high_watermark: BinlogOffset
    ) -> None:
        """Writes the chunk as of its high watermark, and records the split as finished with
        it, atomically where the sink can (so a crash never leaves one without the other)."""

    @abstractmethod
    def write_changes(self, batch: ChangeBatch, end: BinlogOffset, drop_split_records: bool) -> None:
        """Writes a batch and records `end` as where the binlog reader resumes, atomically
        where the sink can. `drop_split_records`: every table is in pure binlog phase, so
        the per-split records can go."""

    def committed_binlog_offset(self) -> BinlogOffset | None:
        """Where the binlog reader resumes according to the target (transactional sinks)."""
        return None

    def close(self) -> None:  # noqa: B027 - optional hook
        pass


class Sink(ABC):
    """Driver side."""

    transactional: bool = False

    @abstractmethod
    def prepare(self, schemas: Sequence[TableSchema]) -> None:
        """Creates what the pipeline writes into (target tables, offsets table)."""

    def committed_splits(self) -> Mapping[str, BinlogOffset]:
        """Splits the target has committed, with their high watermarks (transactional sinks)."""
        return {}

    @abstractmethod
    def writer(self) -> SinkWriter:
        """A writer for an executor task."""
