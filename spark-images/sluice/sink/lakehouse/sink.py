"""The lakehouse sinks: Apache Iceberg and Delta Lake tables, upserted exactly once.

A table's commits carry the pipeline's record in the table's own log (Iceberg snapshot
summary properties, Delta commit metadata): the run that made the commit (its epoch), where
the binlog reader was after it (its end), and the snapshot splits it holds. Two tables share
no transaction, so every record is a table's own:

- Snapshot: executors write each chunk's rows as data files where they read them; the
  driver commits a job's files as one table commit that records the job's splits and clears
  the key ranges they replace. The files of a job that crashed are in no commit, and no
  reader ever sees them.
- Binlog: a batch folds to each key's last image in binlog order; each table it changes
  gets one commit (deletes and upserts by key) that records the batch's end. A crash between
  two tables' commits replays the batch; a table skips every change before its own end.
- Fencing: a run first commits its new epoch into every table; a writer of an older run
  finds a newer epoch there, or loses the format's optimistic commit race, and commits
  nothing.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from sluice.errors import SinkError, SinkUnavailable, SluiceError
from sluice.event.change_fold import fold_run, run_end
from sluice.event.row_change import ChangeBatch
from sluice.event.schema_change import AddColumn, AlterColumnType, SchemaEvolution
from sluice.event.snapshot_split import ReadSplits, SnapshotSplit, SplitResult, SplitTask, chunk_keys_of
from sluice.pipeline.partition_key import PartitionField
from sluice.pipeline.sink_configs import LakehouseSinkConfig
from sluice.sink.arrow_rows import ArrowRows, source_rows, widens
from sluice.sink.base import SchemaChangeRefused, Sink, SinkWriter
from sluice.sink.columnar_types import arrow_type
from sluice.sink.lakehouse.commit_records import Held, held_already, recorded_end
from sluice.sink.lakehouse.data_files import WrittenFiles, write_data_files, write_data_files_on_executor
from sluice.sink.lakehouse.maintenance_counts import count_maintenance
from sluice.sink.lakehouse.state_table import record_state, recorded_state
from sluice.sink.lakehouse.table_format import (
    END,
    EPOCH,
    PIPELINE,
    SPLITS,
    Fenced,
    MaintenanceDone,
    TableCommit,
    TableFormat,
)
from sluice.sink.target_values import TargetValues
from sluice.source.offset import BinlogOffset
from sluice.source.row_decoding import Row
from sluice.source.schema import TableSchema

if TYPE_CHECKING:
    from pyspark import SparkContext

log = logging.getLogger(__name__)
T = TypeVar("T")

RESET = "sluice.reset"  # the records before it do not count (a snapshot read afresh)
KEY_BATCH = 10_000  # chunk keys listed at a time


class LakehouseSink(Sink):
    replaces_key_ranges = True

    def __init__(self, config: LakehouseSinkConfig, pipeline: str, tables: TableFormat) -> None:
        self.pipeline = pipeline
        self.tables = tables
        self.values = TargetValues(None, config.zero_date)  # Arrow strings hold NUL
        self.max_batch_delay = config.commit_interval
        self.maintenance = config.maintenance
        self.epoch = 0  # taken by prepare
        self.schemas: dict[str, TableSchema] = {}  # the captured tables, as prepare() got them
        self.committed: BinlogOffset | None = None  # this run's last batch end, every table's commits made
        self._commit_ends: dict[str, BinlogOffset] = {}  # per table, the end of this run's last commit into it
        self._locks: dict[str, threading.Lock] = {}
        self._locks_lock = threading.Lock()

    def check_target(self, schemas: Sequence[TableSchema]) -> list[SinkError]:
        """The catalog (Iceberg) or the storage (Delta Lake) answers: a lookup of a table."""
        try:
            self.tables.exists(f"{schemas[0].database if schemas else 'sluice'}.sluice_check")
        except Exception as exc:  # noqa: BLE001 - each catalog and store fails its own way
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            return [SinkUnavailable(f"sink ({self.tables.name}): cannot reach the tables: {first}")]
        return []

    def table_layout(self, table_id: str, partitions: tuple[str, ...], options: Mapping[str, str]) -> bool:
        if partitions:
            self.tables.partition_keys.setdefault(table_id, tuple(PartitionField(c) for c in partitions))
        if options:
            self.tables.table_options[table_id] = dict(options)
        return True

    # -- the records -----------------------------------------------------------------------

    @property
    def captured(self) -> list[str]:
        return list(self.schemas)

    def _records(self, table_id: str) -> list[Mapping[str, str]]:
        """This pipeline's records in the table, newest first, back to the newest reset."""
        return [record for _, record in self._versions(table_id)]

    def _versions(self, table_id: str) -> list[tuple[int, Mapping[str, str]]]:
        """This pipeline's commits in the table with their versions, newest first, back to
        the newest reset."""
        if not self.tables.exists(table_id):
            return []
        versions: list[tuple[int, Mapping[str, str]]] = []
        for version, record in self.tables.recorded_versions(table_id):
            if record.get(PIPELINE) == self.pipeline:
                versions.append((version, record))
                if record.get(RESET):
                    break
        return versions

    def read_range(
        self,
        schema: TableSchema,
        split: SnapshotSplit,
        keys_as_of: Callable[[BinlogOffset], Sequence[Any]] | None = None,
        conn: Any = None,
    ) -> tuple[list[Row], BinlogOffset | None]:
        """A key range's rows and the binlog position they are as of: the table at its
        newest commit that records an end (verification compares them with the source's
        rows as of that position). With `keys_as_of`, the rows of the chunk keys it gives
        for that position instead (see JdbcSink.read_range). Nothing waits for it; no
        connection is held (`conn`: reading_connection's None)."""
        for version, record in self._versions(schema.table_id):
            if record.get(END):
                position = BinlogOffset.from_json(json.loads(record[END]))
                if keys_as_of is None:
                    found = self.tables.scan(schema, split=split, version=version)
                else:
                    found = self.tables.scan(schema, keys=keys_as_of(position), version=version)
                return source_rows(schema, found), position
        return [], None

    def reading_connection(self) -> None:
        """Tables are read through the catalog: there is no connection to hold."""
        return None

    def _fence(self, table_id: str) -> Callable[[int], None]:
        """What a format calls with the newest epoch the table holds (as it loaded the table
        for a commit attempt): a newer run's is Fenced."""

        def check(newest: int) -> None:
            if newest > self.epoch:
                raise Fenced(
                    f"pipeline {self.pipeline!r} runs as epoch {newest} in {self.tables.name} table {table_id} now; "
                    f"this writer of epoch {self.epoch} was fenced off and commits nothing"
                )

        return check

    def table_end(self, table_id: str) -> BinlogOffset | None:
        """Where the binlog reader was after the table's last commit of this pipeline."""
        return recorded_end(self._records(table_id))

    def commit(self, schema: TableSchema, commit: TableCommit) -> None:
        """One commit of this run into a table."""
        self._one_at_a_time(schema.table_id, "committing into", lambda fence: self._commit(schema, commit, fence))

    def _commit(self, schema: TableSchema, commit: TableCommit, fence: Callable[[int], None]) -> None:
        """Commits with the table's lock held."""
        commit.record = {PIPELINE: self.pipeline, EPOCH: str(self.epoch), **commit.record}
        self.tables.commit(schema, commit, fence)
        if commit.record.get(END):  # under the lock: a replacement waiting for it reads the table as of this
            self._commit_ends[schema.table_id] = BinlogOffset.from_json(json.loads(commit.record[END]))

    def maintain(self, schema: TableSchema, end: BinlogOffset) -> MaintenanceDone:
        """A table's compaction and expiry (sink.maintenance.*): its commit carries this run's
        record, ending where the table's last commit did."""
        record = {PIPELINE: self.pipeline, EPOCH: str(self.epoch), END: json.dumps(end.to_json())}
        started = time.monotonic()
        done = self._one_at_a_time(
            schema.table_id, "maintaining", lambda fence: self.tables.maintain(schema, self.maintenance, record, fence)
        )
        count_maintenance(schema.table_id, done.compacted, done.deleted, time.monotonic() - started)
        return done

    def _one_at_a_time(self, table_id: str, doing: str, write: Callable[[Callable[[int], None]], T]) -> T:
        """A write into a table, one at a time per table in this process, fenced; the
        format's own errors named as the sink's."""
        with self._locks_lock:
            lock = self._locks.setdefault(table_id, threading.Lock())
        with lock:
            try:
                return write(self._fence(table_id))
            except SluiceError:  # ours say what they mean (a source read for a replacement too)
                raise
            except Exception as exc:
                raise SinkError(f"sink {self.tables.name}: {doing} {table_id} failed: {exc}") from exc

    # -- the state, kept in the target -------------------------------------------------------

    def recorded_state(self) -> tuple[int, dict[str, Any]] | None:
        return recorded_state(self.tables, self.pipeline)

    def record_state(self, revision: int, document: dict[str, Any]) -> None:
        record_state(self.tables, self.pipeline, self.values, revision, document)

    # -- Sink ------------------------------------------------------------------------------

    def missing_columns(self, schemas: Sequence[TableSchema]) -> dict[str, list[str]]:
        lacking = {}
        for schema in schemas:
            if self.tables.exists(schema.table_id):
                present = set(self.tables.column_names(schema.table_id))
                names = [c.name for c in schema.columns if c.name not in present]
                if names:
                    lacking[schema.table_id] = names
        return lacking

    def prepare(self, schemas: Sequence[TableSchema]) -> None:
        """Creates the tables, takes the next epoch, and commits it into every table (so a
        writer of an older run is fenced off from each)."""
        for schema in schemas:
            if schema.is_bag:
                raise SinkError(
                    f"sink {self.tables.name}: table {schema.table_id} has no primary key and no UNIQUE key over NOT "
                    "NULL columns, and a lakehouse table is upserted by key; add such a key at the source, or leave "
                    "the table out (source.tables.exclude)"
                )
        try:
            for schema in schemas:
                self.tables.create(schema, ArrowRows(schema, self.values).arrow)
        except Exception as exc:
            raise SinkError(f"sink {self.tables.name}: creating the tables failed: {exc}") from exc
        self.schemas = {s.table_id: s for s in schemas}
        records = {s.table_id: self._records(s.table_id) for s in schemas}
        self.epoch = max((int(r[0][EPOCH]) for r in records.values() if r), default=0) + 1
        for schema in schemas:
            end = recorded_end(records[schema.table_id])  # carried on, so the newest record has it
            self.commit(schema, TableCommit({END: json.dumps(end.to_json())} if end else {}))

    def committed_splits(self) -> dict[str, BinlogOffset]:
        splits: dict[str, BinlogOffset] = {}
        for table_id in self.captured:
            for record in self._records(table_id):
                for split_id, hw in json.loads(record.get(SPLITS, "{}")).items():
                    splits.setdefault(split_id, BinlogOffset.from_json(hw))
        return splits

    def holds_commits(self) -> bool:
        return any(r.get(SPLITS) or r.get(END) for t in self.captured for r in self._records(t))

    def forget_commits(self) -> None:
        """A snapshot read again: each table's records of splits and ends stop counting (a
        record of this epoch without them follows)."""
        for schema in self.schemas.values():
            self.commit(schema, TableCommit({RESET: "true"}))

    def write_snapshot_job(self, sc: SparkContext, tasks: list[SplitTask], read: ReadSplits) -> list[SplitResult]:
        """Executors read the splits and write their rows as data files; the driver commits them."""
        schemas = getattr(read, "targets", None) or [tasks[0].schema]
        writers = {schema.table_id: self.tables.file_writer(schema) for schema in schemas}
        rules = self.values
        (written,) = (
            sc.parallelize([tasks], 1)
            .map(lambda t: write_data_files_on_executor(t, read, schemas, rules, writers))
            .collect()
        )
        return self._commit_snapshot(schemas, written)

    def write_splits_now(
        self, tasks: list[SplitTask], read: ReadSplits, on_split: Callable[[SplitResult], None] | None = None
    ) -> list[SplitResult]:
        schemas = getattr(read, "targets", None) or [tasks[0].schema]
        writers = {schema.table_id: self.tables.file_writer(schema) for schema in schemas}
        results = self._commit_snapshot(schemas, write_data_files(tasks, read, schemas, self.values, writers))
        for result in results if on_split is not None else ():
            on_split(result)  # type: ignore[misc]
        return results

    def _commit_snapshot(self, schemas: Sequence[TableSchema], written: dict[str, WrittenFiles]) -> list[SplitResult]:
        """Each target's files, one commit a table, in order: the splits are recorded with the
        last (a table fanned out to several targets has them read again after a stop before it)."""
        results = []
        for schema in schemas:
            files = written[schema.table_id]
            splits = {r.split_id: r.high_watermark.to_json() for r in files.results}
            record = {SPLITS: json.dumps(splits, separators=(",", ":"))}
            self.commit(schema, TableCommit(record, cleared_ranges=files.cleared, files=files.files))
            results += files.results
        return results

    def tables_holding_rows(self, schemas: Sequence[TableSchema]) -> set[str]:
        return {s.table_id for s in schemas if self.tables.exists(s.table_id) and self.tables.holds_rows(s.table_id)}

    def chunk_keys(self, schema: TableSchema) -> Iterator[list[Any]]:
        keys = sorted(set(self.tables.scan(schema, [schema.chunk_key]).column(0).to_pylist()), key=_nulls_first)
        for start in range(0, len(keys), KEY_BATCH):
            yield keys[start : start + KEY_BATCH]

    def delete_chunk_keys(self, schema: TableSchema, keys: Sequence[Any] | None) -> None:
        if keys is None:
            self.commit(schema, TableCommit({}, clear_all=True))
        elif keys:
            self.commit(schema, TableCommit({}, (schema.chunk_key,), [(k,) for k in keys]))

    def replace_range(
        self,
        schema: TableSchema,
        split: SnapshotSplit,
        rows_as_of: Callable[[BinlogOffset], list[Row]],
        keys_also: Sequence[Any] | None = None,
    ) -> int:
        """A key range replaced by the source's rows as of the table's last commit (a table
        read again after a change that gave its rows values without row events, or a
        verification's repair). With `keys_also`, the range is the rows' chunk keys and
        these (see JdbcSink.read_range)."""
        if keys_also is None:
            return self._replace(schema, rows_as_of, cleared_ranges=[split])

        def rows(position: BinlogOffset) -> list[Row]:
            found = rows_as_of(position)
            cleared.extend((key,) for key in chunk_keys_of(schema, found, keys_also))
            return found

        cleared: list[tuple[Any, ...]] = []
        return self._replace(schema, rows, key_columns=(schema.chunk_key,), deleted_keys=cleared)

    def replace_keys(
        self,
        schema: TableSchema,
        rows_as_of: Callable[[BinlogOffset], tuple[list[tuple[Any, ...]], list[Row]]],
    ) -> int:
        def rows(position: BinlogOffset) -> list[Row]:
            keys, found = rows_as_of(position)
            deleted.extend(keys)
            return found

        deleted: list[tuple[Any, ...]] = []
        return self._replace(schema, rows, key_columns=schema.row_key, deleted_keys=deleted)

    def _replace(self, schema: TableSchema, rows_as_of: Callable[[BinlogOffset], list[Row]], **clear: Any) -> int:
        """As of where every table is: this run's last batch (a table it did not change is as
        it was then too), or the batch whose commits are under way if it committed into this
        table already, else the table's own last commit. The table's lock is held from the
        position to the commit, so no batch commits into it between (verification repairs
        beside the binlog writer). Only a run commits: one of another process is fenced."""
        if not self.epoch:
            raise SinkError(f"sink {self.tables.name}: {schema.table_id} takes commits from a run of the pipeline only")

        def replace(fence: Callable[[int], None]) -> int:
            latest = self._commit_ends.get(schema.table_id)
            position = (
                self.committed if latest is None or (self.committed and latest.is_before(self.committed)) else latest
            )
            position = position or self.table_end(schema.table_id)
            if position is None:
                raise SinkError(
                    f"sink {self.tables.name}: {schema.table_id} has no binlog position of {self.pipeline!r}"
                )
            rows = rows_as_of(position)
            record = {END: json.dumps(position.to_json())}
            commit = TableCommit(record, rows=ArrowRows(schema, self.values).table(rows), **clear)
            self._commit(schema, commit, fence)
            return len(rows)

        return self._one_at_a_time(schema.table_id, "replacing rows in", replace)

    def writer(self) -> LakehouseWriter:
        return LakehouseWriter(self)


