"""The binlog step of a run: the binlog split (from the snapshot's watermarks, the startup
mode, or the state), a finished bounded run read on to now, then the single binlog reader
streaming into the sink, schema changes paused for and decided, verification beside it."""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any

from sluice.binlog.binlog_split import BinlogSplit
from sluice.binlog.startup_offset import check_offset_available, startup_offset
from sluice.runtime.binlog_streaming import (
    BinlogRun,
    BinlogSettings,
    collector_for_rows,
    resumes_by_gtid,
    run_binlog_phase,
    target_needs,
)
from sluice.runtime.pipeline_spark import PipelineSpark
from sluice.runtime.progress import BinlogProgress
from sluice.runtime.run_context import RunContext
from sluice.runtime.schema_change_handler import SchemaChangeHandler
from sluice.runtime.table_join import TablesJoining
from sluice.sink.base import SinkWriter
from sluice.snapshot.snapshot_split_assigner import SnapshotAssignerState
from sluice.source.connection import connect, current_offset, executed_gtids

if TYPE_CHECKING:
    from sluice.verify.online import OnlineWork, RequestDesk


class BinlogStep:
    def __init__(
        self,
        context: RunContext,
        spark: PipelineSpark,
        approvals: Callable[[], Collection[str]],
        requests: RequestDesk | None,
    ) -> None:
        """`approvals`: the `manual` schema changes approved so far; `requests`: verification
        and resnapshots to carry out while streaming (a CdcPipeline's spec)."""
        self.context, self.spark, self.approvals, self.requests = context, spark, approvals, requests
        self.joining = TablesJoining(context)

    def run(self, snapshot: SnapshotAssignerState | None) -> None:
        if self.context.sink.writes_changes_with_spark:
            self.spark.session()
        writer = self.context.sink.writer()
        progress = BinlogProgress(self.context.store.record_lag, self.context.metrics)
        changes = SchemaChangeHandler(
            self.context,
            writer,
            progress,
            self.approvals,
            self._after_schema_change,
            self._reread if self.context.sink.replaces_key_ranges else None,
        )
        conn = connect(self.context.endpoint)
        try:
            split = self._binlog_split(conn, snapshot)
            committed = writer.committed_binlog_offset()
            if committed is not None and committed.is_after(split.offset):
                split.advance(committed)
            changes.finish_after_crash(split, committed)
            self._after_schema_change(split)
            self._catch_up_a_finished_bounded_run(conn, split)
            if not resumes_by_gtid(split, self.context.state.stop_at):
                check_offset_available(conn, split.offset)
        finally:
            conn.close()
        online = self._online_work()
        try:
            with collector_for_rows():
                run_binlog_phase(self._binlog_run(split, writer, progress, changes))
        finally:
            if online is not None:
                online.stop()
            writer.close()
            progress.show(final=True)

    def _binlog_run(
        self, split: BinlogSplit, writer: SinkWriter, progress: BinlogProgress, changes: SchemaChangeHandler
    ) -> BinlogRun:
        context, source = self.context, self.context.definition.source
        settings = BinlogSettings(
            server_id=source.server_ids.binlog_reader,
            heartbeat_seconds=min(source.heartbeat_seconds, 1.0),
            batch_rows=int(context.definition.sink.options.get("sink.batch-size", 5000)),
            max_batch_delay=context.sink.max_batch_delay,
            commits_when_quiet=context.sink.commits_when_quiet,
            target_needs=target_needs(context.sink, context.definition.routing),
        )
        return BinlogRun(
            context.endpoint,
            settings,
            split,
            context.state.tables or {},
            writer,
            context.stopping,
            self._binlog_committed,
            progress.committed,
            stop_at=context.state.stop_at,
            skip_before_millis=source.startup.timestamp_millis if source.startup.mode == "timestamp" else 0,
            captured=source.tables.selects,
            on_schema_change=changes.handle,
            targets=context.state.targets,
            migrations=context.state.migrations if source.online_schema_changes else None,
            unread_tables=context.state.unread,
            on_reconnect=progress.reconnected,
        )

    def _online_work(self) -> OnlineWork | None:
        """Verification and resnapshots as the spec asks, beside the binlog reader (the jdbc
        and lakehouse sinks)."""
        from sluice.verify.online import OnlineWork
        from sluice.verify.verifier import VerifiedSink

        if self.requests is None or not isinstance(self.context.sink, VerifiedSink):
            return None
        online = OnlineWork(self.context.definition, self.context.sink, self.context.endpoint, self.requests)
        online.start()
        return online

    def _catch_up_a_finished_bounded_run(self, conn: Any, split: BinlogSplit) -> None:
        """A snapshot-mode run that reached its end left the target a copy as of then: run
        again, it reads the binlog on to now and ends a copy as of now (the changes made
        while nothing ran, deletes included), without reading the snapshot again."""
        stop_at = self.context.state.stop_at
        if stop_at is None or split.offset.is_before(stop_at):
            return
        now = current_offset(conn)
        if now.is_after(stop_at):
            self.context.state.stop_at = executed_gtids(conn, now)
            self.context.store.save(self.context.state)
            print(f"snapshot: the target is a copy as of {stop_at}; reading the binlog on to {now}", file=sys.stderr)

    def _binlog_split(self, conn: Any, snapshot: SnapshotAssignerState | None) -> BinlogSplit:
        if self.context.state.binlog is not None:
            split = self.context.state.binlog
            if snapshot is not None and self.context.state.adding_tables:
                # Tables added to a streaming pipeline: the reader goes on from where it is,
                # which is before their high watermarks, so their emit rule holds.
                split.watermarks.update(snapshot.binlog_split().watermarks)
                self.context.state.adding_tables = []
                self.context.store.save(self.context.state)
            return split
        if snapshot is not None:
            split = snapshot.binlog_split()
            if not self.context.definition.source.startup.streams:
                # A snapshot-only run ends consistent as of now: everything committed before
                # this position is in the target when it exits.
                self.context.state.stop_at = current_offset(conn)
        else:
            source = self.context.definition.source
            split = BinlogSplit(
                startup_offset(conn, source.startup, self.context.endpoint, source.server_ids.binlog_reader)
            )
        split.offset = executed_gtids(conn, split.offset)
        self.context.state.binlog = split
        self.context.store.save(self.context.state)
        return split

    def _binlog_committed(self, split: BinlogSplit, entered: list[str]) -> None:
        self.context.state.binlog = split
        if split.watermarks and not entered:
            # Until every table is past its watermarks the state holds the whole plan: a
            # commit records its position instead of rewriting it all.
            self.context.store.record_binlog_offset(split.offset)
            return
        if not split.watermarks and self.context.state.snapshot is not None:
            snapshot, self.context.state.snapshot = self.context.state.snapshot, None
            self.context.state.snapshot_summary = snapshot.summary()
        self.context.store.save(self.context.state)

    def _reread(self, tables: Sequence[str]) -> int:
        """Reads tables again into the target, range by range, as of its position."""
        from sluice.verify.verifier import Verifier

        context = self.context
        with Verifier(context.definition, context.sink, context.endpoint, state=context.state) as verifier:  # type: ignore[arg-type]
            return verifier.resnapshot(list(tables))

    def _after_schema_change(self, split: BinlogSplit) -> bool:
        """What waited on a schema change; True if the binlog reader must start again."""
        joined = self.joining.capture_joined(split)
        self.joining.reread_deferred(split)
        return joined
