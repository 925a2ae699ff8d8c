"""Apache Iceberg tables through pyiceberg: `sink.type: iceberg`, with the options of Flink
CDC's Iceberg pipeline connector (`catalog.properties.*` for pyiceberg's load_catalog,
`table.properties.*` for the tables it creates). The source table `db.tbl` is the table
`tbl` in the namespace `db`, keyed by its row key (the table's identifier fields).

The record of each commit is in its snapshots' summary properties. A commit is retried here,
not by pyiceberg: a retry must look at the table's newest epoch again (pyiceberg would put
the same append on top of whatever a newer run committed meanwhile)."""

from __future__ import annotations

import contextlib
import functools
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import quote, unquote, urlsplit, urlunsplit

import pyarrow as pa
from pyiceberg.catalog import Catalog, load_catalog
from pyiceberg.exceptions import CommitFailedException, NamespaceAlreadyExistsError, TableAlreadyExistsError
from pyiceberg.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    EqualTo,
    GreaterThanOrEqual,
    In,
    IsNull,
    LessThan,
    Or,
)
from pyiceberg.io import load_file_io
from pyiceberg.io.pyarrow import _dataframe_to_data_files
from pyiceberg.table import Table, TableProperties, Transaction
from pyiceberg.table.snapshots import ancestors_of

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
from sluice.pipeline.partition_key import PartitionField
from sluice.pipeline.sink_configs import Maintenance
from sluice.sink.arrow_rows import arrow_field, arrow_schema, arrow_value, widens
from sluice.sink.lakehouse.iceberg_key_positions import keyed_files, live_files
from sluice.sink.lakehouse.iceberg_maintenance import Compaction, compact, expire, plan_compaction
from sluice.sink.lakehouse.iceberg_row_delta import RowDelta, write_position_deletes
from sluice.sink.lakehouse.key_positions import KeyPositions, deleted_keys
from sluice.sink.lakehouse.partitioning import partition_fields
from sluice.sink.lakehouse.table_format import EPOCH, PIPELINE, MaintenanceDone, TableCommit, TableFormat, retried
from sluice.source.schema import Column, TableSchema

T = TypeVar("T")
# How a commit changes rows (Iceberg's write.update.mode): merge-on-read writes position
# deletes beside the data; copy-on-write rewrites each data file a changed key is in.
UPDATE_MODE, MERGE_ON_READ = "write.update.mode", "merge-on-read"


def with_secret(properties: Mapping[str, str], password: str) -> dict[str, str]:
    """The catalog's properties with its secret (`password`, from a Secret or the
    environment) where the catalog takes it: a sql catalog's database password in its uri, a
    rest catalog's credential."""
    properties = dict(properties)
    if not password:
        return properties
    if properties.get("type") == "sql" or properties.get("uri", "").partition(":")[0].startswith(("postgres", "mysql")):
        parts = urlsplit(properties["uri"])
        user = unquote(parts.username or "")
        host = parts.netloc.rpartition("@")[2]
        netloc = f"{quote(user, safe='')}:{quote(password, safe='')}@{host}"
        properties["uri"] = urlunsplit(parts._replace(netloc=netloc))
    else:
        properties.setdefault("credential", password)
    return properties


def catalog_arguments(properties: Mapping[str, str]) -> dict[str, Any]:
    """The catalog's properties as pyiceberg takes them: a rest catalog's TLS settings, flat
    in a definition (ssl.cabundle, ssl.client.cert, ssl.client.key), as its nested `ssl`."""
    arguments: dict[str, Any] = {k: v for k, v in properties.items() if not k.startswith("ssl.")}
    tls = {k.removeprefix("ssl."): v for k, v in properties.items() if k.startswith("ssl.")}
    if tls:
        client = {k.removeprefix("client."): v for k, v in tls.items() if k.startswith("client.")}
        arguments["ssl"] = {k: v for k, v in tls.items() if not k.startswith("client.")}
        if client:
            arguments["ssl"]["client"] = client
    return arguments


