"""Reads the snapshot splits, `parallelism` at a time, and records them as they finish.

Two kinds of slot run this loop. While Spark starts (seconds: a JVM), the driver's own
threads read splits over their own connections, a few at a time (a plan that one Spark job
would carry whole, or any plan on a local master of up to DRIVER_LANES, is read this way
entirely, and Spark never starts). Once Spark is up,
driver threads each submit one-partition Spark jobs, side by side on the executors. A job
carries about TASK_ROWS rows (less near the end, so that no slot idles) over one source
connection: a Spark job costs more than reading a default chunk. Every read commits to the
target on its own; the driver records a job's splits when it returns, and a crash loses at
most the splits in flight: a rerun adopts whatever the target committed. Each slot owns one
binlog server id for its splits' backfill reads.
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from sluice.errors import SchemaDrift, SluiceError
from sluice.event.snapshot_split import SnapshotSplit, SplitResult, SplitTask
from sluice.runtime.progress import SnapshotProgress
from sluice.runtime.run_context import RunContext
from sluice.sink import target_values
from sluice.snapshot.snapshot_split_assigner import SnapshotAssignerState
from sluice.snapshot.split_reader import read_splits

if TYPE_CHECKING:
    from pyspark import SparkContext

log = logging.getLogger(__name__)


TASK_ROWS = 524_288  # measured: a job costs about 0.1 s besides its rows (task setup, connections)
DRIVER_ROWS = 262_144  # read by a driver thread over one pair of connections: a stop is heard between
# On a local master, the lanes the driver's threads carry without Spark: each lane's Python
# took about a third of a core at the pipe's pace (5,000,000 rows at parallelism 2: 5.2 CPU-s
# in 17 s), so one interpreter's GIL carries about four before it binds.
DRIVER_LANES = 4


def splits_per_job(chunk_size: int, rows: int = TASK_ROWS) -> int:
    return max(1, rows // max(chunk_size, 1))


class PendingSplits:
    """The splits not yet handed out, taken a job's worth at a time by the slots."""

    def __init__(self, splits: list[SnapshotSplit], per_job: int, slots: int) -> None:
        self._splits = collections.deque(splits)
        self._lock = threading.Lock()
        self._per_job = per_job
        self._least = max(1, self._per_job // 8)  # smaller jobs would be mostly a job's own cost
        self._slots = slots

    def take(self) -> list[SnapshotSplit]:
        """Splits of one table: a job's worth, but near the end a share of what is left, so
        that the slots finish together."""
        with self._lock:
            wanted = max(self._least, min(self._per_job, len(self._splits) // (2 * self._slots)))
            taken: list[SnapshotSplit] = []
            while self._splits and len(taken) < wanted:
                if taken and self._splits[0].table_id != taken[0].table_id:
                    break
                taken.append(self._splits.popleft())
            return taken


class SplitReading:
    """Reads the remaining splits of `state`: on Spark, or in this process while Spark
    starts. The splits of `replacing` tables replace their key ranges in the target
    (snapshot/range_replacement). A finished split goes to `on_split_finished`; a table
    whose columns changed meanwhile (a split read refused to mix two schemas) to
    `on_table_changed`, which defers its unfinished splits while the other tables go on."""

    def __init__(
        self,
        context: RunContext,
        state: SnapshotAssignerState,
        progress: SnapshotProgress,
        replacing: set[str],
        on_split_finished: Callable[[SplitResult], None],
        on_table_changed: Callable[[str], None],
    ) -> None:
        self.context, self.state, self.progress, self.replacing = context, state, progress, replacing
        self.on_split_finished, self.on_table_changed = on_split_finished, on_table_changed
        self._lock = threading.Lock()
        self._failures: list[BaseException] = []

    def read(self, sc: SparkContext | None, until: Callable[[], bool] = lambda: False) -> None:
        """Reads on Spark (`sc`) or, with `sc` None, here until `until()` says to hand over.
        Once the run is stopping no new job starts, and the running ones finish and are recorded."""
        definition = self.context.definition
        slots = min(definition.parallelism, max(len(self.state.remaining), 1))
        per_job = splits_per_job(definition.source.chunk_size, TASK_ROWS if sc is not None else DRIVER_ROWS)
        pending = PendingSplits(list(self.state.remaining), per_job, slots)
        self._failures = []
        workers = [
            threading.Thread(
                target=self._worker, args=(slot, sc, pending, until), name=f"split-reader-{slot}", daemon=True
            )
            for slot in range(slots)
        ]
        for thread in workers:
            thread.start()
        for thread in workers:
            thread.join()
        if self._failures:
            raise task_failure(self._failures[0])

    def _worker(self, slot: int, sc: SparkContext | None, pending: PendingSplits, until: Callable[[], bool]) -> None:
        source, state = self.context.definition.source, self.state
        server_id = source.server_ids.snapshot_reader(slot)
        while not self._failures and not self.context.stopping.is_set() and not until():
            splits = pending.take()
            if not splits:
                return
            if splits[0].split_id in state.deferred:
                continue
            tasks = [
                SplitTask(
                    s,
                    state.tables[s.table_id],
                    self.context.endpoint,
                    server_id,
                    source.fetch_size,
                    s.table_id in self.replacing,
                )
                for s in splits
            ]
            try:
                self._write(sc, tasks)
            except BaseException as exc:  # noqa: BLE001 - reported by the driver thread in read()
                changed = SchemaDrift.of(exc)
                if changed is None:
                    self._failures.append(exc)
                    return
                with self._lock:
                    if changed not in {state.splits_table(i) for i in state.deferred}:
                        self.on_table_changed(changed)

    def _write(self, sc: SparkContext | None, tasks: list[SplitTask]) -> None:
        sink = self.context.sink
        if sc is None:
            sink.write_splits_now(tasks, read_splits, self._record)
            return
        sc.setJobDescription(f"snapshot splits {tasks[0].split.split_id} .. {tasks[-1].split.split_id}")
        for result in sink.write_snapshot_job(sc, tasks, read_splits):
            self._record(result)

    def _record(self, result: SplitResult) -> None:
        with self._lock:
            self.on_split_finished(result)
            target_values.count_executors(result)
            self.progress.split_finished(SnapshotAssignerState.splits_table(result.split_id), result.rows)


def task_failure(exc: BaseException) -> SluiceError:
    """Turns a failed Spark job into the task's own error message (one clear line)."""
    if isinstance(exc, SluiceError):
        return exc
    text = str(exc)
    for marker in ("sluice.errors.SourceError: ", "sluice.errors.SinkError: ", "sluice.errors.SluiceError: "):
        if marker in text:
            return SluiceError(text.split(marker, 1)[1].splitlines()[0])
    lines = [line for line in text.splitlines() if line.strip()]
    tail = next(
        (line for line in reversed(lines) if "Error" in line or "Exception" in line), lines[-1] if lines else ""
    )
    return SluiceError(f"a snapshot task failed: {tail.strip()}")
