"""The pipeline runner: what `sluice run` runs with local Spark, and what the Spark driver
runs on Kubernetes (runtime/kubernetes_driver.py), the same code with another state store.

Checks the source, makes or resumes the snapshot plan, runs the snapshot on Spark, then
hands over to the single binlog reader, keeping the state store current after every
finished split and every committed batch.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import signal
import sys
import threading
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sluice.binlog.binlog_split import BinlogSplit
from sluice.binlog.startup_offset import check_offset_available, startup_offset
from sluice.errors import DefinitionError, PositionPurged, SchemaDrift, SluiceError
from sluice.event.schema_change import DropTable, create_table_event
from sluice.event.snapshot_split import SplitResult, SplitTask
from sluice.failpoints import failpoint
from sluice.pipeline.definition import PipelineDefinition, load_definition
from sluice.route.routing import ROUTE_KEY, TRANSFORM_KEY, Routing
from sluice.runtime.binlog_phase import BinlogSettings, resumes_by_gtid, run_binlog_phase, target_needs
from sluice.runtime.pipeline_metrics import PipelineMetrics
from sluice.runtime.preflight import check_first_run
from sluice.runtime.progress import BinlogProgress, SnapshotProgress
from sluice.runtime.range_replacement import tables_to_replace
from sluice.runtime.schema_change_handler import SchemaChangeHandler
from sluice.sink.base import Sink
from sluice.sink.factory import create_sink
from sluice.snapshot.chunk_splitter import split_table
from sluice.snapshot.snapshot_split_assigner import SnapshotAssignerState
from sluice.snapshot.split_reader import read_splits, reads_onto
from sluice.source.checks import check_binlog_settings, check_privileges, check_select
from sluice.source.connection import connect, current_offset, executed_gtids
from sluice.source.schema import TableSchema, discover_tables, live_shape, read_table_schema
from sluice.state.pipeline_state import PipelineState
from sluice.state.state_store import StateStore
from sluice.state.target_records import TargetRecordedStore

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    from sluice.runtime.spark_start import SparkStart
    from sluice.verify.online import OnlineWork, RequestDesk

log = logging.getLogger(__name__)

SOURCE_ADDRESS = ("source.hostname", "source.port")
CAPTURE = ("source.tables", "source.tables.exclude")  # may change once the pipeline streams
JOIN_ATTEMPTS = 5  # reads of a table renamed into `tables` that may meet a DDL on it before one does not


class PipelineRunner:
    def __init__(
        self,
        definition: PipelineDefinition,
        store: StateStore,
        approvals: Callable[[], Collection[str]] | None = None,
        master: str | None = None,
        requests: RequestDesk | None = None,
        metrics: PipelineMetrics | None = None,
        preflight: bool = False,
    ) -> None:
        """`approvals` lists the `manual` schema changes approved so far (default: the
        definition's); `master` is local Spark's, None where spark-submit gave one;
        `requests`: verification and resnapshot requests to carry out while streaming
        (a CdcPipeline's spec); `metrics`: where progress is counted (served or not);
        `preflight`: a first run (no state in the store, none in the target) makes every
        check of `sluice check` before anything else, and stops on any error (PreflightFailed)."""
        self.definition = definition
        self.approvals = approvals or (lambda: definition.approved_schema_changes)
        self.master = master
        self.endpoint = definition.source.endpoint()
        self.sink: Sink = create_sink(definition)
        self.store = TargetRecordedStore(store, self.sink, definition.sink.name)
        self.state = PipelineState(definition.name, dict(definition.state_identity))
        self.requests = requests
        self.metrics = metrics or PipelineMetrics(definition.name)
        self.preflight = preflight
        self.stopping = threading.Event()
        self.signalled = False  # stopping is also set by the binlog phase as it ends
        self._spark: SparkStart | None = None
        self._capture_changed = False

    def run(self) -> None:
        """Runs until the pipeline is done or SIGTERM/SIGINT: then what is in flight (Spark
        jobs of snapshot splits, the binlog batch) is committed, and the run returns."""
        previous = self._install_signal_handlers()
        try:
            self._run()
        finally:
            self._restore_signal_handlers(previous)
            self._say_values_changed()

    def _say_values_changed(self) -> None:
        """How many values this process changed to fit the target, per column (sink/target_values)."""
        from sluice.sink import target_values

        if target_values.changed:
            columns: collections.Counter[str] = collections.Counter()
            for (table, column, _rule), n in target_values.changed.items():
                columns[f"{table}.{column}"] += n
            counts = ", ".join(f"{column} {n:,}" for column, n in sorted(columns.items()))
            sys.stderr.write(f"values changed to fit the target (the warnings say how): {counts}\n")

    def _run(self) -> None:
        loaded = self.store.load()
        if loaded is None and self.preflight:
            check_first_run(self.definition)
        self.state = loaded or self.state
        self._check_pipeline_identity()
        try:
            self._run_from_state()
        except PositionPurged as exc:
            if not self._read_the_snapshot_again(exc):
                raise
            self._run_from_state()

    def _count_snapshot_splits(self) -> None:
        """The snapshot's splits per table in the metrics: of the plan, or of the summary a
        finished one left (a run that resumes streaming still shows what its snapshot did)."""
        summary = self.state.snapshot.summary() if self.state.snapshot else self.state.snapshot_summary or {}
        self.metrics.snapshot_planned(summary.get("tables") or {})

    def _read_the_snapshot_again(self, purged: PositionPurged) -> bool:
        """The binlog the target's position needs is gone: a pipeline that takes a snapshot
        starts it afresh (its old records dropped), and each chunk replaces its key range,
        so the target ends exact: rows deleted meanwhile gone, no row twice. Once a run."""
        if not self.definition.source.startup.takes_snapshot or not self.sink.replaces_key_ranges:
            return False
        if self.state.binlog is None and self.state.snapshot is None:
            return False  # read afresh already
        where = self.state.binlog.offset if self.state.binlog is not None else "the snapshot's watermarks"
        log.warning("%s", purged)
        sys.stderr.write(
            f"snapshot: the binlog after {where} is no longer on the source: reading the snapshot again, "
            "each chunk replacing its key range in the target\n"
        )
        if not self.signalled:
            self.stopping.clear()
        fresh = PipelineState(self.definition.name, dict(self.definition.state_identity))
        fresh.revision = self.state.revision
        self.state = fresh
        self.sink.forget_commits()
        self.store.save(self.state)
        return True

    def _run_from_state(self) -> None:
        if self._snapshot_waits_for_spark():
            self._start_spark()  # its start overlaps the checks and the plan
        try:
            snapshot = self._check_and_plan()
            if snapshot is not None and snapshot.adopt_committed(self.sink.committed_splits()):
                self._save_snapshot(snapshot)
            self._count_snapshot_splits()
            if snapshot is not None:
                if not snapshot.is_finished:
                    self._run_snapshot(snapshot)
                if self.stopping.is_set():
                    return  # the next run resumes with the splits still to read
            if not self.sink.writes_changes_with_spark:
                self._stop_spark()  # one binlog reader needs no Spark
            self._run_binlog(snapshot)
        finally:
            self._stop_spark()

    def _check_and_plan(self) -> SnapshotAssignerState | None:
        """Checks the source and the target, and returns the snapshot still to read (planned
        now on a first run)."""
        snapshot: SnapshotAssignerState | None = None
        conn = connect(self.endpoint)
        try:
            check_binlog_settings(conn)
            check_privileges(conn)
            if self._capture_changed:
                self._change_capture(conn)
            if self.state.tables is not None:  # a rerun: grants may have changed since discovery
                check_select(conn, list(self.state.tables))
            if self.definition.source.startup.takes_snapshot:
                snapshot = self._snapshot_plan(conn)
            else:
                self._tables(conn)
            self._check_routes(conn, snapshot)
        finally:
            conn.close()
        self.sink.prepare(list(self.state.targets.values()))
        self._check_target_holds_the_snapshot(snapshot)
        return snapshot

    def _check_routes(self, conn, snapshot: SnapshotAssignerState | None) -> None:  # noqa: ANN001
        """The route and transform rules compile against the captured tables; before the
        first row is written, a merged table's key is checked unique across its members."""
        if not self.definition.routing.active:
            return  # (and the rules' modules, sqlglot's parser among them, stay unimported)
        from sluice.route.merged_keys import check_merged_keys
        from sluice.sink.routed import RoutedSink

        assert isinstance(self.sink, RoutedSink)
        routing = self.sink.route(list(self.state.targets.values()))
        if self.state.binlog is None and not (snapshot is not None and snapshot.finished):
            check_merged_keys(conn, routing)

    def _start_spark(self) -> SparkStart:
        """Spark starts in the background (the driver plans, or reads splits, meanwhile)."""
        if self._spark is None:
            from sluice.runtime.spark_classes import java_option
            from sluice.runtime.spark_start import SparkStart

            local = (self.master or "").startswith("local")
            self._spark = SparkStart(
                f"sluice-{self.definition.name}",
                self.master,
                slots=self.definition.parallelism,
                warm_modules=[read_splits.__module__, type(self.sink).__module__],
                on_ready=self.sink.attach,
                # Where the driver reads while Spark starts, a JVM up sooner only takes CPU from
                # those reads (measured: 8% slower end to end at 5M rows on two cores); where
                # every split waits for Spark, it starts 3 s sooner.
                java_options=java_option(local=local and not self._driver_reads),
                beside_reads=self._driver_reads,
            )
        return self._spark

    @property
    def _driver_reads(self) -> bool:
        """The driver reads snapshot splits itself, at least while Spark starts."""
        return self.definition.source.read_on_driver and not self.sink.writes_changes_with_spark

    def _snapshot_waits_for_spark(self) -> bool:
        """Every split of a snapshot still to read waits for Spark: it starts before the plan."""
        if not self.definition.source.startup.takes_snapshot or self._driver_reads:
            return False
        if self.state.snapshot is None:
            return self.state.tables is None  # a plan is yet to be made
        return not self.state.snapshot.is_finished

    def _spark_session(self) -> SparkSession:
        return self._start_spark().session()

    def _stop_spark(self) -> None:
        if self._spark is not None:
            self._spark.stop()
            self._spark = None

    # -- snapshot ---------------------------------------------------------------------------

    def _check_pipeline_identity(self) -> None:
        """A state belongs to the definition it was made for: refuse a changed one that would
        make its plan, watermarks or offsets describe something else."""
        name = self.state.pipeline
        if name != self.definition.name:
            raise SluiceError(
                f"{self.store.where} belongs to pipeline '{name}', not "
                f"'{self.definition.name}'; give each pipeline its own state"
            )
        saved = self.state.definition
        for key, value in self.definition.state_identity.items():
            if saved.get(key, value) == value:
                continue
            if key in SOURCE_ADDRESS and self._resumes_by_gtid():
                saved[key] = value  # a failover: the set means the same on the promoted server
                continue
            if key in (ROUTE_KEY, TRANSFORM_KEY):
                self._check_routing_change(saved)
                continue
            if key in CAPTURE and self._streams_past_the_snapshot():
                saved[key] = value  # tables join or leave the capture: _change_capture
                self._capture_changed = True
                continue
            raise SluiceError(
                f"{key} changed from '{saved[key]}' to '{value}' since {self.store.where} was "
                "written; its progress belongs to the old value: put the old value back, or "
                f"{self.store.fresh_start} into an empty target"
                + (
                    " (another source address is taken once the pipeline streams by GTID)"
                    if key in SOURCE_ADDRESS
                    else " (the tables may change once the pipeline streams past its snapshot)"
                    if key in CAPTURE
                    else ""
                )
            )

    def _check_routing_change(self, saved: dict[str, str]) -> None:
        """Rules may change where every table already captured keeps its target table and
        its transform (a rule added for tables joining the capture is the common case): the
        rows in the targets stay the query's. Any other change is refused naming the table."""
        later = self.definition.routing
        changes = Routing.from_identity(saved).changes_for(later, self.state.tables or {})
        if changes:
            raise SluiceError(
                f"route/transform: {'; '.join(changes[:3])}{' ...' if len(changes) > 3 else ''} since "
                f"{self.store.where} was written; its target holds the old query's rows: put the old rules back, or "
                f"{self.store.fresh_start} into an empty target"
            )
        saved.update(later.identity())

    def _streams_past_the_snapshot(self) -> bool:
        return self.state.binlog is not None and self.state.snapshot is None and self.state.stop_at is None

    def _resumes_by_gtid(self) -> bool:
        """Past the snapshot's watermarks with a GTID set: the position means the same on
        every server of the replication topology."""
        binlog = self.state.binlog
        return bool(binlog and binlog.offset.gtid and not binlog.watermarks and self.state.stop_at is None)

    def _check_target_holds_the_snapshot(self, snapshot: SnapshotAssignerState | None) -> None:
        """Streaming into a target that lost its snapshot would leave the snapshot out of it
        for good: a state past (part of) the snapshot needs the target's committed offsets."""
        if not self.definition.source.startup.takes_snapshot:
            return
        past_snapshot = self.state.binlog is not None or (snapshot is not None and bool(snapshot.finished))
        if past_snapshot and self.sink.holds_commits() is False:
            raise SluiceError(
                f"{self.store.where} says the snapshot was (partly) written, but sink "
                f"{self.definition.sink.name} holds no committed offsets of pipeline '{self.definition.name}': the "
                f"target was emptied or replaced; {self.store.fresh_start} to take the snapshot again"
            )

    def _tables(self, conn) -> None:
        if self.state.tables is None:
            self._discover_tables(conn)
            self.store.save(self.state)

    def _discover_tables(self, conn) -> list[TableSchema]:
        """Captured tables' schemas, kept in the state: a rerun reads the same tables."""
        configured = self.definition.source.chunk_key_column_for
        schemas = discover_tables(conn, self.definition.source.tables, configured)
        check_select(conn, [s.table_id for s in schemas])
        self.state.tables = {s.table_id: s for s in schemas}
        for schema in schemas:
            if schema.single_split:
                sys.stderr.write(
                    f"snapshot: {schema.table_id} has no key and no indexed column that splits it: read as one split\n"
                )
            elif schema.is_bag and configured(schema.database, schema.table) is None:
                sys.stderr.write(
                    f"snapshot: {schema.table_id} has no key: chunked by its indexed column {schema.chunk_key}\n"
                )
        return schemas

    def _change_capture(self, conn) -> None:
        """`tables` changed on a streaming pipeline. Tables it no longer selects leave the
        capture (their targets stay); tables it newly selects join it: in `initial` mode
        they are snapshotted first, and the binlog reader then takes them with the emit rule
        from where it is (Flink CDC's scan.newly-added-table.enabled). The other tables are
        not read again."""
        known = self.state.tables or {}
        planned_at = current_offset(conn)  # before the schemas are read
        source = self.definition.source
        selected = {s.table_id: s for s in discover_tables(conn, source.tables, source.chunk_key_column_for)}
        added = [schema for table_id, schema in selected.items() if table_id not in known]
        removed = [table_id for table_id in known if table_id not in selected]
        check_select(conn, [s.table_id for s in added])
        self.state.tables = {**{t: s for t, s in known.items() if t in selected}, **{s.table_id: s for s in added}}
        if self.state.target_tables is not None:
            kept = {t: s for t, s in self.state.target_tables.items() if t in selected}
            self.state.target_tables = {**kept, **{s.table_id: s for s in added}}
        if added and self.definition.source.startup.takes_snapshot:
            chunk_size = self.definition.source.chunk_size
            splits = [s for schema in added for s in split_table(conn, schema, chunk_size)]
            self.state.snapshot = SnapshotAssignerState.plan(added, splits, planned_at)
            self.state.adding_tables = [s.table_id for s in added]
        self.store.save(self.state)
        if added or removed:
            sys.stderr.write(
                f"capture: {len(added)} tables added ({', '.join(s.table_id for s in added) or '-'}), "
                f"{len(removed)} removed ({', '.join(removed) or '-'})\n"
            )

    def _snapshot_plan(self, conn) -> SnapshotAssignerState | None:
        """The saved plan, a new one, or None once the binlog split has dropped it."""
        if self.state.snapshot is not None:
            return self.state.snapshot
        if self.state.tables is not None:
            return None
        planned_at = current_offset(conn)  # before the schemas are read
        schemas = self._discover_tables(conn)
        chunk_size = self.definition.source.chunk_size
        splits = [s for schema in schemas for s in split_table(conn, schema, chunk_size)]
        plan = SnapshotAssignerState.plan(schemas, splits, planned_at)
        self._save_snapshot(plan)  # before any split is read: a rerun must read the same chunks
        log.info("snapshot plan: %d tables, %d splits", len(schemas), len(splits))
        return plan

    def _save_snapshot(self, snapshot: SnapshotAssignerState) -> None:
        self.state.snapshot = snapshot
        self.store.save(self.state)

    def _run_snapshot(self, snapshot: SnapshotAssignerState) -> None:
        from sluice.runtime.snapshot_phase import run_snapshot_phase

        def finished(result: SplitResult) -> None:
            snapshot.record(result.split_id, result.high_watermark, result.rows)
            # A record of the split, not the whole plan again.
            self.store.record_split_finished(result.split_id, snapshot.finished[result.split_id])
            failpoint(f"snapshot:split-finished:{len(snapshot.finished)}")

        def table_changed(table_id: str) -> None:
            snapshot.adopt_committed(self.sink.committed_splits())  # what the failed job's splits committed
            deferred = snapshot.defer(table_id)
            self._save_snapshot(snapshot)
            sys.stderr.write(
                f"snapshot: {table_id} changed while it was read; its {len(deferred)} unfinished splits are read "
                "again once the binlog reader has applied the change\n"
            )

        conn = connect(self.endpoint)
        try:
            replacing = tables_to_replace(self.sink, conn, snapshot)
        finally:
            conn.close()
        progress = SnapshotProgress(len(snapshot.splits), len(snapshot.finished), snapshot.rows_done, self.metrics)
        progress.resuming()
        progress.show()

        def read(sc: SparkContext | None, until: Callable[[], bool] = lambda: False) -> None:
            run_snapshot_phase(
                sc,
                self.definition,
                self.endpoint,
                self.sink,
                snapshot,
                finished,
                self.stopping,
                table_changed,
                progress,
                replacing,
                until,
            )

        try:
            if self._driver_reads:
                # Read here, alone or while Spark starts beside the driver.
                alone = self._driver_reads_alone(len(snapshot.remaining))
                if alone:
                    progress.note(alone)
                read(None, until=(lambda: False) if alone else self._start_spark().is_ready)
            if snapshot.remaining and not self.stopping.is_set():
                sc = self._spark_session().sparkContext
                progress.note(f"Spark is up: executors read the {len(snapshot.remaining)} splits left")
                read(sc)
        finally:
            progress.show(final=True)
            self._save_snapshot(snapshot)  # the journal folded into the document
        if snapshot.remaining:
            progress.stopped()

    def _driver_reads_alone(self, remaining: int) -> str | None:
        """Why the driver's own threads read every split and Spark never starts, or None.

        A plan one Spark job would carry whole gains nothing from Spark. Nor does a local
        master up to DRIVER_LANES: its executors are processes on this same machine, as
        many as the driver's threads, and a JVM starting beside the reads only takes their
        CPU (measured on two cores, 5,000,000 rows at parallelism 2: 0.72x the pipe end to
        end with the JVM starting, 0.92x without it)."""
        from sluice.runtime.snapshot_phase import DRIVER_LANES, splits_per_job

        splits = f"{remaining} split{'' if remaining == 1 else 's'}"
        if remaining <= splits_per_job(self.definition.source.chunk_size):
            return f"{splits}, less than one Spark job: read by the driver, Spark does not start"
        parallelism = self.definition.parallelism
        if (self.master or "").startswith("local") and parallelism <= DRIVER_LANES:
            return (
                f"{splits}, read by the driver's {parallelism} thread{'' if parallelism == 1 else 's'}: local Spark "
                "would add no cores, it does not start"
            )
        return None

    # -- binlog -----------------------------------------------------------------------------

    def _run_binlog(self, snapshot: SnapshotAssignerState | None) -> None:
        source = self.definition.source
        if self.sink.writes_changes_with_spark:
            self._spark_session()
        writer = self.sink.writer()
        conn = connect(self.endpoint)
        try:
            split = self._binlog_split(conn, snapshot)
            committed = writer.committed_binlog_offset()
            if committed is not None and committed.is_after(split.offset):
                split.advance(committed)
            progress = BinlogProgress(self.store.record_lag, self.metrics)
            changes = SchemaChangeHandler(
                self.definition,
                self.approvals,
                self.state,
                self.store,
                writer,
                progress,
                self.stopping,
                self._after_schema_change,
                self._reread if self.sink.replaces_key_ranges else None,
            )
            changes.finish_after_crash(split, committed)
            self._after_schema_change(split)
            self._catch_up_a_finished_bounded_run(conn, split)
            stop_at = self.state.stop_at
            by_gtid = resumes_by_gtid(split, stop_at)
            if not by_gtid:
                check_offset_available(conn, split.offset)
        finally:
            conn.close()
        settings = BinlogSettings(
            server_id=source.server_ids.pick(0),
            heartbeat_seconds=min(source.heartbeat_seconds, 1.0),
            batch_rows=int(self.definition.sink.options.get("sink.batch-size", 5000)),
            max_batch_delay=self.sink.max_batch_delay,
            target_needs=target_needs(self.sink, self.definition.routing),
        )
        online = self._online_work()
        try:
            run_binlog_phase(
                self.endpoint,
                settings,
                split,
                self.state.tables or {},
                writer,
                stop_at,
                self.stopping,
                self._binlog_committed,
                progress.committed,
                skip_before_millis=source.startup.timestamp_millis if source.startup.mode == "timestamp" else 0,
                captured=source.tables.selects,
                on_schema_change=changes.handle,
                targets=self.state.targets,
                migrations=self.state.migrations if source.online_schema_changes else None,
                unread_tables=self.state.unread,
                on_reconnect=progress.reconnected,
            )
        finally:
            if online is not None:
                online.stop()
            writer.close()
            progress.show(final=True)

    def _online_work(self) -> OnlineWork | None:
        """Verification and resnapshots as the spec asks, beside the binlog reader (the jdbc
        and lakehouse sinks)."""
        from sluice.verify.online import OnlineWork
        from sluice.verify.verifier import VerifiedSink

        if self.requests is None or not isinstance(self.sink, VerifiedSink):
            return None
        online = OnlineWork(self.definition, self.sink, self.endpoint, self.requests)
        online.start()
        return online

    def _catch_up_a_finished_bounded_run(self, conn, split: BinlogSplit) -> None:
        """A snapshot-mode run that reached its end left the target a copy as of then: run
        again, it reads the binlog on to now and ends a copy as of now (the changes made
        while nothing ran, deletes included), without reading the snapshot again."""
        stop_at = self.state.stop_at
        if stop_at is None or split.offset.is_before(stop_at):
            return
        now = current_offset(conn)
        if now.is_after(stop_at):
            self.state.stop_at = executed_gtids(conn, now)
            self.store.save(self.state)
            print(f"snapshot: the target is a copy as of {stop_at}; reading the binlog on to {now}", file=sys.stderr)

    def _binlog_split(self, conn, snapshot: SnapshotAssignerState | None) -> BinlogSplit:
        if self.state.binlog is not None:
            split = self.state.binlog
            if snapshot is not None and self.state.adding_tables:
                # Tables added to a streaming pipeline: the reader goes on from where it is,
                # which is before their high watermarks, so their emit rule holds.
                split.watermarks.update(snapshot.binlog_split().watermarks)
                self.state.adding_tables = []
                self.store.save(self.state)
            return split
        if snapshot is not None:
            split = snapshot.binlog_split()
            if not self.definition.source.startup.streams:
                # A snapshot-only run ends consistent as of now: everything committed before
                # this position is in the target when it exits.
                self.state.stop_at = current_offset(conn)
        else:
            source = self.definition.source
            split = BinlogSplit(startup_offset(conn, source.startup, self.endpoint, source.server_ids.pick(0)))
        split.offset = executed_gtids(conn, split.offset)
        self.state.binlog = split
        self.store.save(self.state)
        return split

    def _binlog_committed(self, split: BinlogSplit, entered: list[str]) -> None:
        self.state.binlog = split
        if split.watermarks and not entered:
            # Until every table is past its watermarks the state holds the whole plan: a
            # commit records its position instead of rewriting it all.
            self.store.record_binlog_offset(split.offset)
            return
        if not split.watermarks and self.state.snapshot is not None:
            snapshot, self.state.snapshot = self.state.snapshot, None
            self.state.snapshot_summary = snapshot.summary()
        self.store.save(self.state)

    def _reread(self, tables: Sequence[str]) -> int:
        """Reads tables again into the target, range by range, as of its position."""
        from sluice.verify.verifier import Verifier

        verifier = Verifier(self.definition, self.sink, self.endpoint, state=self.state)  # type: ignore[arg-type]
        return verifier.resnapshot(list(tables))

    def _after_schema_change(self, split: BinlogSplit) -> bool:
        """What waited on a schema change; True if the binlog reader must start again."""
        joined = self._capture_joined(split)
        self._reread_deferred(split)
        return joined

    def _capture_joined(self, split: BinlogSplit) -> bool:
        """Tables renamed into `tables`: created in the target and snapshotted now (on this
        process, split by split), then read from the binlog with the emit rule from the
        rename on (their high watermarks are after it)."""
        joining = [t for t in self.state.joining if t not in (self.state.tables or {})]
        if not joining:
            self.state.joining = []
            return False
        # A name the target holds already (a swap's rename skipped under `ignore`): the
        # table joins onto the target's columns, projected; any other is created.
        kept = {t: schema for t, schema in self.state.targets.items() if t in joining}
        for attempt in range(JOIN_ATTEMPTS):
            try:
                plan = self._snapshot_joining(joining, kept, split, attempt)
                break
            except SchemaDrift as drift:  # a DDL on it while it was read: read it again, as it is now
                if attempt + 1 == JOIN_ATTEMPTS:
                    raise
                sys.stderr.write(f"capture: {drift.table_id} changed while it was read: reading it again\n")
        joined_marks = plan.binlog_split().watermarks
        split.watermarks.update({t: dataclasses.replace(w, schema_at=plan.planned_at) for t, w in joined_marks.items()})
        targets = {**self.state.targets, **plan.tables, **kept}
        self.state.tables = {**(self.state.tables or {}), **plan.tables}
        self.state.target_tables = None if targets == self.state.tables else targets
        self.state.joining = []
        self.state.binlog = split
        self.store.save(self.state)
        sys.stderr.write(
            f"capture: {', '.join(joining)} renamed into source.tables: snapshotted ({len(plan.splits)} splits, "
            f"{plan.rows_done:,} rows), "
            "streaming\n"
        )
        return True

    def _snapshot_joining(
        self, joining: list[str], kept: dict[str, TableSchema], split: BinlogSplit, attempt: int
    ) -> SnapshotAssignerState:
        """Plans and reads the joining tables as they are now, each created in the target
        first, in the layout it has now."""
        source = self.definition.source
        conn = connect(self.endpoint)
        try:
            planned_at = current_offset(conn)
            schemas = [
                read_table_schema(conn, *t.split(".", 1), source.chunk_key_column_for(*t.split(".", 1)))
                for t in joining
            ]
            check_select(conn, joining)
            splits = [s for schema in schemas for s in split_table(conn, schema, source.chunk_size)]
        finally:
            conn.close()
        writer = self.sink.writer()
        try:
            for schema in schemas:
                if schema.table_id in kept:
                    continue
                # Dropped first: a table an earlier attempt, or a run killed during the join,
                # created in an older layout (CREATE would find it there and keep it).
                events = [DropTable(schema.table_id), create_table_event(schema)]
                change = f"capture:{schema.table_id}@{split.offset}#{attempt}"
                writer.apply_schema_change(change, events, {schema.table_id: schema})
        finally:
            writer.close()
        plan = SnapshotAssignerState.plan(schemas, splits, planned_at)
        server_id = source.server_ids.pick(min(1, len(source.server_ids) - 1))  # the reader has the first
        for schema in schemas:
            tasks = [
                SplitTask(s, plan.tables[s.table_id], self.endpoint, server_id, source.fetch_size)
                for s in splits
                if s.table_id == schema.table_id
            ]
            read = reads_onto(kept[schema.table_id]) if schema.table_id in kept else read_splits
            try:
                results = self.sink.write_splits_now(tasks, read)
            except Exception as exc:  # noqa: BLE001 - a Spark task's error names a drift in its text
                table_id = SchemaDrift.in_text(str(exc))
                if table_id is None:
                    raise
                raise SchemaDrift(table_id) from exc
            for result in results:
                plan.record(result.split_id, result.high_watermark, result.rows)
        return plan

    def _reread_deferred(self, split: BinlogSplit) -> None:
        """Reads the splits deferred by a schema change during the snapshot, for each table
        whose columns the binlog reader (and so the target) has caught up with: their new
        high watermarks are after the reader's position, so the emit rule holds for them."""
        snapshot = self.state.snapshot
        if snapshot is None or not snapshot.deferred:
            return
        sources, targets = self.state.tables or {}, self.state.targets
        conn = connect(self.endpoint)
        try:
            waiting = {snapshot.splits_table(i) for i in snapshot.deferred}
            ready = [
                t for t in sorted(waiting) if t in sources and live_shape(conn, *t.split(".", 1)) == sources[t].shape
            ]
        finally:
            conn.close()
        source = self.definition.source
        server_id = source.server_ids.pick(min(1, len(source.server_ids) - 1))  # the reader has the first
        for table_id in ready:
            tasks = [
                SplitTask(s, sources[table_id], self.endpoint, server_id, source.fetch_size)
                for s in snapshot.deferred_splits(table_id)
            ]
            read = reads_onto(targets.get(table_id, sources[table_id]))
            try:
                results = self.sink.write_splits_now(tasks, read)
            except Exception as exc:  # noqa: BLE001 - changed again: the next change of it tries again
                if SchemaDrift.in_text(str(exc)) is None and not isinstance(exc, SchemaDrift):
                    from sluice.runtime.snapshot_phase import task_failure

                    raise task_failure(exc) from exc
                continue
            boundaries = split.watermarks[table_id]
            for result in results:
                snapshot.record(result.split_id, result.high_watermark, result.rows)
                index = int(result.split_id.rsplit(":", 1)[1])
                boundaries.high_watermarks[index] = result.high_watermark
            self.state.binlog = split
            self.store.save(self.state)
            sys.stderr.write(f"snapshot: read the {len(results)} deferred splits of {table_id} again\n")

    def _install_signal_handlers(self) -> dict[int, Any]:
        if threading.current_thread() is not threading.main_thread():
            return {}

        def stop(signum: int, _frame: Any) -> None:
            self.signalled = True
            self.stopping.set()

        return {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}

    def _restore_signal_handlers(self, previous: dict[int, Any]) -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def approvals_from_file(path: Path, definition: PipelineDefinition) -> Callable[[], Collection[str]]:
    """Approvals read again from the pipeline file each time: approving is editing the file."""

    def approved() -> Collection[str]:
        try:
            return load_definition(path).approved_schema_changes
        except DefinitionError as exc:
            log.warning("pipeline.schema-change.approved: %s (approvals unchanged)", exc)
            return definition.approved_schema_changes

    return approved
