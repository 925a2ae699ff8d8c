"""The parquet sink: an append-only changelog written by Spark's own parquet writer.

Layout under `path`:
    DB/TABLE/COMMIT/part-*.parquet   rows of one commit: _op, _table, _position, _ts_ms,
                                     _commit, _index, then the table's columns
    _sluice_log/COMMIT.json          the commit log: which directories a commit made, and
                                     the split high watermarks or binlog end it covers

A commit exists once its log entry does (written atomically after Spark's job commit).
Directories without a log entry are left-overs of a crashed attempt: prepare() deletes
them, and readers never look at them. So every change is in the changelog exactly once;
replaying commits in _commit, _index order gives the source table.
"""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

from pyspark import AccumulatorParam, SparkContext
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from sluice.errors import SinkError
from sluice.sink.base import ChangeBatch, Sink, SinkWriter
from sluice.sink.type_mapping import SPARK_MAX_DECIMAL_PRECISION, spark_type
from sluice.snapshot.split_reader import SplitResult, SplitTask, read_splits
from sluice.source.offset import BinlogOffset
from sluice.source.row_decoding import Row
from sluice.source.schema import TableSchema
from sluice.state.state_store import write_json_atomically

LOG_DIRECTORY = "_sluice_log"
IDLE_ENTRY = "binlog-idle"  # position-only commits (no rows) overwrite this one entry
METADATA = [
    T.StructField("_op", T.StringType(), False),
    T.StructField("_table", T.StringType(), False),
    T.StructField("_position", T.StringType(), False),
    T.StructField("_ts_ms", T.LongType(), False),
    T.StructField("_commit", T.LongType(), False),
    T.StructField("_index", T.LongType(), False),
]
SNAPSHOT_COMMIT = 0  # snapshot rows replay before every binlog commit (1, 2, ...)


def changelog_schema(schema: TableSchema) -> T.StructType:
    return T.StructType([*METADATA, *(T.StructField(c.name, spark_type(c), True) for c in schema.columns)])


def spark_values(schema: TableSchema) -> Callable[[Row], tuple[Any, ...]]:
    """Row values as the changelog schema's types take them."""
    conversions: list[tuple[int, Callable[[Any], Any]]] = []
    for i, column in enumerate(schema.columns):
        if column.data_type == "timestamp":  # an instant, read in UTC; Spark would take a
            conversions.append((i, _utc))  # naive value as the driver's local time
        elif column.beyond_signed_64_bits:
            conversions.append((i, Decimal))
        elif column.data_type == "decimal" and (column.numeric_precision or 0) > SPARK_MAX_DECIMAL_PRECISION:
            conversions.append((i, str))
    if not conversions:
        return tuple

    def convert(row: Row) -> tuple[Any, ...]:
        values = list(row)
        for i, to in conversions:
            if values[i] is not None:
                values[i] = to(values[i])
        return tuple(values)

    return convert


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=timezone.utc)


class CommitLog:
    """The `_sluice_log` directory: one JSON entry per commit, each written atomically.

    Read from disk once; after that this process (the driver, its only writer) keeps it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.directory = root / LOG_DIRECTORY
        self._entries: dict[str, dict[str, Any]] | None = None

    def entries(self) -> list[dict[str, Any]]:
        known = self._known()
        return [known[name] for name in sorted(known)]

    def _known(self) -> dict[str, dict[str, Any]]:
        if self._entries is None:
            files = self.directory.glob("*.json") if self.directory.is_dir() else []
            self._entries = {p.stem: json.loads(p.read_text()) for p in files}
        return self._entries

    def write(self, name: str, entry: dict[str, Any]) -> None:
        known = self._known()
        write_json_atomically(self.directory / f"{name}.json", entry)
        known[name] = entry

    def committed_directories(self) -> list[str]:
        return [d for entry in self.entries() for d in entry.get("directories", [])]

    def next_binlog_commit(self) -> int:
        return max((e["commit"] for e in self.entries() if e["kind"] == "binlog"), default=SNAPSHOT_COMMIT) + 1


class _SplitResults(AccumulatorParam):
    """Tasks report each split's result through an accumulator, merged when the task succeeds."""

    def zero(self, value: list) -> list:
        return []

    def addInPlace(self, value1: list, value2: list) -> list:  # noqa: N802 - PySpark's name
        value1.extend(value2)
        return value1


def _snapshot_rows(tasks: list[SplitTask], results: Any) -> Iterator[tuple[Any, ...]]:
    """Runs on an executor: the splits' rows as changelog rows, results to the accumulator."""
    schema = tasks[0].schema
    convert = spark_values(schema)
    finished: list[SplitResult] = []
    index = 0
    for _task, rows, result in read_splits(tasks):
        position = str(result.high_watermark)
        for row in rows:
            yield ("+I", schema.table_id, position, 0, SNAPSHOT_COMMIT, index, *convert(row))
            index += 1
        finished.append(result)
    results.add(finished)


