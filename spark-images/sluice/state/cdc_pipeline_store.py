"""The state store of a pipeline run by the operator: the CdcPipeline's status subresource.

The Spark driver owns a few status fields (`state`, `snapshot`, `binlog`, `schemaChange`,
`schemaChangeHistory`, `driver`); the operator owns the rest (phase, conditions). Each
write replaces the status with the driver's fields set, under the resourceVersion the
driver last saw: a 409 (the operator wrote meanwhile) reads the object again and repeats
the write, so neither side loses the other's fields.

Writes are throttled: the whole state at phase changes (`save`), and finished splits,
binlog offsets and lag at most every `interval` seconds. A crash loses at most that much
progress, which costs no data: the sink's own records (committed splits, the committed
binlog offset) are ahead of the state, and a rerun adopts them.

Fencing: a run claims the status (`driver.run`) when it starts. A run that finds another
run's claim on a conflict stops (StateFenced): the Spark Operator started a new driver.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Collection
from typing import Any

from sluice.errors import SluiceError
from sluice.kubernetes_api import kubernetes_client
from sluice.pipeline.verification_requests import Requests
from sluice.snapshot.snapshot_split_assigner import FinishedSplit
from sluice.source.offset import BinlogOffset
from sluice.state.compact_state import compact, expand
from sluice.state.pipeline_state import STATE_VERSION, PipelineState
from sluice.state.progress_summary import binlog_progress, snapshot_progress
from sluice.state.state_store import StateStore

log = logging.getLogger(__name__)

GROUP, VERSION, PLURAL = "sluice.io", "v1alpha1", "cdcpipelines"
DRIVER_FIELDS = (
    "state",
    "snapshot",
    "binlog",
    "schemaChange",
    "schemaChangeHistory",
    "driver",
    "verification",
    "resnapshots",
)
CONFLICT_RETRIES = 20


class StateFenced(SluiceError):
    """Another driver run has claimed this pipeline's status."""

    troubleshooting = "fenced"


