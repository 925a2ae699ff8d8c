"""Schema change events: what a DDL statement on a captured table does, as typed values.

Named and printed like Flink CDC 3's events (AddColumnEvent{tableId=db.t1, ...}), so the
values sink shows what a Flink CDC user expects; the metadata appliers of the sinks take
them one by one.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from sluice.source.offset import BinlogOffset
from sluice.source.schema import Column, TableSchema


@dataclass(frozen=True)
class SchemaChangeEvent(ABC):
    table_id: str

    tag: ClassVar[str]  # Flink CDC's event type name, as include/exclude.schema.changes name it

    @abstractmethod
    def applied_to(self, schema: TableSchema | None) -> TableSchema | None:
        """The table's schema after this change (None: the table is gone from its id)."""

    def __str__(self) -> str:
        fields = ", ".join(f"{name}={value}" for name, value in self._fields())
        return f"{type(self).__name__}Event{{tableId={self.table_id}{', ' if fields else ''}{fields}}}"

    def _fields(self) -> list[tuple[str, object]]:
        return []


def _column(column: Column) -> str:
    return f"`{column.name}` {column.column_type.upper()}{'' if column.nullable else ' NOT NULL'}"


def _with_columns(schema: TableSchema | None, columns: list[Column], table_id: str) -> TableSchema:
    if schema is None:
        raise ValueError(f"{table_id}: no schema to change")
    names = {c.name for c in columns}
    primary_key = tuple(k for k in schema.primary_key if k in names)
    unique_key = tuple(k for k in schema.unique_key if k in names)
    keys = primary_key or unique_key or tuple(c.name for c in columns[:1])
    chunk_key = schema.chunk_key if schema.chunk_key in names else (keys or ("",))[0]  # "": no column left
    single = schema.single_split and not (keys and next(c for c in columns if c.name == keys[0]).chunkable)
    row_end = schema.row_end if schema.row_end in names else None
    return TableSchema(
        schema.database, schema.table, tuple(columns), primary_key, chunk_key, unique_key, single, row_end
    )


def _renamed(name: str, old: str, new: str) -> str:
    return new if name == old else name


@dataclass(frozen=True)
class CreateTable(SchemaChangeEvent):
    tag = "create.table"
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]

    def applied_to(self, schema: TableSchema | None) -> TableSchema:
        database, table = self.table_id.split(".", 1)
        chunk_key = (self.primary_key or (self.columns[0].name,))[0]
        # Without a key, which column an index leads is not in the event: one split.
        return TableSchema(database, table, self.columns, self.primary_key, chunk_key, (), not self.primary_key)

    def _fields(self) -> list[tuple[str, object]]:
        return [("columns", f"[{', '.join(map(_column, self.columns))}]"), ("primaryKeys", list(self.primary_key))]


def create_table_event(schema: TableSchema) -> CreateTable:
    """A table as it is now, as the event that creates it in the target (a table joining
    the capture): keyed by its row key, a UNIQUE NOT NULL key too, as the snapshot keys it."""
    return CreateTable(schema.table_id, schema.columns, schema.row_key)


@dataclass(frozen=True)
class AddColumn(SchemaChangeEvent):
    tag = "add.column"
    column: Column
    position: str = "LAST"  # LAST, FIRST, or AFTER
    after: str | None = None  # the column it follows, for AFTER

    def applied_to(self, schema: TableSchema | None) -> TableSchema:
        columns = list(schema.columns) if schema else []
        if self.position == "FIRST":
            at = 0
        elif self.position == "AFTER" and schema is not None and self.after in schema.column_names:
            at = schema.position(self.after) + 1
        else:
            at = len(columns)
        columns.insert(at, self.column)
        return _with_columns(schema, columns, self.table_id)

    def _fields(self) -> list[tuple[str, object]]:
        where = f"AFTER `{self.after}`" if self.position == "AFTER" else self.position
        return [("addedColumns", f"[ColumnWithPosition{{column={_column(self.column)}, position={where}}}]")]


@dataclass(frozen=True)
class DropColumn(SchemaChangeEvent):
    tag = "drop.column"
    name: str

    def applied_to(self, schema: TableSchema | None) -> TableSchema:
        columns = [c for c in (schema.columns if schema else ()) if c.name != self.name]
        return _with_columns(schema, columns, self.table_id)

    def _fields(self) -> list[tuple[str, object]]:
        return [("droppedColumnNames", [self.name])]


@dataclass(frozen=True)
class RenameColumn(SchemaChangeEvent):
    tag = "rename.column"
    old_name: str
    new_name: str

    def applied_to(self, schema: TableSchema | None) -> TableSchema:
        if schema is None:
            raise ValueError(f"{self.table_id}: no schema to change")
        old, new = self.old_name, self.new_name
        columns = tuple(dataclasses.replace(c, name=_renamed(c.name, old, new)) for c in schema.columns)
        return TableSchema(
            schema.database,
            schema.table,
            columns,
            tuple(_renamed(k, old, new) for k in schema.primary_key),
            _renamed(schema.chunk_key, old, new),
            tuple(_renamed(k, old, new) for k in schema.unique_key),
            schema.single_split,
            schema.row_end and _renamed(schema.row_end, old, new),
        )

    def _fields(self) -> list[tuple[str, object]]:
        return [("nameMapping", f"{{{self.old_name}={self.new_name}}}")]


