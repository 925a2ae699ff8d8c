"""Act: make the world match a Plan. Creates or replaces the objects the operator owns,
writes its own status fields, posts Events. It never writes a CdcPipeline's spec or
metadata: only its status subresource."""

from __future__ import annotations

import json
import logging
from datetime import datetime, timezone
from typing import Any

from kubernetes.client.exceptions import ApiException

from sluice_operator import owned
from sluice_operator.observe import Observation
from sluice_operator.reconcile import Event, Plan
from sluice_operator.spark_application import SPARK_API_GROUP, SPARK_API_VERSION, SPARK_PLURAL, applied

log = logging.getLogger(__name__)

COMPONENT = "sluice-operator"
# What makes an owned object what it should be; the rest (status, server-set metadata) is the API's.
CONTENT = {"ConfigMap": ("data",), "ServiceAccount": (), "Role": ("rules",), "RoleBinding": ("roleRef", "subjects")}


class Refused(Exception):
    """The API server (RBAC, the schema, an admission webhook such as the Spark Operator's or
    a policy engine's) refused an object the pipeline needs: the user must act."""

    def __init__(self, kind: str, name: str, message: str) -> None:
        super().__init__(f"the API server refused {kind} {name}: {message}")
        self.kind = kind


def act(apis: Any, observation: Observation, plan: Plan) -> None:
    cr = observation.cdc_pipeline
    if plan.delete_application:
        _delete_application(apis, observation)
    for desired in plan.apply:
        try:
            if desired["kind"] == "SparkApplication":
                _apply_application(apis, observation, desired)
            else:
                _apply_owned(apis, observation, desired)
        except ApiException as exc:
            if exc.status not in (400, 403, 422):
                raise
            raise Refused(desired["kind"], desired["metadata"]["name"], _message(exc)) from exc
    # Events before the status: whoever sees a condition change finds its Event already there.
    for event in plan.events:
        post_event(apis, cr, event)
    _write_status(apis, cr, plan.status)


def _message(exc: ApiException) -> str:
    try:
        return json.loads(exc.body)["message"]
    except (TypeError, ValueError, KeyError):
        return f"{exc.status} {exc.reason}"


def _apply_owned(apis: Any, observation: Observation, desired: dict[str, Any]) -> None:
    kind, meta = desired["kind"], desired["metadata"]
    current = observation.owned.get((kind, meta["name"]))
    create, replace = _calls(apis, kind)
    if current is None:
        create(meta["namespace"], desired)
        return
    fields = ("metadata.labels", "metadata.ownerReferences", *CONTENT[kind])
    if all(_field(current, f) == _field(desired, f) for f in fields):
        return
    body = {**desired, "metadata": {**meta, "resourceVersion": current["metadata"]["resourceVersion"]}}
    replace(meta["name"], meta["namespace"], body)


def _delete_application(apis: Any, observation: Observation) -> None:
    """To run it again (the next pass, on its deletion event, submits it) or to suspend it
    where the Spark Operator has no spec.suspend."""
    current = observation.application
    if current is None:
        return
    meta = current["metadata"]
    try:
        apis.custom.delete_namespaced_custom_object(
            SPARK_API_GROUP, SPARK_API_VERSION, meta["namespace"], SPARK_PLURAL, meta["name"]
        )
    except ApiException as exc:
        if exc.status != 404:
            raise


def _apply_application(apis: Any, observation: Observation, desired: dict[str, Any]) -> None:
    meta, current = desired["metadata"], observation.application
    if current is None:
        apis.custom.create_namespaced_custom_object(
            SPARK_API_GROUP, SPARK_API_VERSION, meta["namespace"], SPARK_PLURAL, desired
        )
        return
    if applied(current, desired) and _field(current, "metadata.labels") == meta["labels"]:
        return
    # A replace under the observed resourceVersion: a 409 means the observation is stale and
    # the next pass decides again on a fresh one.
    annotations = {**(_field(current, "metadata.annotations") or {}), **meta["annotations"]}
    body = {
        **current,
        "metadata": {**current["metadata"], "labels": meta["labels"], "annotations": annotations},
        "spec": desired["spec"],
    }
    apis.custom.replace_namespaced_custom_object(
        SPARK_API_GROUP, SPARK_API_VERSION, meta["namespace"], SPARK_PLURAL, meta["name"], body
    )


def _write_status(apis: Any, cr: dict[str, Any], fields: dict[str, Any]) -> None:
    """A merge patch of the operator's fields only: the driver's fields stay as they are."""
    current = cr.get("status") or {}
    if all(current.get(k) == v for k, v in fields.items()):
        return  # level-triggered: nothing new, nothing written
    meta = cr["metadata"]
    apis.custom.patch_namespaced_custom_object_status(
        owned.GROUP, owned.VERSION, meta["namespace"], owned.PLURAL, meta["name"], {"status": fields}
    )


def post_event(apis: Any, cr: dict[str, Any], event: Event) -> None:
    meta = cr["metadata"]
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    body = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{meta['name']}.", "namespace": meta["namespace"]},
        "involvedObject": {
            "apiVersion": f"{owned.GROUP}/{owned.VERSION}",
            "kind": owned.KIND,
            "name": meta["name"],
            "namespace": meta["namespace"],
            "uid": meta["uid"],
        },
        "type": event.type,
        "reason": event.reason,
        "message": event.message[:1024],
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }
    try:
        apis.core.create_namespaced_event(meta["namespace"], body)
    except Exception as exc:  # noqa: BLE001 - an Event is for people; reconciling goes on without it
        log.warning("event %s on %s/%s not posted: %s", event.reason, meta["namespace"], meta["name"], exc)


def _calls(apis: Any, kind: str) -> tuple[Any, Any]:
    return {
        "ConfigMap": (apis.core.create_namespaced_config_map, apis.core.replace_namespaced_config_map),
        "ServiceAccount": (apis.core.create_namespaced_service_account, apis.core.replace_namespaced_service_account),
        "Role": (apis.rbac.create_namespaced_role, apis.rbac.replace_namespaced_role),
        "RoleBinding": (apis.rbac.create_namespaced_role_binding, apis.rbac.replace_namespaced_role_binding),
    }[kind]


def _field(obj: dict[str, Any], path: str) -> Any:
    for part in path.split("."):
        obj = (obj or {}).get(part)
    return obj
