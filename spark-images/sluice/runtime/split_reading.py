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
from sluice.pipeline.definition import PipelineDefinition
from sluice.runtime.progress import SnapshotProgress
from sluice.sink import target_values
from sluice.sink.base import Sink
from sluice.snapshot.snapshot_split_assigner import SnapshotAssignerState
from sluice.snapshot.split_reader import read_splits
from sluice.source.endpoint import SourceEndpoint

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


def run_snapshot_phase(
    sc: SparkContext | None,
    definition: PipelineDefinition,
    endpoint: SourceEndpoint,
    sink: Sink,
    state: SnapshotAssignerState,
    on_split_finished: Callable[[SplitResult], None],
    stopping: threading.Event,
    on_table_changed: Callable[[str], None],
    progress: SnapshotProgress,
    replacing: set[str],
    until: Callable[[], bool] = lambda: False,
) -> None:
    """Reads the remaining splits, on Spark (`sc`) or, with `sc` None, in this process until
    `until()` says to hand over. The splits of `replacing` tables replace their key ranges in
    the target (snapshot/range_replacement). Once `stopping` is set no new job starts, and the running
    ones finish and are recorded. A table whose columns changed meanwhile (a split read
    refused to mix two schemas) is handed to `on_table_changed`, which defers its
    unfinished splits; the other tables go on."""
    lock = threading.Lock()
    failures: list[BaseException] = []
    source = definition.source
    slots = min(definition.parallelism, max(len(state.remaining), 1))
    per_job = splits_per_job(source.chunk_size, TASK_ROWS if sc is not None else DRIVER_ROWS)
    pending = PendingSplits(list(state.remaining), per_job, slots)

    def record(result: SplitResult) -> None:
        with lock:
            on_split_finished(result)
            target_values.count_executors(result)
            progress.split_finished(SnapshotAssignerState.splits_table(result.split_id), result.rows)

    def write(tasks: list[SplitTask]) -> None:
        if sc is None:
            sink.write_splits_now(tasks, read_splits, record)
            return
        sc.setJobDescription(f"snapshot splits {tasks[0].split.split_id} .. {tasks[-1].split.split_id}")
        for result in sink.write_snapshot_job(sc, tasks, read_splits):
            record(result)

    def worker(slot: int) -> None:
        server_id = source.server_ids.snapshot_reader(slot)
        while not failures and not stopping.is_set() and not until():
            splits = pending.take()
            if not splits:
                return
            if splits[0].split_id in state.deferred:
                continue
            try:
                write(
                    [
                        SplitTask(
                            s, state.tables[s.table_id], endpoint, server_id, source.fetch_size, s.table_id in replacing
                        )
                        for s in splits
                    ]
                )
            except BaseException as exc:  # noqa: BLE001 - reported by the driver thread below
                changed = SchemaDrift.of(exc)
                if changed is None:
                    failures.append(exc)
                    return
                with lock:
                    if changed not in {state.splits_table(i) for i in state.deferred}:
                        on_table_changed(changed)

    workers = [
        threading.Thread(target=worker, args=(slot,), name=f"split-reader-{slot}", daemon=True) for slot in range(slots)
    ]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    if failures:
        raise task_failure(failures[0])


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
