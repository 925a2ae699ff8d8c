"""What the operator creates for a CdcPipeline: a SparkApplication the Kubeflow Spark
Operator's own CRD schema accepts, in a snapshot and a streaming shape; the pipeline
definition in a ConfigMap, which Sluice's own parser accepts; passwords only as Secret
references; a driver identity that may touch only its own CdcPipeline; and an owner
reference on everything, so deleting the CdcPipeline deletes them."""

from __future__ import annotations

import copy
from pathlib import Path

import jsonschema
import pytest
import yaml

from sluice.errors import DefinitionError
from sluice.pipeline.definition import build_definition
from sluice_operator.pipeline_spec import SINK_PASSWORD_ENV, SOURCE_PASSWORD_ENV, read_spec
from sluice_operator.rbac import driver_rbac
from sluice_operator.spark_application import pipeline_config_map, spark_application

REFERENCE = Path(__file__).parents[2].parent / "shared" / "reference" / "sparkoperator.k8s.io_sparkapplications.yaml"

CDC_PIPELINE = {
    "apiVersion": "sluice.io/v1alpha1",
    "kind": "CdcPipeline",
    "metadata": {"name": "orders", "namespace": "data", "uid": "5f2c-uid"},
    "spec": {
        "source": {
            "type": "mysql",
            "hostname": "mariadb.data.svc",
            "port": 3306,
            "username": "cdc",
            "tables": "shop.orders",
            "passwordSecretRef": {"name": "mariadb-cdc", "key": "password"},
        },
        "sink": {
            "type": "jdbc",
            "url": "postgresql://pg.data.svc:5432/lake",
            "username": "writer",
            "passwordSecretRef": {"name": "pg-writer", "key": "pw"},
        },
        "pipeline": {"parallelism": 3, "schema.change.behavior": "manual"},
        "schemaChanges": {"approved": ["mysql-bin.000003:1234"]},
        "spark": {"image": "registry.example/sluice-spark:0.1.0", "executorMemory": "2g"},
    },
}


def _rendered(cdc_pipeline: dict = CDC_PIPELINE, shape: str = "snapshot") -> tuple[dict, dict, list[dict]]:
    meta = cdc_pipeline["metadata"]
    spec = read_spec(meta["name"], meta["namespace"], cdc_pipeline["spec"])
    return (
        spark_application(cdc_pipeline, spec, shape),
        pipeline_config_map(cdc_pipeline, spec),
        driver_rbac(cdc_pipeline),
    )


