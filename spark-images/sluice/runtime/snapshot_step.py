"""The snapshot step of a run: the plan (made once, saved before any split is read), and the
splits read by the driver's threads while Spark starts, or instead of it, then by Spark's
executors, each split's end recorded as it finishes."""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING, Any

from sluice.event.snapshot_split import SplitResult
from sluice.failpoints import failpoint
from sluice.runtime.capture import capture_tables
from sluice.runtime.pipeline_spark import PipelineSpark
from sluice.runtime.progress import SnapshotProgress
from sluice.runtime.range_replacement import tables_to_replace
from sluice.runtime.run_context import RunContext
from sluice.snapshot.chunk_splitter import split_table
from sluice.snapshot.snapshot_split_assigner import SnapshotAssignerState
from sluice.source.connection import connect, current_offset

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)


class SnapshotStep:
    def __init__(self, context: RunContext, spark: PipelineSpark) -> None:
        self.context, self.spark = context, spark

    def plan(self, conn: Any) -> SnapshotAssignerState | None:
        """The saved plan, a new one, or None once the binlog split has dropped it."""
        if self.context.state.snapshot is not None:
            return self.context.state.snapshot
        if self.context.state.tables is not None:
            return None
        planned_at = current_offset(conn)  # before the schemas are read
        schemas = capture_tables(conn, self.context.definition.source, self.context.state)
        chunk_size = self.context.definition.source.chunk_size
        splits = [s for schema in schemas for s in split_table(conn, schema, chunk_size)]
        plan = SnapshotAssignerState.plan(schemas, splits, planned_at)
        self.save(plan)  # before any split is read: a rerun must read the same chunks
        log.info("snapshot plan: %d tables, %d splits", len(schemas), len(splits))
        return plan

    def save(self, snapshot: SnapshotAssignerState) -> None:
        self.context.state.snapshot = snapshot
        self.context.store.save(self.context.state)

    def run(self, snapshot: SnapshotAssignerState) -> None:
        from sluice.runtime.split_reading import SplitReading

        def finished(result: SplitResult) -> None:
            snapshot.record(result.split_id, result.high_watermark, result.rows)
            # A record of the split, not the whole plan again.
            self.context.store.record_split_finished(result.split_id, snapshot.finished[result.split_id])
            failpoint(f"snapshot:split-finished:{len(snapshot.finished)}")

        def table_changed(table_id: str) -> None:
            snapshot.adopt_committed(self.context.sink.committed_splits())  # what the failed job's splits committed
            deferred = snapshot.defer(table_id)
            self.save(snapshot)
            sys.stderr.write(
                f"snapshot: {table_id} changed while it was read; its {len(deferred)} unfinished splits are read "
                "again once the binlog reader has applied the change\n"
            )

        conn = connect(self.context.endpoint)
        try:
            replacing = tables_to_replace(self.context.sink, conn, snapshot)
        finally:
            conn.close()
        progress = SnapshotProgress(
            len(snapshot.splits), len(snapshot.finished), snapshot.rows_done, self.context.metrics
        )
        progress.resuming()
        progress.show()

        reading = SplitReading(self.context, snapshot, progress, replacing, finished, table_changed)
        try:
            if self.spark.driver_reads:
                # Read here, alone or while Spark starts beside the driver.
                alone = self._driver_reads_alone(len(snapshot.remaining))
                if alone:
                    progress.note(alone)
                reading.read(None, until=(lambda: False) if alone else self.spark.start().is_ready)
            if snapshot.remaining and not self.context.stopping.is_set():
                sc = self.spark.session().sparkContext
                progress.note(f"Spark is up: executors read the {len(snapshot.remaining)} splits left")
                reading.read(sc)
        finally:
            progress.show(final=True)
            self.save(snapshot)  # the journal folded into the document
        if snapshot.remaining:
            progress.stopped()

    def _driver_reads_alone(self, remaining: int) -> str | None:
        """Why the driver's own threads read every split and Spark never starts, or None.

        A plan one Spark job would carry whole gains nothing from Spark. Nor does a local
        master up to DRIVER_LANES: its executors are processes on this same machine, as
        many as the driver's threads, and a JVM starting beside the reads only takes their
        CPU (measured on two cores, 5,000,000 rows at parallelism 2: 0.72x the pipe end to
        end with the JVM starting, 0.92x without it)."""
        from sluice.runtime.split_reading import DRIVER_LANES, splits_per_job

        splits = f"{remaining} split{'' if remaining == 1 else 's'}"
        if remaining <= splits_per_job(self.context.definition.source.chunk_size):
            return f"{splits}, less than one Spark job: read by the driver, Spark does not start"
        parallelism = self.context.definition.parallelism
        if (self.context.master or "").startswith("local") and parallelism <= DRIVER_LANES:
            return (
                f"{splits}, read by the driver's {parallelism} thread{'' if parallelism == 1 else 's'}: local Spark "
                "would add no cores, it does not start"
            )
        return None