class IcebergTables(TableFormat):
    name = "iceberg"

    def __init__(self, catalog_name: str, catalog_properties: Mapping[str, str], table_properties: Mapping[str, str]):
        self.catalog_name = catalog_name
        self.catalog_properties = dict(catalog_properties)
        modes = {mode: MERGE_ON_READ for mode in ("write.delete.mode", UPDATE_MODE, "write.merge.mode")}
        # Old metadata files deleted as commits replace them (Iceberg keeps the last 100).
        metadata = {"write.metadata.delete-after-commit.enabled": "true"}
        self.table_properties = {"format-version": "2", **modes, **metadata, **table_properties}
        self.table_options: dict[str, dict[str, str]] = {}
        self._catalog: Catalog | None = None
        self._positions: dict[str, KeyPositions] = {}  # by table id: where its keys are

    def __getstate__(self) -> dict[str, Any]:  # the catalog's connections and caches stay where they were made
        return {**self.__dict__, "_catalog": None, "_positions": {}}

    def __repr__(self) -> str:  # the properties may hold the secret
        return f"IcebergTables({self.catalog_name})"

    @property
    def catalog(self) -> Catalog:
        if self._catalog is None:
            self._catalog = load_catalog(self.catalog_name, **catalog_arguments(self.catalog_properties))
        return self._catalog

    def create(self, schema: TableSchema, arrow: pa.Schema) -> None:
        fields = partition_fields(self.partition_keys, schema, self.name)
        with contextlib.suppress(NamespaceAlreadyExistsError):
            self.catalog.create_namespace(schema.database)
        if not self.exists(schema.table_id):
            try:
                with self.catalog.create_table_transaction(
                    schema.table_id, arrow, properties=self.properties_of(schema.table_id)
                ) as tx:
                    with tx.update_schema() as update:
                        update.set_identifier_fields(*schema.row_key)
                    _partition(tx, fields)
                return
            except (TableAlreadyExistsError, CommitFailedException):
                pass  # another run created it meanwhile
        if schema.table_id in self.partition_keys:
            with self.catalog.load_table(schema.table_id).transaction() as tx:
                _partition(tx, fields)

    def exists(self, table_id: str) -> bool:
        return self.catalog.table_exists(table_id)

    def column_names(self, table_id: str) -> list[str]:
        return list(self.catalog.load_table(table_id).schema().column_names)

    def holds_rows(self, table_id: str) -> bool:
        snapshot = self.catalog.load_table(table_id).current_snapshot()
        return snapshot is not None and int(snapshot.summary.additional_properties.get("total-records", "0")) > 0

    def recorded_versions(self, table_id: str) -> list[tuple[int, Mapping[str, str]]]:
        table = self.catalog.load_table(table_id)
        return [(s.snapshot_id, s.summary.additional_properties) for s in _ancestors(table)]

    def commit(self, schema: TableSchema, commit: TableCommit, fence: Callable[[int], None]) -> None:
        def attempt(table: Table) -> None:
            fence(_newest_epoch(table, commit.record))
            with table.transaction() as tx:
                if _merges_on_read(tx.table_metadata, schema, commit):
                    self._row_delta(table, tx, schema, commit)
                    return
                deleted = _deletion(schema, commit)
                if deleted != AlwaysFalse():
                    with warnings.catch_warnings():  # a batch's keys new to the table match no row
                        warnings.filterwarnings("ignore", "Delete operation did not match any records")
                        # A range or the whole table is cleared by rewriting its files, whatever the mode says.
                        warnings.filterwarnings("ignore", "Merge on read is not yet supported")
                        tx.delete(deleted, snapshot_properties=commit.record)
                # A snapshot of the appended files and rows, carrying the record even
                # where nothing is appended (a delete that matched no row adds none).
                with tx.update_snapshot(snapshot_properties=commit.record).fast_append() as append:
                    for data_file in commit.files:
                        append.append_data_file(data_file)
                    if commit.rows is not None and commit.rows.num_rows:
                        for data_file in _data_files(table.io, tx.table_metadata, commit.rows):
                            append.append_data_file(data_file)

        self._attempts(schema.table_id, attempt)

    def _row_delta(self, table: Table, tx: Transaction, schema: TableSchema, commit: TableCommit) -> None:
        """Merge-on-read: the rows of the commit's keys deleted by position, its rows added,
        in one snapshot; the data files are left as they are."""
        rows = commit.rows
        assert rows is not None
        keys = deleted_keys(schema, commit)
        cache = self._positions_of(schema.table_id)
        tasks = {task.file.file_path: task for task in live_files(table, cache)}
        found = cache.find(keyed_files(table.io, table.schema(), list(tasks.values()), keys.schema, cache), keys)
        deleted = {tasks[path].file: positions for path, positions in found.items()}
        delta = RowDelta(tx, table.io, dict(commit.record))
        delta.add_delete_files(write_position_deletes(table.io, table.location(), deleted))
        if rows.num_rows:
            delta.add_data_files(_data_files(table.io, tx.table_metadata, rows))
        delta.commit()

    def _positions_of(self, table_id: str) -> KeyPositions:
        return self._positions.setdefault(table_id, KeyPositions())

    def _attempts(self, table_id: str, attempt: Callable[[Table], T]) -> T:
        """An attempt on the table as it is now, made again (on the table reloaded) while it
        loses the catalog's optimistic race."""
        return retried(lambda: attempt(self._table_committed_once(table_id)), CommitFailedException)

    def _table_committed_once(self, table_id: str) -> Table:
        """The table as it is now, whose commits pyiceberg does not retry."""
        table = self.catalog.load_table(table_id)
        properties = {**table.metadata.properties, TableProperties.COMMIT_NUM_RETRIES: "0"}
        metadata = table.metadata.model_copy(update={"properties": properties})
        return Table(table.name(), metadata, table.metadata_location, table.io, self.catalog)

    def file_writer(self, schema: TableSchema) -> Callable[[pa.Table], list[Any]]:
        table = self.catalog.load_table(schema.table_id)
        return functools.partial(_write_data_files, self.catalog_properties, table.metadata)

    def scan(
        self,
        schema: TableSchema,
        columns: Sequence[str] | None = None,
        split: SnapshotSplit | None = None,
        version: int | None = None,
        keys: Sequence[Any] | None = None,
    ) -> pa.Table:
        table = self.catalog.load_table(schema.table_id)
        if keys is not None:
            found = _of_keys(schema, keys)
        else:
            found = AlwaysTrue() if split is None else _in_range(schema, split)
        return table.scan(
            row_filter=found,
            selected_fields=tuple(columns) if columns else ("*",),
            snapshot_id=version,
        ).to_arrow()

    def maintain(
        self, schema: TableSchema, maintenance: Maintenance, record: Mapping[str, str], fence: Callable[[int], None]
    ) -> MaintenanceDone:
        """Compaction (data files small or largely deleted, and the delete files that then
        delete nothing: one snapshot carrying the record, fenced as commit() is), then expiry."""

        def attempt(table: Table) -> Compaction:
            fence(_newest_epoch(table, record))
            tasks, idle = plan_compaction(table, maintenance, self._positions_of(schema.table_id))
            if not tasks and not idle:
                return Compaction(0, 0)
            return compact(table, tasks, idle, list(schema.row_key), record)

        done = self._attempts(schema.table_id, attempt)
        return MaintenanceDone(done.rewritten, expire(self.catalog.load_table(schema.table_id), maintenance.retention))

    def apply(self, event: SchemaChangeEvent, before: Mapping[str, TableSchema]) -> None:
        """Iceberg evolves by field ids: columns are added, dropped, renamed, widened and
        moved in the table's metadata, no data file rewritten."""
        schema = before.get(event.table_id)
        if isinstance(event, CreateTable):
            created = TableSchema(*event.table_id.split(".", 1), event.columns, event.primary_key, "")
            self.create(created, arrow_schema(created))
        elif isinstance(event, DropTable):
            if self.exists(event.table_id):
                self.catalog.drop_table(event.table_id)
        elif isinstance(event, RenameTable):
            if self.exists(event.table_id):
                if self.exists(event.new_table_id):  # renamed out of the capture by an earlier swap
                    self.catalog.drop_table(event.new_table_id)  # (the name was free at the source)
                self.catalog.rename_table(event.table_id, event.new_table_id)
            renamed = event.applied_to(schema) if schema else None
            if renamed is not None and event.new_table_id in self.partition_keys:  # as its option says
                self.create(renamed, arrow_schema(renamed))
        elif isinstance(event, TruncateTable):
            if self.exists(event.table_id):
                self.catalog.load_table(event.table_id).delete(AlwaysTrue())
        else:
            assert schema is not None, f"{event}: the table's schema is not known"
            self._alter(event, schema)

    def _recreate(self, table: Table, column: Column, schema: TableSchema) -> None:
        """A column whose type Iceberg cannot widen: dropped and added under a new field id
        (the files keep the old values under the old id, read by no one)."""
        names = [c.name for c in schema.columns]
        if column.name in {f.name for f in table.schema().fields}:
            with table.update_schema(allow_incompatible_changes=True) as update:
                update.delete_column(column.name)
        with table.update_schema() as update:
            update.union_by_name(pa.schema([arrow_field(column)]))
            place = names.index(column.name) if column.name in names else -1
            if place == 0:
                update.move_first(column.name)
            elif place > 0:
                update.move_after(column.name, names[place - 1])

    def _alter(self, event: SchemaChangeEvent, schema: TableSchema) -> None:
        table = self.catalog.load_table(event.table_id)
        names = {f.name for f in table.schema().fields}
        if isinstance(event, DropColumn) and event.name in names:
            # A partition field of the column goes first (older files keep it in their spec).
            fields = _partitioned_by(table.metadata)
            if any(f.column == event.name for f in fields):
                with table.transaction() as tx:
                    _partition(tx, [f for f in fields if f.column != event.name])
                table = self.catalog.load_table(event.table_id)
        with table.update_schema(allow_incompatible_changes=False) as update:
            if isinstance(event, AddColumn):
                if event.column.name in names:
                    return
                field = arrow_field(event.column)
                update.union_by_name(pa.schema([field]))
                if event.position == "FIRST":
                    update.move_first(event.column.name)
                elif event.position == "AFTER" and event.after in names:
                    update.move_after(event.column.name, event.after)
            elif isinstance(event, DropColumn):
                if event.name in names:
                    update.delete_column(event.name)
            elif isinstance(event, RenameColumn):
                if event.old_name in names and event.new_name not in names:
                    update.rename_column(event.old_name, event.new_name)
            elif isinstance(event, AlterColumnType):
                field = arrow_field(event.column)
                if not _promotes(table, field):  # made anew, empty: the table is read again (rereads_after)
                    self._recreate(table, event.column, schema)
                    return
                update.union_by_name(pa.schema([field]))
            elif isinstance(event, AlterPrimaryKey):
                update.set_identifier_fields(*event.applied_to(schema).row_key)
            else:
                raise ValueError(f"{type(event).__name__} has no Iceberg schema update")


