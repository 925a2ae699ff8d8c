"""Runs the snapshot splits as Spark tasks and records each one as it finishes.

Each split is its own one-partition Spark job, submitted from one of `parallelism` driver
threads: Spark runs them side by side on its executors, and the driver learns of each
finished split the moment it commits, so a crash loses at most the splits in flight.
Each thread owns one binlog server id for its splits' backfill reads.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

from pyspark import SparkContext

from sluice.errors import SluiceError
from sluice.pipeline.definition import PipelineDefinition
from sluice.runtime.progress import SnapshotProgress
from sluice.sink.base import Sink
from sluice.snapshot.snapshot_split import SnapshotSplit
from sluice.snapshot.snapshot_split_assigner import SnapshotAssignerState
from sluice.snapshot.split_reader import SplitResult, SplitTask, run_split
from sluice.source.connection import SourceEndpoint

log = logging.getLogger(__name__)


def execute_split(task: SplitTask, sink: Sink) -> SplitResult:
    """Runs on an executor: read the split, write it, report its high watermark."""
    writer = sink.writer()
    try:
        return run_split(task, writer)
    finally:
        writer.close()


def run_snapshot_phase(
    sc: SparkContext,
    definition: PipelineDefinition,
    endpoint: SourceEndpoint,
    sink: Sink,
    state: SnapshotAssignerState,
    on_split_finished: Callable[[SplitResult], None],
) -> None:
    pending: queue.Queue[SnapshotSplit] = queue.Queue()
    for split in state.remaining:
        pending.put(split)
    progress = SnapshotProgress(len(state.splits), len(state.finished), state.rows_done)
    progress.resuming()
    progress.show()
    lock = threading.Lock()
    failures: list[BaseException] = []
    source = definition.source

    def worker(slot: int) -> None:
        server_id = source.server_ids.pick(slot)
        while not failures:
            try:
                split = pending.get_nowait()
            except queue.Empty:
                return
            task = SplitTask(split, state.tables[split.table_id], endpoint, server_id, source.fetch_size)
            try:
                sc.setJobDescription(f"snapshot split {split.split_id}")
                (result,) = sc.parallelize([task], 1).map(lambda t: execute_split(t, sink)).collect()
            except BaseException as exc:  # noqa: BLE001 - reported by the driver thread below
                failures.append(exc)
                return
            with lock:
                on_split_finished(result)
                progress.split_finished(result.rows)

    workers = [
        threading.Thread(target=worker, args=(slot,), name=f"split-reader-{slot}", daemon=True)
        for slot in range(min(definition.parallelism, max(pending.qsize(), 1)))
    ]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    progress.show(final=True)
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
