"""The pipeline runner: what `sluice run` runs with local Spark, and what the Spark driver
runs on Kubernetes (runtime/kubernetes_driver.py), the same code with another state store.

Checks the state against the definition (runtime/pipeline_identity), the source and the
target, makes or resumes the snapshot plan and runs the snapshot (runtime/snapshot_step),
then hands over to the single binlog reader (runtime/binlog_step), keeping the state store
current after every finished split and every committed batch. The steps share a
RunContext (runtime/run_context).
"""

from __future__ import annotations

import collections
import logging
import signal
import sys
import threading
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sluice.errors import DefinitionError, PositionPurged, SluiceError
from sluice.pipeline.definition import PipelineDefinition, load_definition
from sluice.runtime.binlog_step import BinlogStep
from sluice.runtime.capture import bring_kept_targets_up, capture_tables, change_capture
from sluice.runtime.pipeline_identity import check_pipeline_identity
from sluice.runtime.pipeline_metrics import PipelineMetrics
from sluice.runtime.pipeline_spark import PipelineSpark
from sluice.runtime.preflight import check_first_run
from sluice.runtime.run_context import RunContext
from sluice.runtime.snapshot_step import SnapshotStep
from sluice.sink.factory import create_sink
from sluice.snapshot.snapshot_split_assigner import SnapshotAssignerState
from sluice.source.checks import check_binlog_settings, check_privileges, check_select
from sluice.source.connection import connect
from sluice.state.pipeline_state import PipelineState
from sluice.state.state_store import StateStore
from sluice.state.target_records import TargetRecordedStore
from sluice.transform.user_functions import close_user_functions

if TYPE_CHECKING:
    from sluice.verify.online import RequestDesk

