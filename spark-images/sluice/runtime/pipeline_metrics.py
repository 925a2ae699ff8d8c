"""The pipeline's own Prometheus metrics, where the rows move: served by `sluice run
--metrics-port` and by every driver pod (the chart's PodMonitor scrapes them).

What someone watching a pipeline asks, per pipeline and per table: how far the snapshot is,
how many changes of each kind reached the target, how far behind the source the target is,
how long commits take, how often the source connection dropped, which values a type rule
changed. Executors' snapshot work is counted here as the driver records each split.

The lag is honest both ways: a commit, or a heartbeat with nothing pending, says up to which
source time the target holds everything; the gauge is the time since then, read at each
scrape. An idle source's heartbeats keep it near zero; a reader that stopped getting
anything (a stopped source, a stuck connection) shows a lag that grows.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    start_http_server,
)
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from sluice.event.row_change import RowKind
from sluice.source.offset import BinlogOffset

# The changelog's kinds as a person names them (an update's retraction is not counted twice).
CHANGE_KINDS = {RowKind.INSERT: "insert", RowKind.UPDATE_AFTER: "update", RowKind.DELETE: "delete"}
COMMIT_SECONDS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
BATCH_ROWS_BUCKETS = (1, 10, 50, 100, 500, 1000, 2500, 5000, 10000, 50000)


class PipelineMetrics:
    """One pipeline's metrics in a registry of their own (a test runs several in a process)."""

    def __init__(self, pipeline: str) -> None:
        self.pipeline = pipeline
        self.registry = CollectorRegistry()
        by_pipeline, by_table = ["pipeline"], ["pipeline", "table"]

        def gauge(name: str, text: str, labels: list[str] = by_pipeline) -> Gauge:
            return Gauge(name, text, labels, registry=self.registry)

        def counter(name: str, text: str, labels: list[str] = by_pipeline) -> Counter:
            return Counter(name, text, labels, registry=self.registry)

        self.start_time = gauge("sluice_pipeline_start_time_seconds", "When this run of the pipeline started")
        self.splits = gauge("sluice_snapshot_splits", "Snapshot splits planned", by_table)
        self.splits_finished = gauge("sluice_snapshot_splits_finished", "Snapshot splits read and committed", by_table)
        self.snapshot_rows = counter("sluice_snapshot_rows", "Rows the snapshot read and committed", by_table)
        self.changes = counter(
            "sluice_changes_applied", "Binlog changes committed to the target", ["pipeline", "table", "kind"]
        )
        self.binlog_bytes = counter("sluice_binlog_read_bytes", "Binlog bytes read and committed past")
        self.binlog_file = gauge("sluice_binlog_file_sequence", "The committed binlog position's file number")
        self.binlog_position = gauge("sluice_binlog_position_bytes", "The committed binlog position within its file")
        self.lag = gauge("sluice_binlog_lag_seconds", "How far the target is behind the source")
        self.commit_seconds = Histogram(
            "sluice_commit_duration_seconds",
            "Time a binlog batch's commit held the reader up: writing it, then waiting for the target's commit",
            by_pipeline,
            buckets=COMMIT_SECONDS_BUCKETS,
            registry=self.registry,
        )
        self.batch_rows = Histogram(
            "sluice_commit_batch_rows",
            "Changelog rows per committed binlog batch",
            by_pipeline,
            buckets=BATCH_ROWS_BUCKETS,
            registry=self.registry,
        )
        self.reconnects = counter("sluice_source_reconnects", "Binlog connections opened again after a loss")
        self.schema_changes = counter("sluice_schema_changes_applied", "Schema changes applied to the target")
        self.schema_waiting = gauge("sluice_schema_changes_waiting", "Schema changes waiting for approval")
        self.registry.register(_TypeRuleCollector(pipeline))
        self.registry.register(_MaintenanceCollector(pipeline))

        self.start_time.labels(pipeline).set(time.time())
        for each in (self.binlog_bytes, self.reconnects, self.schema_changes):
            each.labels(pipeline)  # a zero from the start: a rate needs a first sample
        self.schema_waiting.labels(pipeline).set(0)
        self._held_until = 0.0  # source time up to which the target holds everything (from the first commit)
        self._offset: BinlogOffset | None = None

    def serve(self, port: int, address: str = "0.0.0.0") -> int:
        """Serves /metrics on a thread of its own; the port it listens on (0: any free one)."""
        disable_created_metrics()  # a `_created` series per counter is noise to a dashboard
        server, _thread = start_http_server(port, address, registry=self.registry)
        return int(server.server_address[1])

    # -- snapshot ---------------------------------------------------------------------------

    def snapshot_planned(self, tables: Mapping[str, Mapping[str, int]]) -> None:
        """Per table, the plan's splits and those finished before (snapshot_split_assigner.per_table)."""
        for table_id, table in tables.items():
            self.splits.labels(self.pipeline, table_id).set(table["splits"])
            self.splits_finished.labels(self.pipeline, table_id).set(table["done"])
            self.snapshot_rows.labels(self.pipeline, table_id)

    def split_finished(self, table_id: str, rows: int) -> None:
        self.splits_finished.labels(self.pipeline, table_id).inc()
        self.snapshot_rows.labels(self.pipeline, table_id).inc(rows)

    # -- binlog -----------------------------------------------------------------------------

    def binlog_committed(
        self, offset: BinlogOffset, changes: Mapping[tuple[str, RowKind], int], lag: float, seconds: float | None
    ) -> None:
        """After each commit (`seconds` it took), and each heartbeat with nothing pending (None)."""
        if not self._held_until:  # no lag before the binlog phase: no series either
            self.lag.labels(self.pipeline).set_function(self._lag)
        self._held_until = time.time() - lag
        for (table_id, kind), count in changes.items():
            name = CHANGE_KINDS.get(kind)
            if name is not None:
                self.changes.labels(self.pipeline, table_id, name).inc(count)
        if seconds is not None:
            self.commit_seconds.labels(self.pipeline).observe(seconds)
            self.batch_rows.labels(self.pipeline).observe(sum(changes.values()))
        self._advance(offset)

    def _advance(self, offset: BinlogOffset) -> None:
        previous, self._offset = self._offset, offset
        if previous is not None:
            # Within a file, the bytes between the positions; into a new file, that file's
            # bytes up to the position (the old file's tail is a few bytes of rotate event).
            read = offset.pos - previous.pos if offset.file == previous.file else offset.pos
            self.binlog_bytes.labels(self.pipeline).inc(max(read, 0))
        self.binlog_file.labels(self.pipeline).set(offset.sequence)
        self.binlog_position.labels(self.pipeline).set(offset.pos)

    def _lag(self) -> float:
        return max(0.0, time.time() - self._held_until)

    def reconnected(self) -> None:
        self.reconnects.labels(self.pipeline).inc()

    def schema_change_waiting(self, waiting: bool) -> None:
        self.schema_waiting.labels(self.pipeline).set(1 if waiting else 0)

    def schema_change_applied(self) -> None:
        self.schema_changes.labels(self.pipeline).inc()


