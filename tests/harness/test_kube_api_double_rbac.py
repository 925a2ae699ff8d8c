"""The Kubernetes API test double authorizes as kube-apiserver's RBAC authorizer does, by the
caller's identity, and admits as its admission chain does. Each test states the documented
behaviour it checks (kubernetes.io/docs/reference/access-authn-authz/rbac/ and
admission-controllers/#ownerreferencespermissionenforcement)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.harness.kube_api_double import ApiError, RunningApiDouble, Webhook

GROUP, VERSION, PLURAL = "sluice.io", "v1alpha1", "cdcpipelines"
_namespaces = itertools.count()


@pytest.fixture
def namespace() -> str:
    return f"rbac-{next(_namespaces)}"


def admin(
    kube_api: RunningApiDouble,
) -> tuple[client.CoreV1Api, client.RbacAuthorizationV1Api, client.CustomObjectsApi]:
    api_client = kube_api.client()
    return client.CoreV1Api(api_client), client.RbacAuthorizationV1Api(api_client), client.CustomObjectsApi(api_client)


def account(kube_api: RunningApiDouble, tmp_path: Path, namespace: str, name: str, rules: list[dict[str, Any]]) -> Any:
    """A ServiceAccount bound to a Role of `rules`; an ApiClient that presents its token."""
    core, rbac, _ = admin(kube_api)
    core.create_namespaced_service_account(namespace, {"metadata": {"name": name}})
    rbac.create_namespaced_role(namespace, {"metadata": {"name": name}, "rules": rules})
    rbac.create_namespaced_role_binding(
        namespace,
        {
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
        },
    )
    return kube_api.client(kube_api.service_account_kubeconfig(namespace, name, tmp_path))


def pipeline(namespace: str, name: str = "orders") -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "CdcPipeline",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "source": {
                "type": "mysql",
                "hostname": "db",
                "tables": "shop.orders",
                "username": "cdc",
                "passwordSecretRef": {"name": "db", "key": "password"},
            },
            "sink": {"type": "values"},
        },
    }


def refusal(exc: ApiException) -> tuple[int, str, str]:
    body = json.loads(exc.body)
    return exc.status, body["reason"], body["message"]


def test_a_role_grants_exactly_its_verbs_on_its_named_objects_and_a_denial_is_the_api_servers_403(
    kube_api, tmp_path, namespace
):
    _, _, custom = admin(kube_api)
    custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, pipeline(namespace))
    custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, pipeline(namespace, "other"))
    rules = [
        {
            "apiGroups": [GROUP],
            "resources": [PLURAL, f"{PLURAL}/status"],
            "resourceNames": ["orders"],
            "verbs": ["get"],
        },
        {"apiGroups": [GROUP], "resources": [f"{PLURAL}/status"], "resourceNames": ["orders"], "verbs": ["patch"]},
    ]
    driver = client.CustomObjectsApi(account(kube_api, tmp_path, namespace, "driver", rules))
    found = driver.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "orders")
    driver.patch_namespaced_custom_object_status(GROUP, VERSION, namespace, PLURAL, "orders", {"status": {"x": 1}})
    with pytest.raises(ApiException) as put:  # a PUT is the `update` verb, which the Role does not grant
        driver.replace_namespaced_custom_object_status(GROUP, VERSION, namespace, PLURAL, "orders", found)
    assert refusal(put.value) == (
        403,
        "Forbidden",
        f'cdcpipelines.sluice.io "orders" is forbidden: User "system:serviceaccount:{namespace}:driver" cannot '
        f'update resource "cdcpipelines/status" in API group "sluice.io" in the namespace "{namespace}"',
    )
    with pytest.raises(ApiException) as other:  # resourceNames: another object is not granted
        driver.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "other")
    assert other.value.status == 403
    with pytest.raises(ApiException) as listed:  # nor is a list, even of one name
        driver.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)
    assert listed.value.status == 403


def test_a_role_binding_grants_in_its_namespace_only_and_a_cluster_wide_list_needs_a_cluster_role_binding(
    kube_api, tmp_path, namespace
):
    rules = [{"apiGroups": [GROUP], "resources": [PLURAL], "verbs": ["get", "list", "watch"]}]
    operator = client.CustomObjectsApi(account(kube_api, tmp_path, namespace, "operator", rules))
    assert operator.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)["items"] == []
    for call in (
        lambda: operator.list_namespaced_custom_object(GROUP, VERSION, "elsewhere", PLURAL),
        lambda: operator.list_cluster_custom_object(GROUP, VERSION, PLURAL),
    ):
        with pytest.raises(ApiException) as denied:
            call()
        assert denied.value.status == 403
    _, rbac, _ = admin(kube_api)
    rbac.create_cluster_role({"metadata": {"name": f"{namespace}-lister"}, "rules": [{**rules[0], "verbs": ["list"]}]})
    rbac.create_cluster_role_binding(
        {
            "metadata": {"name": f"{namespace}-lister"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": f"{namespace}-lister"},
            "subjects": [{"kind": "ServiceAccount", "name": "operator", "namespace": namespace}],
        }
    )
    operator.list_cluster_custom_object(GROUP, VERSION, PLURAL)


def test_a_token_is_valid_while_its_service_account_exists_and_no_token_is_unauthorized(kube_api, tmp_path, namespace):
    core, _, _ = admin(kube_api)
    gone = client.CoreV1Api(account(kube_api, tmp_path, namespace, "gone", []))
    with pytest.raises(ApiException) as forbidden:
        gone.list_namespaced_config_map(namespace)
    assert forbidden.value.status == 403
    core.delete_namespaced_service_account("gone", namespace)
    with pytest.raises(ApiException) as unauthorized:
        gone.list_namespaced_config_map(namespace)
    assert unauthorized.value.status == 401


def test_granting_what_one_does_not_hold_is_an_escalation(kube_api, tmp_path, namespace):
    rbac_rules = {
        "apiGroups": ["rbac.authorization.k8s.io"],
        "resources": ["roles", "rolebindings"],
        "verbs": ["create"],
    }
    held = {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}
    granter = client.RbacAuthorizationV1Api(account(kube_api, tmp_path, namespace, "granter", [rbac_rules, held]))
    granter.create_namespaced_role(namespace, {"metadata": {"name": "reader"}, "rules": [held]})
    with pytest.raises(ApiException) as escalation:
        granter.create_namespaced_role(
            namespace, {"metadata": {"name": "writer"}, "rules": [{**held, "verbs": ["get", "update"]}]}
        )
    status, reason, message = refusal(escalation.value)
    assert (status, reason) == (403, "Forbidden")
    assert "attempting to grant RBAC permissions not currently held" in message and '"update"' in message


def test_owner_references_permission_enforcement_needs_finalizers_for_block_owner_deletion(
    kube_api, tmp_path, namespace
):
    _, _, custom = admin(kube_api)
    owner = custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, pipeline(namespace))
    rules = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "get"]}]
    creator = client.CoreV1Api(account(kube_api, tmp_path, namespace, "creator", rules))
    reference = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "CdcPipeline",
        "name": "orders",
        "uid": owner["metadata"]["uid"],
        "blockOwnerDeletion": True,
    }

    def config_map(name: str) -> dict[str, Any]:
        return {"metadata": {"name": name, "ownerReferences": [reference]}}

    kube_api.double.enforce_owner_references = True
    try:
        with pytest.raises(ApiException) as denied:
            creator.create_namespaced_config_map(namespace, config_map("blocking"))
        assert denied.value.status == 403
        assert (
            "cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on"
            in (refusal(denied.value)[2])
        )
        plain = {"metadata": {"name": "plain", "ownerReferences": [{**reference, "blockOwnerDeletion": False}]}}
        creator.create_namespaced_config_map(namespace, plain)  # creating may set an owner: one could not create
    finally:
        kube_api.double.enforce_owner_references = False
    creator.create_namespaced_config_map(namespace, config_map("blocking"))  # the plugin off: a cluster without it


def test_webhooks_mutate_before_the_schema_and_validate_after_it_and_a_denial_names_the_webhook(kube_api, namespace):
    _, _, custom = admin(kube_api)

    def label(review):
        review.obj["metadata"].setdefault("labels", {})["mutated"] = "yes"
        return review.obj

    def refuse_other(review):
        if review.obj["metadata"]["name"] == "other":
            raise ApiError(403, "Forbidden", "not that one")
        return review.obj

    hooks = [
        Webhook("label.test", "CdcPipeline", True, label),
        Webhook("refuse.test", "CdcPipeline", False, refuse_other),
    ]
    kube_api.double.webhooks.extend(hooks)
    try:
        created = custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, pipeline(namespace))
        assert created["metadata"]["labels"]["mutated"] == "yes"
        with pytest.raises(ApiException) as denied:
            custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, pipeline(namespace, "other"))
        assert refusal(denied.value) == (
            403,
            "Forbidden",
            'admission webhook "refuse.test" denied the request: not that one',
        )
    finally:
        for hook in hooks:
            kube_api.double.webhooks.remove(hook)
