"""A snapshot job's rows as data files, written on the executors that read them; the
driver commits them (with the splits they hold) in one table commit."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from sluice.event.snapshot_split import ReadSplits, SnapshotSplit, SplitResult, SplitTask
from sluice.sink import target_values
from sluice.sink.arrow_rows import ArrowRows
from sluice.sink.lakehouse.table_format import DataFile
from sluice.sink.target_values import TargetValues
from sluice.source.schema import TableSchema

FILE_ROWS = 1_000_000  # rows per data file a snapshot job writes


def write_data_files_on_executor(
    tasks: list[SplitTask],
    read: ReadSplits,
    schema: TableSchema,
    rules: TargetValues,
    write: Callable[[pa.Table], list[DataFile]],
) -> tuple[list[DataFile], list[SplitResult], list[str]]:
    before = target_values.changed.copy()
    files, results, cleared = write_data_files(tasks, read, schema, rules, write)
    return files, target_values.on_executor(results, before), cleared


def write_data_files(
    tasks: list[SplitTask],
    read: ReadSplits,
    schema: TableSchema,
    rules: TargetValues,
    write: Callable[[pa.Table], list[DataFile]],
) -> tuple[list[DataFile], list[SplitResult], list[SnapshotSplit]]:
    """Runs where the splits are read: their rows as data files, the splits' results, and
    the key ranges their rows replace."""
    rows = ArrowRows(schema, rules)
    files: list[DataFile] = []
    results: list[SplitResult] = []
    cleared: list[SnapshotSplit] = []
    for split in read(tasks):
        for table in rows.batches(split.rows, FILE_ROWS):
            files.extend(write(table))
        results.extend(split.results())
        if split.replaces is not None:
            cleared.append(split.replaces)
    return files, results, cleared