log = logging.getLogger(__name__)


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
        sink = create_sink(definition)
        self.context = RunContext(
            definition,
            definition.source.endpoint(),
            sink,
            TargetRecordedStore(store, sink, definition.sink.name),
            PipelineState(definition.name, dict(definition.state_identity)),
            metrics or PipelineMetrics(definition.name),
            master,
        )
        self.preflight = preflight
        self.signalled = False  # stopping is also set by the binlog phase as it ends
        self.spark = PipelineSpark(definition, master, sink)
        self._capture_changed = False
        self.snapshot = SnapshotStep(self.context, self.spark)
        approved = approvals or (lambda: definition.approved_schema_changes)
        self.binlog = BinlogStep(self.context, self.spark, approved, requests)

    @property
    def state(self) -> PipelineState:
        return self.context.state

    @state.setter
    def state(self, state: PipelineState) -> None:
        self.context.state = state

    def run(self) -> None:
        """Runs until the pipeline is done or SIGTERM/SIGINT: then what is in flight (Spark
        jobs of snapshot splits, the binlog batch) is committed, and the run returns."""
        previous = self._install_signal_handlers()
        try:
            self._run()
        finally:
            self._restore_signal_handlers(previous)
            self._say_values_changed()
            close_user_functions()

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
        loaded = self.context.store.load()
        if loaded is None and self.preflight:
            check_first_run(self.context.definition)
        self.state = loaded or self.state
        self._capture_changed = check_pipeline_identity(
            self.context.definition, self.state, self.context.store.where, self.context.store.fresh_start
        )
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
        self.context.metrics.snapshot_planned(summary.get("tables") or {})

    def _read_the_snapshot_again(self, purged: PositionPurged) -> bool:
        """The binlog the target's position needs is gone: a pipeline that takes a snapshot
        starts it afresh (its old records dropped), and each chunk replaces its key range,
        so the target ends exact: rows deleted meanwhile gone, no row twice. Once a run."""
        if not self.context.definition.source.startup.takes_snapshot or not self.context.sink.replaces_key_ranges:
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
            self.context.stopping.clear()
        fresh = PipelineState(self.context.definition.name, dict(self.context.definition.state_identity))
        fresh.revision = self.state.revision
        self.state = fresh
        self.context.sink.forget_commits()
        self.context.store.save(self.state)
        return True

    def _run_from_state(self) -> None:
        if self.spark.snapshot_waits(self.state):
            self.spark.start()  # its start overlaps the checks and the plan
        try:
            snapshot = self._check_and_plan()
            if snapshot is not None and snapshot.adopt_committed(self.context.sink.committed_splits()):
                self.snapshot.save(snapshot)
            self._count_snapshot_splits()
            if snapshot is not None:
                if not snapshot.is_finished:
                    self.snapshot.run(snapshot)
                if self.context.stopping.is_set():
                    return  # the next run resumes with the splits still to read
            if not self.context.sink.writes_changes_with_spark:
                self.spark.stop()  # one binlog reader needs no Spark
            self.binlog.run(snapshot)
        finally:
            self.spark.stop()

    def _check_and_plan(self) -> SnapshotAssignerState | None:
        """Checks the source and the target, and returns the snapshot still to read (planned
        now on a first run)."""
        snapshot: SnapshotAssignerState | None = None
        conn = connect(self.context.endpoint)
        try:
            check_binlog_settings(conn)
            check_privileges(conn)
            if self._capture_changed:
                change_capture(conn, self.context.definition.source, self.state)
                self.context.store.save(self.state)
            if self.state.tables is not None:  # a rerun: grants may have changed since discovery
                check_select(conn, list(self.state.tables))
            if self.context.definition.source.startup.takes_snapshot:
                snapshot = self.snapshot.plan(conn)
            else:
                self._tables(conn)
            self._check_routes(conn, snapshot)
        finally:
            conn.close()
        self.context.sink.prepare(list(self.state.targets.values()))
        bring_kept_targets_up(self.context.sink, self.state, self.context.definition.schema_change_behavior)
        self._check_target_holds_the_snapshot(snapshot)
        return snapshot

    def _check_routes(self, conn, snapshot: SnapshotAssignerState | None) -> None:  # noqa: ANN001
        """The route and transform rules compile against the captured tables; before the
        first row is written, a merged table's key is checked unique across its members."""
        if not self.context.definition.routing.active:
            return  # (and the rules' modules, sqlglot's parser among them, stay unimported)
        from sluice.route.merged_keys import check_merged_keys
        from sluice.sink.routed import RoutedSink

        assert isinstance(self.context.sink, RoutedSink)
        routing = self.context.sink.route(list(self.state.targets.values()))
        if self.state.binlog is None and not (snapshot is not None and snapshot.finished):
            check_merged_keys(conn, routing)

    # -- snapshot ---------------------------------------------------------------------------

    def _check_target_holds_the_snapshot(self, snapshot: SnapshotAssignerState | None) -> None:
        """Streaming into a target that lost its snapshot would leave the snapshot out of it
        for good: a state past (part of) the snapshot needs the target's committed offsets."""
        definition, store = self.context.definition, self.context.store
        if not definition.source.startup.takes_snapshot:
            return
        past_snapshot = self.state.binlog is not None or (snapshot is not None and bool(snapshot.finished))
        if past_snapshot and self.context.sink.holds_commits() is False:
            raise SluiceError(
                f"{store.where} says the snapshot was (partly) written, but sink "
                f"{definition.sink.name} holds no committed offsets of pipeline '{definition.name}': the "
                f"target was emptied or replaced; {store.fresh_start} to take the snapshot again"
            )

    def _tables(self, conn) -> None:
        if self.state.tables is None:
            capture_tables(conn, self.context.definition.source, self.state)
            self.context.store.save(self.state)

    # -- binlog -----------------------------------------------------------------------------

    def _install_signal_handlers(self) -> dict[int, Any]:
        if threading.current_thread() is not threading.main_thread():
            return {}

        def stop(signum: int, _frame: Any) -> None:
            self.signalled = True
            self.context.stopping.set()

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
