"""Observe: what the world looks like for one CdcPipeline, read in one go so that reconcile
decides on a consistent picture. Reading only; nothing here writes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sluice.errors import DefinitionError
from sluice_operator.pipeline_spec import PipelineSpec, read_pipeline
from sluice_operator.spark_application import SPARK_API_GROUP, SPARK_API_VERSION, SPARK_PLURAL, names
from sluice_operator.spark_operator import SparkOperator


@dataclass
class Observation:
    cdc_pipeline: dict[str, Any]
    application: dict[str, Any] | None  # the SparkApplication, if it exists
    secret_keys: dict[str, set[str] | None] = field(default_factory=dict)  # Secret name -> its keys (None: missing)
    owned: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)  # (kind, name) -> object
    spark_operator: SparkOperator = SparkOperator(installed=True, suspend=True)
    pipeline: PipelineSpec | DefinitionError | None = None  # the spec read: read_pipeline(cdc_pipeline)

    def __post_init__(self) -> None:
        if self.pipeline is None:
            self.pipeline = read_pipeline(self.cdc_pipeline)


def observe(apis: Any, cdc_pipeline: dict[str, Any], spark_operator: SparkOperator) -> Observation:
    """`apis`: the operator's API clients (custom, core, rbac); `spark_operator`: what the
    installed Spark Operator supports (read from its CRD, not per pipeline). The spec is
    read once: the Secrets it names are read here, and reconcile decides on it."""
    from kubernetes.client.exceptions import ApiException

    meta = cdc_pipeline["metadata"]
    namespace, named = meta["namespace"], names(meta["name"])

    def read(call: Any, *args: Any) -> Any:
        try:
            return call(*args)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    application = read(
        apis.custom.get_namespaced_custom_object,
        SPARK_API_GROUP,
        SPARK_API_VERSION,
        namespace,
        SPARK_PLURAL,
        named["application"],
    )
    pipeline = read_pipeline(cdc_pipeline)
    secret_names = [] if isinstance(pipeline, DefinitionError) else sorted({r.name for r in pipeline.secrets.values()})
    secret_keys: dict[str, set[str] | None] = {}
    for name in secret_names:
        secret = read(apis.core.read_namespaced_secret, name, namespace)
        secret_keys[name] = None if secret is None else set((secret.data or {}) | (secret.string_data or {}))
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for kind, call, name in (
        ("ConfigMap", apis.core.read_namespaced_config_map, named["config"]),
        ("ServiceAccount", apis.core.read_namespaced_service_account, named["service_account"]),
        ("Role", apis.rbac.read_namespaced_role, named["service_account"]),
        ("RoleBinding", apis.rbac.read_namespaced_role_binding, named["service_account"]),
    ):
        obj = read(call, name, namespace)
        if obj is not None:
            found[(kind, name)] = apis.core.api_client.sanitize_for_serialization(obj)
    return Observation(cdc_pipeline, application, secret_keys, found, spark_operator, pipeline)
