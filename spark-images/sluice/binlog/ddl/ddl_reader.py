"""Schema change events from the binlog's statements: each DDL on a captured table read
against the reader's own schemas; where a statement cannot be read, the layout the
table's next table map shows; the steps of gh-ost's and pt-online-schema-change's
migrations (binlog/online_schema_change)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

import pymysql
from pymysqlreplication.event import QueryEvent

from sluice.binlog.ddl.ddl_context import RENAMING, Captured, RowsReplaced, TableSchemas
from sluice.binlog.ddl.online_schema_change import Migration, altered, cut_over, shadowed, started, taken
from sluice.binlog.protocol.event_stream import BinlogRowsEvent
from sluice.binlog.rows.event_reader import Replica, WatchedTables
from sluice.binlog.rows.row_image_decoder import RowImageDecoders
from sluice.binlog.rows.table_map_layout import as_the_server_spells, layout_change
from sluice.errors import SourceError
from sluice.event.schema_change import (
    AddColumn,
    AlterColumnType,
    DropTable,
    RenameColumn,
    SchemaChange,
    SchemaChangeEvent,
    SchemaEvolution,
    as_spelled,
    is_reflected,
)
from sluice.source.connection import connect
from sluice.source.offset import BinlogOffset
from sluice.source.schema import TableSchema, read_table_schema
from sluice.source.table_selector import is_tool_table

_NOT_A_STEP = object()  # a statement that is no step of a migration tool's
_TOOL_TABLE = re.compile(r"\b_\w+_(?:gho|new|ghc|del|old)\b", re.IGNORECASE)


@dataclass(frozen=True)
class DdlFollowing:
    """What a reader needs to follow DDL: a DDL on a `captured` table comes as a SchemaChange
    between the transactions around it. `migrations`: gh-ost's and pt-osc's migrations in
    progress (the state's), to read their statements as the one schema change each makes;
    None: read them as any other statement. `unread`: tables a statement that could not be
    read changed (the state's), whose next table map tells how. `schemas_read_at`: where the
    schemas of tables read whole after the start were read (a table that joined the
    capture): their DDL before there is in them already."""

    captured: Captured
    migrations: Mapping[str, Any] | None = None
    unread: Collection[str] = ()
    schemas_read_at: Mapping[str, BinlogOffset] | None = None


class DdlReader:
    """Reads the DDL of QueryEvents against the reader's own schemas, and where a statement
    on a captured table cannot be read, the table maps of the tables it names."""

    def __init__(
        self,
        following: DdlFollowing,
        decoders: RowImageDecoders,
        watched: WatchedTables,
        replica: Replica,
        lower_case_table_names: int,
    ) -> None:
        self.endpoint = replica.endpoint  # to read how the server spells a table's columns now
        self._control: pymysql.connections.Connection | None = None
        self.captured = following.captured
        self.decoders = decoders
        self.watched = watched
        self.mariadb = replica.mariadb
        self.lower_case_table_names = lower_case_table_names
        self.unread: dict[str, str] = {}  # table id: the statement its next table map explains
        self._maps: dict[str, object] = {}  # table id: the table map last compared
        # By the table migrated; None: scan.parse.online.schema.changes.enabled is off.
        migrations = following.migrations
        self.migrations = None if migrations is None else {t: Migration.from_json(m) for t, m in migrations.items()}
        self.read_at = dict(following.schemas_read_at or {})  # table id: where its schema was read
        for table_id in following.unread:  # their statements were read before a restart
            self.wait_for_table_map(table_id, "")

    def wait_for_table_map(self, table_id: str, statement: str) -> None:
        """`statement` (that could not be read) changed the table: its next table map tells how."""
        self.unread[table_id] = statement
        self.watched.add(table_id)  # a table it creates: its rows tell its layout

    def schema_change(self, event: QueryEvent, start: BinlogOffset) -> SchemaChange | None:
        return self._with_waiting(self._statement_change(event, start))

    def table_map_change(self, event: BinlogRowsEvent, start: BinlogOffset) -> SchemaChange | None:
        return self._with_waiting(self._table_map_change(event, start))

    def _with_waiting(self, change: SchemaChange | None) -> SchemaChange | None:
        """The change, telling every table that waits for its table map after it: the
        state keeps them, and a reader started again is given them."""
        return None if change is None else dataclasses.replace(change, waiting=tuple(self.unread))

    def _statement_change(self, event: QueryEvent, start: BinlogOffset) -> SchemaChange | None:
        """The DDL in `event` (starting at `start`) as a SchemaChange, if it changes a
        captured table (resume_at unset). What the schemas already show is left out: a run
        started at an older position (earliest-offset, timestamp) reads the history of
        tables it found as they are now."""
        from sluice.binlog.ddl.ddl_parser import captured_tables, parse_ddl  # sqlglot: loaded by the first DDL

        database = event.schema.decode() if isinstance(event.schema, bytes) else str(event.schema or "")
        decoders = self.decoders
        if self.migrations is not None and _TOOL_TABLE.search(event.query):
            step = self._migration_step(event, database, start)
            if step is not _NOT_A_STEP:
                return step  # type: ignore[return-value]
        try:
            parsed = parse_ddl(
                event.query, database, self.captured, decoders, self.mariadb, self.lower_case_table_names
            )
            parsed = [e for e in parsed if not self._in_schema_read_later(e, start)]
            if event.error_code:  # it failed after dropping: a CREATE OR REPLACE whose CREATE failed
                parsed = [e for e in parsed if isinstance(e, DropTable)]
            events = _not_reflected(as_spelled(parsed, decoders.columns), decoders)
        except RowsReplaced as replaced:
            return SchemaChange(start, start, event.query, (), event.timestamp, replaced.tables)
        except ValueError:  # UnparsableDdl, or a change of a table whose layout is not known
            tables = captured_tables(event.query, database, self.captured, decoders, self.lower_case_table_names)
            for table_id in tables:
                self.wait_for_table_map(table_id, event.query)
            return SchemaChange(start, start, event.query, (), event.timestamp, unread=tables) if tables else None
        if not events:
            return None
        return SchemaChange(start, start, event.query, events, event.timestamp)

    def _in_schema_read_later(self, event: SchemaChangeEvent, start: BinlogOffset) -> bool:
        read_at = self.read_at.get(event.table_id)
        return read_at is not None and start.is_before(read_at)

    def _migration_step(self, event: QueryEvent, database: str, start: BinlogOffset) -> SchemaChange | None | object:
        """A statement of gh-ost's or pt-osc's on a captured table's shadow: the migration
        moved on (a SchemaChange with no events, for the state), finished at its cut-over
        (the table's SchemaChange), or nothing (their other tables); _NOT_A_STEP for any
        other statement."""
        from sluice.binlog.ddl.ddl_parser import parse_ddl

        assert self.migrations is not None
        tables = {t: s for t in self.decoders.table_ids() if (s := self.decoders.schema(t)) is not None}
        shadows = {m.shadow.table_id: m.shadow for m in self.migrations.values()}
        try:
            events = parse_ddl(
                event.query,
                database,
                lambda d, t: True,
                TableSchemas({**tables, **shadows}),
                self.mariadb,
                self.lower_case_table_names,
            )
        except ValueError:
            return _NOT_A_STEP

        def notice() -> SchemaChange:
            progress = {t: m.to_json() for t, m in self.migrations.items()}  # type: ignore[union-attr]
            return SchemaChange(start, start, event.query, (), event.timestamp, migrations=progress)

        if taken(events, self.migrations, start):
            return None  # read again after a restart: the state has it
        if (migration := started(events, tables, start)) is not None:
            self.migrations[migration.table_id] = migration
            return notice()
        given_up = [t for e in events if isinstance(e, DropTable) and (t := shadowed(e.table_id)) in self.migrations]
        if given_up:  # the shadow dropped: begun again (a rerun of the tool) or abandoned
            for table_id in given_up:
                del self.migrations[table_id]
            return notice()
        on = {shadowed(e.table_id) for e in events}
        if len(on) == 1 and (original := on.pop()) in self.migrations:
            self.migrations[original] = altered(self.migrations[original], event.query, events, start)
            return notice()
        finished = cut_over(events, self.migrations)
        if finished is not None:
            for migration in finished:
                del self.migrations[migration.table_id]
            if not finished:
                return None  # t moved aside: the next rename swaps the shadow in
            changes = tuple(e for m in finished for e in m.events)
            said = "; ".join([*(s for m in finished for s in m.statements), event.query])
            progress = {t: m.to_json() for t, m in self.migrations.items()}
            return SchemaChange(start, start, said, changes, event.timestamp, migrations=progress)
        if all(is_tool_table(e.table_id.split(".", 1)[1]) for e in events):
            return None  # a changelog table, an old table dropped, a shadow given up
        return _NOT_A_STEP

    def _table_map_change(self, event: BinlogRowsEvent, start: BinlogOffset) -> SchemaChange | None:
        """The change a rows event's table map shows against the reader's layout of a table
        a statement that could not be read changed (resume_at unset). Only there: elsewhere
        the reader's layout may be ahead of the binlog (a table read whole after the
        position, a run started at an older one), and its table maps are history."""
        table_id, table = event.table_id, event.table
        if table_id not in self.unread or self._maps.get(table_id) is table:
            return None
        if getattr(table, "key_order", None) is None:
            return None
        self._maps[table_id] = table
        held = self.decoders.schema(table_id)
        if any(c.name is None for c in table.columns):  # no names: binlog_row_metadata is not FULL
            return None
        statement = self.unread.pop(table_id)
        change = layout_change(held, table_id, table, statement)
        if not change.events:
            return SchemaChange(start, start, statement, (), event.timestamp, relaid=True, settled=(table_id,))
        events = as_the_server_spells(change.events, self._live(table_id))
        said = statement or f"(the table map of {table_id}'s rows at {start}: its layout changed)"
        # A column added or retyped may have given the rows there values without row events
        # (a DEFAULT, a generated column, a conversion): the table is read again.
        filled = any(isinstance(e, (AddColumn, AlterColumnType)) for e in events)
        reread = (table_id,) if filled else ()
        return SchemaChange(
            start,
            start,
            said,
            events,
            event.timestamp,
            reread,
            relaid=True,
            settled=(table_id,),
            undecided=change.undecided,
        )

    def _live(self, table_id: str) -> TableSchema | None:
        """The table as the server describes it now (None where it cannot say: the table is
        gone, or the server cannot be asked; the table map's own spelling serves then)."""
        database, table = table_id.split(".", 1)
        try:
            if self._control is None or not self._control.open:
                self._control = connect(self.endpoint)
            return read_table_schema(self._control, database, table)
        except (pymysql.err.MySQLError, SourceError):
            return None


def _superseded(event: SchemaChangeEvent, columns: Collection[str]) -> bool:
    """A change of a column the schemas no longer have (MySQL took it, so the column was
    there): they are ahead of it, and a later change has renamed or dropped the column."""
    if isinstance(event, AlterColumnType):
        return bool(columns) and event.column.name not in columns
    if isinstance(event, RenameColumn):
        return bool(columns) and event.old_name not in columns and event.new_name not in columns
    return False


def _not_reflected(events: list[SchemaChangeEvent], decoders: RowImageDecoders) -> tuple[SchemaChangeEvent, ...]:
    """The events the reader's schemas do not show yet, judged one after another (`DROP
    COLUMN b, ADD b INT` adds b again); ValueError for an event on a table they lack."""
    schemas = {t: s for t in decoders.table_ids() if (s := decoders.schema(t)) is not None}
    # A rename through a name of its own (a swap, a chain) is judged from end to end: the
    # schemas show `a` renamed `b`, never `a` renamed `a#sluice-renaming`.
    onward = {e.old_name: e.new_name for e in events if isinstance(e, RenameColumn) and e.old_name.endswith(RENAMING)}
    shown: set[str] = set()  # temporary names of renames the schemas show whole
    kept = []
    for event in events:
        if isinstance(event, RenameColumn) and event.new_name in onward:
            whole = RenameColumn(event.table_id, event.old_name, onward[event.new_name])
            if is_reflected(whole, TableSchemas(schemas).columns):
                shown.add(event.new_name)
                continue
        elif isinstance(event, RenameColumn) and event.old_name in shown:
            continue
        if _superseded(event, TableSchemas(schemas).columns(*event.table_id.split(".", 1))):
            continue
        if not is_reflected(event, TableSchemas(schemas).columns):
            kept.append(event)
        schemas = SchemaEvolution(schemas, [event]).after
    return tuple(kept)
