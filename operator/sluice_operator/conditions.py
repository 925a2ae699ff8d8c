"""A CdcPipeline's conditions, as Strimzi and the Flink Kubernetes Operator report them:
Ready, Progressing, Degraded and SchemaChangePending (and Verified where the spec asks), each with reason, message,
observedGeneration and lastTransitionTime. The time moves only when a condition's status
does, so a reconcile that changes nothing writes nothing new."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

READY, PROGRESSING, DEGRADED, SCHEMA_CHANGE_PENDING = "Ready", "Progressing", "Degraded", "SchemaChangePending"
VERIFIED = "Verified"  # only where spec.verification asks for it
CONDITION_TYPES = [READY, PROGRESSING, DEGRADED, SCHEMA_CHANGE_PENDING, VERIFIED]
PHASES = ["Pending", "Snapshotting", "Streaming", "SchemaChangePaused", "Suspended", "Failed", "Completed"]


@dataclass(frozen=True)
class Condition:
    type: str
    status: bool | None  # None: Unknown
    reason: str
    message: str = ""


def for_phase(phase: str, message: str = "", reason: str = "") -> list[Condition]:
    """The conditions a phase means; `message` says why (a failure's cause, the change to
    approve); `reason`, the kind of failure where the driver named one (else the phase)."""
    streaming = phase == "Streaming"
    working = phase in ("Pending", "Snapshotting", "SchemaChangePaused")
    failure = reason or phase
    explained = message if phase in ("Failed", "Suspended") else ""
    return [
        Condition(READY, streaming or phase == "Completed", failure, explained),
        Condition(PROGRESSING, working, phase, message if working else ""),
        Condition(DEGRADED, phase == "Failed", failure, message if phase == "Failed" else ""),
        Condition(
            SCHEMA_CHANGE_PENDING,
            phase == "SchemaChangePaused",
            phase,
            message if phase == "SchemaChangePaused" else "",
        ),
    ]


def merge(
    previous: Sequence[dict[str, Any]], conditions: Sequence[Condition], generation: int, now: datetime | None = None
) -> list[dict[str, Any]]:
    """The status's conditions list: lastTransitionTime kept where the status did not change."""
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ")
    before = {c.get("type"): c for c in previous}
    merged = []
    for condition in conditions:
        status = "Unknown" if condition.status is None else "True" if condition.status else "False"
        old = before.get(condition.type)
        moved = old is None or old.get("status") != status
        merged.append(
            {
                "type": condition.type,
                "status": status,
                "reason": condition.reason,
                "message": condition.message,
                "observedGeneration": generation,
                "lastTransitionTime": stamp if moved else old["lastTransitionTime"],
            }
        )
    return merged


def verified(verification: dict[str, Any]) -> Condition:
    """What the last verification found (status.verification): Unknown while the first runs."""
    if not verification.get("finishedAt"):
        progress = verification.get("progress")
        return Condition(VERIFIED, None, "Verifying", f"{progress} ranges checked" if progress else "not verified yet")
    if verification.get("error"):
        return Condition(VERIFIED, False, "VerificationFailed", verification["error"])
    checked, at = verification.get("rangesChecked", 0), verification["finishedAt"]
    mismatches = int(verification.get("mismatchCount", 0))
    if mismatches:
        first = "; ".join(verification.get("mismatches", [])[:3])
        return Condition(
            VERIFIED,
            False,
            "Mismatch",
            f"{mismatches} of {checked} ranges differ from the source (verified {at}): {first}; "
            "set spec.verification.repair, or request spec.resnapshots, to read them again",
        )
    repaired = int(verification.get("repairedCount", 0))
    mended = f", {repaired} of them read again" if repaired else ""
    return Condition(VERIFIED, True, "Equal", f"{checked} ranges equal to the source as of {at}{mended}")
