"""The operator's Prometheus metrics, and its health endpoints, on one small HTTP server:
/metrics, /healthz (the event loop answers), /readyz (started, and the first pass over the
pipelines went through)."""

from __future__ import annotations

import contextlib
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, generate_latest

from sluice_operator.conditions import PHASES

REGISTRY = CollectorRegistry()
RECONCILES = Counter("sluice_operator_reconciles", "Reconcile passes", ["result"], registry=REGISTRY)
ERRORS = Counter("sluice_operator_reconcile_errors", "Reconcile passes that failed", registry=REGISTRY)
PHASE = Gauge(
    "sluice_pipeline_phase", "1 for a CdcPipeline's current phase", ["namespace", "name", "phase"], registry=REGISTRY
)
LAG = Gauge("sluice_pipeline_lag_seconds", "The binlog reader's lag", ["namespace", "name"], registry=REGISTRY)
WAITING = Gauge(
    "sluice_pipeline_schema_changes_waiting",
    "Schema changes waiting for approval (manual)",
    ["namespace", "name"],
    registry=REGISTRY,
)


def observe_pipeline(namespace: str, name: str, phase: str, status: dict[str, Any]) -> None:
    for each in PHASES:
        PHASE.labels(namespace, name, each).set(1 if each == phase else 0)
    lag = (status.get("binlog") or {}).get("lagSeconds")
    if lag is not None:
        LAG.labels(namespace, name).set(float(lag))
    waiting = (status.get("schemaChange") or {}).get("step") == "AwaitingApproval"
    WAITING.labels(namespace, name).set(1 if waiting else 0)


def forget_pipeline(namespace: str, name: str) -> None:
    with contextlib.suppress(KeyError):  # never observed
        for each in PHASES:
            PHASE.remove(namespace, name, each)
        WAITING.remove(namespace, name)
    with contextlib.suppress(KeyError):  # never streamed
        LAG.remove(namespace, name)


class HealthServer:
    def __init__(self, port: int) -> None:
        self.port = port
        self.ready = False
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/healthz", self._alive)
        app.router.add_get("/readyz", self._ready)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.TCPSite(self._runner, "0.0.0.0", self.port).start()

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _metrics(self, _request: web.Request) -> web.Response:
        return web.Response(body=generate_latest(REGISTRY), headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def _alive(self, _request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _ready(self, _request: web.Request) -> web.Response:
        return web.Response(text="ready" if self.ready else "starting", status=200 if self.ready else 503)