@dataclass(frozen=True)
class AlterColumnType(SchemaChangeEvent):
    """MODIFY or CHANGE: a column's new definition, and the place MySQL's FIRST or AFTER
    moves it to (a target that orders its columns follows; PostgreSQL cannot)."""

    tag = "alter.column.type"
    column: Column
    position: str = ""  # "" (stays where it is), FIRST, or AFTER
    after: str | None = None  # the column it follows, for AFTER

    def applied_to(self, schema: TableSchema | None) -> TableSchema:
        columns = [self.column if c.name == self.column.name else c for c in (schema.columns if schema else ())]
        if self.position == "FIRST" or (self.position == "AFTER" and self.after in {c.name for c in columns}):
            columns.remove(self.column)
            at = 0 if self.position == "FIRST" else [c.name for c in columns].index(self.after) + 1
            columns.insert(at, self.column)
        return _with_columns(schema, columns, self.table_id)

    def _fields(self) -> list[tuple[str, object]]:
        moved = [("position", f"AFTER `{self.after}`" if self.position == "AFTER" else self.position)]
        return [
            ("typeMapping", f"{{{self.column.name}={self.column.column_type.upper()}}}"),
            *moved[: bool(self.position)],
        ]


@dataclass(frozen=True)
class AlterPrimaryKey(SchemaChangeEvent):
    """ADD or DROP PRIMARY KEY (Flink CDC has no such event; Sluice's targets key their rows
    by it). Key columns are NOT NULL; a table left without a key keeps its rows as a bag."""

    tag = "alter.primary.key"
    primary_key: tuple[str, ...]

    def applied_to(self, schema: TableSchema | None) -> TableSchema:
        if schema is None:
            raise ValueError(f"{self.table_id}: no schema to change")
        key = self.primary_key
        columns = tuple(dataclasses.replace(c, nullable=False) if c.name in key else c for c in schema.columns)
        unique_key = () if key else schema.unique_key
        return dataclasses.replace(schema, columns=columns, primary_key=key, unique_key=unique_key, _positions={})

    def _fields(self) -> list[tuple[str, object]]:
        return [("primaryKeys", list(self.primary_key))]


@dataclass(frozen=True)
class TruncateTable(SchemaChangeEvent):
    tag = "truncate.table"

    def applied_to(self, schema: TableSchema | None) -> TableSchema | None:
        return schema


@dataclass(frozen=True)
class DropTable(SchemaChangeEvent):
    tag = "drop.table"

    def applied_to(self, schema: TableSchema | None) -> None:
        return None


@dataclass(frozen=True)
class RenameTable(SchemaChangeEvent):
    """`applied_to` gives the schema under its new id; the old id has none after it."""

    tag = "rename.table"
    new_table_id: str

    def applied_to(self, schema: TableSchema | None) -> TableSchema | None:
        if schema is None:
            return None
        database, table = self.new_table_id.split(".", 1)
        return dataclasses.replace(schema, database=database, table=table, _positions={})

    def _fields(self) -> list[tuple[str, object]]:
        return [("newTableId", self.new_table_id)]


EVENT_CLASSES: dict[str, type[SchemaChangeEvent]] = {
    cls.tag: cls
    for cls in (
        CreateTable,
        AddColumn,
        DropColumn,
        RenameColumn,
        AlterColumnType,
        AlterPrimaryKey,
        TruncateTable,
        DropTable,
        RenameTable,
    )
}


def event_to_json(event: SchemaChangeEvent) -> dict[str, Any]:
    data: dict[str, Any] = {"type": event.tag}
    for f in dataclasses.fields(event):
        value = getattr(event, f.name)
        if isinstance(value, Column):
            value = value.__dict__
        elif isinstance(value, tuple):
            value = [v.__dict__ if isinstance(v, Column) else v for v in value]
        data[f.name] = value
    return data


def event_from_json(data: dict[str, Any]) -> SchemaChangeEvent:
    values = dict(data)
    cls = EVENT_CLASSES[values.pop("type")]
    for name, value in values.items():
        if isinstance(value, dict):
            values[name] = Column(**value)
        elif isinstance(value, list):
            values[name] = tuple(Column(**v) if isinstance(v, dict) else v for v in value)
    return cls(**values)