def _merges_on_read(metadata: Any, schema: TableSchema, commit: TableCommit) -> bool:
    """A commit of rows by their row key, into a table of format version 2 whose update mode
    is merge-on-read (the default of a table that names none)."""
    wanted = metadata.properties.get(UPDATE_MODE, MERGE_ON_READ) == MERGE_ON_READ
    return commit.upserts_by(schema.row_key) and metadata.format_version == 2 and wanted


def _promotes(table: Table, field: pa.Field) -> bool:
    """Whether Iceberg widens the column to the field's type in place."""
    return widens(table.schema().as_arrow().field(field.name).type, field.type)


def _write_data_files(catalog_properties: Mapping[str, str], metadata: Any, rows: pa.Table) -> list[Any]:
    """Runs where a chunk is read: the rows as one data file (with the table's field ids)."""
    return _data_files(load_file_io(dict(catalog_properties), metadata.location), metadata, rows)


def _ancestors(table: Table) -> Iterator[Any]:
    """The table's current snapshot and its ancestors, newest first (metadata in hand)."""
    return ancestors_of(table.current_snapshot(), table.metadata)


def _newest_epoch(table: Table, record: Mapping[str, str]) -> int:
    """The newest epoch of the record's pipeline in the table as loaded (0: none)."""
    pipeline = record.get(PIPELINE)
    records = (s.summary.additional_properties for s in _ancestors(table))
    return next((int(r[EPOCH]) for r in records if r.get(PIPELINE) == pipeline and EPOCH in r), 0)


