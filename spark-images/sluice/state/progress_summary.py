"""A pipeline's progress as people read it, from its state document: what the CdcPipeline's
status shows (state/status_store.py) and what `sluice status` prints (state/run_status.py)."""

from __future__ import annotations

from typing import Any

from sluice.snapshot.snapshot_split_assigner import SnapshotAssignerState
from sluice.source.offset import BinlogOffset


def snapshot_progress(document: dict[str, Any], per_table: bool = False) -> dict[str, Any] | None:
    """Splits done and planned, and rows read, in all (and per table); None before a plan."""
    snapshot, summary = document.get("snapshot"), document.get("snapshot_summary")
    tables: dict[str, dict[str, int]] = {}
    if snapshot is not None:
        for split in snapshot.get("splits", []):
            table = tables.setdefault(split["table"], {"splitsDone": 0, "splitsTotal": 0, "rows": 0})
            table["splitsTotal"] += 1
        for split_id, finished in snapshot.get("finished", {}).items():
            table = tables[SnapshotAssignerState.splits_table(split_id)]
            table["splitsDone"] += 1
            table["rows"] += finished.get("rows", 0)
        done, total = len(snapshot.get("finished", {})), len(snapshot.get("splits", []))
        rows = sum(table["rows"] for table in tables.values())
    elif summary:
        done = total = int(summary.get("splits", 0))
        rows = int(summary.get("rows", 0))
        for table_id, table in (summary.get("tables") or {}).items():
            tables[table_id] = {"splitsDone": table["splits"], "splitsTotal": table["splits"], "rows": table["rows"]}
    else:
        return None
    progress: dict[str, Any] = {"splitsDone": done, "splitsTotal": total, "progress": f"{done}/{total}", "rows": rows}
    if per_table:
        progress["tables"] = tables
    return progress


def binlog_progress(document: dict[str, Any], lag: float | None) -> dict[str, Any] | None:
    """The committed position (and GTID set), and the lag as of the last commit; None before
    the binlog phase."""
    binlog = document.get("binlog")
    if binlog is None:
        return None
    offset = BinlogOffset.from_json(binlog["offset"])
    progress: dict[str, Any] = {"position": f"{offset.file}:{offset.pos}"}
    if offset.gtid:
        progress["gtid"] = offset.gtid
    if lag is not None:
        progress["lagSeconds"] = round(lag, 3)
        progress["lag"] = f"{lag:.0f}s" if lag < 120 else f"{lag / 60:.0f}m"
    return progress
