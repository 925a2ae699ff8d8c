"""The SparkApplication (sparkoperator.k8s.io/v1beta2) that runs a CdcPipeline, in one of
its two shapes: `snapshot` with the snapshot executors, `streaming` with the streaming
ones (the Spark Operator cannot resize a running application; it reruns one whose spec
changed, and the rerun resumes from the state in the CdcPipeline's status).

Passwords reach the driver and executors only as environment variables from Secrets; the
pipeline definition comes from a mounted ConfigMap.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

import yaml

from sluice_operator import owned
from sluice_operator.pipeline_spec import TLS_MOUNT, PipelineSpec

Shape = Literal["snapshot", "streaming"]

SPARK_API_GROUP, SPARK_API_VERSION, SPARK_PLURAL = "sparkoperator.k8s.io", "v1beta2", "sparkapplications"
API_VERSION = f"{SPARK_API_GROUP}/{SPARK_API_VERSION}"
SPARK_VERSION = "4.3.0"  # the pyspark the image pins
DRIVER = "local:///opt/sluice/driver.py"  # the image's entry point: sluice's Kubernetes driver
PIPELINE_MOUNT = "/etc/sluice"
PIPELINE_FILE = "pipeline.yaml"
APPLIED_SPEC = f"{owned.GROUP}/applied-spec"  # the digest of the spec the operator last applied
METRICS_PORT = 9404  # the driver's /metrics (runtime/pipeline_metrics.py), which the chart's PodMonitor scrapes


def names(cdc_pipeline: str) -> dict[str, str]:
    """What the operator names the objects it creates for a CdcPipeline."""
    return {
        "application": f"{cdc_pipeline}-sluice",
        "config": f"{cdc_pipeline}-sluice-pipeline",
        "service_account": f"{cdc_pipeline}-sluice-driver",
    }


def pipeline_config_map(owner: dict[str, Any], spec: PipelineSpec) -> dict[str, Any]:
    """The pipeline definition the driver reads, as `sluice run` would (no passwords in it)."""
    name = owner["metadata"]["name"]
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": owned.metadata(owner, names(name)["config"]),
        "data": {PIPELINE_FILE: yaml.safe_dump(spec.definition, sort_keys=False)},
    }


def definition_digest(spec: PipelineSpec) -> str:
    """The definition's digest, approvals left out: the running driver reads those from the
    CdcPipeline itself, so approving a schema change needs no rerun."""
    pipeline = {k: v for k, v in spec.definition.get("pipeline", {}).items() if k != "schema-change.approved"}
    return _digest({**spec.definition, "pipeline": pipeline})


def spark_application(
    owner: dict[str, Any], spec: PipelineSpec, shape: Shape, suspend_field: bool = True
) -> dict[str, Any]:
    """`suspend_field`: the Spark Operator's CRD has spec.suspend (v2.4.0); it is then always
    set, true or false, so that resuming is a change the operator can see in what it owns."""
    meta = owner["metadata"]
    named = names(meta["name"])
    resources = spec.spark
    executors = resources.snapshot_executors if shape == "snapshot" else resources.streaming_executors
    env = [
        {"name": variable, "valueFrom": {"secretKeyRef": {"name": secret.name, "key": secret.key}}}
        for variable, secret in sorted(spec.secrets.items())
    ]
    pod_labels = {**owned.labels(meta["name"]), f"{owned.GROUP}/shape": shape}
    mounts = [{"name": "pipeline", "mountPath": PIPELINE_MOUNT, "readOnly": True}]
    volumes: list[dict[str, Any]] = [{"name": "pipeline", "configMap": {"name": named["config"]}}]
    for section, secret in spec.tls:  # certificates, mounted where the definition's ssl-* options name them
        volumes.append({"name": f"tls-{section}", "secret": {"secretName": secret.name}})
        mounts.append({"name": f"tls-{section}", "mountPath": f"{TLS_MOUNT}/{section}", "readOnly": True})
    for i, files in enumerate(spec.python_files):  # where the definition's python-files name them
        volumes.append(files.volume(f"python-files-{i}"))
        mounts.append({"name": f"python-files-{i}", "mountPath": files.mount_path, "readOnly": True})
    application: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": "SparkApplication",
        "metadata": owned.metadata(owner, named["application"]),
        "spec": {
            "type": "Python",
            "pythonVersion": "3",
            "mode": "cluster",
            "image": resources.image,
            "imagePullPolicy": "IfNotPresent",
            "mainApplicationFile": DRIVER,
            "arguments": [
                "--pipeline",
                f"{PIPELINE_MOUNT}/{PIPELINE_FILE}",
                "--cdc-pipeline",
                f"{meta['namespace']}/{meta['name']}",
                "--metrics-port",
                str(METRICS_PORT),
            ],
            "sparkVersion": SPARK_VERSION,
            # The job keeps its progress in the CdcPipeline's status, so a rerun resumes: retry.
            "restartPolicy": {
                "type": "OnFailure",
                "onFailureRetries": 3,
                "onFailureRetryInterval": 10,
                "onSubmissionFailureRetries": 5,
                "onSubmissionFailureRetryInterval": 20,
                **dict(resources.restart_policy),
            },
            "sparkConf": {
                "spark.sql.session.timeZone": "UTC",
                "spark.kubernetes.executor.deleteOnTermination": "true",
            },
            "volumes": volumes,
            "driver": {
                # The Spark Operator reruns an application whose spec changed, not one whose
                # ConfigMap did: the definition's digest in the spec makes an edit a rerun.
                "annotations": {f"{owned.GROUP}/definition": definition_digest(spec)},
                "cores": resources.driver_cores,
                "memory": resources.driver_memory,
                "serviceAccount": named["service_account"],
                "labels": pod_labels,
                "env": env,
                "volumeMounts": mounts,
                "ports": [{"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"}],
            },
            "executor": {
                "cores": resources.executor_cores,
                "memory": resources.executor_memory,
                "labels": pod_labels,
                "env": env,  # snapshot splits read the source and write the target on executors
                "volumeMounts": mounts,
            },
        },
    }
    if executors:
        application["spec"]["executor"]["instances"] = executors
    else:
        # The driver alone; an executor only while a job needs one (chunks read again after a
        # schema change, a table that joins the capture), and gone when it idles.
        application["spec"]["dynamicAllocation"] = {
            "enabled": True,
            "initialExecutors": 0,
            "minExecutors": 0,
            "maxExecutors": 1,
        }
    if suspend_field:
        application["spec"]["suspend"] = spec.suspend
    application["metadata"]["annotations"] = {APPLIED_SPEC: _digest(application["spec"])}
    return application


def applied(live: dict[str, Any], desired: dict[str, Any]) -> bool:
    """Whether the live SparkApplication is the desired one, judged on what the operator owns:
    the spec it last applied (an annotation) is the one it wants now, and every field it
    sets still has its value. Fields the API server or the Spark Operator's webhook added
    (defaults such as dynamicAllocation.shuffleTrackingEnabled) are not the operator's: a
    whole-spec comparison would replace the application, and the Spark Operator would rerun
    its driver, after every creation."""
    annotations = (live.get("metadata") or {}).get("annotations") or {}
    wanted = desired["metadata"]["annotations"][APPLIED_SPEC]
    return annotations.get(APPLIED_SPEC) == wanted and _holds(live.get("spec"), desired["spec"])


def _holds(live: Any, desired: Any) -> bool:
    """Every field of `desired` is in `live` with the same value (lists item by item)."""
    if isinstance(desired, dict):
        return isinstance(live, dict) and all(k in live and _holds(live[k], v) for k, v in desired.items())
    if isinstance(desired, list):
        return isinstance(live, list) and len(live) == len(desired) and all(map(_holds, live, desired))
    return live == desired


def _digest(document: Any) -> str:
    return hashlib.sha256(json.dumps(document, sort_keys=True, default=str).encode()).hexdigest()[:16]
