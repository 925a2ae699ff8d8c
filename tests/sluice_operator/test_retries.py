"""A streaming pipeline never stays down for a cause that heals: a source away for longer than
the Spark Operator's retries is resubmitted by the operator with backoff, the status says
how it is going, and once the source is back the pipeline streams again with nothing lost.
A failure a user must fix stays Failed and is not retried in a loop."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness.cluster import Cluster, apply, manifest
from tests.harness.services import MariaDB, start_mariadb
from tests.sluice_operator.test_end_to_end import changes, seed, wait_equal, wait_streaming

pytestmark = pytest.mark.slow


@pytest.fixture
def source(services_dir: Path) -> Iterator[MariaDB]:
    server = start_mariadb(services_dir / "operator-restarted-source", server_id=41)
    yield server
    server.stop()


def condition(status: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in status.get("conditions", []) if c["type"] == kind), {})


def test_a_source_outage_longer_than_every_retry_heals_by_itself(cluster: Cluster, source, postgresql):
    source.execute("CREATE DATABASE outage")
    seed(source, "outage", 500)
    cluster.passwords(source, postgresql)
    document = manifest("orders", source, postgresql, "outage.orders")
    # Give up on the connection quickly, so that the Spark Operator's retries are spent soon too.
    document["spec"]["source"].update({"connect.max-retries": 0, "connect.reconnect.timeout": "1s"})
    document["spec"]["spark"] = {"restartPolicy": {"onFailureRetries": 1, "onFailureRetryInterval": 1}}
    apply(cluster, document)
    wait_streaming(cluster, "orders")
    source.stop()
    seen: dict[str, Any] = {}
    deadline = time.monotonic() + 150
    while time.monotonic() < deadline:  # the Spark Operator's one retry spent, the operator's own
        status = cluster.cdc_pipeline("orders").get("status") or {}
        if condition(status, "Degraded").get("reason") == "Retrying":
            seen = status
            break
        time.sleep(0.5)
    assert seen and seen["retry"]["attempts"] == 1, cluster.cdc_pipeline("orders").get("status")
    assert seen["application"]["attempts"] == 2  # the first run and the Spark Operator's one retry
    assert seen["phase"] == "Streaming"  # not Failed: it is being retried
    assert "Connection refused" in seen["retry"]["lastError"] and seen["retry"]["nextRetryTime"]
    assert seen["retry"]["nextRetryTime"] in condition(seen, "Degraded")["message"]
    source.start_again()
    changes(source, "outage", 10_000)
    wait_streaming(cluster, "orders")
    wait_equal(source, postgresql, "outage")
    reasons = [reason for reason, _ in cluster.events("orders")]
    assert "Retry" in reasons


def test_a_failure_a_user_must_fix_stays_failed_and_is_not_retried(cluster: Cluster, mariadb, postgresql, source_db):
    mariadb.execute(f"CREATE TABLE {source_db}.orders (id INT PRIMARY KEY)")
    cluster.passwords(mariadb, postgresql)
    document = manifest("no-column", mariadb, postgresql, f"{source_db}.orders")
    document["spec"]["source"]["scan.incremental.snapshot.chunk.key-column"] = f"{source_db}.orders:nope"
    document["spec"]["spark"] = {"restartPolicy": {"onFailureRetries": 1, "onFailureRetryInterval": 1}}
    apply(cluster, document)
    status = cluster.wait("no-column", "Failed", lambda s: s.get("phase") == "Failed", timeout=180)
    assert (
        status["driver"]["retriable"] is False
        and f"{source_db}.orders has no column 'nope'" in status["driver"]["error"]
    )
    time.sleep(6)  # six retry intervals: none comes
    status = cluster.cdc_pipeline("no-column")["status"]
    assert status["phase"] == "Failed" and not status.get("retry")
    assert "Retry" not in [reason for reason, _ in cluster.events("no-column")]
