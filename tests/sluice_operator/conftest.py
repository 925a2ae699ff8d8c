"""The stand-in cluster each end-to-end operator test gets: a namespace of its own in the
session's Kubernetes API test double, an operator process and a Spark Operator double."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.cluster import Cluster
from tests.harness.kube_api_double import RunningApiDouble

_namespaces = itertools.count()


@pytest.fixture
def cluster(kube_api: RunningApiDouble, tmp_path: Path) -> Iterator[Cluster]:
    namespace = f"e2e-{next(_namespaces)}"
    cluster = Cluster(kube_api, tmp_path, namespace)
    yield cluster
    cluster.close()
