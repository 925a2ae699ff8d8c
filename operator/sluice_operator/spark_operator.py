"""What the installed Kubeflow Spark Operator supports, read from its SparkApplication CRD:
the API server prunes a field its schema lacks, so an application rendered with one the
release does not know would never match what is stored, and the field would do nothing.

`spec.suspend` came with v2.4.0. Before it, Sluice suspends a pipeline by deleting its
SparkApplication (the state stays in the CdcPipeline's status) and says so.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from sluice_operator.spark_application import SPARK_API_GROUP, SPARK_API_VERSION, SPARK_PLURAL

log = logging.getLogger(__name__)

CRD_NAME = f"{SPARK_PLURAL}.{SPARK_API_GROUP}"
RECHECK_SECONDS = 60.0  # a Spark Operator upgrade is seen within this


@dataclass(frozen=True)
class SparkOperator:
    installed: bool
    suspend: bool  # spec.suspend is in the CRD (Spark Operator v2.4.0 and later)

    @property
    def problem(self) -> str:
        if not self.installed:
            return (
                f"the SparkApplication CRD ({CRD_NAME}) is not installed: install the Kubeflow Spark Operator "
                "(v2.4.0 or later) first"
            )
        return ""


UNSUPPORTED_SUSPEND = (
    "the installed Spark Operator's SparkApplication has no spec.suspend (Spark Operator before v2.4.0): "
    "the pipeline is suspended by deleting its SparkApplication; its state stays in status"
)


def read(schema: dict[str, Any] | None) -> SparkOperator:
    """What a CRD (None: absent) says the Spark Operator supports."""
    if schema is None:
        return SparkOperator(installed=False, suspend=False)
    version = next((v for v in schema["spec"]["versions"] if v["name"] == SPARK_API_VERSION), None)
    if version is None:
        return SparkOperator(installed=False, suspend=False)
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    return SparkOperator(installed=True, suspend="suspend" in (spec.get("properties") or {}))


class SparkOperatorCheck:
    """Reads the CRD at most every RECHECK_SECONDS; logs what changed."""

    def __init__(self) -> None:
        self._known: SparkOperator | None = None
        self._read_at = 0.0

    def __call__(self, apis: Any) -> SparkOperator:
        from kubernetes.client.exceptions import ApiException

        if self._known is not None and time.monotonic() - self._read_at < RECHECK_SECONDS:
            return self._known
        try:
            crd = apis.extensions.read_custom_resource_definition(CRD_NAME)
            found = read(apis.core.api_client.sanitize_for_serialization(crd))
        except ApiException as exc:
            if exc.status != 404:
                raise
            found = read(None)
        if found != self._known:
            if not found.installed:
                log.warning("%s", found.problem)
            elif not found.suspend:
                log.warning("%s", UNSUPPORTED_SUSPEND)
            else:
                log.info("the Spark Operator's SparkApplication CRD has spec.suspend (v2.4.0 or later)")
        self._known, self._read_at = found, time.monotonic()
        return found
