"""Bad input never crashes the operator: each mistake becomes a Degraded condition and a
Warning Event that name what to fix, and the operator goes on reconciling the others, all
in one run."""

from __future__ import annotations

import copy
import subprocess
from typing import Any

import pytest
import yaml

from tests.harness.cluster import Cluster, apply, manifest
from tests.harness.services import free_port
from tests.harness.tools import KUBECTL

pytestmark = pytest.mark.slow


def degraded(status: dict[str, Any]) -> dict[str, Any]:
    return next((c for c in status.get("conditions", []) if c["type"] == "Degraded"), {})


def test_each_bad_input_is_a_degraded_condition_and_a_warning_and_the_operator_goes_on(
    cluster: Cluster, mariadb, postgresql, source_db
):
    mariadb.execute(f"CREATE TABLE {source_db}.orders (id INT PRIMARY KEY)")
    cluster.passwords(mariadb, postgresql)
    cluster.core.create_namespaced_secret(
        cluster.namespace, {"metadata": {"name": "wrong-key"}, "data": {"pw": "eA=="}}
    )
    good = manifest("good", mariadb, postgresql, f"{source_db}.orders")
    cases: dict[str, tuple[dict[str, Any], str]] = {}

    def case(name: str, fix: str, change: Any) -> None:
        document = copy.deepcopy(good)
        document["metadata"]["name"] = name
        change(document["spec"])
        cases[name] = (document, fix)

    case(
        "no-secret",
        "Secret {ns}/absent does not exist",
        lambda s: s["source"]["passwordSecretRef"].update(name="absent"),
    )
    case(
        "no-key",
        "Secret {ns}/wrong-key has no key 'password'",
        lambda s: s["sink"].update(passwordSecretRef={"name": "wrong-key", "key": "password"}),
    )
    case(
        "no-mask-secret",
        "spec.secretEnv[0].secretKeyRef: Secret {ns}/absent-mask does not exist",
        lambda s: s.update(secretEnv=[{"name": "MASK_KEY", "secretKeyRef": {"name": "absent-mask", "key": "k"}}]),
    )
    case("bad-option", "source.server-time-zone", lambda s: s["source"].update({"server-time-zone": "Mars/Olympus"}))
    case("unreachable", "source.hostname", lambda s: s["source"].update(port=free_port()))
    case(
        "no-such-chunk-key",
        f"{source_db}.orders has no column 'nope'",
        lambda s: s["source"].update({"scan.incremental.snapshot.chunk.key-column": f"{source_db}.orders:nope"}),
    )
    suspended = copy.deepcopy(good)
    suspended["metadata"]["name"] = "good"
    suspended["spec"]["suspend"] = True  # valid: the operator keeps reconciling it next to the bad ones
    for document, _ in cases.values():
        apply(cluster, document)
    apply(cluster, suspended)

    for name, (_, fix) in cases.items():
        fix = fix.format(ns=cluster.namespace)
        status = cluster.wait(name, f"{name}: Degraded", lambda s, fix=fix: fix in degraded(s).get("message", ""))
        assert degraded(status)["status"] == "True", name
        warnings = [message for reason, message in cluster.events(name) if fix in message]
        assert warnings, (name, cluster.events(name))
        assert "sluice-test" not in str(status) + str(cluster.events(name))  # no password anywhere
    status = cluster.wait("good", "suspended", lambda s: s.get("phase") == "Suspended")
    assert cluster.application("good")["spec"]["suspend"] is True
    assert cluster.operator.process.poll() is None  # it survived them all

    # A sink type Sluice does not have is refused by the API server itself, naming the field.
    unknown = copy.deepcopy(good)
    unknown["metadata"]["name"] = "unknown-sink"
    unknown["spec"]["sink"] = {"type": "kafka"}
    path = cluster.directory / "unknown.yaml"
    path.write_text(yaml.safe_dump(unknown))
    refused = subprocess.run(
        [
            str(KUBECTL),
            "--kubeconfig",
            str(cluster.kube_api.kubeconfig),
            "-n",
            cluster.namespace,
            "apply",
            "--validate=false",
            "-f",
            str(path),
        ],
        capture_output=True,
        text=True,
    )
    assert refused.returncode != 0 and "spec.sink.type" in refused.stderr
