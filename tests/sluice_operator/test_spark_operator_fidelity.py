"""What a real Spark Operator does to the applications the operator renders: its defaulting
webhook adds fields, its validating webhook refuses names, releases before v2.4.0 have no
`spec.suspend`, and admission policies may refuse an application. None of it may restart a
driver needlessly, and every refusal reaches the CdcPipeline."""

from __future__ import annotations

import subprocess
import time
from typing import Any

import pytest
import yaml

from tests.harness.cluster import Cluster, apply, manifest
from tests.harness.kube_api_double import ApiError, Webhook
from tests.harness.spark_operator_double import SparkOperatorDouble
from tests.harness.tools import KUBECTL
from tests.sluice_operator.test_end_to_end import seed, wait_equal, wait_streaming

pytestmark = pytest.mark.slow


def condition(status: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in status.get("conditions", []) if c["type"] == kind), {})


def application_writes(cluster: Cluster, method: str) -> list[dict[str, Any]]:
    wanted = ("SparkApplication", method, cluster.namespace)
    return [w for w in cluster.kube_api.double.writes if (w["kind"], w["method"], w["namespace"]) == wanted]


def test_fields_the_webhook_defaults_never_cause_a_replace_or_a_rerun(cluster, mariadb, postgresql, source_db):
    seed(mariadb, source_db, 1)
    mariadb.execute(f"DELETE FROM {source_db}.orders")  # before the start: the target starts empty too
    cluster.passwords(mariadb, postgresql)
    document = manifest("latest", mariadb, postgresql, f"{source_db}.orders")
    document["spec"]["source"]["scan.startup.mode"] = "latest-offset"  # streaming-shaped from the start
    before = len(application_writes(cluster, "PUT"))
    apply(cluster, document)
    wait_streaming(cluster, "latest")
    app = cluster.application("latest")
    assert app["spec"]["dynamicAllocation"]["shuffleTrackingEnabled"] is True  # the webhook's default
    assert app["spec"]["restartPolicy"]["onFailureRetryInterval"] == 10
    time.sleep(8)  # several resync passes
    # Ready says the application runs, not that the driver took its latest offset yet: rows
    # written before that are rightly not read (a loaded CI machine once showed it).
    cluster.wait("latest", "the driver's binlog position", lambda s: bool(s.get("binlog")))
    mariadb.execute(f"INSERT INTO {source_db}.orders VALUES (1, 'a', 1.00), (2, 'b', 2.00)")
    wait_equal(mariadb, postgresql, source_db)
    run = cluster.spark.runs[(cluster.namespace, "latest-sluice")]
    assert "INVALIDATING" not in run.history and run.attempts == 1, run.history
    assert application_writes(cluster, "PUT")[before:] == []


def test_a_name_the_spark_operator_would_refuse_is_refused_by_the_crd(cluster, mariadb, postgresql, tmp_path):
    for name in ("orders.eu", "o" * 57, "9orders"):
        document = manifest(name, mariadb, postgresql, "shop.orders")
        path = tmp_path / "bad-name.yaml"
        path.write_text(yaml.safe_dump(document))
        done = subprocess.run(
            [str(KUBECTL), "--kubeconfig", str(cluster.kube_api.kubeconfig), "-n", cluster.namespace]
            + ["apply", "--validate=false", "-f", str(path)],
            capture_output=True,
            text=True,
        )
        assert done.returncode != 0 and "metadata.name" in done.stderr and "DNS-1035" in done.stderr, done.stderr
    apply(cluster, manifest("o" * 56, mariadb, postgresql, "shop.orders"))  # the longest that fits


def test_a_refusal_by_an_admission_policy_is_a_degraded_condition_and_a_warning(
    cluster, mariadb, postgresql, source_db
):
    seed(mariadb, source_db, 10)
    cluster.passwords(mariadb, postgresql)

    def require_team_label(review):
        if review.obj["metadata"]["namespace"] == cluster.namespace and "team" not in review.obj["metadata"].get(
            "labels", {}
        ):
            raise ApiError(403, "Forbidden", "every SparkApplication needs a team label")
        return review.obj

    policy = Webhook("require-team.kyverno.svc", "SparkApplication", False, require_team_label)
    cluster.kube_api.double.webhooks.append(policy)
    try:
        apply(cluster, manifest("policed", mariadb, postgresql, f"{source_db}.orders"))
        status = cluster.wait(
            "policed", "Degraded", lambda s: "team label" in condition(s, "Degraded").get("message", "")
        )
        degraded = condition(status, "Degraded")
        assert degraded["status"] == "True" and degraded["reason"] == "ApplicationRefused"
        assert 'admission webhook "require-team.kyverno.svc" denied the request' in degraded["message"]
        assert any(
            "team label" in message for reason, message in cluster.events("policed") if reason == "ApplicationRefused"
        )
    finally:
        cluster.kube_api.double.webhooks.remove(policy)
    wait_streaming(cluster, "policed")  # the policy lifted: the next pass submits it


@pytest.fixture
def old_spark_operator(kube_api, tmp_path):
    cluster = Cluster(kube_api, tmp_path, "spark-operator-2-3", spark_operator_version="2.3.0")
    yield cluster
    cluster.close()
    SparkOperatorDouble(kube_api, tmp_path, "none").install_crd()  # the current release's again


def test_before_spark_operator_2_4_suspend_deletes_the_application_and_says_so(
    old_spark_operator, mariadb, postgresql, source_db
):
    cluster = old_spark_operator
    seed(mariadb, source_db, 200)
    cluster.passwords(mariadb, postgresql)
    document = manifest("orders", mariadb, postgresql, f"{source_db}.orders")
    apply(cluster, document)
    wait_streaming(cluster, "orders")
    assert "suspend" not in cluster.application("orders")["spec"]
    replaced = len(application_writes(cluster, "PUT"))  # the scale-down to the streaming shape
    cluster.kubectl("patch", "cdcp", "orders", "--type", "merge", "-p", '{"spec": {"suspend": true}}')
    status = cluster.wait("orders", "Suspended", lambda s: s.get("phase") == "Suspended")
    deadline = time.monotonic() + 30
    while cluster.application("orders") is not None and time.monotonic() < deadline:
        time.sleep(0.3)
    assert (
        cluster.application("orders") is None and cluster.spark.driver_pid(cluster.namespace, "orders-sluice") is None
    )
    assert "v2.4.0" in condition(status, "Ready")["message"]
    assert any("v2.4.0" in message for reason, message in cluster.events("orders") if reason == "Suspended")
    mariadb.execute(f"UPDATE {source_db}.orders SET total = 0 WHERE id < 50")
    cluster.kubectl("patch", "cdcp", "orders", "--type", "merge", "-p", '{"spec": {"suspend": false}}')
    wait_streaming(cluster, "orders")
    wait_equal(mariadb, postgresql, source_db)
    assert len(application_writes(cluster, "PUT")) == replaced  # never a replace loop over a pruned field