def spark_application_schema() -> dict:
    crd = yaml.safe_load(REFERENCE.read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1beta2"]
    return version["schema"]["openAPIV3Schema"]


@pytest.mark.parametrize("shape", ["snapshot", "streaming"])
def test_the_spark_application_is_valid_for_the_spark_operators_schema(shape):
    application, _, _ = _rendered(shape=shape)
    jsonschema.Draft7Validator(spark_application_schema()).validate(application)
    assert application["spec"]["type"] == "Python" and application["spec"]["restartPolicy"]["type"] == "OnFailure"


def test_the_spark_operators_retries_are_three_10_s_apart_unless_the_spec_says_otherwise():
    application, _, _ = _rendered()
    policy = application["spec"]["restartPolicy"]
    assert (policy["onFailureRetries"], policy["onFailureRetryInterval"]) == (3, 10)
    custom = {**CDC_PIPELINE, "spec": {**CDC_PIPELINE["spec"], "spark": {"restartPolicy": {"onFailureRetries": 0}}}}
    application, _, _ = _rendered(custom)
    jsonschema.Draft7Validator(spark_application_schema()).validate(application)
    policy = application["spec"]["restartPolicy"]
    assert (policy["type"], policy["onFailureRetries"], policy["onFailureRetryInterval"]) == ("OnFailure", 0, 10)


def test_snapshot_runs_with_parallelism_executors_and_streaming_with_the_driver_alone():
    snapshot, _, _ = _rendered(shape="snapshot")
    streaming, _, _ = _rendered(shape="streaming")
    assert snapshot["spec"]["executor"]["instances"] == 3  # pipeline.parallelism
    # The jdbc sink's binlog phase needs no executor: none runs unless a job asks for one.
    assert "instances" not in streaming["spec"]["executor"]
    assert streaming["spec"]["dynamicAllocation"] == {
        "enabled": True,
        "initialExecutors": 0,
        "minExecutors": 0,
        "maxExecutors": 1,
    }
    assert snapshot["spec"]["executor"]["memory"] == "2g"
    assert snapshot["spec"]["image"] == "registry.example/sluice-spark:0.1.0"
    lake = {**CDC_PIPELINE, "spec": {**CDC_PIPELINE["spec"], "sink": {"type": "parquet", "path": "/lake"}}}
    assert _rendered(lake, "streaming")[0]["spec"]["executor"]["instances"] == 1  # parquet writes with Spark


def test_passwords_come_only_from_secret_references():
    application, config, _ = _rendered()
    env = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in application["spec"]["driver"]["env"]}
    assert env == {
        SINK_PASSWORD_ENV: {"name": "pg-writer", "key": "pw"},
        SOURCE_PASSWORD_ENV: {"name": "mariadb-cdc", "key": "password"},
    }
    assert application["spec"]["executor"]["env"] == application["spec"]["driver"]["env"]
    document = yaml.safe_load(config["data"]["pipeline.yaml"])
    assert document["source"]["password"] == f"${{{SOURCE_PASSWORD_ENV}}}"
    assert document["sink"]["password"] == f"${{{SINK_PASSWORD_ENV}}}"
    literal = {**CDC_PIPELINE["spec"], "source": {**CDC_PIPELINE["spec"]["source"], "password": "hunter2"}}
    with pytest.raises(DefinitionError, match=r"spec.source.password: give passwordSecretRef"):
        read_spec("orders", "data", literal)


def test_secret_env_gives_the_driver_and_the_executors_variables_from_secrets_by_reference():
    """spec.secretEnv: HMAC_SHA256's keys, as environment variables from Secrets; their values
    are never in the SparkApplication or the mounted definition."""
    spec = {**CDC_PIPELINE["spec"], "secretEnv": [{"name": "EMAIL_KEY", "secretKeyRef": {"name": "mask", "key": "k"}}]}
    application, config, _ = _rendered({**CDC_PIPELINE, "spec": spec})
    env = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in application["spec"]["driver"]["env"]}
    assert env["EMAIL_KEY"] == {"name": "mask", "key": "k"}
    assert application["spec"]["executor"]["env"] == application["spec"]["driver"]["env"]
    assert "EMAIL_KEY" not in config["data"]["pipeline.yaml"]
    for entries, message in (
        ([{"name": "1BAD", "secretKeyRef": {"name": "m", "key": "k"}}], r"spec.secretEnv\[0\].name: '1BAD'"),
        ([{"name": SOURCE_PASSWORD_ENV, "secretKeyRef": {"name": "m", "key": "k"}}], r"given twice"),
        ([{"name": "K"}], r"spec.secretEnv\[0\].secretKeyRef: expected a Secret reference"),
    ):
        with pytest.raises(DefinitionError, match=message):
            read_spec("orders", "data", {**CDC_PIPELINE["spec"], "secretEnv": entries})


def test_the_mounted_definition_is_the_pipeline_sluice_run_would_take():
    _, config, _ = _rendered()
    document = yaml.safe_load(config["data"]["pipeline.yaml"])
    definition = build_definition(document, {SOURCE_PASSWORD_ENV: "s", SINK_PASSWORD_ENV: "t"})
    assert definition.name == "data.orders"  # one per CdcPipeline: targets keep offsets by it
    assert definition.parallelism == 3 and definition.schema_change_behavior == "manual"
    assert definition.approved_schema_changes == ("mysql-bin.000003:1234",)
    assert definition.source.password == "s" and definition.sink.options["password"] == "t"


