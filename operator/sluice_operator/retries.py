"""Retries of a pipeline whose Spark job failed for a cause that may heal (a source or target
away, a node lost). Once the Spark Operator's own retries (restartPolicy) are spent, the
operator resubmits the application, for ever, waiting 10 s, 20 s, 40 s ... up to 5 minutes
between attempts; the count starts again once the pipeline has been Ready for 10 minutes.
The record lives in `status.retry`, so a restarted operator goes on counting."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sluice_operator import conditions

FIRST_SECONDS, MAX_SECONDS, RESET_SECONDS = 10, 300, 600


def record(
    status: dict[str, Any], current: dict[str, Any] | None, retriable: bool, error: str, now: datetime
) -> dict[str, Any] | None:
    """The retry record: a new failed application (by uid) counts one more attempt and sets
    the time of the next; otherwise the record stays as it is."""
    retry = status.get("retry") or None
    if not retriable or current is None:
        return retry
    uid = current["metadata"].get("uid", "")
    if retry is not None and retry.get("failedApplication") == uid:
        return retry
    attempts = int((retry or {}).get("attempts", 0)) + 1
    delay = min(FIRST_SECONDS * 2 ** (attempts - 1), MAX_SECONDS)
    return {
        "attempts": attempts,
        "lastError": error[:1000],
        "nextRetryTime": stamp(now + timedelta(seconds=delay)),
        "failedApplication": uid,
    }


def due(retry: dict[str, Any], now: datetime) -> bool:
    return stamp(now) >= retry["nextRetryTime"]


def healed(status: dict[str, Any], now: datetime) -> bool:
    """Ready, as its condition last said, for RESET_SECONDS."""
    ready = {c.get("type"): c for c in status.get("conditions") or []}.get(conditions.READY) or {}
    if ready.get("status") != "True" or not ready.get("lastTransitionTime"):
        return False
    since = datetime.fromisoformat(ready["lastTransitionTime"].replace("Z", "+00:00"))
    return (now - since).total_seconds() >= RESET_SECONDS


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
