"""Delta Lake tables through delta-rs: `sink.type: delta`. The source table `db.tbl` is the
table at `<path>/db/tbl`; `storage.options.*` go to delta-rs, `table.properties.*` become the
configuration of the tables Sluice creates.

The record of each commit is in its commit info (custom metadata), and every commit carries
an app transaction (`sluice:<pipeline>`, version: the run's epoch): a writer whose table
gained a commit of a newer run meanwhile fails delta-rs's conflict check and commits nothing.

Delta-rs (1.6) writes no table with column mapping correctly, and without it a column can
only be added in place: a dropped, renamed or retyped column rewrites the table (its size
decides the cost; docs/sinks/delta.md says so)."""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
from deltalake import DeltaTable, write_deltalake
from deltalake.exceptions import CommitFailedError
from deltalake.schema import Field
from deltalake.transaction import AddAction, CommitProperties, Transaction

from sluice.event.schema_change import (
    AddColumn,
    AlterColumnType,
    AlterPrimaryKey,
    CreateTable,
    DropColumn,
    DropTable,
    RenameColumn,
    RenameTable,
    SchemaChangeEvent,
    TruncateTable,
)
from sluice.event.snapshot_split import SnapshotSplit
from sluice.pipeline.sink_configs import Maintenance
from sluice.sink.arrow_rows import arrow_field, arrow_schema, arrow_value, widens
from sluice.sink.columnar_types import arrow_type
from sluice.sink.lakehouse.delta_files import write_data_files
from sluice.sink.lakehouse.delta_log import DeltaLog, LogConflict
from sluice.sink.lakehouse.delta_row_delta import (
    checkpoint_due,
    merges_on_read,
    plan_rewrite,
    rewrite,
    row_delta,
    unread_vector_files,
)
from sluice.sink.lakehouse.key_positions import KeyPositions
from sluice.sink.lakehouse.partitioning import partition_fields
from sluice.sink.lakehouse.table_format import EPOCH, PIPELINE, MaintenanceDone, TableCommit, TableFormat, retried
from sluice.source.schema import Column, TableSchema

DELETED = "_sluice_deleted"  # a merge source's flag: the key's row goes


