"""The local runner: `sluice run` — plays the coordinator's part that the operator plays on Kubernetes.

Checks the source, makes or resumes the snapshot plan, runs the snapshot on local Spark,
and keeps the state directory current after every finished split.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from sluice.errors import SluiceError
from sluice.pipeline.definition import PipelineDefinition
from sluice.sink.base import Sink
from sluice.sink.factory import create_sink
from sluice.snapshot.chunk_splitter import split_table
from sluice.snapshot.snapshot_split_assigner import SnapshotAssignerState
from sluice.snapshot.split_reader import SplitResult
from sluice.source.checks import check_binlog_settings
from sluice.source.connection import SourceEndpoint, connect
from sluice.source.schema import discover_tables
from sluice.state.state_store import StateStore

log = logging.getLogger(__name__)


def source_endpoint(definition: PipelineDefinition) -> SourceEndpoint:
    source = definition.source
    return SourceEndpoint(
        source.hostname,
        source.port,
        source.username,
        source.password,
        source.connect_timeout_seconds,
        source.connect_max_retries,
        source.server_time_zone,
    )


class LocalRunner:
    def __init__(self, definition: PipelineDefinition, state_dir: str | Path) -> None:
        self.definition = definition
        self.store = StateStore(state_dir)
        self.endpoint = source_endpoint(definition)
        self.sink: Sink = create_sink(definition)
        self.state: dict[str, Any] = {}

    def run(self) -> None:
        self.state = self.store.load()
        self._check_pipeline_identity()
        startup = self.definition.source.startup
        if startup.streams:
            raise SluiceError(
                f"source.scan.startup.mode: '{startup.mode}' needs the binlog phase, which this "
                "build does not have yet; use scan.startup.mode: snapshot"
            )
        conn = connect(self.endpoint)
        try:
            check_binlog_settings(conn)
            snapshot = self._snapshot_plan(conn)
        finally:
            conn.close()
        self.sink.prepare(list(snapshot.tables.values()))
        if snapshot.adopt_committed(self.sink.committed_splits()):
            self._save(snapshot)
        if not snapshot.is_finished:
            self._run_snapshot(snapshot)

    def _check_pipeline_identity(self) -> None:
        name = self.state.setdefault("pipeline", self.definition.name)
        if name != self.definition.name:
            raise SluiceError(
                f"--state-dir {self.store.directory} belongs to pipeline '{name}', not "
                f"'{self.definition.name}'; give each pipeline its own state directory"
            )

    def _snapshot_plan(self, conn) -> SnapshotAssignerState:
        if "snapshot" in self.state:
            return SnapshotAssignerState.from_json(self.state["snapshot"])
        source = self.definition.source
        schemas = discover_tables(conn, source)
        splits = [s for schema in schemas for s in split_table(conn, schema, source.chunk_size)]
        plan = SnapshotAssignerState.plan(schemas, splits)
        self._save(plan)  # before any split is read: a rerun must read the same chunks
        log.info("snapshot plan: %d tables, %d splits", len(schemas), len(splits))
        return plan

    def _save(self, snapshot: SnapshotAssignerState) -> None:
        self.state["snapshot"] = snapshot.to_json()
        self.store.save(self.state)

    def _run_snapshot(self, snapshot: SnapshotAssignerState) -> None:
        from sluice.runtime.snapshot_phase import run_snapshot_phase
        from sluice.runtime.spark_session import local_session

        spark = local_session(f"sluice-{self.definition.name}", self.definition.parallelism)
        try:

            def finished(result: SplitResult) -> None:
                snapshot.record(result.split_id, result.high_watermark, result.rows)
                self._save(snapshot)

            run_snapshot_phase(spark.sparkContext, self.definition, self.endpoint, self.sink, snapshot, finished)
        finally:
            spark.stop()
