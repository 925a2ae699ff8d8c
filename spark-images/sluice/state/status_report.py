"""`sluice status`: where a pipeline that `sluice run` runs (or ran) is, read from its state
directory alone, so it answers while the run goes on, after it stopped, and with the source
down: the phase, the committed position and the lag at the last commit, the snapshot's
progress per table, a schema change waiting for approval, and the last run's error.
The same figures as a CdcPipeline's status and `kubectl get cdcpipeline -o wide`."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sluice.errors import SluiceError
from sluice.state.progress_summary import binlog_progress, snapshot_progress
from sluice.state.state_store import DirectoryStateStore


def run_status(state_dir: Path) -> dict[str, Any]:
    store = DirectoryStateStore(state_dir)
    document = store.load_document()
    if document is None:
        raise SluiceError(f"--state-dir {state_dir}: no pipeline state there (did a pipeline run with it?)")
    record = store.run_record()
    status: dict[str, Any] = {"pipeline": document["pipeline"], "phase": _phase(document)}
    status["run"] = _run(record)
    snapshot = snapshot_progress(document, by_table=True)
    if snapshot is not None:
        status["snapshot"] = snapshot
    binlog = binlog_progress(document, record.get("lag_seconds"))
    if binlog is not None:
        if "lag_at" in record:
            binlog["lagAt"] = _time(record["lag_at"])
        status["binlog"] = binlog
    change = document.get("schema_change")
    if change and change.get("step") not in ("Resumed", None):
        status["schemaChange"] = {key: change[key] for key in ("id", "step", "statement", "message") if key in change}
    if record.get("error"):
        status["error"] = {"message": record["error"], "at": _time(record["error_at"])}
    return status


def status_lines(status: dict[str, Any]) -> list[str]:
    """What a person reads: one line per fact, the snapshot's tables indented under it."""
    run = status["run"]
    lines = [f"pipeline {status['pipeline']}: {status['phase']}, {run['state']}"]
    snapshot = status.get("snapshot")
    if snapshot is not None:
        lines.append(f"snapshot: {snapshot['progress']} splits, {snapshot['rows']:,} rows")
        for table_id, table in sorted(snapshot["tables"].items()):
            done, total = table["splitsDone"], table["splitsTotal"]
            lines.append(f"  {table_id}: {done}/{total} splits, {table['rows']:,} rows")
    binlog = status.get("binlog")
    if binlog is not None:
        lines.append(f"position: {binlog['position']}" + (f" (GTID {binlog['gtid']})" if "gtid" in binlog else ""))
        if "lag" in binlog:
            lines.append(f"lag: {binlog['lagSeconds']:.1f}s at the last commit, {binlog['lagAt']}")
    change = status.get("schemaChange")
    if change is not None:
        lines.append(f"schema change {change['id']}: {change['step']}: {change['statement']}")
        if change.get("message"):
            lines.append(f"  {change['message']}")
    error = status.get("error")
    if error is not None:
        lines.append(f"last error ({error['at']}): {error['message']}")
    return lines


def _phase(document: dict[str, Any]) -> str:
    if document.get("phase"):
        return str(document["phase"])
    if document.get("binlog") is not None:  # the plan stays until the reader is past its watermarks
        return "Streaming"
    return "Snapshotting" if document.get("snapshot") is not None else "Pending"


def _run(record: dict[str, Any]) -> dict[str, Any]:
    """Whether a process runs the pipeline now, as far as this machine can tell."""
    if not record:
        return {"state": "no run recorded"}
    run = {"pid": record["pid"], "started": _time(record["started"])}
    if "stopped" in record:
        return {**run, "state": f"stopped {_time(record['stopped'])}", "running": False}
    if _alive(int(record["pid"])):
        return {**run, "state": f"running (pid {record['pid']}, since {run['started']})", "running": True}
    return {**run, "state": "not running (its process ended without stopping: killed?)", "running": False}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _time(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