class DeltaTables(TableFormat):
    name = "delta"

    def __init__(self, root: str, storage_options: Mapping[str, str], table_properties: Mapping[str, str]) -> None:
        self.root = root.rstrip("/")
        self.storage_options = dict(storage_options)
        self.table_properties = dict(table_properties)
        self.table_options: dict[str, dict[str, str]] = {}
        self._logs: dict[str, DeltaLog] = {}  # by table id: its log as last replayed
        self._positions: dict[str, KeyPositions] = {}  # by table id: where its keys are

    def __getstate__(self) -> dict[str, Any]:  # logs and caches stay where they were read
        return {**self.__dict__, "_logs": {}, "_positions": {}}

    def _log(self, table_id: str) -> DeltaLog:
        log = self._logs.get(table_id)
        if log is None:
            log = self._logs[table_id] = DeltaLog(self.uri(table_id))
            self._positions[table_id] = KeyPositions()
        return log

    def uri(self, table_id: str) -> str:
        database, table = table_id.split(".", 1)
        return f"{self.root}/{database}/{table}"

    def _table(self, table_id: str) -> DeltaTable:
        return DeltaTable(self.uri(table_id), storage_options=self.storage_options or None)

    def create(self, schema: TableSchema, arrow: pa.Schema) -> None:
        columns = [f.column for f in partition_fields(self.partition_keys, schema, self.name)]
        if not self.exists(schema.table_id):
            DeltaTable.create(
                self.uri(schema.table_id),
                arrow,
                mode="ignore",
                partition_by=columns or None,
                configuration=self.properties_of(schema.table_id) or None,
                storage_options=self.storage_options or None,
            )
            return
        if schema.table_id not in self.partition_keys:
            return  # a table the option does not name keeps its partitioning
        table = self._table(schema.table_id)
        if table.metadata().partition_columns != columns:
            # Delta cannot repartition in place: the rows written again, in one commit.
            rows = _all_rows(table)
            write_deltalake(table, rows, mode="overwrite", schema_mode="overwrite", partition_by=columns or None)

    def exists(self, table_id: str) -> bool:
        return DeltaTable.is_deltatable(self.uri(table_id), self.storage_options or None)

    def column_names(self, table_id: str) -> list[str]:
        return [field.name for field in self._table(table_id).schema().fields]

    def holds_rows(self, table_id: str) -> bool:
        return self._table(table_id).count() > 0

    def recorded_versions(self, table_id: str) -> list[tuple[int, Mapping[str, str]]]:
        return [
            (info["version"], {k: v for k, v in info.items() if isinstance(v, str)})
            for info in self._table(table_id).history()
        ]

    def commit(self, schema: TableSchema, commit: TableCommit, fence: Callable[[int], None]) -> None:
        if self._row_delta(schema, commit, fence):
            return
        properties = _properties(commit.record)

        def attempt() -> None:
            table = self._table(schema.table_id)
            fence(_newest_epoch(table, commit.record))
            self._commit(table, schema, commit, properties)

        retried(attempt, CommitFailedError)

    def _row_delta(self, schema: TableSchema, commit: TableCommit, fence: Callable[[int], None]) -> bool:
        """Merge-on-read, where the table and its storage take it (delta_row_delta); False
        where they do not, and for commits that are not rows by their row key."""
        if not commit.upserts_by(schema.row_key):
            return False
        log = self._log(schema.table_id)
        if not merges_on_read(log, log.state()):
            return False
        cache, uri = self._positions[schema.table_id], self.uri(schema.table_id)
        version = retried(lambda: row_delta(log, cache, uri, schema, commit, fence), LogConflict)
        if checkpoint_due(version):  # delta-rs checkpoints after its own commits only
            self._table(schema.table_id).create_checkpoint()
        return True

    def _commit(
        self, table: DeltaTable, schema: TableSchema, commit: TableCommit, properties: CommitProperties
    ) -> None:
        """Rows by their row key through one MERGE; otherwise the rows cleared first, then
        the data files and rows added (two commits: a crash between them leaves the splits
        unrecorded, read again)."""
        if commit.upserts_by(schema.row_key):
            _merge(table, schema, commit, properties)
            return
        deleted = _deletion(schema, commit)
        if deleted is not None:
            table.delete(deleted or None, commit_properties=properties)
        if commit.rows is not None and commit.rows.num_rows:
            write_deltalake(table, commit.rows, mode="append", commit_properties=properties)
        elif commit.files or deleted is None:
            now = int(time.time() * 1000)
            actions = [AddAction(f.path, f.size, f.partition, now, True, f.stats) for f in commit.files]
            table.create_write_transaction(actions, "append", table.schema(), commit_properties=properties)

    def file_writer(self, schema: TableSchema) -> Callable[[pa.Table], list[Any]]:
        partition_columns = self._table(schema.table_id).metadata().partition_columns
        return functools.partial(write_data_files, self.uri(schema.table_id), partition_columns, schema.row_key)

    def scan(
        self,
        schema: TableSchema,
        columns: Sequence[str] | None = None,
        split: SnapshotSplit | None = None,
        version: int | None = None,
        keys: Sequence[Any] | None = None,
    ) -> pa.Table:
        table = self._table(schema.table_id)
        if version is not None:
            table.load_as_version(version)
        where = _of_keys(schema, keys) if keys is not None else (None if split is None else _in_range(schema, split))
        return _all_rows(table, list(columns) if columns else None, where)

    def maintain(
        self, schema: TableSchema, maintenance: Maintenance, record: Mapping[str, str], fence: Callable[[int], None]
    ) -> MaintenanceDone:
        """Files whose deletion vectors delete past the ratio rewritten without those rows,
        OPTIMIZE (small files bin-packed; both commits carry the record), and VACUUM of the
        files no version within the retention reads, deletion vector files included."""
        log = self._log(schema.table_id)
        compacted = 0

        def rewrite_deleted() -> int:  # planned anew at each attempt
            chosen = plan_rewrite(log.state(), maintenance.delete_ratio)
            return rewrite(log, self._positions[schema.table_id], chosen, schema, record, fence) if chosen else 0

        compacted += retried(rewrite_deleted, LogConflict)
        table = self._table(schema.table_id)
        sizes = table.get_add_actions(flatten=True).column("size_bytes").to_pylist()
        if sum(size < maintenance.small_file_size for size in sizes) >= maintenance.min_small_files:
            fence(_newest_epoch(table, record))
            properties = _properties(record)
            metrics = table.optimize.compact(target_size=maintenance.small_file_size, commit_properties=properties)
            compacted += int(metrics.get("numFilesRemoved", 0))
        hours = max(0, math.ceil(maintenance.retention / 3600))
        deleted = table.vacuum(retention_hours=hours, dry_run=False, enforce_retention_duration=False)
        table.cleanup_metadata()  # log files older than delta.logRetentionDuration (30 days) before a checkpoint
        unread = unread_vector_files(log, maintenance.retention) if log.commits_atomically else []
        return MaintenanceDone(compacted, len(deleted) + len(unread))

    def apply(self, event: SchemaChangeEvent, before: Mapping[str, TableSchema]) -> None:
        for table_id in {event.table_id, getattr(event, "new_table_id", event.table_id)}:
            self._logs.pop(table_id, None)  # a table dropped, renamed or made anew: its log is read afresh
        schema = before.get(event.table_id)
        if isinstance(event, CreateTable):
            created = TableSchema(*event.table_id.split(".", 1), event.columns, event.primary_key, "")
            self.create(created, arrow_schema(created))
        elif isinstance(event, (DropTable, RenameTable, TruncateTable)):
            self._replace_table(event, schema)
        elif isinstance(event, AddColumn):
            table = self._table(event.table_id)
            if event.column.name not in table.schema().to_arrow().names:
                table.alter.add_columns([Field.from_arrow(arrow_field(event.column))])
        elif isinstance(event, AlterPrimaryKey):
            return  # a Delta table has no key; rows are merged by the one the events give
        elif isinstance(event, (DropColumn, RenameColumn, AlterColumnType)):
            assert schema is not None, f"{event}: the table's schema is not known"
            self._rewrite(event, schema)
        else:
            raise ValueError(f"{type(event).__name__} has no Delta Lake change")

    def _replace_table(self, event: SchemaChangeEvent, schema: TableSchema | None) -> None:
        """TRUNCATE empties the table; DROP removes its directory; RENAME writes its rows at
        the new name first (delta-rs has no catalog to rename in)."""
        if not self.exists(event.table_id):
            return
        table = self._table(event.table_id)
        if isinstance(event, TruncateTable):
            table.delete()
            return
        if isinstance(event, RenameTable):
            if self.exists(event.new_table_id):
                # The source's rename succeeded, so the name was free there: this is a table an
                # earlier swap renamed out of the capture (dropped at the source since), or the
                # copy a crash cut short here. It gives way; the copy is written anew.
                self._delete(event.new_table_id)
            renamed = event.applied_to(schema) if schema else None
            configured = renamed is not None and event.new_table_id in self.partition_keys
            columns = (
                [f.column for f in partition_fields(self.partition_keys, renamed, self.name)]  # type: ignore[arg-type]
                if configured
                else table.metadata().partition_columns
            )
            write_deltalake(
                self.uri(event.new_table_id),
                _all_rows(table),
                mode="error",
                partition_by=columns or None,
                configuration=self.properties_of(event.new_table_id) or None,
                storage_options=self.storage_options or None,
            )
        self._delete(event.table_id)

    def _delete(self, table_id: str) -> None:
        filesystem, path = pafs.FileSystem.from_uri(self.uri(table_id))
        filesystem.delete_dir(path)

    def _rewrite(self, event: SchemaChangeEvent, schema: TableSchema) -> None:
        """The table written again in the layout after `event` (delta-rs cannot drop, rename or
        retype a column in place)."""
        after = event.applied_to(schema)
        table = self._table(schema.table_id)
        current = _all_rows(table)
        target = arrow_schema(after)
        if current.schema.names == target.names and all(
            current.schema.field(n).type == target.field(n).type for n in target.names
        ):
            return  # rewritten before a crash
        renamed = {event.old_name: event.new_name} if isinstance(event, RenameColumn) else {}
        columns = []
        for field in target:
            source = next((old for old, new in renamed.items() if new == field.name), field.name)
            if source in current.column_names and widens(current.schema.field(source).type, field.type):
                columns.append(current.column(source).cast(field.type))
            else:  # added, or retyped: empty until the table is read again (rereads_after)
                columns.append(pa.nulls(current.num_rows, field.type))
        rewritten = pa.Table.from_arrays(columns, schema=target)
        partitioned = [renamed.get(c, c) for c in table.metadata().partition_columns]
        partition_by = [c for c in partitioned if c in target.names] or None
        write_deltalake(table, rewritten, mode="overwrite", schema_mode="overwrite", partition_by=partition_by)


