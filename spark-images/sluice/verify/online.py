"""Verification and resnapshot requests of a CdcPipeline's spec, carried out by its driver
while the pipeline streams (the `sluice verify` and `sluice resnapshot` of Kubernetes).

GitOps-friendly: a request is a value in the spec, done once, its result in the status.
`spec.verification` verifies every `intervalSeconds`, and at once whenever its `id`
changes; each of `spec.resnapshots` (an `id` and its tables) is read again once. The
driver reads the spec as it goes (no restart), and says where it is in the status.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any, Protocol

from sluice.errors import SluiceError
from sluice.pipeline.definition import PipelineDefinition
from sluice.pipeline.verification_requests import Requests, ResnapshotRequest, VerificationSpec
from sluice.source.endpoint import SourceEndpoint
from sluice.verify.verifier import NotStreamingYet, VerificationResult, VerifiedSink, Verifier

log = logging.getLogger(__name__)

POLL_SECONDS = 2.0
PACE = 1.0  # beside the binlog reader in one process, verification works at most half the time


class RequestDesk(Protocol):
    """Where requests come from and results go: the CdcPipeline (state/cdc_pipeline_store)."""

    def requested(self) -> Requests: ...

    def verification_status(self) -> dict[str, Any]: ...

    def resnapshot_statuses(self) -> dict[str, dict[str, Any]]: ...

    def report_verification(self, status: dict[str, Any], now: bool = False) -> None: ...

    def report_resnapshot(self, request_id: str, status: dict[str, Any]) -> None: ...


def stamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _seconds_since(text: str) -> float:
    then = datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    return (datetime.now(timezone.utc) - then).total_seconds()


def verification_due(spec: VerificationSpec, last: Mapping[str, Any]) -> bool:
    """At once for an id not yet verified; else once `intervalSeconds` passed since the last."""
    finished = last.get("finishedAt")
    if last.get("id", "") != spec.id or not finished:
        return bool(spec.id) or spec.interval_seconds is not None
    return spec.interval_seconds is not None and _seconds_since(finished) >= spec.interval_seconds


def result_status(spec: VerificationSpec, result: VerificationResult, started: str) -> dict[str, Any]:
    return {
        "id": spec.id,
        "startedAt": started,
        "rangesTotal": result.ranges,
        "rangesChecked": result.checked,
        "progress": f"{result.checked}/{result.ranges}",
        "mismatches": [m.describe() for m in result.mismatches][:20],
        "mismatchCount": len(result.mismatches),
        "repaired": [m.describe() for m in result.repaired][:20],
        "repairedCount": len(result.repaired),
        "skipped": result.skipped,
    }


class OnlineWork:
    def __init__(
        self, definition: PipelineDefinition, sink: VerifiedSink, endpoint: SourceEndpoint, desk: RequestDesk
    ) -> None:
        self.definition, self.sink, self.endpoint, self.desk = definition, sink, endpoint, desk
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="online-verification", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)

    def _loop(self) -> None:
        while not self._stop.wait(POLL_SECONDS):
            try:
                self.carry_out()
            except NotStreamingYet:
                continue
            except Exception as exc:  # noqa: BLE001 - said in the status; the pipeline streams on
                log.warning("online verification: %s", exc)

    def carry_out(self) -> None:
        """Does what the spec asks and the status does not show done yet."""
        requested, done = self.desk.requested(), self.desk.resnapshot_statuses()
        for request in requested.resnapshots:
            if (done.get(request.id) or {}).get("state") in ("Done", "Failed"):
                continue
            self._resnapshot(request)
        spec = requested.verification
        if spec is not None and verification_due(spec, self.desk.verification_status()):
            self._verify(spec)

    def _verifier(self) -> Verifier:
        return Verifier(self.definition, self.sink, self.endpoint)

    def _resnapshot(self, request: ResnapshotRequest) -> None:
        started = stamp()
        self.desk.report_resnapshot(request.id, {"id": request.id, "state": "Running", "startedAt": started})
        try:
            with self._verifier() as verifier:
                rows = verifier.resnapshot(verifier.tables(list(request.tables)), request.where or None)
        except NotStreamingYet:
            raise
        except SluiceError as exc:
            failed = {"id": request.id, "state": "Failed", "startedAt": started, "finishedAt": stamp()}
            self.desk.report_resnapshot(request.id, {**failed, "message": str(exc)[:1000]})
            return
        done = {"id": request.id, "state": "Done", "startedAt": started, "finishedAt": stamp(), "rows": rows}
        self.desk.report_resnapshot(request.id, done)

    def _verify(self, spec: VerificationSpec) -> None:
        started = stamp()
        with self._verifier() as verifier:
            try:
                tables = verifier.tables(list(spec.tables) or None)
            except SluiceError as exc:
                self.desk.report_verification(
                    {"id": spec.id, "startedAt": started, "finishedAt": stamp(), "error": str(exc)[:1000]}, now=True
                )
                return

            def progress(result: VerificationResult) -> None:
                self.desk.report_verification(result_status(spec, result, started))

            result = verifier.verify(tables, repair=spec.repair, on_progress=progress, pace=PACE)
        self.desk.report_verification({**result_status(spec, result, started), "finishedAt": stamp()}, now=True)
