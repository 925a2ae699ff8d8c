"""The kopf wiring: which changes start a reconcile pass, and one pass, observe -> reconcile
-> act, for one CdcPipeline at a time. Level-triggered: a pass reads the CdcPipeline again
and decides from what is, so a missed, repeated or reordered event changes nothing, and
neither does an operator restart.

Passes start on a CdcPipeline's events, on its SparkApplication's events, and every
`SLUICE_OPERATOR_RESYNC_SECONDS` for all pipelines (a Secret created later, a clock-driven
retry). Only the replica holding the leader Lease (leader.py) runs them; the others watch
and stand by, and the one that takes the Lease over starts with a pass over every pipeline.
kopf keeps no state on the CdcPipeline: only event handlers are used, which need no
finalizers and no progress annotations, so the operator writes nothing but status.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kopf

from sluice.kubernetes_api import kubernetes_client
from sluice_operator import metrics, owned
from sluice_operator.act import Refused, act, post_event
from sluice_operator.leader import RETRY_SECONDS, LeaderElection
from sluice_operator.observe import observe
from sluice_operator.reconcile import Event, reconcile, refused
from sluice_operator.spark_application import SPARK_API_GROUP, SPARK_API_VERSION, SPARK_PLURAL
from sluice_operator.spark_operator import SparkOperatorCheck

log = logging.getLogger(__name__)

RESYNC_SECONDS = float(os.environ.get("SLUICE_OPERATOR_RESYNC_SECONDS", "30"))
HTTP_PORT = int(os.environ.get("SLUICE_OPERATOR_HTTP_PORT", "8080"))


@dataclass
class Apis:
    custom: Any
    core: Any
    rbac: Any
    extensions: Any
    coordination: Any


_locks: dict[tuple[str, str], asyncio.Lock] = {}
_health = metrics.HealthServer(HTTP_PORT)
_apis: Apis | None = None
_watched: list[str] = []  # the namespaces watched; none: all of them
_spark_operator = SparkOperatorCheck()
_leader: LeaderElection | None = None
_resync_now = asyncio.Event()
SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def watch_namespaces(namespaces: list[str]) -> None:
    """Only these namespaces' CdcPipelines (the chart's `watchNamespaces`, granted by a Role in
    each): the resync lists each of them, never the cluster."""
    _watched[:] = namespaces


def apis() -> Apis:
    global _apis
    if _apis is None:
        from kubernetes import client

        api_client = kubernetes_client()
        # Which replica wrote what, in the API server's audit log.
        api_client.user_agent = f"sluice-operator/{os.environ.get('POD_NAME') or socket.gethostname()}"
        _apis = Apis(
            client.CustomObjectsApi(api_client),
            client.CoreV1Api(api_client),
            client.RbacAuthorizationV1Api(api_client),
            client.ApiextensionsV1Api(api_client),
            client.CoordinationV1Api(api_client),
        )
    return _apis


def _election() -> LeaderElection:
    global _leader
    if _leader is None:
        namespace = os.environ.get("POD_NAMESPACE") or _own_namespace()
        lease = os.environ.get("SLUICE_OPERATOR_LEASE", "sluice-operator")
        _leader = LeaderElection(apis().coordination, namespace, lease, os.environ.get("POD_NAME") or None)
    return _leader


def _own_namespace() -> str:
    try:
        return SERVICE_ACCOUNT_NAMESPACE.read_text().strip()
    except OSError:
        return "default"


@kopf.on.startup()
async def started(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.posting.enabled = False  # our Events are our own, one per transition
    settings.persistence.finalizer = "sluice.io/unused"  # never added: event handlers need none
    settings.watching.server_timeout = 60
    await _health.start()
    threading.Thread(target=_lead, args=(asyncio.get_running_loop(),), name="leader-election", daemon=True).start()
    asyncio.get_running_loop().create_task(_resync())


@kopf.on.cleanup()
async def stopped(**_: Any) -> None:
    await asyncio.to_thread(_election().release)
    await _health.stop()


def _lead(loop: asyncio.AbstractEventLoop) -> None:
    """In a thread of its own: renewing the Lease never waits behind reconciles in the
    shared pool (a leader that renews late loses the Lease)."""
    while True:
        try:
            election = _election()
            was = election.leading
            if election.step() and not was:
                loop.call_soon_threadsafe(_resync_now.set)  # a new leader starts from what is
            if election.answered and not election.leading:
                _health.ready = True  # a healthy standby
        except Exception:  # noqa: BLE001 - a bug of ours: said, and tried again
            log.exception("leader election failed")
        time.sleep(RETRY_SECONDS)


@kopf.on.event(owned.GROUP, owned.VERSION, owned.PLURAL)
async def cdc_pipeline_changed(event: dict[str, Any], namespace: str, name: str, **_: Any) -> None:
    if event.get("type") == "DELETED":
        metrics.forget_pipeline(namespace, name)  # what it owned goes with it (ownerReferences)
        return
    await reconcile_pipeline(namespace, name)


@kopf.on.event(
    SPARK_API_GROUP, SPARK_API_VERSION, SPARK_PLURAL, labels={"app.kubernetes.io/managed-by": owned.MANAGED_BY}
)
async def spark_application_changed(labels: dict[str, str], namespace: str, **_: Any) -> None:
    pipeline = labels.get(f"{owned.GROUP}/pipeline")
    if pipeline:
        await reconcile_pipeline(namespace, pipeline)


async def _resync() -> None:
    """Ready once every watched namespace (or the cluster) has answered a list."""
    while True:
        _resync_now.clear()  # before the pass: a leadership gained during it asks for another
        try:
            if _election().leading:
                for item in await asyncio.to_thread(_list_pipelines):
                    await reconcile_pipeline(item["metadata"]["namespace"], item["metadata"]["name"])
                _health.ready = True
        except Exception as exc:  # noqa: BLE001 - the API may be away for a while; try again
            log.warning("resync: %s", exc)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(_resync_now.wait(), RESYNC_SECONDS)


def _list_pipelines() -> list[dict[str, Any]]:
    custom = apis().custom
    if not _watched:
        return custom.list_cluster_custom_object(owned.GROUP, owned.VERSION, owned.PLURAL).get("items", [])
    items: list[dict[str, Any]] = []
    for namespace in _watched:
        items += custom.list_namespaced_custom_object(owned.GROUP, owned.VERSION, namespace, owned.PLURAL)["items"]
    return items


async def reconcile_pipeline(namespace: str, name: str) -> None:
    if not _election().leading:
        return  # a standby: the leader reconciles
    lock = _locks.setdefault((namespace, name), asyncio.Lock())
    async with lock:
        await asyncio.to_thread(reconcile_once, apis(), namespace, name)


def reconcile_once(clients: Apis, namespace: str, name: str) -> str | None:
    """One pass. Never raises: a failure is a metric, a log line and a Warning Event, and
    the next pass tries again; other pipelines are not held up."""
    from kubernetes.client.exceptions import ApiException

    try:
        cr = clients.custom.get_namespaced_custom_object(owned.GROUP, owned.VERSION, namespace, owned.PLURAL, name)
    except ApiException as exc:
        if exc.status != 404:
            metrics.ERRORS.inc()
            log.warning("%s/%s: reading it failed: %s", namespace, name, exc.reason)
        return None
    try:
        observation = observe(clients, cr, _spark_operator(clients))
        plan = reconcile(observation)
        try:
            act(clients, observation, plan)
        except Refused as exc:
            reason = "ApplicationRefused" if exc.kind == "SparkApplication" else "Refused"
            log.warning("%s/%s: %s", namespace, name, exc)
            plan = refused(observation, reason, str(exc))
            act(clients, observation, plan)
    except ApiException as exc:
        metrics.RECONCILES.labels("conflict" if exc.status == 409 else "error").inc()
        if exc.status != 409:  # a conflict: something moved meanwhile; the next pass sees it
            metrics.ERRORS.inc()
            log.warning("%s/%s: %s %s", namespace, name, exc.status, exc.reason)
        return None
    except Exception as exc:  # noqa: BLE001 - a bug of ours must not stop the other pipelines
        metrics.RECONCILES.labels("error").inc()
        metrics.ERRORS.inc()
        log.exception("%s/%s: reconcile failed", namespace, name)
        post_event(
            clients, cr, Event("Warning", "Error", f"the operator failed to reconcile: {type(exc).__name__}: {exc}")
        )
        return None
    metrics.RECONCILES.labels("ok").inc()
    metrics.observe_pipeline(namespace, name, plan.phase, {**(cr.get("status") or {}), **plan.status})
    return plan.phase