def _app_id(record: Mapping[str, str]) -> str:
    return f"sluice:{record[PIPELINE]}"


def _properties(record: Mapping[str, str]) -> CommitProperties:
    """A commit carrying the record, and the app transaction of its pipeline's epoch (none
    for a record of no pipeline's, `sluice_meta.states`)."""
    fenced = [Transaction(_app_id(record), int(record[EPOCH]))] if PIPELINE in record else None
    return CommitProperties(custom_metadata=dict(record), app_transactions=fenced)


def _newest_epoch(table: DeltaTable, record: Mapping[str, str]) -> int:
    """The newest epoch of the record's pipeline in the table as loaded: its app transaction
    version, in the snapshot's state (no walk of the history)."""
    return (table.transaction_version(_app_id(record)) or 0) if PIPELINE in record else 0


def _merge(table: DeltaTable, schema: TableSchema, commit: TableCommit, properties: CommitProperties) -> None:
    """A batch's last images by key: matched keys deleted or updated, new ones inserted. The
    batch's range of the first key column bounds the merge, so files outside it (by their
    statistics) are neither read nor rewritten."""
    rows = commit.rows
    assert rows is not None
    key = [schema.column(name) for name in schema.row_key]
    as_stored = [tuple(arrow_value(c, v) for c, v in zip(key, k, strict=True)) for k in commit.deleted_keys]
    upserted = {tuple(r) for r in zip(*(rows.column(c.name).to_pylist() for c in key), strict=True)}
    deleted = [k for k in as_stored if k not in upserted]
    columns = {c.name: [k[i] for k in deleted] for i, c in enumerate(key)}
    gone = pa.Table.from_pydict(
        {f.name: columns.get(f.name, [None] * len(deleted)) for f in rows.schema}, schema=rows.schema
    )
    source = pa.concat_tables([rows, gone]).append_column(
        DELETED, pa.array([False] * rows.num_rows + [True] * len(deleted))
    )
    on = " AND ".join(f"t.{_quoted(c.name)} = s.{_quoted(c.name)}" for c in key)
    first = [k[0] for k in commit.deleted_keys]  # every key of the batch, as the source gives it
    if first:
        name = f"t.{_quoted(key[0].name)}"
        on += f" AND {name} >= {_literal(key[0], min(first))} AND {name} <= {_literal(key[0], max(first))}"
    (
        table.merge(source, on, source_alias="s", target_alias="t", commit_properties=properties)
        .when_matched_delete(predicate=f"s.{DELETED}")
        .when_matched_update_all(predicate=f"NOT s.{DELETED}", except_cols=[DELETED])
        .when_not_matched_insert_all(predicate=f"NOT s.{DELETED}", except_cols=[DELETED])
        .execute()
    )


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _deletion(schema: TableSchema, commit: TableCommit) -> str | None:
    """The rows a snapshot commit clears, as a delta-rs predicate ('' for every row; None: none)."""
    if commit.clear_all:
        return ""
    parts: list[str] = []
    for key in commit.deleted_keys:
        columns = [schema.column(name) for name in commit.key_columns]
        parts.append(" AND ".join(_equal(c, v) for c, v in zip(columns, key, strict=True)))
    parts += [_in_range(schema, split) for split in commit.cleared_ranges]
    return " OR ".join(f"({p})" for p in parts) if parts else None


