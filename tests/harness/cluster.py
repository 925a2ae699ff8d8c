"""A Kubernetes stand-in for end-to-end tests of the operator: the Kubernetes API test
double, the operator as its own process, the Spark Operator test double, and kubectl.

Everything runs under RBAC as on a cluster: the operator as the ServiceAccount of the chart
(rendered by helm, cluster-wide or for `watchNamespaces`), with the rules the chart grants and
the arguments its Deployment passes; each driver as the ServiceAccount the operator made for
it; kubectl and the test itself as the cluster admin."""

from __future__ import annotations

import base64
import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from tests.harness.kube_api_double import RunningApiDouble
from tests.harness.operator_process import OperatorProcess
from tests.harness.services import MariaDB, PostgreSQL
from tests.harness.spark_operator_double import SPARK_OPERATOR_VERSION, SparkOperatorDouble
from tests.harness.tools import HELM, KUBECTL

CHART = Path(__file__).parents[2] / "charts" / "sluice"

GROUP, VERSION, PLURAL = "sluice.io", "v1alpha1", "cdcpipelines"


OPERATOR_NAMESPACE = "sluice-system"


class Cluster:
    """What a test drives: kubectl, the API, the operator and the Spark Operator double."""

    def __init__(
        self,
        kube_api: RunningApiDouble,
        directory: Path,
        namespace: str,
        watch_namespaces: bool = False,
        spark_operator_version: str = SPARK_OPERATOR_VERSION,
    ) -> None:
        self.kube_api, self.directory, self.namespace = kube_api, directory, namespace
        api_client = kube_api.client()
        self.custom = client.CustomObjectsApi(api_client)
        self.core = client.CoreV1Api(api_client)
        self.spark = SparkOperatorDouble(kube_api, directory / "spark", namespace, spark_operator_version).start()
        self.operator_kubeconfig, self.operator_args = install_operator(
            kube_api, directory, [namespace] if watch_namespaces else []
        )
        self.operator = self.operator_process()

    def operator_process(self, log: str = "operator.log") -> OperatorProcess:
        """Another replica of the operator, as the chart's Deployment runs it."""
        lease = (OPERATOR_NAMESPACE, f"sluice-{self.namespace}")  # one per test: none outlives it
        return OperatorProcess(
            self.operator_kubeconfig, self.directory / log, args=self.operator_args, lease=lease
        ).start()

    def kubectl(self, *args: str) -> str:
        done = subprocess.run(
            [str(KUBECTL), "--kubeconfig", str(self.kube_api.kubeconfig), "-n", self.namespace, *args],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def cdc_pipeline(self, name: str) -> dict[str, Any]:
        return self.custom.get_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL, name)

    def application(self, name: str) -> dict[str, Any] | None:
        try:
            return self.custom.get_namespaced_custom_object(
                "sparkoperator.k8s.io", "v1beta2", self.namespace, "sparkapplications", f"{name}-sluice"
            )
        except client.exceptions.ApiException:
            return None

    def driver_port(self, name: str, port: str, timeout: float = 60) -> int:
        """Where the CdcPipeline's driver serves its port `port`, once the Spark Operator
        double submitted it."""
        deadline = time.monotonic() + timeout
        while (run := self.spark.runs.get((self.namespace, f"{name}-sluice"))) is None or port not in run.ports:
            assert time.monotonic() < deadline, f"{name}: no driver with a port {port} submitted"
            time.sleep(0.1)
        return run.ports[port]

    def events(self, name: str) -> list[tuple[str, str]]:
        listed = self.core.list_namespaced_event(self.namespace, field_selector=f"involvedObject.name={name}")
        return [(e.reason, e.message) for e in listed.items]

    def wait(self, name: str, what: str, ready: Callable[[dict[str, Any]], bool], timeout: float = 240) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = self.cdc_pipeline(name).get("status") or {}
            if ready(status):
                return status
            time.sleep(0.5)
        logs = "\n".join(p.read_text()[-2500:] for p in sorted(self.directory.rglob("*.log")))
        raise AssertionError(f"timed out waiting for {what}; status: {json.dumps(status)[:3000]}\n{logs}")

    def passwords(self, source: MariaDB, target: PostgreSQL) -> None:
        """The Secrets `manifest` refers to."""
        self.secret("mariadb", source.password)
        self.secret("postgresql", target.password)

    def secret(self, name: str, password: str) -> None:
        data = {"password": base64.b64encode(password.encode()).decode()}
        self.core.create_namespaced_secret(self.namespace, {"metadata": {"name": name}, "data": data})

    def close(self) -> None:
        """The test's CdcPipelines deleted as a namespace's deletion would (the operator
        finalizes them, their owned objects go with them), then the operator and the Spark
        Operator double stopped: a later test's cluster-wide operator would otherwise find
        every pipeline left behind and reconcile it, slower with each test."""
        try:
            self._delete_pipelines()
        finally:
            self.operator.stop()
            self.spark.stop()

    def _delete_pipelines(self, timeout: float = 10) -> None:
        def names() -> list[str]:
            listed = self.custom.list_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL)["items"]
            return [item["metadata"]["name"] for item in listed]

        for name in names():
            self.custom.delete_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL, name)
        deadline = time.monotonic() + timeout
        while left := names():
            if time.monotonic() > deadline:  # no operator finalizes them (a test stopped it): as an admin would
                for name in left:
                    patch = {"metadata": {"finalizers": None}}
                    self.custom.patch_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL, name, patch)
                return
            time.sleep(0.2)


