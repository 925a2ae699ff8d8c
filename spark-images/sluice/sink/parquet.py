"""The parquet sink: an append-only changelog written by Spark's own parquet writer.

Layout under `path`:
    DB/TABLE/snapshot-NNNNNN-XXXXXXXX/   rows of one snapshot job (commit 0)
    DB/TABLE/binlog-NNNNNNNNNNNN/        rows of binlog commit N
        part-*.parquet                   _op, _table, _position, _ts_ms, _commit, _index,
                                         then the table's columns
    _sluice_log/snapshot-....json        a snapshot job's directory and its splits' high
                                         watermarks, until the binlog reader is past them;
                                         then compacted into _sluice_log/snapshot.json
    _sluice_log/binlog.json              the last binlog commit N and its end position,
                                         replaced atomically by every commit
    _sluice_log/schemas.json             the schema changes applied, each with the first
                                         commit written after it and the tables' columns
                                         from then on: the changelog's schema versions
    _sluice_log/state.json               the pipeline's state document and its revision: a
                                         run that lost its state adopts it (state/target_records)

A commit exists once the log says so (written atomically after Spark's job commit): a
snapshot job once its entry exists, binlog commit N once binlog.json reaches N. Directories
of Sluice's naming that the log does not count are left-overs of a crashed attempt:
prepare() deletes them, readers never look at them, and nothing else is ever deleted. So
every change is in the changelog exactly once; replaying commits in _commit, _index order
gives the source table. The log holds one file per snapshot job until the snapshot is
done, then two files.
"""

from __future__ import annotations

import json
import os
import re
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

from sluice.atomic_file import write_json_atomically
from sluice.errors import SinkError
from sluice.event.row_change import ChangeBatch
from sluice.event.schema_change import (
    AddColumn,
    DropColumn,
    DropTable,
    RenameColumn,
    RenameTable,
    SchemaChangeEvent,
    SchemaEvolution,
    TruncateTable,
    event_from_json,
    event_to_json,
)
from sluice.event.snapshot_split import ReadSplits, SplitResult, SplitTask
from sluice.sink import target_values
from sluice.sink.base import Sink, SinkWriter
from sluice.sink.columnar_types import MAX_DECIMAL_PRECISION, spark_type
from sluice.sink.target_values import TargetValues
from sluice.source.offset import BinlogOffset
from sluice.source.row_decoding import Row
from sluice.source.schema import TableSchema

LOG_DIRECTORY = "_sluice_log"
BINLOG_ENTRY = "binlog"  # the last binlog commit and its end
SNAPSHOT_ENTRY = "snapshot"  # the snapshot's directories, once compacted
SCHEMAS_ENTRY = "schemas"  # the schema changes, in binlog order
STATE_ENTRY = "state"  # the pipeline's state document, kept beside the commits
ATTEMPT = re.compile(r"^(snapshot-\d{6}-[0-9a-f]{8}|binlog-(\d{12}))$")  # directories Sluice writes
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


def spark_values(schema: TableSchema, rules: TargetValues) -> Callable[[Row], tuple[Any, ...]]:
    """Row values as the changelog schema's types take them (invalid dates by `rules`)."""
    fit = rules.for_table(schema)
    if fit is None:
        return _spark_types(schema)
    convert = _spark_types(schema)
    return lambda row: convert(fit(row))