class StatusStateStore(StateStore):
    def __init__(self, api: Any, namespace: str, name: str, interval: float = 3.0) -> None:
        """`api`: a kubernetes CustomObjectsApi."""
        self.api = api
        self.namespace, self.name = namespace, name
        self.where = f"the status of CdcPipeline {namespace}/{name}"
        self.fresh_start = "create a new CdcPipeline (another name)"
        self.interval = interval
        self.run = uuid.uuid4().hex
        self._lock = threading.RLock()
        self._object: dict[str, Any] | None = None  # as last read or written
        self._document: dict[str, Any] | None = None  # the state's JSON form, with recorded updates
        self._lag: float | None = None
        self._failure: str | None = None
        self._retriable = False
        self._reason = ""
        self._adopted: str | None = None
        self._verification: dict[str, Any] | None = None  # as this run last said; else the status's
        self._resnapshots: dict[str, dict[str, Any]] | None = None
        self._dirty = False
        self._last_write = 0.0
        self._timer: threading.Timer | None = None

    # -- StateStore --------------------------------------------------------------------------

    def load(self) -> PipelineState | None:
        with self._lock:
            obj = self._read()
            packed = (obj.get("status") or {}).get("state")
            if not packed:
                self._claim()
                return None
            if packed.get("version") != STATE_VERSION:
                raise SluiceError(
                    f"{self.where}: state version {packed.get('version')} is not {STATE_VERSION}; "
                    "run the Sluice version that wrote it, or create a new CdcPipeline"
                )
            self._document = expand(packed)
            self._claim()
            return PipelineState.from_json(self._document)

    def save(self, state: PipelineState) -> None:
        with self._lock:
            self._document = state.to_json()
            self._write()

    def record_split_finished(self, split_id: str, finished: FinishedSplit) -> None:
        with self._lock:
            if self._document is not None and "snapshot" in self._document:
                self._document["snapshot"]["finished"][split_id] = finished.to_json()
                self._soon()

    def record_binlog_offset(self, offset: BinlogOffset) -> None:
        with self._lock:
            if self._document is not None and "binlog" in self._document:
                self._document["binlog"]["offset"] = offset.to_json()
                self._soon()

    def record_lag(self, seconds: float) -> None:
        with self._lock:
            self._lag = seconds
            self._soon()

    # -- the CdcPipeline ---------------------------------------------------------------------

    def approved_schema_changes(self) -> Collection[str]:
        """spec.schemaChanges.approved, read now: approving is editing the CdcPipeline."""
        spec = self._get().get("spec") or {}
        return [str(i) for i in (spec.get("schemaChanges") or {}).get("approved", [])]

    def requested(self) -> Requests:
        """spec.verification and spec.resnapshots, read now."""
        return Requests.from_spec(self._get().get("spec") or {})

    def verification_status(self) -> dict[str, Any]:
        with self._lock:
            if self._verification is None:
                self._verification = dict(self._status().get("verification") or {})
            return dict(self._verification)

    def resnapshot_statuses(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            if self._resnapshots is None:
                self._resnapshots = {r["id"]: r for r in self._status().get("resnapshots") or [] if "id" in r}
            return dict(self._resnapshots)

    def report_verification(self, status: dict[str, Any], now: bool = False) -> None:
        """Progress (throttled as the rest) or, `now`, a result."""
        with self._lock:
            self._verification = status
            self._write() if now else self._soon()

    def report_resnapshot(self, request_id: str, status: dict[str, Any]) -> None:
        with self._lock:
            self.resnapshot_statuses()
            self._resnapshots[request_id] = status  # type: ignore[index]
            self._write()

    def _status(self) -> dict[str, Any]:
        obj = self._object if self._object is not None else self._read()
        return obj.get("status") or {}

    def report_adoption(self, message: str) -> None:
        with self._lock:
            self._adopted = message[:1000]
            self._write()

    def report_failure(self, message: str, retriable: bool = False, reason: str = "") -> None:
        """Why the run stopped, for the operator's Degraded condition (no passwords: Sluice's
        messages name options, never their values), and whether the operator should retry."""
        with self._lock:
            self._failure = message[:4000]
            self._retriable = retriable
            self._reason = reason
            self._write()

    def flush(self) -> None:
        """Writes what the throttle held back (at the end of a run)."""
        with self._lock:
            if self._dirty:
                self._write()

    # -- writing -----------------------------------------------------------------------------

    def _soon(self) -> None:
        """Writes now if the last write is `interval` old, else once it is."""
        self._dirty = True
        wait = self._last_write + self.interval - time.monotonic()
        if wait <= 0:
            self._write()
        elif self._timer is None:
            self._timer = threading.Timer(wait, self._timed_flush)
            self._timer.daemon = True
            self._timer.start()

    def _timed_flush(self) -> None:
        with self._lock:
            self._timer = None
        try:
            self.flush()
        except Exception as exc:  # noqa: BLE001 - the next write tries again; the run goes on
            log.warning("%s: progress not written: %s", self.where, exc)

    def _claim(self) -> None:
        self._write(claim=True)

    def _write(self, claim: bool = False) -> None:
        from kubernetes.client.exceptions import ApiException

        obj = self._object if self._object is not None else self._read()
        for _ in range(CONFLICT_RETRIES):
            status = dict(obj.get("status") or {})
            owner = (status.get("driver") or {}).get("run")
            if not claim and owner != self.run:
                raise StateFenced(
                    f"{self.where} was claimed by another driver run ({owner}); this run ({self.run}) stops"
                )
            status.update(self._fields())
            body = {**obj, "status": {k: v for k, v in status.items() if v is not None}}
            try:
                self._object = self.api.replace_namespaced_custom_object_status(
                    GROUP, VERSION, self.namespace, PLURAL, self.name, body
                )
            except ApiException as exc:
                if exc.status != 409:
                    raise SluiceError(f"{self.where}: writing the state failed: {exc.status} {exc.reason}") from exc
                obj = self._read()  # the operator wrote meanwhile: its fields, our fields again
                claim = False
                continue
            self._dirty = False
            self._last_write = time.monotonic()
            return
        raise SluiceError(f"{self.where}: {CONFLICT_RETRIES} conflicting writes in a row; giving up")

    def _fields(self) -> dict[str, Any]:
        """The driver's status fields, from the state; None removes a field."""
        fields: dict[str, Any] = dict.fromkeys(DRIVER_FIELDS)
        failure = {"error": self._failure, "retriable": self._retriable} if self._failure else {}
        if self._failure and self._reason:
            failure["reason"] = self._reason
        adopted = {"adopted": self._adopted} if self._adopted else {}
        fields["driver"] = {"run": self.run, **failure, **adopted}
        status = (self._object.get("status") or {}) if self._object is not None else {}
        fields["verification"] = self._verification if self._verification is not None else status.get("verification")
        fields["resnapshots"] = (
            list(self._resnapshots.values()) if self._resnapshots is not None else status.get("resnapshots")
        )
        document = self._document
        if document is None:
            return fields
        fields["state"] = compact(document)
        fields["snapshot"] = snapshot_progress(document)
        fields["binlog"] = binlog_progress(document, self._lag)
        fields["schemaChange"] = document.get("schema_change")
        fields["schemaChangeHistory"] = document.get("schema_change_history")
        return fields

    def _read(self) -> dict[str, Any]:
        self._object = self._get()
        return self._object

    def _get(self) -> dict[str, Any]:
        from kubernetes.client.exceptions import ApiException

        try:
            return self.api.get_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL, self.name)
        except ApiException as exc:
            raise SluiceError(f"{self.where}: reading it failed: {exc.status} {exc.reason}") from exc


def status_state_store(cdc_pipeline: str, interval: float = 3.0) -> StatusStateStore:
    """The store of CdcPipeline `namespace/name`."""
    from kubernetes import client

    namespace, _, name = cdc_pipeline.partition("/")
    if not name:
        raise SluiceError(f"--cdc-pipeline {cdc_pipeline}: expected namespace/name")
    return StatusStateStore(client.CustomObjectsApi(kubernetes_client()), namespace, name, interval)
