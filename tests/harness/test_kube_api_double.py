"""The Kubernetes API test double keeps the API semantics the operator relies on. Each
test states the documented behaviour of kube-apiserver it checks."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.harness.kube_api_double import RunningApiDouble
from tests.harness.tools import KUBECTL

CRD = Path(__file__).parents[2] / "crds" / "cdcpipelines.sluice.io.yaml"
GROUP, VERSION, PLURAL = "sluice.io", "v1alpha1", "cdcpipelines"


def cdc_pipeline(name: str = "orders", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "CdcPipeline",
        "metadata": {"name": name, "labels": {"team": "payments"}},
        "spec": {
            "source": {
                "type": "mysql",
                "hostname": "mysql.data.svc",
                "port": 3306,
                "username": "cdc",
                "tables": "shop.orders",
                "passwordSecretRef": {"name": "mysql", "key": "password"},
            },
            "sink": {"type": "values"},
            **spec,
        },
    }


@pytest.fixture
def api(kube_api: RunningApiDouble) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(kube_api.client())


@pytest.fixture
def core(kube_api: RunningApiDouble) -> client.CoreV1Api:
    return client.CoreV1Api(kube_api.client())


@pytest.fixture
def pipeline(api: client.CustomObjectsApi, request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    name = request.node.name.replace("_", "-")[:50].strip("-")
    created = api.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, cdc_pipeline(name))
    yield created
    with contextlib.suppress(ApiException):
        api.delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, name)


def patch_status(api: client.CustomObjectsApi, name: str, body: dict[str, Any]) -> dict[str, Any]:
    return api.patch_namespaced_custom_object_status(GROUP, VERSION, "default", PLURAL, name, body)


def test_create_sets_namespace_uid_creation_timestamp_generation_and_a_resource_version(pipeline):
    meta = pipeline["metadata"]
    assert meta["namespace"] == "default"  # from the URL
    assert meta["uid"] and meta["creationTimestamp"].endswith("Z")
    assert meta["generation"] == 1
    assert int(meta["resourceVersion"]) > 0


def test_a_second_create_of_the_same_name_is_already_exists(api, pipeline):
    with pytest.raises(ApiException) as refused:
        api.create_namespaced_custom_object(
            GROUP, VERSION, "default", PLURAL, cdc_pipeline(pipeline["metadata"]["name"])
        )
    assert refused.value.status == 409 and "AlreadyExists" in refused.value.body


def test_every_write_bumps_the_resource_version_and_a_stale_one_is_a_conflict(api, pipeline):
    name, first = pipeline["metadata"]["name"], pipeline["metadata"]["resourceVersion"]
    second = patch_status(api, name, {"status": {"phase": "Snapshotting"}})["metadata"]["resourceVersion"]
    assert int(second) > int(first)
    with pytest.raises(ApiException) as stale:
        patch_status(api, name, {"metadata": {"resourceVersion": first}, "status": {"phase": "Failed"}})
    assert stale.value.status == 409 and "the object has been modified" in stale.value.body
    current = patch_status(api, name, {"metadata": {"resourceVersion": second}, "status": {"phase": "Streaming"}})
    assert current["status"]["phase"] == "Streaming"
    # PUT (replace) must carry a resourceVersion, and the current one.
    stale_body = {**current, "metadata": {**current["metadata"], "resourceVersion": second}}
    with pytest.raises(ApiException) as replaced:
        api.replace_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, name, stale_body)
    assert replaced.value.status == 409


def test_generation_moves_with_the_spec_only(api, pipeline):
    name = pipeline["metadata"]["name"]
    patch_status(api, name, {"status": {"phase": "Streaming"}})
    labelled = api.patch_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, name, {"metadata": {"labels": {"tier": "gold"}}}
    )
    assert labelled["metadata"]["generation"] == 1
    suspended = api.patch_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, name, {"spec": {"suspend": True}})
    assert suspended["metadata"]["generation"] == 2


def test_status_is_written_through_the_status_subresource_only(api, pipeline):
    name = pipeline["metadata"]["name"]
    on_object = api.patch_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, name, {"status": {"phase": "Failed"}, "spec": {"suspend": True}}
    )
    assert "status" not in on_object and on_object["spec"]["suspend"] is True
    on_status = patch_status(api, name, {"status": {"phase": "Streaming"}, "spec": {"suspend": False}})
    assert on_status["status"] == {"phase": "Streaming"} and on_status["spec"]["suspend"] is True
    assert on_status["metadata"]["generation"] == 2  # a status write is not a spec change


def test_lists_honour_label_and_field_selectors_and_carry_their_kind(api, pipeline):
    name = pipeline["metadata"]["name"]
    listed = api.list_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, label_selector="team=payments")
    assert listed["kind"] == "CdcPipelineList" and name in [i["metadata"]["name"] for i in listed["items"]]
    for selector in ("team=search", "team in (search,ads)", "!team", "team,tier"):
        found = api.list_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, label_selector=selector)
        assert name not in [i["metadata"]["name"] for i in found["items"]], selector
    by_name = api.list_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, field_selector=f"metadata.name={name}"
    )
    assert [i["metadata"]["name"] for i in by_name["items"]] == [name]


def test_deleting_an_owner_deletes_what_it_owns(api, core, pipeline):
    meta = pipeline["metadata"]
    owner = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "CdcPipeline", "name": meta["name"], "uid": meta["uid"]}
    for name in ("owned", "shared"):
        refs = [owner] if name == "owned" else [owner, {**owner, "name": "other", "uid": "other-uid"}]
        core.create_namespaced_config_map("default", {"metadata": {"name": name, "ownerReferences": refs}})
    api.delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, meta["name"])
    with pytest.raises(ApiException) as gone:
        core.read_namespaced_config_map("owned", "default")
    assert gone.value.status == 404
    shared = core.read_namespaced_config_map("shared", "default")  # another owner keeps it
    assert [r["uid"] if isinstance(r, dict) else r.uid for r in shared.metadata.owner_references] == ["other-uid"]
    core.delete_namespaced_config_map("shared", "default")


def test_a_finalizer_holds_deletion_until_it_is_removed(api, pipeline):
    name = pipeline["metadata"]["name"]
    api.patch_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, name, {"metadata": {"finalizers": ["x"]}})
    api.delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, name)
    held = api.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, name)
    assert held["metadata"]["deletionTimestamp"]
    api.patch_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, name, {"metadata": {"finalizers": None}})
    with pytest.raises(ApiException) as gone:
        api.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, name)
    assert gone.value.status == 404


def test_objects_are_validated_against_the_crd_schema_and_its_cel_rules(api, pipeline):
    name = pipeline["metadata"]["name"]
    with pytest.raises(ApiException) as wrong_type:
        api.patch_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, name, {"spec": {"source": {"port": "x"}}})
    assert wrong_type.value.status == 422 and "spec.source.port: 'x' is not of type 'integer'" in wrong_type.value.body
    with pytest.raises(ApiException) as password:
        api.patch_namespaced_custom_object(
            GROUP, VERSION, "default", PLURAL, name, {"spec": {"source": {"password": "hunter2"}}}
        )
    assert "spec.source: a password cannot be given in the spec" in password.value.body
    # A transition rule (oldSelf): the source server stays once the pipeline has run.
    api.patch_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, name, {"spec": {"source": {"hostname": "a"}}})
    patch_status(api, name, {"status": {"phase": "Streaming"}})
    with pytest.raises(ApiException) as moved:
        api.patch_namespaced_custom_object(
            GROUP, VERSION, "default", PLURAL, name, {"spec": {"source": {"hostname": "b"}}}
        )
    assert "spec.source.hostname cannot change once the pipeline has run" in moved.value.body


def test_unknown_fields_are_pruned(api, pipeline):
    name = pipeline["metadata"]["name"]
    patched = api.patch_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, name, {"spec": {"colour": "red"}})
    assert "colour" not in patched["spec"]


def test_watches_stream_changes_of_selected_objects(kube_api, api, pipeline):
    from kubernetes import watch

    name = pipeline["metadata"]["name"]
    patch_status(api, name, {"status": {"phase": "Snapshotting"}})
    seen = []
    stream = watch.Watch().stream(
        api.list_namespaced_custom_object,
        GROUP,
        VERSION,
        "default",
        PLURAL,
        label_selector="team=payments",
        timeout_seconds=2,
    )
    for event in stream:
        seen.append((event["type"], event["object"]["metadata"]["name"]))
        if len(seen) == 1:
            patch_status(api, name, {"status": {"phase": "Streaming"}})
        if ("MODIFIED", name) in seen:
            break
    assert ("ADDED", name) in seen and ("MODIFIED", name) in seen


def test_kubectl_applies_gets_and_patches_as_against_a_cluster(kube_api, tmp_path, api):
    manifest = tmp_path / "pipeline.yaml"
    manifest.write_text(yaml.safe_dump(cdc_pipeline("by-kubectl")))

    def kubectl(*args: str) -> str:
        done = subprocess.run(
            [str(KUBECTL), "--kubeconfig", str(kube_api.kubeconfig), *args], capture_output=True, text=True, check=True
        )
        assert "Warning" not in done.stderr, done.stderr
        return done.stdout

    assert "created" in kubectl("apply", "--validate=false", "-f", str(manifest))
    assert "unchanged" in kubectl("apply", "--validate=false", "-f", str(manifest))
    patch_status(api, "by-kubectl", {"status": {"phase": "Streaming", "binlog": {"lag": "1s"}}})
    table = kubectl("get", "cdcp", "by-kubectl")
    assert table.split("\n")[0].split() == ["NAME", "PHASE", "SPLITS", "LAG", "READY", "AGE"]
    assert table.split("\n")[1].split()[:3] == ["by-kubectl", "Streaming", "1s"]  # empty cells print blank
    kubectl("patch", "cdcp", "by-kubectl", "--type", "merge", "-p", '{"spec":{"suspend":true}}')
    assert kubectl("get", "cdcp", "by-kubectl", "-o", "jsonpath={.metadata.generation}") == "2"
    kubectl("delete", "cdcp", "by-kubectl")
