"""An Iceberg table's maintenance: compaction of the data files merge-on-read commits leave
behind (small files, and files whose rows are largely deleted) with the delete files that
then delete nothing, manifests merged, and snapshots past the retention expired with the
files only they read. Each rewrite is one snapshot carrying the pipeline's record: a crash
leaves the table as it was before it or after it, and files of a commit that never landed
are read by no snapshot (expiry deletes the ones it knows; the rest are orphans no reader sees)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone

from pyiceberg.expressions import AlwaysTrue
from pyiceberg.io.pyarrow import ArrowScan, _dataframe_to_data_files
from pyiceberg.manifest import DataFile, ManifestContent
from pyiceberg.table import FileScanTask, Table

from sluice.pipeline.sink_configs import Maintenance
from sluice.sink.lakehouse.iceberg_key_positions import deleted_paths, deleted_positions
from sluice.sink.lakehouse.iceberg_row_delta import RowDelta
from sluice.sink.lakehouse.key_positions import KeyPositions

REWRITE_BYTES = 512 << 20  # data files rewritten in one compaction round at most: its memory
MANIFESTS = 50  # a snapshot's manifests past this many are merged, one per spec and content


@dataclass(frozen=True)
class Compaction:
    rewritten: int  # data files read and written anew
    deletes_removed: int  # delete files that deleted only from those


def plan_compaction(
    table: Table, maintenance: Maintenance, positions: KeyPositions
) -> tuple[list[FileScanTask], list[DataFile]]:
    """The data files to rewrite (small ones, once there are enough of them; any whose rows
    its deletes remove past the ratio), and the delete files that delete nothing once they go."""
    tasks = list(table.scan().plan_files())
    small = [t for t in tasks if t.file.file_size_in_bytes < maintenance.small_file_size]
    chosen = small if len(small) >= maintenance.min_small_files else []
    for task in tasks:
        deleted = deleted_positions(table.io, task, positions) if task.delete_files and task not in chosen else None
        if deleted is not None and len(deleted) >= maintenance.delete_ratio * task.file.record_count:
            chosen.append(task)
    rewrite, size = [], 0
    for task in sorted(chosen, key=lambda t: t.file.file_path):
        if rewrite and size + task.file.file_size_in_bytes > REWRITE_BYTES:
            break
        rewrite.append(task)
        size += task.file.file_size_in_bytes
    remaining = {t.file.file_path for t in tasks} - {t.file.file_path for t in rewrite}
    snapshot = table.current_snapshot()
    idle = []
    for manifest in snapshot.manifests(table.io) if snapshot else ():
        if manifest.content == ManifestContent.DELETES:
            for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
                if not remaining.intersection(deleted_paths(table.io, entry.data_file, positions)):
                    idle.append(entry.data_file)
    return rewrite, idle


def compact(
    table: Table, tasks: list[FileScanTask], idle: list[DataFile], key: list[str], record: Mapping[str, str]
) -> Compaction:
    """The tasks' live rows written again in key order (a batch's keys then fall in few
    files), in one snapshot that removes them and the idle delete files."""
    rows = ArrowScan(table.metadata, table.io, table.schema(), AlwaysTrue()).to_table(tasks)
    key = [name for name in key if name in rows.column_names]
    rows = rows.sort_by([(name, "ascending") for name in key]) if key else rows
    with table.transaction() as tx:
        delta = RowDelta(tx, table.io, dict(record), merge_manifests=_many_manifests(table))
        delta.remove_files([t.file for t in tasks]).remove_files(idle)
        if rows.num_rows:
            delta.add_data_files(_dataframe_to_data_files(tx.table_metadata, rows, table.io))
        delta.commit()
    return Compaction(len(tasks), len(idle))


def _many_manifests(table: Table) -> bool:
    snapshot = table.current_snapshot()
    return snapshot is not None and len(snapshot.manifests(table.io)) > MANIFESTS


def expire(table: Table, retention: float) -> int:
    """Snapshots replaced longer ago than the retention go, and the files only they read
    are deleted: data and delete files, manifests and manifest lists (pyiceberg's expiry
    keeps them all; old metadata files go by write.metadata.delete-after-commit)."""
    cutoff = int((time.time() - retention) * 1000)
    if not any(s.timestamp_ms < cutoff for s in table.snapshots() if s != table.current_snapshot()):
        return 0
    before = _files_read(table)
    table.maintenance.expire_snapshots().older_than(datetime.fromtimestamp(cutoff / 1000, timezone.utc)).commit()
    table.refresh()
    unread = before - _files_read(table)
    for path in unread:
        table.io.delete(path)
    return len(unread)


def _files_read(table: Table) -> set[str]:
    """Every file a snapshot of the table reads: data and delete files, manifests, manifest lists."""
    files = set(table.inspect.all_files().column("file_path").to_pylist())
    for snapshot in table.snapshots():
        files.add(snapshot.manifest_list)
        files.update(manifest.manifest_path for manifest in snapshot.manifests(table.io))
    return files