def _spark_types(schema: TableSchema) -> Callable[[Row], tuple[Any, ...]]:
    conversions: list[tuple[int, Callable[[Any], Any]]] = []
    for i, column in enumerate(schema.columns):
        if column.data_type == "timestamp":  # an instant, read in UTC; Spark would take a
            conversions.append((i, _utc))  # naive value as the driver's local time
        elif column.beyond_signed_64_bits:
            conversions.append((i, Decimal))
        elif column.data_type == "decimal" and (column.numeric_precision or 0) > MAX_DECIMAL_PRECISION:
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
    """The `_sluice_log` directory, each entry written atomically.

    Read from disk once; after that this process (the driver, its only writer) keeps it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.directory = root / LOG_DIRECTORY
        self._entries: dict[str, dict[str, Any]] | None = None
        self._snapshot_directories: set[str] | None = None  # derived from the entries, once

    def _known(self) -> dict[str, dict[str, Any]]:
        while self._entries is None:
            self._entries = self._read_entries()
        return self._entries

    def _read_entries(self) -> dict[str, dict[str, Any]] | None:
        """Every entry, or None when one listed was gone when opened: the writer compacted
        the snapshot's entries meanwhile, and had written the compacted one before it removed
        them, so the next listing holds it. (Readers of a running pipeline's changelog.)"""
        files = sorted(self.directory.glob("*.json")) if self.directory.is_dir() else []
        entries = {}
        for path in files:
            try:
                entries[path.stem] = json.loads(path.read_text())
            except FileNotFoundError:
                return None
        return entries

    def exists(self) -> bool:
        return self.directory.is_dir()

    def write(self, name: str, entry: dict[str, Any]) -> None:
        known = self._known()
        write_json_atomically(self.directory / f"{name}.json", entry)
        known[name] = entry
        self._snapshot_directories = None

    def snapshot_jobs(self) -> list[dict[str, Any]]:
        known = self._known()
        return [known[name] for name in sorted(known) if name.startswith("snapshot-")]

    def binlog(self) -> dict[str, Any] | None:
        known = self._known()
        if BINLOG_ENTRY in known:
            return known[BINLOG_ENTRY]
        # A log of Sluice 0.1 has an entry per binlog commit (and one "binlog-idle"): the
        # last of them, so that an upgraded run keeps those commits' directories.
        legacy = [entry for name, entry in known.items() if name.startswith("binlog-")]
        if not legacy:
            return None
        ends = [BinlogOffset.from_json(entry["end"]) for entry in legacy]
        return {"commit": max(e.get("commit", SNAPSHOT_COMMIT) for e in legacy), "end": max(ends).to_json()}

    def entry(self, name: str) -> dict[str, Any] | None:
        return self._known().get(name)

    def schema_changes(self) -> list[dict[str, Any]]:
        return list(self._known().get(SCHEMAS_ENTRY, {}).get("changes", []))

    def last_binlog_commit(self) -> int:
        entry = self.binlog()
        return entry["commit"] if entry else SNAPSHOT_COMMIT

    def is_committed(self, directory: Path) -> bool:
        """Whether `directory` (DB/TABLE/NAME under the root) belongs to a commit."""
        match = ATTEMPT.match(directory.name)
        if match is None:
            return False
        if match.group(2) is not None:
            return int(match.group(2)) <= self.last_binlog_commit()
        return str(directory.relative_to(self.root)) in self.snapshot_directories()

    def snapshot_directories(self) -> set[str]:
        """Asked once per table directory at start: built from the entries once."""
        if self._snapshot_directories is None:
            compacted = self._known().get(SNAPSHOT_ENTRY, {}).get("directories", [])
            jobs = (d for job in self.snapshot_jobs() for d in job["directories"])
            self._snapshot_directories = {*compacted, *jobs}
        return self._snapshot_directories

    def compact_snapshot(self) -> None:
        """Once no split's high watermark is needed: one entry for all snapshot jobs."""
        jobs = [name for name in self._known() if name.startswith("snapshot-")]
        if not jobs:
            return
        self.write(SNAPSHOT_ENTRY, {"directories": sorted(self.snapshot_directories())})
        for name in jobs:  # a crash part way leaves entries the compacted one already covers
            (self.directory / f"{name}.json").unlink(missing_ok=True)
            del self._known()[name]
        self._snapshot_directories = None


class _SplitResults(AccumulatorParam):
    """Tasks report each split's result through an accumulator, merged when the task succeeds."""

    def zero(self, value: list) -> list:
        return []

    def addInPlace(self, value1: list, value2: list) -> list:  # noqa: N802 - PySpark's name
        value1.extend(value2)
        return value1


def _snapshot_rows(
    tasks: list[SplitTask], read: ReadSplits, results: Any, commit: int, rules: TargetValues, schema: TableSchema
) -> Iterator[tuple[Any, ...]]:
    """Runs on an executor: the splits' rows as changelog rows (in `schema`), results to the accumulator."""
    convert = spark_values(schema, rules)
    before = target_values.changed.copy()
    finished: list[SplitResult] = []
    index = 0
    for split in read(tasks):
        position = str(split.high_watermark)
        for row in split.rows:
            yield ("+I", schema.table_id, position, 0, commit, index, *convert(row))
            index += 1
        finished.extend(split.results())
    results.add(target_values.on_executor(finished, before))


class ParquetSink(Sink):
    max_batch_delay = 1.0  # each commit is a Spark job and a directory: fewer, larger commits
    writes_changes_with_spark = True

    def __init__(self, options: Mapping[str, Any]) -> None:
        self.path = Path(options["path"]).absolute()
        self.values = TargetValues(None, options.get("sink.zero-date", ""))  # Spark strings hold NUL
        self.log = CommitLog(self.path)
        self.spark: SparkSession | None = None

    def attach(self, spark: SparkSession) -> None:
        self.spark = spark

    def check_target(self, schemas: Sequence[TableSchema]) -> list[SinkError]:
        """The path, or the nearest folder above it that exists, takes new folders."""
        existing = self.path
        while not existing.exists() and existing != existing.parent:
            existing = existing.parent
        if not (existing.is_dir() and os.access(existing, os.W_OK | os.X_OK)):
            return [SinkError(f"sink.path {self.path}: {existing} is not a folder this user may write into")]
        return []

    def prepare(self, schemas: Sequence[TableSchema]) -> None:
        """Removes what crashed attempts left, and only that: directories of Sluice's naming
        in captured tables' folders that no commit counts. A directory with other content
        and no commit log is not Sluice's to write into."""
        try:
            self._open_log()
            for schema in schemas:
                table_dir = self.path / schema.database / schema.table
                table_dir.mkdir(parents=True, exist_ok=True)
                for attempt in table_dir.iterdir():
                    if ATTEMPT.match(attempt.name) and not self.log.is_committed(attempt):
                        shutil.rmtree(attempt)
        except OSError as exc:
            raise SinkError(f"sink.path {self.path}: {exc.strerror or exc}") from exc

    def _open_log(self) -> None:
        """The commit log, made in an empty directory; a directory with other content and no
        commit log is not Sluice's to write into."""
        if self.path.is_dir() and any(self.path.iterdir()) and not self.log.exists():
            raise SinkError(
                f"sink.path {self.path} is not empty and holds no Sluice commit log ({LOG_DIRECTORY}); "
                "point sink.path at an empty or new directory"
            )
        self.log.directory.mkdir(parents=True, exist_ok=True)

    def recorded_state(self) -> tuple[int, dict[str, Any]] | None:
        entry = self.log.entry(STATE_ENTRY)
        return None if entry is None else (int(entry["revision"]), entry["document"])

    def record_state(self, revision: int, document: dict[str, Any]) -> None:
        try:
            self._open_log()
            self.log.write(STATE_ENTRY, {"revision": revision, "document": document})
        except OSError as exc:
            raise SinkError(f"sink.path {self.path}: {exc.strerror or exc}") from exc

    def committed_splits(self) -> dict[str, BinlogOffset]:
        return {
            split_id: BinlogOffset.from_json(hw)
            for job in self.log.snapshot_jobs()
            for split_id, hw in job["splits"].items()
        }

    def holds_commits(self) -> bool:
        return bool(self.log.snapshot_jobs() or self.log.snapshot_directories() or self.log.binlog())

    takes_several_targets_of_a_split = False  # one Spark job writes one table's changelog directory

    def write_snapshot_job(self, sc: SparkContext, tasks: list[SplitTask], read: ReadSplits) -> list[SplitResult]:
        """One Spark job: executors read the splits (one table) and Spark's writer writes them."""
        spark = self._session()
        schema = getattr(read, "onto", None) or tasks[0].schema  # the columns the read gives
        name = f"snapshot-{tasks[0].split.index:06d}-{uuid.uuid4().hex[:8]}"
        directory = f"{schema.database}/{schema.table}/{name}"
        results = spark.sparkContext.accumulator([], _SplitResults())
        # The snapshot replays first (SNAPSHOT_COMMIT). Splits read while the binlog reader
        # streams (a table added, a chunk read again after a schema change) take the next
        # commit number: they replay after what was committed before them, in their schema.
        binlog = self.log.binlog()
        commit = binlog["commit"] + 1 if binlog else SNAPSHOT_COMMIT
        rules = self.values  # not the sink (its Spark session does not ship)
        rows = spark.sparkContext.parallelize([tasks], 1).flatMap(
            lambda t: _snapshot_rows(t, read, results, commit, rules, schema)
        )
        spark.createDataFrame(rows, changelog_schema(schema)).write.parquet(str(self.path / directory))
        finished: list[SplitResult] = results.value
        if binlog:  # the commit number is taken before the job's entry makes its rows count
            self.log.write(BINLOG_ENTRY, {**binlog, "commit": commit})
        self.log.write(
            name, {"directories": [directory], "splits": {r.split_id: r.high_watermark.to_json() for r in finished}}
        )
        return finished

    def write_splits_now(
        self, tasks: list[SplitTask], read: ReadSplits, on_split: Callable[[SplitResult], None] | None = None
    ) -> list[SplitResult]:
        results = self.write_snapshot_job(self._session().sparkContext, tasks, read)  # its session writes changes too
        for result in results if on_split is not None else ():
            on_split(result)
        return results

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
        self._values: dict[str, Callable[[Row], tuple[Any, ...]]] = {}

    def apply_schema_change(self, change_id: str, evolution: SchemaEvolution) -> None:
        """A new schema version: commits from the next one on hold the tables' new columns
        (every commit directory is a parquet dataset of its own schema)."""
        self._values.clear()
        log = self.sink.log
        changes = log.schema_changes()
        if any(entry["id"] == change_id for entry in changes):
            return  # recorded before a crash
        events, after = evolution.events, evolution.after
        entry = {
            "id": change_id,
            "fromCommit": log.last_binlog_commit() + 1,
            "events": [event_to_json(e) for e in events],
            "tables": {t: after[t].to_json() if t in after else None for t in {e.table_id for e in events}},
        }
        log.write(SCHEMAS_ENTRY, {"changes": [*changes, entry]})

    def write_changes(self, batch: ChangeBatch, end: BinlogOffset, drop_split_records: bool) -> None:
        commit = self.sink.log.last_binlog_commit()  # the last one with rows
        if len(batch):
            commit += 1
            self._write(batch, commit)
        self.sink.log.write(BINLOG_ENTRY, {"commit": commit, "end": end.to_json()})
        if drop_split_records:
            self.sink.log.compact_snapshot()

    def _write(self, batch: ChangeBatch, commit: int) -> None:
        by_table: dict[str, tuple[TableSchema, list[tuple[Any, ...]]]] = {}
        for index, change in enumerate(batch):
            schema = change.schema
            rows = by_table.setdefault(schema.table_id, (schema, []))[1]
            if schema.table_id not in self._values:
                self._values[schema.table_id] = spark_values(schema, self.sink.values)
            rows.append(
                (change.kind.value, schema.table_id, str(change.offset), change.timestamp * 1000, commit, index)
                + self._values[schema.table_id](change.row)
            )
        name = f"binlog-{commit:012d}"
        spark = self.sink._session()
        try:
            for schema, rows in by_table.values():
                frame = spark.createDataFrame(rows, changelog_schema(schema))
                frame.coalesce(1).write.parquet(str(self.sink.path / schema.database / schema.table / name))
        except Exception as exc:
            raise SinkError(f"sink parquet {self.sink.path}: writing commit {name} failed: {exc}") from exc

    def committed_binlog_offset(self) -> BinlogOffset | None:
        entry = self.sink.log.binlog()
        return BinlogOffset.from_json(entry["end"]) if entry else None


def read_changelog(path: str | Path, table_id: str) -> list[dict[str, Any]]:
    """A table's committed changelog rows in replay order (for tools and tests), in the
    table's current schema version: a row written before a schema change is read as that
    change left it (a renamed column under its new name, an added one NULL, a dropped one
    gone), and rows before a TRUNCATE, DROP or RENAME of the table away are not read at all
    (a table renamed onto its name, as in a swap, is read whole after it)."""
    import pyarrow.parquet as pq

    root = Path(path)
    log = CommitLog(root)
    changes = [
        (entry["fromCommit"], [e for e in map(event_from_json, entry["events"]) if e.table_id == table_id])
        for entry in log.schema_changes()
    ]
    database, table = table_id.split(".", 1)
    table_dir = root / database / table
    rows: list[dict[str, Any]] = []
    for directory in sorted(table_dir.iterdir()) if table_dir.is_dir() else []:
        if not log.is_committed(directory):
            continue
        part = pq.read_table(directory)
        # Parquet has no day-time interval: Spark stores TIME as microseconds and names
        # the type in its own schema, in the file's metadata.
        spark_schema = json.loads(part.schema.metadata[b"org.apache.spark.sql.parquet.row.metadata"])
        intervals = [f["name"] for f in spark_schema["fields"] if str(f["type"]).startswith("interval")]
        for row in part.to_pylist():
            for name in intervals:
                if row[name] is not None:
                    row[name] = timedelta(microseconds=row[name])
            upgraded = _in_current_version(row, [events for since, events in changes if since > row["_commit"]])
            if upgraded is not None:
                rows.append(upgraded)
    versions = [entry["tables"][table_id] for entry in log.schema_changes() if entry["tables"].get(table_id)]
    if versions:  # in the current version's column order
        order = [field.name for field in METADATA] + [column["name"] for column in versions[-1]["columns"]]
        rows = [{name: row.get(name) for name in order} for row in rows]
    rows.sort(key=lambda r: (r["_commit"], r["_index"]))
    return rows


def _in_current_version(row: dict[str, Any], later: list[list[SchemaChangeEvent]]) -> dict[str, Any] | None:
    for events in later:
        for event in events:
            if isinstance(event, (TruncateTable, DropTable, RenameTable)):  # renamed: another table's now
                return None
            if isinstance(event, AddColumn):
                row[event.column.name] = None
            elif isinstance(event, DropColumn):
                row.pop(event.name, None)
            elif isinstance(event, RenameColumn):
                row[event.new_name] = row.pop(event.old_name, None)
    return row