class _TypeRuleCollector(Collector):
    """Values a type rule changed to fit the target (sink/target_values counts them, in this
    process), read at each scrape. A rule that refuses a value stops the pipeline, naming it:
    that is the run's error and the CdcPipeline's condition, not a count."""

    def __init__(self, pipeline: str) -> None:
        self.pipeline = pipeline

    def collect(self) -> Iterator[CounterMetricFamily]:
        from sluice.sink import target_values

        family = CounterMetricFamily(
            "sluice_values_rewritten",
            "Values a type rule changed to fit the target",
            labels=["pipeline", "table", "column", "rule"],
        )
        for (table_id, column, rule), count in sorted(target_values.changed.copy().items()):
            family.add_metric([self.pipeline, table_id, column, rule], count)
        yield family


class _MaintenanceCollector(Collector):
    """What a lakehouse target's maintenance did in this process (sink/lakehouse counts it),
    read at each scrape: rounds, files compacted and deleted, seconds spent, by table."""

    FAMILIES = {
        "rounds": ("sluice_lake_maintenance_rounds", "Maintenance rounds run on a lake table"),
        "compacted": ("sluice_lake_files_compacted", "Data files compaction rewrote (small, or largely deleted)"),
        "deleted": ("sluice_lake_files_deleted", "Files no kept snapshot or version reads, deleted"),
        "seconds": ("sluice_lake_maintenance_seconds", "Time maintenance held a lake table's commits up"),
    }

    def __init__(self, pipeline: str) -> None:
        self.pipeline = pipeline

    def collect(self) -> Iterator[CounterMetricFamily]:
        from sluice.sink.lakehouse.maintenance_counts import maintained

        counts = maintained.copy()
        for what, (name, text) in self.FAMILIES.items():
            family = CounterMetricFamily(name, text, labels=["pipeline", "table"])
            for (table_id, kind), value in sorted(counts.items()):
                if kind == what:
                    family.add_metric([self.pipeline, table_id], value)
            yield family
