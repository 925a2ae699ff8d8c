"""Leader election over a coordination.k8s.io Lease, as client-go's leaderelection does it, so
that the operator can run with more than one replica: one leads and reconciles, the others
stand by and take over once the leader's lease runs out (a lost node, a killed pod).

- The leader renews the Lease every RETRY_SECONDS; a write under a stale resourceVersion
  is a conflict, so two candidates can never both take it.
- A candidate takes the Lease only when its record has not changed for LEASE_SECONDS, timed
  on the candidate's own clock from when it saw the record last change (no clock skew
  between nodes matters).
- A leader that could not renew for RENEW_DEADLINE_SECONDS stops leading before its lease can
  run out, so no two replicas act at once.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

log = logging.getLogger(__name__)

LEASE_SECONDS = float(os.environ.get("SLUICE_OPERATOR_LEASE_SECONDS", "15"))
RENEW_DEADLINE_SECONDS = LEASE_SECONDS * 2 / 3
RETRY_SECONDS = LEASE_SECONDS / 5


@dataclass
class _Seen:
    holder: str
    version: str  # the Lease's resourceVersion
    at: float  # time.monotonic() when this record was first seen


class LeaderElection:
    def __init__(self, coordination: Any, namespace: str, name: str, identity: str | None = None) -> None:
        """`coordination`: a kubernetes CoordinationV1Api."""
        self.api, self.namespace, self.name = coordination, namespace, name
        self.identity = identity or f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"
        self.leading = False
        self.answered = False  # the API answered at least once: the replica is healthy
        self._seen: _Seen | None = None
        self._renewed = 0.0
        self._released = False

    def step(self) -> bool:
        """One attempt to take or renew the Lease; whether this replica leads now."""
        from kubernetes.client.exceptions import ApiException

        if self._released:
            return False  # stopping: the Lease is given up, not taken again
        try:
            held = self._try()
            self.answered = True
        except ApiException as exc:
            if exc.status not in (409, 404):
                log.warning("leader election: %s %s", exc.status, exc.reason)
            held = False
        now = time.monotonic()
        if held:
            self._renewed = now
            if not self.leading:
                log.warning("leader election: %s leads (Lease %s/%s)", self.identity, self.namespace, self.name)
            self.leading = True
        elif self.leading and now - self._renewed > RENEW_DEADLINE_SECONDS:
            log.warning("leader election: %s could not renew the Lease; it stops leading", self.identity)
            self.leading = False
        return self.leading

    def release(self) -> None:
        """On a clean stop: give the Lease up, so that a standby takes over at once."""
        self._released = True
        if not self.leading:
            return
        self.leading = False
        try:
            lease = self.api.read_namespaced_lease(self.name, self.namespace)
            if lease.spec.holder_identity == self.identity:
                lease.spec.holder_identity = None
                lease.spec.lease_duration_seconds = 1
                self.api.replace_namespaced_lease(self.name, self.namespace, lease)
        except Exception as exc:  # noqa: BLE001 - the lease runs out by itself
            log.warning("leader election: releasing the Lease failed: %s", exc)

    def _try(self) -> bool:
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        now = datetime.now(timezone.utc)
        try:
            lease = self.api.read_namespaced_lease(self.name, self.namespace)
        except ApiException as exc:
            if exc.status != 404:
                raise
            spec = client.V1LeaseSpec(
                holder_identity=self.identity,
                lease_duration_seconds=int(LEASE_SECONDS),
                acquire_time=now,
                renew_time=now,
                lease_transitions=0,
            )
            body = client.V1Lease(metadata=client.V1ObjectMeta(name=self.name, namespace=self.namespace), spec=spec)
            self.api.create_namespaced_lease(self.namespace, body)
            return True
        spec = lease.spec
        version = lease.metadata.resource_version
        if self._seen is None or self._seen.version != version:
            self._seen = _Seen(spec.holder_identity or "", version, time.monotonic())
        duration = float(spec.lease_duration_seconds or LEASE_SECONDS)
        free = not spec.holder_identity or time.monotonic() - self._seen.at > duration
        if spec.holder_identity != self.identity and not free:
            return False
        if spec.holder_identity != self.identity:
            spec.lease_transitions = (spec.lease_transitions or 0) + 1
            spec.acquire_time = now
            spec.holder_identity = self.identity
        spec.lease_duration_seconds = int(LEASE_SECONDS)
        spec.renew_time = now
        updated = self.api.replace_namespaced_lease(self.name, self.namespace, lease)
        self._seen = _Seen(self.identity, updated.metadata.resource_version, time.monotonic())
        return True
