"""The CdcPipeline CRD types every option of the local pipeline YAML as `sluice run` does,
refuses a literal password and a new source or target under a pipeline that has run, and
is the same in crds/ and in the chart."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

from sluice_operator.crd import custom_resource_definition
from tests.harness.crd_validation import violations
from tests.sluice_operator.test_spark_application import CDC_PIPELINE

ROOT = Path(__file__).parents[2]
CRD_FILES = [
    ROOT / "crds" / "cdcpipelines.sluice.io.yaml",
    ROOT / "charts" / "sluice" / "crds" / "cdcpipelines.sluice.io.yaml",
]


def schema() -> dict:
    (version,) = custom_resource_definition()["spec"]["versions"]
    return version["schema"]["openAPIV3Schema"]


def test_the_committed_crds_are_what_the_option_tables_make():
    made = custom_resource_definition()
    for path in CRD_FILES:
        assert yaml.safe_load(path.read_text()) == made, f"{path}: run `python -m sluice_operator.crd > {path}`"


def test_a_pipeline_with_secret_references_is_accepted():
    assert violations(schema(), CDC_PIPELINE) == []


def test_an_option_of_the_wrong_type_or_value_is_refused():
    bad = copy.deepcopy(CDC_PIPELINE)
    bad["spec"]["source"]["port"] = "3306x"
    bad["spec"]["pipeline"]["schema.change.behavior"] = "sometimes"
    found = violations(schema(), bad)
    assert any("'3306x' is not of type 'integer'" in m for m in found)
    assert any("'sometimes' is not one of" in m for m in found)


def test_a_literal_password_is_refused_anywhere():
    for section in ("source", "sink"):
        bad = copy.deepcopy(CDC_PIPELINE)
        bad["spec"][section]["password"] = "hunter2"
        assert violations(schema(), bad) == [
            "a password cannot be given in the spec: put it in a Secret and name it in passwordSecretRef"
        ]


def test_a_sink_needs_its_types_options():
    bad = copy.deepcopy(CDC_PIPELINE)
    bad["spec"]["sink"] = {"type": "parquet"}
    assert violations(schema(), bad) == ["a parquet sink needs path"]


def test_the_source_server_and_the_target_stay_once_the_pipeline_has_run():
    running = {**copy.deepcopy(CDC_PIPELINE), "status": {"phase": "Streaming"}}
    moved = copy.deepcopy(running)
    moved["spec"]["source"]["hostname"] = "other.data.svc"
    moved["spec"]["sink"]["url"] = "postgresql://elsewhere:5432/lake"
    assert violations(schema(), moved, old=running) == [
        "spec.source.hostname cannot change once the pipeline has run: its progress belongs to the old value; "
        "create a new CdcPipeline for the new one",
        "spec.sink.url cannot change once the pipeline has run: its progress belongs to the old value; "
        "create a new CdcPipeline for the new one",
    ]
    pending = {**copy.deepcopy(CDC_PIPELINE), "status": {"phase": "Pending"}}
    assert violations(schema(), {**moved, "status": pending["status"]}, old=pending) == []
    tuned = copy.deepcopy(running)
    tuned["spec"]["pipeline"]["parallelism"] = 8  # what may change does
    assert violations(schema(), tuned, old=running) == []


def test_every_cel_rule_refuses_what_it_is_for_and_accepts_the_rest():
    """Each x-kubernetes-validations rule in the CRD, refusing and accepting."""
    jdbc = copy.deepcopy(CDC_PIPELINE)
    del jdbc["spec"]["sink"]["username"]
    assert violations(schema(), jdbc) == ["a jdbc sink needs url, username"]
    lake = copy.deepcopy(CDC_PIPELINE)
    lake["spec"]["sink"] = {"type": "parquet", "path": "s3a://lake/orders"}
    assert violations(schema(), lake) == []
    for running, field, value in (
        (CDC_PIPELINE, ("source", "port"), 3307),
        (lake, ("sink", "path"), "s3a://lake/elsewhere"),
    ):
        before = {**copy.deepcopy(running), "status": {"phase": "Snapshotting"}}
        after = copy.deepcopy(before)
        after["spec"][field[0]][field[1]] = value
        assert violations(schema(), after, old=before) == [
            f"spec.{'.'.join(field)} cannot change once the pipeline has run: its progress belongs to the old value; "
            "create a new CdcPipeline for the new one"
        ]
        assert violations(schema(), before, old=before) == []  # unchanged: accepted


def test_route_and_transform_are_lists_of_rules_checked_as_sluice_run_checks_them():
    routed = copy.deepcopy(CDC_PIPELINE)
    routed["spec"]["route"] = [
        {"source-table": "shop.order_\\.*", "sink-table": "ods.orders", "description": "the shards as one"},
        {"source-table": "db_(\\.*).(\\.*)_tbl", "sink-table": "sink_db_$1.sink_table_$2"},
    ]
    routed["spec"]["transform"] = [
        {
            "source-table": "shop.order_\\.*",
            "projection": "\\*, __table_name__ AS shard",
            "filter": "qty > 0",
            "primary-keys": "id, shard",
            "table-options.delimiter": ";",
            "converter-after-transform": "SOFT_DELETE",  # as `sluice run` takes it
        }
    ]
    assert violations(schema(), routed) == []
    bad = copy.deepcopy(routed)
    bad["spec"]["route"][0]["source-table"] = " "
    bad["spec"]["route"][1]["sink-table"] = "just_a_table"
    del bad["spec"]["transform"][0]["source-table"]
    bad["spec"]["route"].append({"source-table": "a.b"})
    bad["spec"]["transform"].append({"source-table": "a.b", "converter-after-transform": "HARD_DELETE"})
    found = violations(schema(), bad, paths=True)
    assert "spec.route.0: route: source-table must name tables" in found
    assert "spec.route.1: route: sink-table must be database.table" in found
    assert "spec.route.2: 'sink-table' is a required property" in found
    assert "spec.transform.0: 'source-table' is a required property" in found
    assert any(m.startswith("spec.transform.1.converter-after-transform: 'HARD_DELETE' is not one of") for m in found)
