"""The Kubernetes API client both the driver (its state in the CdcPipeline status) and the
operator use."""

from __future__ import annotations

import os
from typing import Any


def kubernetes_client() -> Any:
    """An ApiClient: the pod's service account in a cluster, else the kubeconfig ($KUBECONFIG)."""
    from kubernetes import client, config

    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        config.load_incluster_config()
        return client.ApiClient()
    return config.new_client_from_config()
