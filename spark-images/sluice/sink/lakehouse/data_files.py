"""A snapshot job's rows as data files, written on the executors that read them; the
driver commits them (with the splits they hold) in one commit per target table."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

import pyarrow as pa

from sluice.event.snapshot_split import ReadSplits, SnapshotSplit, SplitResult, SplitTask
from sluice.sink import target_values
from sluice.sink.arrow_rows import ArrowRows
from sluice.sink.lakehouse.table_format import DataFile
from sluice.sink.target_values import TargetValues
from sluice.source.schema import TableSchema

FILE_ROWS = 1_000_000  # rows per data file a snapshot job writes


class WrittenFiles(NamedTuple):
    """One target table's share of a snapshot job: its data files, the splits recorded with
    them, and the key ranges their rows replace."""

    files: list[DataFile]
    results: list[SplitResult]
    cleared: list[SnapshotSplit]


def write_data_files_on_executor(
    tasks: list[SplitTask],
    read: ReadSplits,
    schemas: Sequence[TableSchema],
    rules: TargetValues,
    writers: Mapping[str, Callable[[pa.Table], list[DataFile]]],
) -> dict[str, WrittenFiles]:
    before = target_values.changed.copy()
    written = write_data_files(tasks, read, schemas, rules, writers)
    recorded = [w for w in written.values() if w.results]  # the last target's: the values changed ride on it
    if recorded:
        target_values.on_executor(recorded[-1].results, before)
    return written


def write_data_files(
    tasks: list[SplitTask],
    read: ReadSplits,
    schemas: Sequence[TableSchema],
    rules: TargetValues,
    writers: Mapping[str, Callable[[pa.Table], list[DataFile]]],
) -> dict[str, WrittenFiles]:
    """Runs where the splits are read: their rows as data files of each target table (a
    read's split goes to each of a table's targets), the splits' results, and the key
    ranges their rows replace."""
    rows = {schema.table_id: ArrowRows(schema, rules) for schema in schemas}
    written = {schema.table_id: WrittenFiles([], [], []) for schema in schemas}
    for split in read(tasks):
        target = written[split.schema.table_id]
        for table in rows[split.schema.table_id].batches(split.rows, FILE_ROWS):
            target.files.extend(writers[split.schema.table_id](table))
        target.results.extend(split.results())
        if split.replaces is not None:
            target.cleared.append(split.replaces)
    return written
