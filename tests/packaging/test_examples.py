"""The examples are what a user copies: every CdcPipeline is valid for the CRD and for
Sluice's own checks; the Argo CD Applications are Application objects with the sync order
and options the operator needs; the argocd-cm snippet is made from the health check and
actions it ships."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

from sluice_operator.pipeline_spec import read_spec
from tests.harness.argocd import argocd_cm
from tests.harness.crd_validation import violations

ROOT = Path(__file__).parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
APPLICATIONS = sorted((ROOT / "examples" / "argocd").glob("*.yaml"))
SCHEMA = yaml.safe_load((ROOT / "crds" / "cdcpipelines.sluice.io.yaml").read_text())["spec"]["versions"][0]["schema"][
    "openAPIV3Schema"
]
SYNC_OPTIONS = ["CreateNamespace=true", "ServerSideApply=true", "RespectIgnoreDifferences=true"]
# The fields of Argo CD's Application (argoproj.io/v1alpha1) the examples use, as its
# documentation describes them; unknown fields are refused, so a typo fails here.
APPLICATION = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": "argoproj.io/v1alpha1"},
        "kind": {"const": "Application"},
        "metadata": {"type": "object", "required": ["name", "namespace"]},
        "spec": {
            "type": "object",
            "required": ["project", "source", "destination"],
            "additionalProperties": False,
            "properties": {
                "project": {"type": "string"},
                "source": {
                    "type": "object",
                    "required": ["repoURL", "targetRevision", "path"],
                    "additionalProperties": False,
                    "properties": {
                        "repoURL": {"type": "string"},
                        "targetRevision": {"type": "string"},
                        "path": {"type": "string"},
                        "helm": {
                            "type": "object",
                            "additionalProperties": False,
                            "properties": {"releaseName": {"type": "string"}, "valuesObject": {"type": "object"}},
                        },
                        "directory": {
                            "type": "object",
                            "additionalProperties": False,
                            "properties": {"recurse": {"type": "boolean"}},
                        },
                    },
                },
                "destination": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {"server": {"type": "string"}, "namespace": {"type": "string"}},
                },
                "ignoreDifferences": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["kind"],
                        "additionalProperties": False,
                        "properties": {
                            "group": {"type": "string"},
                            "kind": {"type": "string"},
                            "jsonPointers": {"type": "array", "items": {"type": "string", "pattern": "^/"}},
                        },
                    },
                },
                "syncPolicy": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "automated": {
                            "type": "object",
                            "additionalProperties": False,
                            "properties": {"prune": {"type": "boolean"}, "selfHeal": {"type": "boolean"}},
                        },
                        "syncOptions": {
                            "type": "array",
                            "items": {
                                "enum": [
                                    "CreateNamespace=true",
                                    "ServerSideApply=true",
                                    "RespectIgnoreDifferences=true",
                                ]
                            },
                        },
                    },
                },
            },
        },
    },
}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_cdc_pipeline_is_valid_for_the_crd_and_for_sluice(path):
    pipeline = yaml.safe_load(path.read_text())
    assert violations(SCHEMA, pipeline) == []
    read_spec(pipeline["metadata"]["name"], "data", pipeline["spec"]).check()


def test_the_examples_cover_the_common_cases():
    specs = {p.stem: yaml.safe_load(p.read_text())["spec"] for p in EXAMPLES}
    assert specs["mysql-to-postgresql"]["sink"]["url"].startswith("postgresql://")
    assert "\\.*" in specs["whole-database"]["source"]["tables"]
    assert specs["parquet-changelog"]["sink"]["type"] == "parquet"
    assert specs["manual-schema-changes"]["pipeline"]["schema.change.behavior"] == "manual"


def test_the_argo_cd_applications_are_applications_synced_in_order():
    applications = {p.stem: yaml.safe_load(p.read_text()) for p in APPLICATIONS}
    for application in applications.values():
        jsonschema.validate(application, APPLICATION)
    operator, pipelines = applications["sluice-operator"], applications["cdc-pipelines"]
    assert operator["spec"]["source"]["path"] == "charts/sluice"
    assert (ROOT / operator["spec"]["source"]["path"] / "Chart.yaml").exists()
    wave = int(operator["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"])
    assert wave < int(pipelines["metadata"].get("annotations", {}).get("argocd.argoproj.io/sync-wave", 0))
    assert "ServerSideApply=true" in operator["spec"]["syncPolicy"]["syncOptions"]  # CRDs past the annotation limit
    assert {"group": "sluice.io", "kind": "CdcPipeline", "jsonPointers": ["/spec/suspend"]} in pipelines["spec"][
        "ignoreDifferences"
    ]


def test_the_argocd_cm_snippet_is_made_from_the_shipped_lua():
    snippet = (ROOT / "charts" / "argocd" / "argocd-cm.yaml").read_text()
    assert snippet == argocd_cm(), "run `make argocd-cm`"
    config_map = yaml.safe_load(snippet)
    kubernetes_validate.validate(config_map, "1.33", strict=True)
    actions = yaml.safe_load(config_map["data"]["resource.customizations.actions.sluice.io_CdcPipeline"])
    assert [d["name"] for d in actions["definitions"]] == ["resume", "suspend"]