def test_a_bad_option_is_named_by_sluices_own_checks():
    bad = {**CDC_PIPELINE["spec"], "source": {**CDC_PIPELINE["spec"]["source"], "server-time-zone": "Mars/Olympus"}}
    with pytest.raises(DefinitionError, match="source.server-time-zone"):
        read_spec("orders", "data", bad).check()


def test_the_driver_may_touch_only_its_own_cdc_pipeline_and_everything_is_owned():
    application, config, rbac = _rendered()
    role = next(o for o in rbac if o["kind"] == "Role")
    own = {
        (r, v)
        for rule in role["rules"]
        if rule["apiGroups"] == ["sluice.io"]
        for r in rule["resources"]
        for v in rule["verbs"]
    }
    names = {n for rule in role["rules"] if rule["apiGroups"] == ["sluice.io"] for n in rule["resourceNames"]}
    assert names == {"orders"} and own == {("cdcpipelines", "get"), ("cdcpipelines/status", "update")}
    account = next(o for o in rbac if o["kind"] == "ServiceAccount")["metadata"]["name"]
    assert application["spec"]["driver"]["serviceAccount"] == account
    for obj in [application, config, *rbac]:
        (owner,) = obj["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
            "CdcPipeline",
            "orders",
            "5f2c-uid",
            True,
        )
        assert obj["metadata"]["namespace"] == "data"
        assert obj["metadata"]["labels"]["sluice.io/pipeline"] == "orders"


