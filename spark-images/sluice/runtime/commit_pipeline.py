"""The binlog phase's commits, one behind the other: a batch is prepared (folded, made ready
to send) while the target may still commit the batch before, started once that commit is
done, and recorded (the split's state, then the progress) once the target is done with it,
so the record never runs ahead of the target."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping

from sluice.binlog.binlog_split import BinlogSplit
from sluice.event.change_fold import kind_counts
from sluice.event.row_change import ChangeBatch, RowKind
from sluice.sink.base import COMMITTED, SinkWriter
from sluice.source.offset import BinlogOffset

OnCommit = Callable[[BinlogSplit, list[str]], None]  # (split, tables that entered pure binlog phase)
# (offset, rows committed by table and kind, lag in seconds, seconds the commit held the reader up)
OnProgress = Callable[[BinlogOffset, Mapping[tuple[str, RowKind], int], float, float | None], None]


class CommitPipeline:
    def __init__(self, writer: SinkWriter, split: BinlogSplit, on_commit: OnCommit, on_progress: OnProgress) -> None:
        self.writer, self.split = writer, split
        self.on_commit, self.on_progress = on_commit, on_progress
        self._record: Callable[[], None] | None = None  # records the commit the target may still run
        self._pending = COMMITTED  # that commit

    @property
    def in_flight(self) -> bool:
        return self._record is not None

    def busy(self) -> bool:
        """Whether the target still runs the commit in flight."""
        return self._record is not None and not self._pending.ready()

    def commit(self, batch: ChangeBatch, end: BinlogOffset, lag: Callable[[], float]) -> None:
        """Starts committing `batch` up to `end`, once the commit before it is done; `lag`
        gives the lag once the target is done with it."""
        started = time.monotonic()
        start = self.writer.prepare_changes(batch, end)  # while the target may still commit the batch before
        writing = time.monotonic() - started
        self.settle()
        split = self.split
        entered, changes = split.advance(end), kind_counts(batch.rows)
        started = time.monotonic()
        pending = self._pending = start(bool(entered) and not split.watermarks)  # drop_split_records
        writing += time.monotonic() - started

        def record() -> None:
            waited = time.monotonic()
            pending.wait()
            took = writing + time.monotonic() - waited  # what the commit held the reader up for
            self.on_commit(split, entered)
            self.on_progress(end, changes, lag(), took)

        self._record = record

    def settle(self) -> None:
        """Waits for the commit in flight, then records it."""
        if self._record is not None:
            record, self._record = self._record, None
            record()

    def abandon(self) -> None:
        """Failing: the commit in flight is left unrecorded, but not running on."""
        if self._record is not None:
            self._record = None
            with contextlib.suppress(Exception):  # what failed is on its way up already
                self._pending.wait()