def _data_files(io: Any, metadata: Any, rows: pa.Table) -> list[Any]:
    """Rows written as data files of the table (`metadata`: as the transaction sees it), a
    file per partition of its spec at least."""
    return list(_dataframe_to_data_files(metadata, rows, io))


def _partitioned_by(metadata: Any) -> list[PartitionField]:
    """The current spec's fields, by column name."""
    schema = metadata.schema()
    fields = []
    for spec_field in metadata.spec().fields:
        transform, _, width = str(spec_field.transform).rstrip("]").partition("[")
        fields.append(
            PartitionField(schema.find_column_name(spec_field.source_id), transform, int(width) if width else None)
        )
    return fields


def _partition(tx: Transaction, fields: Sequence[PartitionField]) -> None:
    """The table's spec made `fields` (partition evolution: files written before keep the
    spec they were written with)."""
    held = zip(_partitioned_by(tx.table_metadata), tx.table_metadata.spec().fields, strict=True)
    current = {(field.column, field.transform_text): spec_field.name for field, spec_field in held}
    wanted = {(f.column, f.transform_text) for f in fields}
    if set(current) == wanted:
        return
    with tx.update_spec() as spec:
        for key in current.keys() - wanted:
            spec.remove_field(current[key])
        for field in fields:
            if (field.column, field.transform_text) not in current:
                spec.add_field(field.column, field.transform_text)