def test_the_operators_modules_need_no_spark():
    """The operator's image has no pyspark."""
    import subprocess
    import sys

    code = (
        "import sys, sluice_operator.spark_application, sluice_operator.rbac, sluice_operator.pipeline_spec; "
        "assert 'pyspark' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_route_and_transform_reach_the_mounted_definition_and_their_errors_are_named():
    routed = {
        **CDC_PIPELINE["spec"],
        "route": [{"source-table": "shop.order_\\.*", "sink-table": "ods.orders"}],
        "transform": [{"source-table": "shop.order_\\.*", "projection": "*, __table_name__ AS shard"}],
    }
    spec = read_spec("orders", "data", routed)
    spec.check()
    assert spec.definition["route"] == routed["route"] and spec.definition["transform"] == routed["transform"]
    broken = {**routed, "transform": [{"source-table": "shop.order_\\.*", "filter": "qty >"}]}
    with pytest.raises(DefinitionError, match=r"transform\[0\]\.filter: cannot parse 'qty >'"):
        read_spec("orders", "data", broken).check()
    unknown = {**routed, "transform": [{"source-table": "shop.order_\\.*", "projection": "id, SOUNDEX(name) AS s"}]}
    with pytest.raises(
        DefinitionError, match=r"transform\[0\]\.projection: SOUNDEX\(name\) at character 5: SOUNDEX is not"
    ):
        read_spec("orders", "data", unknown).check()


def test_certificates_come_from_a_secret_mounted_where_the_definition_names_them():
    """The operator never reads the Secret (its RBAC is unchanged): the kubelet mounts it, in
    the driver and every executor, and the definition's ssl-* options name its files."""
    cdc_pipeline = copy.deepcopy(CDC_PIPELINE)
    cdc_pipeline["spec"]["source"].update(
        {"ssl-mode": "verify_identity", "tlsSecretRef": {"name": "mysql-tls", "cert": "tls.crt", "key": "tls.key"}}
    )
    cdc_pipeline["spec"]["sink"].update({"ssl-mode": "verify_ca", "tlsSecretRef": {"name": "pg-ca"}})

    application, config_map, _ = _rendered(cdc_pipeline)

    spec = application["spec"]
    assert {"name": "tls-source", "secret": {"secretName": "mysql-tls"}} in spec["volumes"]
    assert {"name": "tls-sink", "secret": {"secretName": "pg-ca"}} in spec["volumes"]
    for pod in ("driver", "executor"):
        assert {"name": "tls-source", "mountPath": "/etc/sluice-tls/source", "readOnly": True} in spec[pod][
            "volumeMounts"
        ]
    definition = yaml.safe_load(config_map["data"]["pipeline.yaml"])
    assert {k: v for k, v in definition["source"].items() if k.startswith("ssl-")} == {
        "ssl-mode": "verify_identity",
        "ssl-ca": "/etc/sluice-tls/source/ca.crt",
        "ssl-cert": "/etc/sluice-tls/source/tls.crt",
        "ssl-key": "/etc/sluice-tls/source/tls.key",
    }
    assert definition["sink"]["ssl-ca"] == "/etc/sluice-tls/sink/ca.crt" and "ssl-cert" not in definition["sink"]
    assert "tlsSecretRef" not in definition["source"]
    jsonschema.validate(application, spark_application_schema())


def test_an_ssl_file_given_twice_is_refused_naming_the_option():
    cdc_pipeline = copy.deepcopy(CDC_PIPELINE)
    cdc_pipeline["spec"]["source"].update({"ssl-ca": "/elsewhere/ca.pem", "tlsSecretRef": {"name": "mysql-tls"}})
    with pytest.raises(DefinitionError, match=r"spec\.source\.ssl-ca: given by tlsSecretRef already"):
        _rendered(cdc_pipeline)


def test_python_files_volumes_are_mounted_read_only_where_the_udfs_name_them():
    """spec.pythonFiles: a ConfigMap or a volume claim of modules and archives, in the
    driver and every executor, for pipeline.user-defined-function's python-files."""
    cdc_pipeline = copy.deepcopy(CDC_PIPELINE)
    cdc_pipeline["spec"]["pythonFiles"] = [
        {"mountPath": "/opt/flink/python-deps", "configMap": {"name": "udf-modules"}},
        {"mountPath": "/opt/udf-archives", "persistentVolumeClaim": {"claimName": "udfs"}},
    ]
    cdc_pipeline["spec"]["pipeline"]["user-defined-function"] = [
        {
            "name": "py_upper",
            "python-code": "import helpers\n\ndef eval(s: str) -> str:\n    return helpers.upper(s)\n",
            "python-files": ["/opt/flink/python-deps", "/opt/udf-archives/more.zip"],
        }
    ]
    application, config_map, _ = _rendered(cdc_pipeline)
    spec = application["spec"]
    assert {"name": "python-files-0", "configMap": {"name": "udf-modules"}} in spec["volumes"]
    assert {"name": "python-files-1", "persistentVolumeClaim": {"claimName": "udfs", "readOnly": True}} in spec[
        "volumes"
    ]
    for pod in ("driver", "executor"):
        mounts = spec[pod]["volumeMounts"]
        assert {"name": "python-files-0", "mountPath": "/opt/flink/python-deps", "readOnly": True} in mounts
        assert {"name": "python-files-1", "mountPath": "/opt/udf-archives", "readOnly": True} in mounts
    definition = yaml.safe_load(config_map["data"]["pipeline.yaml"])
    assert definition["pipeline"]["user-defined-function"][0]["python-files"][0] == "/opt/flink/python-deps"
    jsonschema.validate(application, spark_application_schema())


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"mountPath": "relative", "configMap": {"name": "m"}}, r"pythonFiles\[0\]\.mountPath: 'relative' must be"),
        ({"mountPath": "/etc/sluice/udf", "configMap": {"name": "m"}}, r"/etc/sluice/udf is Sluice's own"),
        ({"mountPath": "/opt/udf"}, r"give configMap\.name or persistentVolumeClaim\.claimName, one of them"),
    ],
)
def test_a_python_files_volume_sluice_cannot_mount_is_refused_naming_it(entry, message):
    cdc_pipeline = copy.deepcopy(CDC_PIPELINE)
    cdc_pipeline["spec"]["pythonFiles"] = [entry]
    with pytest.raises(DefinitionError, match=message):
        _rendered(cdc_pipeline)