class SchemaEvolution:
    """Schema change events over the tables' schemas before them (by table id), applied in
    this one place: what each event finds and leaves, and what they all leave (a dropped
    table leaves, a renamed one moves). Every holder of schemas (the binlog reader's
    decoders and DDL reader, the coordinator, the routing, the sinks' metadata appliers)
    reads an evolution rather than applying events itself."""

    def __init__(self, before: Mapping[str, TableSchema], events: Iterable[SchemaChangeEvent]) -> None:
        self.before: dict[str, TableSchema] = dict(before)
        self.events = tuple(events)
        self._found = [self.before]  # the schemas before each event, then after the last
        for event in self.events:
            schemas = dict(self._found[-1])
            after = event.applied_to(schemas.pop(event.table_id, None))
            if after is not None:
                schemas[after.table_id] = after
            self._found.append(schemas)

    @property
    def after(self) -> dict[str, TableSchema]:
        return self._found[-1]

    def steps(self) -> Iterator[tuple[SchemaChangeEvent, dict[str, TableSchema], dict[str, TableSchema]]]:
        """Each event with the schemas it finds and those it leaves."""
        return zip(self.events, self._found, self._found[1:], strict=False)


def is_reflected(event: SchemaChangeEvent, columns: Callable[[str, str], Collection[str]]) -> bool:
    """Whether a table already shows `event`; `columns(database, table)` gives its column
    names (none when there is no such table). The metadata appliers ask it of the target
    (to apply a change once across a crash), the binlog reader of its schemas (a history
    read from before the pipeline found its tables repeats what they already show).
    Type changes and TRUNCATE say no (doing them again changes nothing), but a TRUNCATE of a
    table not there (one whose layout waits for its table map) is no change."""
    present = columns(*event.table_id.split(".", 1))
    if isinstance(event, CreateTable):
        return bool(present)
    if isinstance(event, (DropTable, TruncateTable)):  # `DROP TABLE IF EXISTS` of a table never there, or gone
        return not present
    if isinstance(event, AddColumn):
        return event.column.name in present
    if isinstance(event, DropColumn):
        return bool(present) and event.name not in present
    if isinstance(event, RenameColumn):
        return bool(present) and event.old_name not in present and event.new_name in present
    if isinstance(event, RenameTable):
        return not present and bool(columns(*event.new_table_id.split(".", 1)))
    return False


def as_spelled(
    events: Iterable[SchemaChangeEvent], columns: Callable[[str, str], Collection[str]]
) -> list[SchemaChangeEvent]:
    """The events with the column names they refer to as their table spells them: MySQL
    resolves column names case-insensitively (`DROP COLUMN Y` drops `y`). A MODIFY or
    CHANGE that spells a column otherwise gives it that spelling, as MySQL does: a rename
    first. `columns(database, table)` gives a table's column names before the events."""
    names: dict[str, list[str]] = {}
    result: list[SchemaChangeEvent] = []
    for event in events:
        table = names.setdefault(event.table_id, list(columns(*event.table_id.split(".", 1))))

        def spell(name: str, table: list[str] = table) -> str:
            return next((n for n in table if n.lower() == name.lower()), name)

        if isinstance(event, DropColumn):
            event = dataclasses.replace(event, name=spell(event.name))
            table[:] = [n for n in table if n != event.name]
        elif isinstance(event, RenameColumn):
            event = dataclasses.replace(event, old_name=spell(event.old_name))
            table[:] = [event.new_name if n == event.old_name else n for n in table]
        elif isinstance(event, AddColumn):
            event = dataclasses.replace(event, after=spell(event.after)) if event.after else event
            table.append(event.column.name)
        elif isinstance(event, AlterColumnType):
            current = spell(event.column.name)
            if current != event.column.name:
                result.append(RenameColumn(event.table_id, current, event.column.name))
                table[:] = [event.column.name if n == current else n for n in table]
        elif isinstance(event, CreateTable):
            table[:] = [c.name for c in event.columns]
        elif isinstance(event, RenameTable):
            names[event.new_table_id] = names.pop(event.table_id)
        elif isinstance(event, DropTable):
            del names[event.table_id]
        result.append(event)
    return result


@dataclass(frozen=True)
class SchemaChange:
    """A DDL statement on captured tables. The binlog phase commits everything before
    `position` before it lets the coordinator decide on it.

    A statement the reader cannot read comes twice: first with no events, naming the tables
    it touched (`unread`); then at each such table's next rows, whose table map tells the
    new layout, with the events that take the table there (`position` is the start of that
    rows event's transaction, or the rows event itself in a transaction given in pieces)."""

    position: BinlogOffset  # where the DDL starts: its change id
    resume_at: BinlogOffset  # right after it
    statement: str
    events: tuple[SchemaChangeEvent, ...]
    timestamp: int
    reread: tuple[str, ...] = ()  # tables whose rows it changed without row events
    unread: tuple[str, ...] = ()  # tables whose layout their next table map will tell
    migrations: Mapping[str, Any] | None = None  # the online schema changes in progress after it (state)
    relaid: bool = False  # the events come from a table map (then `reread` is where the sink can)
    settled: tuple[str, ...] = ()  # tables whose layout this table map change settles (no longer unread)
    undecided: str = ""  # why the table map leaves the change open: it waits for approval
    waiting: tuple[str, ...] = ()  # every table waiting for its table map after it (state.unread)
