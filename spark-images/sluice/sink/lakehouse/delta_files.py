"""Data files of Delta tables written by Sluice (snapshot chunks on executors, a batch's
rows, compaction's rewrites): a parquet file per partition in the table's directory, with the
statistics its add action carries."""

from __future__ import annotations

import functools
import json
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timezone
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

_PLAIN = re.compile(r"^[A-Za-z0-9_.=-]+$")  # a directory name no URI escapes


@dataclass(frozen=True)
class DeltaFile:
    """A data file a snapshot task wrote into the table's directory, in no commit yet."""

    path: str  # from the table's root
    size: int
    rows: int
    partition: dict[str, str | None]  # the values of its partition columns, as Delta's log writes them
    stats: str  # its add action's statistics: rows, and the key columns' bounds where exact

    def add_action(self, modified: int) -> dict[str, Any]:
        """The file's add action, as a commit of the log writes it."""
        return {
            "path": self.path,
            "partitionValues": self.partition,
            "size": self.size,
            "modificationTime": modified,
            "dataChange": True,
            "stats": self.stats,
        }


def write_data_files(
    table_uri: str, partition_columns: Sequence[str], key_columns: Sequence[str], rows: pa.Table
) -> list[DeltaFile]:
    """Runs where a chunk is read: the rows as a parquet file per partition, in the table's
    directory (`col=value/` where the value makes a plain name); partition columns are in the
    log, not the file, as Delta keeps them. The key columns' bounds go into the statistics
    (a reader skips files by them; a merge-on-read commit finds its keys by them)."""
    filesystem, root = pafs.FileSystem.from_uri(table_uri)
    if not partition_columns:
        return [write_data_file(filesystem, root, "", rows, {}, key_columns)]
    files = []
    groups = rows.group_by(list(partition_columns), use_threads=False).aggregate([])
    for values in groups.to_pylist():
        mask = functools.reduce(
            pc.and_,
            [
                pc.is_null(rows.column(c)) if values[c] is None else pc.equal(rows.column(c), values[c])
                for c in partition_columns
            ],
        )
        partition = {c: _partition_value(values[c]) for c in partition_columns}
        directory = "".join(f"{c}={v}/" for c, v in partition.items() if v is not None and _PLAIN.match(f"{c}={v}"))
        part = rows.filter(mask).drop_columns(list(partition_columns))
        files.append(write_data_file(filesystem, root, directory, part, partition, key_columns))
    return files


def write_data_file(
    filesystem: pafs.FileSystem,
    root: str,
    directory: str,
    rows: pa.Table,
    partition: dict[str, str | None],
    key_columns: Sequence[str],
) -> DeltaFile:
    name = f"{directory}sluice-{uuid.uuid4().hex}.parquet"
    if directory:
        filesystem.create_dir(f"{root}/{directory}", recursive=True)
    pq.write_table(rows, f"{root}/{name}", filesystem=filesystem)
    size = filesystem.get_file_info(f"{root}/{name}").size
    return DeltaFile(name, size, rows.num_rows, partition, _stats(rows, key_columns))


def _partition_value(value: Any) -> str | None:
    """A partition value as Delta's log serializes it (the protocol's Partition Value
    Serialization): dates ISO, timestamps `YYYY-MM-DD HH:MM:SS.ffffff` (an instant in UTC,
    ISO with its zone), booleans lower case, numbers as text."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        return value.strftime("%Y-%m-%d %H:%M:%S.%f")
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


def _stats(rows: pa.Table, key_columns: Sequence[str]) -> str:
    """numRecords, and the bounds and null count of each key column of integers or text
    (their values are exact in JSON; others' bounds are left out, which readers take as unknown)."""
    stats: dict[str, Any] = {"numRecords": rows.num_rows}
    bounded = [
        c
        for c in key_columns
        if c in rows.column_names
        and (pa.types.is_integer(rows.schema.field(c).type) or pa.types.is_string(rows.schema.field(c).type))
    ]
    if rows.num_rows and bounded:
        ranges = {c: pc.min_max(rows.column(c)).as_py() for c in bounded}
        stats["minValues"] = {c: r["min"] for c, r in ranges.items()}
        stats["maxValues"] = {c: r["max"] for c, r in ranges.items()}
        stats["nullCount"] = {c: rows.column(c).null_count for c in bounded}
    return json.dumps(stats, separators=(",", ":"))
