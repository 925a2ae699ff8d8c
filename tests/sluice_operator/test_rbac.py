"""What each component may do on a cluster, checked under RBAC by identity in the Kubernetes
API test double: the driver with the Role the operator gives it, the operator with the
rules the chart grants (cluster-wide and per watched namespace), and owner references
under the OwnerReferencesPermissionEnforcement admission plugin (OpenShift)."""

from __future__ import annotations

import itertools
import time
from pathlib import Path
from typing import Any

from kubernetes import client

from sluice.source.offset import BinlogOffset
from sluice.state.cdc_pipeline_store import GROUP, PLURAL, VERSION, StatusStateStore
from sluice_operator.rbac import driver_rbac
from tests.harness.cluster import Cluster, apply, manifest
from tests.harness.kube_api_double import RunningApiDouble
from tests.harness.states import bigint_edges, planned_state
from tests.harness.test_kube_api_double import cdc_pipeline
from tests.sluice_operator.test_end_to_end import changes, seed, wait_equal, wait_streaming

_namespaces = itertools.count()


def test_the_driver_keeps_its_state_in_the_status_with_nothing_but_the_role_the_operator_gives_it(
    kube_api: RunningApiDouble, tmp_path: Path
):
    namespace = f"driver-rbac-{next(_namespaces)}"
    admin = client.CustomObjectsApi(kube_api.client())
    cr = admin.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, cdc_pipeline("orders"))
    for obj in driver_rbac(cr):
        kube_api.create(obj)
    account = next(o for o in driver_rbac(cr) if o["kind"] == "ServiceAccount")["metadata"]["name"]
    driver = client.CustomObjectsApi(kube_api.client(kube_api.service_account_kubeconfig(namespace, account, tmp_path)))
    denied_before = len(kube_api.double.denials)
    store = StatusStateStore(driver, namespace, "orders", interval=0)
    assert store.load() is None  # claims the status: a write
    store.save(planned_state(bigint_edges(10), finish=3))
    store.record_binlog_offset(BinlogOffset("mysql-bin.000002", 4))
    store.report_failure("the source is unreachable")
    assert store.approved_schema_changes() == []
    status = admin.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "orders")["status"]
    assert status["driver"]["error"] == "the source is unreachable" and status["snapshot"]["progress"] == "3/10"
    assert kube_api.double.denials[denied_before:] == []


def test_an_operator_watching_namespaces_runs_a_pipeline_through_snapshot_scale_down_and_streaming(
    kube_api: RunningApiDouble, tmp_path: Path, mariadb, postgresql, source_db
):
    namespace = f"watched-{next(_namespaces)}"
    cluster = Cluster(kube_api, tmp_path, namespace, watch_namespaces=True)  # waits for /readyz
    try:
        assert cluster.operator_args == [f"--namespace={namespace}"]
        seed(mariadb, source_db, 1500)
        cluster.passwords(mariadb, postgresql)
        apply(cluster, manifest("orders", mariadb, postgresql, f"{source_db}.orders"))
        cluster.wait("orders", "the snapshot shape", lambda s: (s.get("application") or {}).get("shape") == "snapshot")
        wait_streaming(cluster, "orders")
        assert "instances" not in cluster.application("orders")["spec"]["executor"]  # scaled down
        changes(mariadb, source_db, 10_000)
        wait_equal(mariadb, postgresql, source_db)
        account = f"system:serviceaccount:sluice-system:sluice-{namespace}"
        assert not [d for d in kube_api.double.denials if account in d]
    finally:
        cluster.close()


def test_what_the_operator_creates_is_admitted_under_owner_reference_enforcement(
    kube_api: RunningApiDouble, tmp_path: Path
):
    namespace = f"owners-{next(_namespaces)}"
    kube_api.double.enforce_owner_references = True
    denied_before = len(kube_api.double.denials)
    cluster = Cluster(kube_api, tmp_path, namespace)
    try:
        cluster.secret("mysql", "unused")  # suspended: no driver runs
        document: dict[str, Any] = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "CdcPipeline",
            "metadata": {"name": "owned"},
            "spec": {**cdc_pipeline("owned")["spec"], "suspend": True},
        }
        apply(cluster, document)
        deadline = time.monotonic() + 60
        while cluster.application("owned") is None and time.monotonic() < deadline:
            time.sleep(0.3)
        assert cluster.application("owned") is not None, kube_api.double.denials[-5:]
        owned = ("ConfigMap", "ServiceAccount", "Role", "RoleBinding", "SparkApplication")
        writes = [
            w
            for w in kube_api.double.writes
            if w["kind"] in owned and (w["method"], w["namespace"]) == ("POST", namespace)
        ]
        assert {w["kind"] for w in writes} == set(owned)
        assert not [d for d in kube_api.double.denials[denied_before:] if "blockOwnerDeletion" in d]
    finally:
        kube_api.double.enforce_owner_references = False
        cluster.close()
