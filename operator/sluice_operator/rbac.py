"""The driver's identity: a ServiceAccount whose Role allows exactly the calls the driver
makes on its own CdcPipeline and nothing else (resourceNames): it reads the CdcPipeline (its
state, the approvals in its spec) and replaces its status (a PUT under the resourceVersion
it read, so a concurrent write of the operator is a conflict, never lost: the `update` verb)."""

from __future__ import annotations

from typing import Any

from sluice_operator import owned
from sluice_operator.spark_application import names


def driver_rbac(owner: dict[str, Any]) -> list[dict[str, Any]]:
    name = owner["metadata"]["name"]
    account = names(name)["service_account"]
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": owned.metadata(owner, account)},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": owned.metadata(owner, account),
            "rules": [
                {"apiGroups": [owned.GROUP], "resources": [owned.PLURAL], "resourceNames": [name], "verbs": ["get"]},
                {
                    "apiGroups": [owned.GROUP],
                    "resources": [f"{owned.PLURAL}/status"],
                    "resourceNames": [name],
                    "verbs": ["update"],
                },
                # Spark's driver creates and watches its executor pods and their services.
                {
                    "apiGroups": [""],
                    "resources": ["pods", "services", "configmaps", "persistentvolumeclaims"],
                    "verbs": ["create", "get", "list", "watch", "delete", "deletecollection"],
                },
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": owned.metadata(owner, account),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": account},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": owner["metadata"]["namespace"]}],
        },
    ]
