"""A pipeline's metrics as a real Prometheus (Debian's) scrapes them from `sluice run
--metrics-port`: every query of every panel of the chart's dashboard, and every metric of
the chart's alert rules, has series once the pipeline has snapshotted and streams; the
figures agree with what moved; and a source stopped under the running pipeline makes the
lag alert fire, and its return resolves it."""

from __future__ import annotations

import signal
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from sluice.runtime.pipeline_metrics import PipelineMetrics
from sluice_operator import metrics as operator_metrics
from tests.harness import compare
from tests.harness.pipelines import (
    pipeline_yaml,
    postgres_sink,
    sluice_env,
    start_sluice,
    wait_until_in_binlog_phase,
    write_pipeline,
)
from tests.harness.prometheus import (
    alert_expressions,
    chart_alert_rules,
    dashboard_queries,
    exported_names,
    metric_names,
    start_prometheus,
)
from tests.harness.services import MariaDB, free_port, start_mariadb

pytestmark = pytest.mark.slow
ROWS = 3000
LAG_ALERT_SECONDS = 4


PIPELINE_METRICS = exported_names(PipelineMetrics("names").registry)
OPERATOR_METRICS = exported_names(operator_metrics.REGISTRY)


@pytest.fixture
def source(services_dir: Path) -> Iterator[MariaDB]:
    server = start_mariadb(services_dir / "metrics-source", server_id=41)
    yield server
    server.stop()


def test_every_panel_and_alert_has_series_and_a_stopped_source_fires_the_lag_alert(source, postgresql, tmp_path):
    source.execute(
        "CREATE DATABASE metered",
        "CREATE TABLE metered.orders (id INT PRIMARY KEY, note VARCHAR(20), shipped DATETIME NULL)",
        f"INSERT INTO metered.orders WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < {ROWS}) "
        "SELECT n, 'seed', '2024-01-02 03:04:05' FROM s",
    )
    port = free_port()
    definition = pipeline_yaml(
        source,
        "metered.orders",
        postgres_sink(postgresql),
        parallelism=1,
        **{"server-id": "7100-7101", "scan.incremental.snapshot.chunk.size": 500, "heartbeat.interval": "1s"},
    )
    state = tmp_path / "state"
    rules = chart_alert_rules(tmp_path / "rules.yaml", f"alerts.lagSeconds={LAG_ALERT_SECONDS}", "alerts.lagFor=0s")
    prometheus = start_prometheus(tmp_path / "prometheus", [f"127.0.0.1:{port}"], [rules])
    process = start_sluice(
        write_pipeline(tmp_path / "p.yaml", definition),
        state,
        sluice_env(source, postgresql),
        "--metrics-port",
        str(port),
    )
    try:
        deadline = time.monotonic() + 240
        wait_until_in_binlog_phase(process, state, deadline)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            assert "sluice_snapshot_splits_finished" in response.read().decode()
        source.execute(
            "SET SESSION sql_mode = ''",  # a legacy application's zero date: rewritten for PostgreSQL
            "INSERT INTO metered.orders VALUES (100001, 'new', '0000-00-00 00:00:00'), (100002, 'new', NULL)",
            "UPDATE metered.orders SET note = 'updated' WHERE id <= 10",
            "UPDATE metered.orders SET id = id + 200000 WHERE id BETWEEN 11 AND 12",  # primary-key changes
            "DELETE FROM metered.orders WHERE id BETWEEN 20 AND 24",
            "ALTER TABLE metered.orders ADD COLUMN channel VARCHAR(10) DEFAULT 'web'",
            "INSERT INTO metered.orders VALUES (100003, 'after', NULL, 'app')",
            database="metered",
        )
        expected = compare.query_rows(source, "SELECT count(*), max(id) FROM metered.orders")
        while compare.postgres_rows(postgresql, "metered", "orders", "count(*), max(id)") != expected:
            assert process.poll() is None and time.monotonic() < deadline, process.communicate()[1]
            time.sleep(0.2)

        # What moved, as Prometheus has it.
        job = 'pipeline="{}"'.format(definition["pipeline"]["name"])
        for kind, count in {"insert": 3, "update": 10, "delete": 5}.items():
            expr = f'sum(sluice_changes_applied_total{{{job},kind="{kind}"}})'
            prometheus.wait_for(f"{expr} >= {count}", deadline, expr)
        prometheus.wait_for(f"sluice_schema_changes_applied_total{{{job}}} == 1", deadline)
        assert prometheus.value(f"sum(sluice_snapshot_rows_total{{{job}}})") == ROWS
        planned = prometheus.value(f"sum(sluice_snapshot_splits{{{job}}})")
        assert planned >= ROWS // 500 and prometheus.value(f"sum(sluice_snapshot_splits_finished{{{job}}})") == planned
        assert prometheus.value(f'sluice_values_rewritten_total{{{job},column="shipped",rule="invalid_date"}}') == 1
        assert prometheus.value(f"sluice_binlog_lag_seconds{{{job}}}") < LAG_ALERT_SECONDS
        assert prometheus.value(f"sluice_commit_batch_rows_count{{{job}}}") >= 1

        # Every panel's query has series, and every metric an alert selects is exported.
        prometheus.wait_for_every_panel_and_alert(rules, deadline, leave_out=OPERATOR_METRICS)
        for title, expr in dashboard_queries():
            assert metric_names(expr) <= PIPELINE_METRICS, f"panel {title!r} selects what the pipeline does not export"
        for alert, expr in alert_expressions(rules).items():
            for name in metric_names(expr):
                assert name in PIPELINE_METRICS | OPERATOR_METRICS, f"{alert}: {name} is exported by nothing"
        prometheus.wait_for_alert("SluiceBinlogLagHigh", None, deadline)

        # The source stops: nothing reaches the reader, not even heartbeats, and the lag grows.
        source.stop()
        prometheus.wait_for_alert("SluiceBinlogLagHigh", "firing", time.monotonic() + 60)
        assert process.poll() is None, process.communicate()[1]
        source.start_again()
        prometheus.wait_for_alert("SluiceBinlogLagHigh", None, time.monotonic() + 120)
        prometheus.wait_for(f"sluice_source_reconnects_total{{{job}}} >= 1", time.monotonic() + 30)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
        assert process.returncode == 0, err
    finally:
        if process.poll() is None:
            process.kill()
        prometheus.stop()
