"""What every sink does: a driver-side part (prepare, read progress) and an executor-side writer.

Sinks are built from plain configuration so Spark can ship them to executors; they open
connections lazily, on the side that uses them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence

from sluice.snapshot.snapshot_split import SnapshotSplit
from sluice.source.offset import BinlogOffset
from sluice.source.row_decoding import Row
from sluice.source.schema import TableSchema


class SinkWriter(ABC):
    """Executor side. One writer per task; closed when the task ends."""

    @abstractmethod
    def write_snapshot_split(
        self, schema: TableSchema, split: SnapshotSplit, rows: Sequence[Row], high_watermark: BinlogOffset
    ) -> None:
        """Writes the chunk as of its high watermark, and records the split as finished with
        it, atomically where the sink can (so a crash never leaves one without the other)."""

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
