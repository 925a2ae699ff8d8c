"""A Kubernetes stand-in for end-to-end tests of the operator: the Kubernetes API test
double, the operator as its own process, the Spark Operator test double, and kubectl."""

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
from tests.harness.spark_operator_double import SparkOperatorDouble
from tests.harness.tools import KUBECTL

GROUP, VERSION, PLURAL = "sluice.io", "v1alpha1", "cdcpipelines"


class Cluster:
    """What a test drives: kubectl, the API, the operator and the Spark Operator double."""

    def __init__(self, kube_api: RunningApiDouble, directory: Path, namespace: str) -> None:
        self.kube_api, self.directory, self.namespace = kube_api, directory, namespace
        api_client = kube_api.client()
        self.custom = client.CustomObjectsApi(api_client)
        self.core = client.CoreV1Api(api_client)
        self.operator = OperatorProcess(kube_api.kubeconfig, directory / "operator.log").start()
        self.spark = SparkOperatorDouble(api_client, kube_api.kubeconfig, directory / "spark", namespace).start()

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

    def secret(self, name: str, password: str) -> None:
        data = {"password": base64.b64encode(password.encode()).decode()}
        self.core.create_namespaced_secret(self.namespace, {"metadata": {"name": name}, "data": data})

    def close(self) -> None:
        self.operator.stop()
        self.spark.stop()


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
