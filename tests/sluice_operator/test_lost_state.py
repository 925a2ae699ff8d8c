"""A CdcPipeline deleted and applied again (an Argo CD prune and re-sync) lost its status,
not its target: the new driver adopts the target's records and streams on from the committed
position, without a snapshot, and the Event says so."""

from __future__ import annotations

import time

import pytest

from tests.harness.cluster import Cluster, apply, manifest
from tests.sluice_operator.test_end_to_end import changes, seed, wait_equal, wait_streaming

pytestmark = pytest.mark.slow


def test_a_re_created_cdc_pipeline_adopts_the_target_and_streams_without_a_snapshot(
    cluster: Cluster, mariadb, postgresql, source_db
):
    seed(mariadb, source_db, 2000)
    cluster.passwords(mariadb, postgresql)
    document = manifest("orders", mariadb, postgresql, f"{source_db}.orders")
    apply(cluster, document)
    wait_streaming(cluster, "orders")
    wait_equal(mariadb, postgresql, source_db)

    cluster.kubectl("delete", "cdcp", "orders")
    deadline = time.monotonic() + 30
    while cluster.spark.driver_pid(cluster.namespace, "orders-sluice") and time.monotonic() < deadline:
        time.sleep(0.2)
    changes(mariadb, source_db, 10_000)  # deletes and a primary-key change while nothing runs
    apply(cluster, document)
    phases = set()
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        status = cluster.cdc_pipeline("orders").get("status") or {}
        phases.add(status.get("phase"))
        ready = {c["type"]: c["status"] for c in status.get("conditions", [])}.get("Ready")
        if status.get("phase") == "Streaming" and ready == "True":
            break
        time.sleep(0.2)
    wait_streaming(cluster, "orders")
    assert "Snapshotting" not in phases, phases
    adopted = [message for reason, message in cluster.events("orders") if reason == "Adopted"]
    assert adopted and "streaming from" in adopted[0], cluster.events("orders")
    assert cluster.cdc_pipeline("orders")["status"]["snapshot"]["splitsDone"] > 0  # the adopted summary
    changes(mariadb, source_db, 20_000)
    wait_equal(mariadb, postgresql, source_db)
