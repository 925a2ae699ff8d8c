"""Verification and repair on Kubernetes, GitOps-friendly: a new spec.verification.id asks
for a verification, its result is in status and in the Verified condition and an Event;
`repair` reads the ranges that differ again; each spec.resnapshots request is done once.
The streaming driver carries them out as it goes: it is not restarted."""

from __future__ import annotations

import json
import time

import pytest

from tests.harness.cluster import Cluster, apply, manifest
from tests.sluice_operator.test_end_to_end import changes, seed, wait_equal, wait_streaming

pytestmark = pytest.mark.slow


def patch(cluster: Cluster, name: str, spec: dict) -> None:
    cluster.kubectl("patch", "cdcp", name, "--type", "merge", "-p", json.dumps({"spec": spec}))


def verified_condition(status: dict) -> dict:
    return next(c for c in status.get("conditions", []) if c["type"] == "Verified")


def finished(cluster: Cluster, verification_id: str) -> dict:
    return cluster.wait(
        "orders",
        f"verification {verification_id}",
        lambda s: (
            (s.get("verification") or {}).get("id") == verification_id and bool(s["verification"].get("finishedAt"))
        ),
    )


def test_verification_finds_what_was_corrupted_and_repair_and_resnapshot_mend_it_while_streaming(
    cluster: Cluster, mariadb, postgresql, source_db
):
    seed(mariadb, source_db, 2000)
    cluster.passwords(mariadb, postgresql)
    apply(cluster, manifest("orders", mariadb, postgresql, f"{source_db}.orders"))
    wait_streaming(cluster, "orders")
    changes(mariadb, source_db, 10_000)  # the reader moves past the snapshot's watermarks
    wait_equal(mariadb, postgresql, source_db)
    run = cluster.cdc_pipeline("orders")["status"]["driver"]["run"]

    with postgresql.connect() as conn:  # behind the pipeline's back
        conn.execute(f"UPDATE {source_db}.orders SET total = -1 WHERE id = 5")
        conn.execute(f"DELETE FROM {source_db}.orders WHERE id = 1900")
    patch(cluster, "orders", {"verification": {"id": "v1"}})
    status = finished(cluster, "v1")
    assert status["verification"]["mismatchCount"] == 2, status["verification"]
    # The operator turns the driver's result into the condition on its next pass.
    status = cluster.wait("orders", "Verified: Mismatch", lambda s: verified_condition(s)["reason"] == "Mismatch")
    condition = verified_condition(status)
    assert condition["status"] == "False", condition
    assert f"{source_db}.orders [-inf, " in condition["message"] and "id=5 differs in total" in condition["message"]
    cluster.wait("orders", "the mismatch Event", lambda _: "VerificationMismatch" in dict(cluster.events("orders")))

    patch(cluster, "orders", {"verification": {"id": "v2", "repair": True}})
    status = finished(cluster, "v2")
    assert status["verification"]["repairedCount"] == 2, status["verification"]
    wait_equal(mariadb, postgresql, source_db)
    cluster.wait("orders", "Verified", lambda s: verified_condition(s)["status"] == "True")
    assert "Verified" in dict(cluster.events("orders"))

    with postgresql.connect() as conn:
        conn.execute(f"DELETE FROM {source_db}.orders WHERE id < 500")
    changes(mariadb, source_db, 20_000)
    patch(cluster, "orders", {"resnapshots": [{"id": "r1", "tables": [f"{source_db}.orders"]}]})
    cluster.wait(
        "orders",
        "resnapshot r1",
        lambda s: any(r.get("id") == "r1" and r.get("state") == "Done" for r in s.get("resnapshots") or []),
    )
    wait_equal(mariadb, postgresql, source_db)
    cluster.wait("orders", "the Resnapshotted Event", lambda _: "Resnapshotted" in dict(cluster.events("orders")))

    status = wait_streaming(cluster, "orders")
    assert status["driver"]["run"] == run  # one driver throughout: no restart
    time.sleep(3)  # a request is done once: no second resnapshot
    assert [r["id"] for r in cluster.cdc_pipeline("orders")["status"]["resnapshots"]] == ["r1"]
    assert [reason for reason, _ in cluster.events("orders")].count("Resnapshotted") == 1