def _equal(column: Column, value: Any) -> str:
    return f"{_quoted(column.name)} IS NULL" if value is None else f"{_quoted(column.name)} = {_literal(column, value)}"


def _in_range(schema: TableSchema, split: SnapshotSplit) -> str:
    """A chunk's key range, by the rule a jdbc target's DELETE uses (key_condition), its
    bounds as literals of the column's Delta type."""
    column = schema.column(schema.chunk_key)
    where, bounds = split.key_condition(_quoted(column.name), "\0")
    parts = where.removeprefix(" WHERE ").split("\0")
    literals = [_literal(column, bound) for bound in bounds]
    return "".join(part + literal for part, literal in zip(parts, [*literals, ""], strict=True)) or "TRUE"


def _of_keys(schema: TableSchema, keys: Sequence[Any]) -> str:
    """The rows of these chunk keys (None: a NULL key), as a predicate."""
    column = schema.column(schema.chunk_key)
    values = [_literal(column, k) for k in keys if k is not None]
    found = f"{_quoted(column.name)} IN ({', '.join(values)})" if values else "FALSE"
    return f"({found} OR {_quoted(column.name)} IS NULL)" if None in keys else found


def _all_rows(table: DeltaTable, columns: list[str] | None = None, where: str | None = None) -> pa.Table:
    """The table's rows through delta-rs's own reader (the one that applies deletion
    vectors; its pyarrow dataset refuses a table that has them), typed as the table is."""
    rows = pa.table(table.scan(columns=columns, predicate=where).read_all())
    arrow = pa.schema(table.schema().to_arrow())
    wanted = pa.schema([arrow.field(name) for name in rows.column_names])
    return rows.cast(wanted)


def _literal(column: Column, value: Any) -> str:
    """A chunk key value as a SQL literal of the column's Delta type."""
    value = arrow_value(column, value)
    kind = arrow_type(column)
    if isinstance(value, bytes):
        return f"X'{value.hex()}'"
    if pa.types.is_integer(kind) or pa.types.is_decimal(kind) or pa.types.is_floating(kind):
        return str(value)
    text = "'" + str(value).replace("'", "''") + "'"
    if pa.types.is_date(kind):
        return f"CAST({text} AS DATE)"
    if pa.types.is_timestamp(kind):  # of the column's own unit and zone (a plain CAST is nanoseconds)
        zone = ', Some("UTC")' if kind.tz else ", None"
        return f"arrow_cast('{value.isoformat()}', 'Timestamp(Microsecond{zone})')"
    return text
