"""What every object the operator creates for a CdcPipeline carries: its labels, and an
owner reference so that deleting the CdcPipeline deletes them (Kubernetes' garbage
collector)."""

from __future__ import annotations

from typing import Any

GROUP = "sluice.io"
VERSION = "v1alpha1"
KIND = "CdcPipeline"
PLURAL = "cdcpipelines"
MANAGED_BY = "sluice-operator"


def labels(name: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "sluice",
        "app.kubernetes.io/instance": name,
        "app.kubernetes.io/managed-by": MANAGED_BY,
        f"{GROUP}/pipeline": name,
    }


def metadata(owner: dict[str, Any], name: str) -> dict[str, Any]:
    """Metadata of an object named `name` owned by the CdcPipeline `owner`."""
    meta = owner["metadata"]
    return {
        "name": name,
        "namespace": meta["namespace"],
        "labels": labels(meta["name"]),
        "ownerReferences": [
            {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": KIND,
                "name": meta["name"],
                "uid": meta["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
