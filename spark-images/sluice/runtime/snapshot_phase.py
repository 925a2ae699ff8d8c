"""Runs the snapshot splits as Spark tasks and records them as they finish.

`parallelism` driver threads each submit one-partition Spark jobs, side by side on the
executors. A job carries a few splits (about TASK_ROWS rows; fewer near the end so no
slot idles), read over one source connection: a Spark job and a connection cost more than
reading a default chunk. Every split commits to the target on its own, and the driver
records a job's splits when it returns; a crash loses at most the splits in flight, and a
rerun adopts whatever the target committed. Each thread owns one binlog server id for its
splits' backfill reads.
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable

from pyspark import SparkContext

from sluice.errors import SchemaDrift, SluiceError
from sluice.pipeline.definition import PipelineDefinition
from sluice.runtime.progress import SnapshotProgress
from sluice.sink.base import Sink
from sluice.snapshot.snapshot_split import SnapshotSplit, SplitResult, SplitTask
from sluice.snapshot.snapshot_split_assigner import SnapshotAssignerState
from sluice.snapshot.split_reader import read_splits
from sluice.source.connection import SourceEndpoint

log = logging.getLogger(__name__)


TASK_ROWS = 262_144  # measured: a job costs about 0.25 s besides its rows (connections, PG auth, task setup)


def splits_per_job(chunk_size: int) -> int:
    return max(1, TASK_ROWS // max(chunk_size, 1))


class PendingSplits:
    """The splits not yet handed out, taken a job's worth at a time by the driver threads."""

    def __init__(self, splits: list[SnapshotSplit], chunk_size: int, slots: int) -> None:
        self._splits = collections.deque(splits)
        self._lock = threading.Lock()
        self._per_job = splits_per_job(chunk_size)
        self._slots = slots

    def take(self) -> list[SnapshotSplit]:
        """Splits of one table: about TASK_ROWS rows, but at most a share of what is left."""
        with self._lock:
            wanted = max(1, min(self._per_job, len(self._splits) // (2 * self._slots)))
            taken: list[SnapshotSplit] = []
            while self._splits and len(taken) < wanted:
                if taken and self._splits[0].table_id != taken[0].table_id:
                    break
                taken.append(self._splits.popleft())
            return taken


def run_snapshot_phase(
    sc: SparkContext,
    definition: PipelineDefinition,
    endpoint: SourceEndpoint,
    sink: Sink,
    state: SnapshotAssignerState,
    on_split_finished: Callable[[SplitResult], None],
    stopping: threading.Event,
    on_table_changed: Callable[[str], None],
) -> None:
    """Reads the remaining splits; once `stopping` is set, no new Spark job starts and the
    running ones finish and are recorded. A table whose columns changed meanwhile (a split
    read refused to mix two schemas) is handed to `on_table_changed`, which defers its
    unfinished splits; the other tables go on."""
    progress = SnapshotProgress(len(state.splits), len(state.finished), state.rows_done)
    progress.resuming()
    progress.show()
    lock = threading.Lock()
    failures: list[BaseException] = []
    source = definition.source

    slots = min(definition.parallelism, max(len(state.remaining), 1))
    pending = PendingSplits(list(state.remaining), source.chunk_size, slots)

    def worker(slot: int) -> None:
        server_id = source.server_ids.pick(slot)
        while not failures and not stopping.is_set():
            splits = pending.take()
            if not splits:
                return
            if splits[0].split_id in state.deferred:
                continue
            tasks = [SplitTask(s, state.tables[s.table_id], endpoint, server_id, source.fetch_size) for s in splits]
            try:
                sc.setJobDescription(f"snapshot splits {splits[0].split_id} .. {splits[-1].split_id}")
                results = sink.write_snapshot_job(sc, tasks, read_splits)
            except BaseException as exc:  # noqa: BLE001 - reported by the driver thread below
                changed = exc.table_id if isinstance(exc, SchemaDrift) else SchemaDrift.in_text(str(exc))
                if changed is None:
                    failures.append(exc)
                    return
                with lock:
                    if changed not in {state.splits_table(i) for i in state.deferred}:
                        on_table_changed(changed)
                continue
            with lock:
                for result in results:
                    on_split_finished(result)
                    progress.split_finished(result.rows)

    workers = [
        threading.Thread(target=worker, args=(slot,), name=f"split-reader-{slot}", daemon=True) for slot in range(slots)
    ]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    progress.show(final=True)
    if failures:
        raise task_failure(failures[0])
    if state.remaining:
        progress.stopped()


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
