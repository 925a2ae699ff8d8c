"""A pipeline's progress as people read it, from its state document: what the CdcPipeline's
status shows (state/cdc_pipeline_store.py) and what `sluice status` prints (state/status_report.py)."""

from __future__ import annotations

from typing import Any

from sluice.snapshot.snapshot_split_assigner import per_table
from sluice.source.offset import BinlogOffset


def snapshot_progress(document: dict[str, Any], by_table: bool = False) -> dict[str, Any] | None:
    """Splits done and planned, and rows read, in all (and per table); None before a plan."""
    snapshot, summary = document.get("snapshot"), document.get("snapshot_summary")
    if snapshot is not None:
        finished = {split_id: split.get("rows", 0) for split_id, split in snapshot.get("finished", {}).items()}
        done, total, rows = len(finished), len(snapshot.get("splits", [])), sum(finished.values())
    elif summary:
        done = total = int(summary.get("splits", 0))
        rows = int(summary.get("rows", 0))
    else:
        return None
    progress: dict[str, Any] = {"splitsDone": done, "splitsTotal": total, "progress": f"{done}/{total}", "rows": rows}
    if by_table:  # (not for the CdcPipeline's status, written every few seconds)
        if snapshot is not None:
            tables = per_table([split["table"] for split in snapshot.get("splits", [])], finished)
        else:
            tables = summary.get("tables") or {}
        progress["tables"] = {
            table_id: {"splitsDone": table["done"], "splitsTotal": table["splits"], "rows": table["rows"]}
            for table_id, table in tables.items()
        }
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
