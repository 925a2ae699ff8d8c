"""The Helm chart, with a real helm: it lints and renders for the default values and for a
values file with every option set; every object it renders is valid for Kubernetes 1.33 in
strict mode (kubernetes-validate) and its CRD is the top-level one; values outside the
schema are refused; RBAC is least-privilege and still lets the operator grant the driver
its Role; nothing of the Spark Operator's own chart is installed."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from sluice_operator.rbac import driver_rbac
from tests.harness.prometheus import DASHBOARD
from tests.harness.tools import HELM
from tests.sluice_operator.test_spark_application import CDC_PIPELINE, _rendered

ROOT = Path(__file__).parents[2]
CHART = ROOT / "charts" / "sluice"
FULL = CHART / "ci" / "full-values.yaml"
KUBERNETES = "1.33"


def helm(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(HELM), *args], capture_output=True, text=True)


def render(*values: str) -> list[dict[str, Any]]:
    done = helm("template", "sluice", str(CHART), "--namespace", "sluice-system", "--include-crds", *values)
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


@pytest.mark.parametrize("values", [[], ["-f", str(FULL)]], ids=["defaults", "every-option"])
def test_the_chart_lints_and_every_object_is_valid_kubernetes(values):
    linted = helm("lint", str(CHART), "--strict", *values)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    objects = render(*values)
    for obj in objects:
        if obj["apiVersion"] == "monitoring.coreos.com/v1":
            continue  # the Prometheus Operator's kinds: checked below and in test_alert_rules.py
        kubernetes_validate.validate(obj, KUBERNETES, strict=True)
    kinds = sorted(o["kind"] for o in objects)
    assert "CustomResourceDefinition" in kinds and "Deployment" in kinds


def test_the_charts_crd_is_the_top_level_one():
    assert (CHART / "crds" / "cdcpipelines.sluice.io.yaml").read_text() == (
        ROOT / "crds" / "cdcpipelines.sluice.io.yaml"
    ).read_text()


def test_values_outside_the_schema_are_refused_naming_them():
    for setting, named in (("replicaCount=9", "/replicaCount"), ("image.pullPolicy=Sometimes", "/image/pullPolicy")):
        done = helm("template", "sluice", str(CHART), "--set", setting)
        assert done.returncode != 0 and named in done.stderr, done.stderr


def test_the_operator_runs_restricted_with_probes_on_its_health_endpoints():
    (deployment,) = [o for o in render("-f", str(FULL)) if o["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert deployment["spec"]["replicas"] == 2 and deployment["spec"]["strategy"]["type"] == "RollingUpdate"
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    env = {e["name"]: e.get("value") or e["valueFrom"]["fieldRef"]["fieldPath"] for e in container["env"]}
    assert env["POD_NAME"] == "metadata.name" and env["POD_NAMESPACE"] == "metadata.namespace"  # the Lease
    assert env["SLUICE_OPERATOR_HTTP_PORT"] == str(container["ports"][0]["containerPort"]) == "9090"
    assert container["args"][:2] == ["--namespace=data", "--namespace=analytics"]


def test_rbac_is_cluster_wide_or_per_namespace_and_covers_the_drivers_role():
    default = {(o["kind"], o["metadata"]["name"]) for o in render()}
    assert ("ClusterRole", "sluice") in default
    assert [name for kind, name in default if kind == "Role"] == ["sluice-leader-election"]
    objects = render("-f", str(FULL))
    roles = [o for o in objects if o["kind"] == "Role"]
    assert sorted(r["metadata"]["namespace"] for r in roles if r["metadata"]["name"] == "sluice") == [
        "analytics",
        "data",
    ]
    assert [o["metadata"]["name"] for o in objects if o["kind"] == "ClusterRole"] == ["sluice-discovery"]
    roles = [r for r in roles if r["metadata"]["name"] != "sluice-leader-election"]
    # RBAC forbids granting what one does not hold: the operator holds every rule it gives the driver.
    granted = {
        (group, resource, verb)
        for rule in roles[0]["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    (driver_role,) = [o for o in driver_rbac(CDC_PIPELINE) if o["kind"] == "Role"]
    for rule in driver_role["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                for verb in rule["verbs"]:
                    assert (group, resource, verb) in granted, (group, resource, verb)
    assert not any(r == "secrets" and v != "get" for _, r, v in granted)  # Secrets: read one by name, never list


def test_the_service_monitor_scrapes_the_operators_service():
    objects = render("-f", str(FULL))
    (service,) = [o for o in objects if o["kind"] == "Service"]
    (monitor,) = [o for o in objects if o["kind"] == "ServiceMonitor"]
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["endpoints"][0]["port"] == service["spec"]["ports"][0]["name"]
    assert not any(o["kind"] == "ServiceMonitor" for o in render())  # off by default


def test_the_pod_monitor_scrapes_every_pipelines_driver_and_nothing_else():
    """Spark labels a driver pod spark-role=driver; the Spark Operator gives it the
    SparkApplication's driver labels and ports."""
    (monitor,) = [o for o in render("-f", str(FULL)) if o["kind"] == "PodMonitor"]
    application = _rendered()[0]["spec"]
    driver_pod_labels = {**application["driver"]["labels"], "spark-role": "driver"}
    executor_pod_labels = {**application["executor"]["labels"], "spark-role": "executor"}
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert selector.items() <= driver_pod_labels.items() and not selector.items() <= executor_pod_labels.items()
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    assert endpoint["port"] in {port["name"] for port in application["driver"]["ports"]}
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["data", "analytics"]}
    assert not any(o["kind"] == "PodMonitor" for o in render())  # off by default


def test_the_dashboard_is_a_config_map_for_grafanas_sidecar_and_the_alerts_a_prometheus_rule():
    objects = render("-f", str(FULL))
    (dashboard,) = [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"].endswith("-dashboard")]
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(dashboard["data"]["sluice.json"]) == json.loads(DASHBOARD.read_text())
    (rule,) = [o for o in objects if o["kind"] == "PrometheusRule"]
    assert rule["metadata"]["labels"]["release"] == "prometheus"
    defaults = {o["kind"] for o in render()}
    assert "PrometheusRule" not in defaults and "ConfigMap" not in defaults  # off by default


def test_nothing_of_the_spark_operators_chart_is_installed_and_the_supported_versions_are_said():
    for obj in render("-f", str(FULL)):
        assert "sparkoperator.k8s.io" not in obj.get("apiVersion", "")
        if obj["kind"] == "CustomResourceDefinition":
            assert obj["spec"]["group"] == "sluice.io"
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["annotations"]["sluice.io/spark-operator-versions"]
    notes = helm("install", "sluice", str(CHART), "--dry-run=client", "--namespace", "sluice-system")
    assert "kubectl apply -f examples/mysql-to-postgresql.yaml" in notes.stdout, notes.stderr