def _nulls_first(key: Any) -> tuple[bool, Any]:
    return (key is not None, key)


class LakehouseWriter(SinkWriter):
    """Driver side, binlog phase: a batch becomes one commit per table it changes."""

    def __init__(self, sink: LakehouseSink) -> None:
        self.sink = sink
        self._ends: dict[str, BinlogOffset | None] = {}  # each table's, read once
        self._maintained: dict[str, float] = {}  # table id: when it was last maintained, by `clock`
        self.clock: Callable[[], float] = time.monotonic
        self._keys: dict[str, tuple[TableSchema, tuple[int, ...]]] = {}  # per table, its row key's positions
        self._rows: dict[str, ArrowRows] = {}

    def _end(self, table_id: str) -> BinlogOffset | None:
        if table_id not in self._ends:
            self._ends[table_id] = self.sink.table_end(table_id)
        return self._ends[table_id]

    def write_changes(self, batch: ChangeBatch, end: BinlogOffset, drop_split_records: bool) -> None:
        """Folds the batch to each key's last image (None: deleted), then commits each table:
        its deleted and upserted keys cleared, its upserted rows added."""
        final: dict[str, tuple[TableSchema, dict[Any, Row | None]]] = {}
        holds: dict[str, Held] = {}  # by table: which of the batch's changes its commits hold
        rows, at = batch.rows, 0
        while at < len(rows):  # batches come in runs of one table's changes
            schema = rows[at][0]
            images = final.setdefault(schema.table_id, (schema, {}))[1]
            held = holds.get(schema.table_id)
            if held is None:
                held = holds[schema.table_id] = held_already(end, self._end(schema.table_id))
            if held.whole is False:
                at = fold_run(rows, at, self._key_positions(schema), None, images, set())
                continue
            after = run_end(rows, at)
            if held.whole is None:  # by position: what the table holds is left out of the fold
                kept = [change for change in rows[at:after] if not held(change[4])]
                if kept:
                    fold_run(kept, 0, self._key_positions(schema), None, images, set())
            at = after  # (held whole: committed before a crash cut the batch's commits short)
        record = {END: json.dumps(end.to_json())}
        for table_id, (schema, images) in final.items():
            if not images:
                continue
            keys = [k if isinstance(k, tuple) else (k,) for k in images]
            upsert = TableCommit(
                dict(record),
                schema.row_key,
                keys,
                rows=self._arrow(schema).table([row for row in images.values() if row is not None]),
            )
            self.sink.commit(schema, upsert)
            self._ends[table_id] = end
        self.sink.committed = end
        if drop_split_records:  # every table streams: no split record is needed any more
            self._maintain(end)

    def _maintain(self, end: BinlogOffset) -> None:
        """The table whose maintenance is due longest, if one is (one a batch, so no batch
        waits for more than one table's)."""
        maintenance = self.sink.maintenance
        if not maintenance.interval:
            return
        now = self.clock()
        for table_id in self.sink.captured:
            self._maintained.setdefault(table_id, now)  # a run's first round comes an interval in
        table_id = min(self.sink.captured, key=lambda t: self._maintained[t], default=None)
        if table_id is None or now - self._maintained[table_id] < maintenance.interval:
            return
        self._maintained[table_id] = now
        done = self.sink.maintain(self.sink.schemas[table_id], end)
        log.info("%s: maintenance compacted %d files and deleted %d", table_id, done.compacted, done.deleted)

    def _key_positions(self, schema: TableSchema) -> tuple[int, ...]:
        known = self._keys.get(schema.table_id)
        if known is None or known[0] != schema:
            known = self._keys[schema.table_id] = (schema, tuple(schema.position(k) for k in schema.row_key))
        return known[1]

    def _arrow(self, schema: TableSchema) -> ArrowRows:
        rows = self._rows.get(schema.table_id)
        if rows is None or rows.schema != schema:
            rows = self._rows[schema.table_id] = ArrowRows(schema, self.sink.values)
        return rows

    def committed_binlog_offset(self) -> BinlogOffset | None:
        """The end every captured table has passed (None while one has no end yet)."""
        ends = [self._end(t) for t in self.sink.captured]
        if not ends or any(e is None for e in ends):
            return None
        return min(ends)  # type: ignore[type-var]

    def rereads_after(self, evolution: SchemaEvolution) -> list[str]:
        """Files written before an added column hold no value for it, and a column whose
        type the format cannot widen in place is made anew, empty: those tables are read again."""
        tables, before = [], evolution.before
        for event in evolution.events:
            if isinstance(event, AddColumn) and (event.column.default or not event.column.nullable):
                tables.append(event.table_id)
            elif isinstance(event, AlterColumnType) and (schema := before.get(event.table_id)) is not None:
                names = {c.name.lower(): c for c in schema.columns}
                was = names.get(event.column.name.lower())
                if was is None or not widens(arrow_type(was), arrow_type(event.column)):
                    tables.append(event.table_id)
        return list(dict.fromkeys(tables))

    def apply_schema_change(self, change_id: str, evolution: SchemaEvolution) -> None:
        """Each event by the format's metadata applier; one the format refuses is
        SchemaChangeRefused (try_evolve goes on in the kept shape, evolve stops there)."""
        self._rows.clear()
        self._keys.clear()
        for applied, (event, schemas, after) in enumerate(evolution.steps()):
            try:
                self.sink.tables.apply(event, schemas)
            except Exception as exc:
                raise SchemaChangeRefused(applied, f"{event} on sink {self.sink.tables.name}: {exc}") from exc
            for table_id in {event.table_id, getattr(event, "new_table_id", event.table_id)}:
                # A table created or renamed in is the sink's too: its end counts in the
                # position every table has passed; a dropped one's no longer does.
                if table_id in after:
                    self.sink.schemas[table_id] = after[table_id]
                else:
                    self.sink.schemas.pop(table_id, None)
