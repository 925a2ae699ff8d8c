"""Two replicas of the operator: one leads (it holds the Lease), the other stands by and
writes nothing; the leader SIGKILLed, the standby takes the Lease within the lease time and
goes on from what is, with no second SparkApplication and no status write lost."""

from __future__ import annotations

import time

import pytest
from kubernetes import client

from sluice_operator.leader import LEASE_SECONDS, RETRY_SECONDS
from tests.harness.cluster import OPERATOR_NAMESPACE, Cluster, apply, manifest
from tests.sluice_operator.test_end_to_end import changes, seed, wait_equal, wait_streaming

pytestmark = pytest.mark.slow


def holder(cluster: Cluster) -> str:
    coordination = client.CoordinationV1Api(cluster.kube_api.client())
    return coordination.read_namespaced_lease(f"sluice-{cluster.namespace}", OPERATOR_NAMESPACE).spec.holder_identity


def test_the_standby_takes_over_when_the_leader_dies(cluster: Cluster, mariadb, postgresql, source_db):
    standby = cluster.operator_process("operator-standby.log")
    try:
        assert holder(cluster) == cluster.operator.name
        seed(mariadb, source_db, 1000)
        cluster.passwords(mariadb, postgresql)
        apply(cluster, manifest("orders", mariadb, postgresql, f"{source_db}.orders"))
        wait_streaming(cluster, "orders")
        assert not [w for w in cluster.kube_api.double.writes if standby.name in w["agent"]]  # it stood by

        cluster.operator.kill()
        killed = time.monotonic()
        while holder(cluster) != standby.name:
            assert time.monotonic() - killed < LEASE_SECONDS + 3 * RETRY_SECONDS, "the standby did not take over"
            time.sleep(0.2)
        print(f"the standby took the Lease {time.monotonic() - killed:.1f}s after the leader died")

        cluster.kubectl("patch", "cdcp", "orders", "--type", "merge", "-p", '{"spec": {"suspend": true}}')
        status = cluster.wait("orders", "Suspended", lambda s: s.get("phase") == "Suspended")
        assert status["observedGeneration"] == cluster.cdc_pipeline("orders")["metadata"]["generation"]
        cluster.kubectl("patch", "cdcp", "orders", "--type", "merge", "-p", '{"spec": {"suspend": false}}')
        wait_streaming(cluster, "orders")
        changes(mariadb, source_db, 5000)
        wait_equal(mariadb, postgresql, source_db)
        listed = cluster.custom.list_namespaced_custom_object(
            "sparkoperator.k8s.io", "v1beta2", cluster.namespace, "sparkapplications"
        )["items"]
        assert [a["metadata"]["name"] for a in listed] == ["orders-sluice"]
        created = [
            w
            for w in cluster.kube_api.double.writes
            if (w["kind"], w["method"], w["namespace"]) == ("SparkApplication", "POST", cluster.namespace)
        ]
        assert len(created) == 1  # never a second submission
    finally:
        standby.stop()