def install_operator(
    kube_api: RunningApiDouble, directory: Path, watch_namespaces: list[str]
) -> tuple[Path, list[str]]:
    """`helm template` of the chart, its ServiceAccount and RBAC created in the API double (the
    cluster-wide release once per session, a namespaced one per set of namespaces); the
    kubeconfig the operator's pod would have, and its container's arguments."""
    release = "sluice-" + "-".join(watch_namespaces) if watch_namespaces else "sluice"
    values = ["--set-json", f"watchNamespaces={json.dumps(watch_namespaces)}"]
    done = subprocess.run(
        [str(HELM), "template", release, str(CHART), "--namespace", OPERATOR_NAMESPACE, *values],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    objects = [o for o in yaml.safe_load_all(done.stdout) if o]
    for obj in objects:
        if obj["kind"] in ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"):
            kube_api.create(obj, exist_ok=True)
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    kubeconfig = kube_api.service_account_kubeconfig(OPERATOR_NAMESPACE, pod["serviceAccountName"], directory)
    return kubeconfig, [a for a in container["args"] if a not in ("--verbose", "-v")]


def manifest(name: str, mariadb: MariaDB, postgresql: PostgreSQL, tables: str, **pipeline: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "CdcPipeline",
        "metadata": {"name": name},
        "spec": {
            "source": {
                "type": "mysql",
                "hostname": mariadb.host,
                "port": mariadb.port,
                "username": mariadb.user,
                "passwordSecretRef": {"name": "mariadb", "key": "password"},
                "tables": tables,
                "server-id": "6700-6710",
                "scan.incremental.snapshot.chunk.size": 250,
            },
            "sink": {
                "type": "jdbc",
                "url": postgresql.url,
                "username": postgresql.user,
                "passwordSecretRef": {"name": "postgresql", "key": "password"},
            },
            "pipeline": {"parallelism": 2, "schema.change.behavior": "manual", **pipeline},
            "spark": {"snapshotExecutors": 2},
        },
    }


def apply(cluster: Cluster, document: dict[str, Any]) -> None:
    path = cluster.directory / f"{document['metadata']['name']}.yaml"
    path.write_text(yaml.safe_dump(document))
    assert "created" in cluster.kubectl("apply", "--validate=false", "-f", str(path))