def _deletion(schema: TableSchema, commit: TableCommit) -> BooleanExpression:
    """The rows the commit deletes, as an Iceberg row filter."""
    if commit.clear_all:
        return AlwaysTrue()
    parts: list[BooleanExpression] = []
    if commit.deleted_keys:
        columns = [schema.column(name) for name in commit.key_columns]
        if len(columns) == 1:
            (column,) = columns
            values = {arrow_value(column, k[0]) for k in commit.deleted_keys}
            if None in values:
                parts.append(IsNull(column.name))
            if values - {None}:
                parts.append(In(column.name, values - {None}))
        else:
            for key in commit.deleted_keys:
                equal = [
                    IsNull(c.name) if v is None else EqualTo(c.name, arrow_value(c, v))
                    for c, v in zip(columns, key, strict=True)
                ]
                parts.append(functools.reduce(And, equal))
    parts += [_in_range(schema, split) for split in commit.cleared_ranges]
    return functools.reduce(Or, parts) if parts else AlwaysFalse()


def _of_keys(schema: TableSchema, keys: Sequence[Any]) -> BooleanExpression:
    """Rows of these chunk keys (None: a NULL key)."""
    column = schema.column(schema.chunk_key)
    values = {arrow_value(column, k) for k in keys if k is not None}
    found: BooleanExpression = In(column.name, values) if values else AlwaysFalse()
    return Or(found, IsNull(column.name)) if None in keys else found


def _in_range(schema: TableSchema, split: SnapshotSplit) -> BooleanExpression:
    """A chunk's key range: [start, end), NULL keys in the first chunk."""
    column = schema.column(schema.chunk_key)
    conditions: list[BooleanExpression] = []
    if split.start is not None:
        conditions.append(GreaterThanOrEqual(column.name, arrow_value(column, split.start)))
    if split.end is not None:
        below = LessThan(column.name, arrow_value(column, split.end))
        conditions.append(Or(below, IsNull(column.name)) if split.start is None else below)
    return functools.reduce(And, conditions) if conditions else AlwaysTrue()