class ParquetSink(Sink):
    max_batch_delay = 1.0  # each commit is a Spark job and a directory: fewer, larger commits
    writes_changes_with_spark = True

    def __init__(self, options: Mapping[str, Any]) -> None:
        self.path = Path(options["path"]).absolute()
        self.log = CommitLog(self.path)
        self.spark: SparkSession | None = None

    def attach(self, spark: SparkSession) -> None:
        self.spark = spark

    def prepare(self, schemas: Sequence[TableSchema]) -> None:
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            committed = set(self.log.committed_directories())
            for schema in schemas:
                table_dir = self.path / schema.database / schema.table
                table_dir.mkdir(parents=True, exist_ok=True)
                for attempt in table_dir.iterdir():
                    if str(attempt.relative_to(self.path)) not in committed:
                        shutil.rmtree(attempt)  # a crashed attempt's output
        except OSError as exc:
            raise SinkError(f"sink.path {self.path}: {exc.strerror or exc}") from exc

    def committed_splits(self) -> dict[str, BinlogOffset]:
        return {
            split_id: BinlogOffset.from_json(hw)
            for entry in self.log.entries()
            if entry["kind"] == "snapshot"
            for split_id, hw in entry["splits"].items()
        }

    def write_snapshot_job(self, sc: SparkContext, tasks: list[SplitTask]) -> list[SplitResult]:
        """One Spark job: executors read the splits (one table) and Spark's writer writes them."""
        spark = self._session()
        schema = tasks[0].schema
        name = f"snapshot-{tasks[0].split.index:06d}-{uuid.uuid4().hex[:8]}"
        directory = f"{schema.database}/{schema.table}/{name}"
        results = spark.sparkContext.accumulator([], _SplitResults())
        rows = spark.sparkContext.parallelize([tasks], 1).flatMap(lambda t: _snapshot_rows(t, results))
        spark.createDataFrame(rows, changelog_schema(schema)).write.parquet(str(self.path / directory))
        finished: list[SplitResult] = results.value
        self.log.write(
            name,
            {
                "kind": "snapshot",
                "directories": [directory],
                "splits": {r.split_id: r.high_watermark.to_json() for r in finished},
            },
        )
        return finished

    def writer(self) -> ParquetWriter:
        return ParquetWriter(self)

    def _session(self) -> SparkSession:
        if self.spark is None:
            raise AssertionError("the parquet sink writes with Spark: attach() a session first")
        return self.spark


class ParquetWriter(SinkWriter):
    """Driver side, binlog phase: one Spark write per table per batch, then the log entry."""

    def __init__(self, sink: ParquetSink) -> None:
        self.sink = sink
        self.commit = sink.log.next_binlog_commit()
        self._values: dict[str, Callable[[Row], tuple[Any, ...]]] = {}

    def write_changes(self, batch: ChangeBatch, end: BinlogOffset, drop_split_records: bool) -> None:
        if not len(batch):
            self.sink.log.write(IDLE_ENTRY, {"kind": "idle", "end": end.to_json()})
            return
        by_table: dict[str, tuple[TableSchema, list[tuple[Any, ...]]]] = {}
        for index, change in enumerate(batch):
            schema = change.schema
            rows = by_table.setdefault(schema.table_id, (schema, []))[1]
            if schema.table_id not in self._values:
                self._values[schema.table_id] = spark_values(schema)
            rows.append(
                (change.kind.value, schema.table_id, str(change.offset), change.timestamp * 1000, self.commit, index)
                + self._values[schema.table_id](change.row)
            )
        name = f"binlog-{self.commit:012d}"
        directories = []
        spark = self.sink._session()
        try:
            for schema, rows in by_table.values():
                directory = f"{schema.database}/{schema.table}/{name}"
                frame = spark.createDataFrame(rows, changelog_schema(schema))
                frame.coalesce(1).write.parquet(str(self.sink.path / directory))
                directories.append(directory)
        except Exception as exc:
            raise SinkError(f"sink parquet {self.sink.path}: writing commit {name} failed: {exc}") from exc
        self.sink.log.write(
            name, {"kind": "binlog", "commit": self.commit, "directories": directories, "end": end.to_json()}
        )
        self.commit += 1

    def committed_binlog_offset(self) -> BinlogOffset | None:
        ends = [BinlogOffset.from_json(e["end"]) for e in self.sink.log.entries() if e["kind"] in ("binlog", "idle")]
        return max(ends, default=None)


def read_changelog(path: str | Path, table_id: str) -> list[dict[str, Any]]:
    """A table's committed changelog rows in replay order (for tools and tests)."""
    import pyarrow.parquet as pq

    root = Path(path)
    database, table = table_id.split(".", 1)
    prefix = f"{database}/{table}/"
    rows: list[dict[str, Any]] = []
    for directory in CommitLog(root).committed_directories():
        if directory.startswith(prefix):
            part = pq.read_table(root / directory)
            # Parquet has no day-time interval: Spark stores TIME as microseconds and names
            # the type in its own schema, in the file's metadata.
            spark_schema = json.loads(part.schema.metadata[b"org.apache.spark.sql.parquet.row.metadata"])
            intervals = [f["name"] for f in spark_schema["fields"] if str(f["type"]).startswith("interval")]
            for row in part.to_pylist():
                for name in intervals:
                    if row[name] is not None:
                        row[name] = timedelta(microseconds=row[name])
                rows.append(row)
    rows.sort(key=lambda r: (r["_commit"], r["_index"]))
    return rows
