"""Turns the binlog into transactions of captured rows events.

The rows stay bytes until the binlog phase decodes them, in the process that commits them
(runtime/reader_process.py).

A transaction of more than PIECE_BYTES of rows comes in pieces, so a transaction of
millions of rows streams through in bounded memory. A piece ends after a rows event, and
its end is a resume point inside the transaction: it names where the transaction begins
(a rows event needs its table map, which sits earlier in the same transaction), and a
reader started there skips the rows before it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pymysql
from pymysqlreplication.event import (
    GtidEvent,
    HeartbeatLogEvent,
    MariadbGtidEvent,
    QueryEvent,
    RotateEvent,
    XAPrepareEvent,
    XidEvent,
)

from sluice.binlog.ddl_parser import (
    RENAMING,
    Captured,
    RowsReplaced,
    TableSchemas,
    captured_tables,
    parse_ddl,
)
from sluice.binlog.event_reader import RowsEvent, WatchedTables, event_start, open_stream, rows_event
from sluice.binlog.event_stream import BinlogRowsEvent
from sluice.binlog.online_schema_change import Migration, altered, cut_over, shadowed, started, taken
from sluice.binlog.row_image_decoder import RowImageDecoders
from sluice.binlog.table_map_layout import as_the_server_spells, layout_change
from sluice.errors import PositionPurged, SourceError, SourceUnavailable
from sluice.event.schema_change import (
    AddColumn,
    AlterColumnType,
    CreateTable,
    DropTable,
    RenameColumn,
    RenameTable,
    SchemaChangeEvent,
    apply_events,
    as_spelled,
    is_reflected,
)
from sluice.source.connection import connect
from sluice.source.endpoint import SourceEndpoint
from sluice.source.gtid_state import GtidState, gtid_state
from sluice.source.offset import BinlogOffset
from sluice.source.schema import TableSchema, read_table_schema
from sluice.source.table_selector import is_tool_table

MARIADB_GTID_STANDALONE = 1  # a MariaDB GTID event's flag: the group is one statement, no BEGIN or COMMIT
PIECE_BYTES = 128 * 1024  # of row images: about a thousand rows of a narrow table


@dataclass(frozen=True)
class Transaction:
    """A whole transaction, or a piece of one (`end` is then inside it)."""

    events: list[RowsEvent]
    end: BinlogOffset  # where reading resumes after these changes
    timestamp: int

    def table_runs(self) -> list[tuple[str, list[RowsEvent]]]:
        """The rows events in runs of one table's (binlog order kept)."""
        runs: list[tuple[str, list[RowsEvent]]] = []
        for event in self.events:
            if runs and runs[-1][0] == event.table_id:
                runs[-1][1].append(event)
            else:
                runs.append((event.table_id, [event]))
        return runs


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

    def unread_after(self, unread: Sequence[str]) -> list[str]:
        """The tables waiting for their table map after this change, given those before."""
        waiting = [*unread, *(t for t in self.unread if t not in unread)]
        return [t for t in waiting if t not in self.settled]


@dataclass(frozen=True)
class Heartbeat:
    """The server had nothing more to send: everything before `end` has been read."""

    end: BinlogOffset


def read_transactions(
    endpoint: SourceEndpoint,
    server_id: int,
    start: BinlogOffset,
    schemas: Mapping[str, TableSchema],
    mariadb: bool,
    stop_at: BinlogOffset | None,
    heartbeat_seconds: float,
    by_gtid: bool = False,
    captured: Captured | None = None,
    lower_case_table_names: int = 0,
    migrations: Mapping[str, Any] | None = None,
    unread: Collection[str] = (),
    schemas_read_at: Mapping[str, BinlogOffset] | None = None,
) -> Iterator[Transaction | SchemaChange | Heartbeat]:
    """Transactions from `start` (its file/position, or after its GTID set if `by_gtid`): up
    to `stop_at` if given, else following the binlog. With `captured`, a DDL on a captured
    table comes as a SchemaChange between the transactions around it (table names in it
    resolved as the server's `lower_case_table_names` says). `migrations`: gh-ost's and
    pt-osc's migrations in progress (the state's), to read their statements as the one
    schema change each makes; None: read them as any other statement. `unread`: tables a
    statement that could not be read changed (the state's), whose next table map tells how.
    `schemas_read_at`: where the schemas of tables read whole after `start` were read (a
    table that joined the capture): their DDL before there is in them already."""
    decoders = RowImageDecoders(schemas)
    watched = WatchedTables(schemas)
    stream = open_stream(
        endpoint,
        server_id,
        BinlogOffset(start.file, start.transaction or start.pos, 0, start.gtid),
        schemas,
        mariadb,
        blocking=stop_at is None,
        heartbeat_seconds=heartbeat_seconds if stop_at is None else None,
        extra_events=(XidEvent, QueryEvent, HeartbeatLogEvent, GtidEvent, MariadbGtidEvent, XAPrepareEvent),
        gtid_set=start.gtid if by_gtid else "",
        watched=watched,
    )
    # Without the GTID set at `start` (a MySQL file/position start), no set can be kept.
    gtids = gtid_state(start.gtid, mariadb) if start.gtid else None
    try:
        resume_after = start if start.transaction else None
        ddl = None
        if captured is not None:
            ddl = _DdlReader(
                captured, decoders, watched, mariadb, lower_case_table_names, endpoint, migrations, schemas_read_at
            )
            for table_id in unread:  # their statements were read before a restart
                ddl.wait_for_table_map(table_id, "")
        yield from _transactions(stream, decoders, watched, stop_at, gtids, resume_after, ddl)
    except pymysql.err.OperationalError as exc:
        where = f"after GTID set {start.gtid}" if by_gtid else f"from {start}"
        raise replication_error(exc, server_id, where) from exc
    finally:
        stream.close()


# How MariaDB and MySQL say, in a 1236 error, that the binlog a replica asks for was purged.
PURGED_SIGNS = ("purged", "Could not find first log file", "Could not find GTID state")


def replication_error(exc: pymysql.err.OperationalError, server_id: int, where: str) -> SourceError:
    """Names what to fix for the replication errors users meet."""
    code, message = (exc.args + ("",))[:2]
    if code == 4052:
        return SourceError(
            f"source.server-id: server id {server_id} is already used by another replica or pipeline "
            "reading this source; give each pipeline its own server-id range"
        )
    if code == 1236:
        purged = any(sign in message for sign in PURGED_SIGNS)
        return (PositionPurged if purged else SourceError)(
            f"the source cannot serve the binlog {where}: {message.rstrip('.')}; if the binlog was purged, restart the "
            "pipeline from a fresh snapshot (a new pipeline.name into an empty target), or raise the server's "
            "binlog retention"
        )
    return SourceUnavailable(f"binlog connection to the source failed: {message}")


def _transactions(
    stream,
    decoders: RowImageDecoders,
    watched: WatchedTables,
    stop_at,
    gtids: GtidState | None,
    resume_after: BinlogOffset | None,
    ddl: _DdlReader | None,
) -> Iterator[Transaction | SchemaChange | Heartbeat]:
    events: list[RowsEvent] = []
    pending_bytes = 0
    pending_gtid = ""  # the GTID of the transaction being read, executed once it ends
    began: int | None = None  # where the transaction being read begins (GTID or BEGIN event)
    pieced = False  # pieces of the transaction being read were given already
    touched: set[str] = set()  # the captured tables the transaction being read changed, pieces given or not
    # The transaction being read is one statement with no BEGIN or COMMIT (a DDL): MariaDB
    # flags its GTID so; after a MySQL GTID, a statement other than BEGIN is one.
    standalone = False

    def transaction_ended() -> None:
        nonlocal pending_gtid
        if gtids is not None and pending_gtid:
            gtids.add(pending_gtid)
        pending_gtid = ""

    def resume_point(pos: int) -> BinlogOffset:
        transaction_ended()
        return BinlogOffset(stream.log_file, pos, 0, str(gtids) if gtids is not None else "")

    def inside(pos: int) -> BinlogOffset:
        """At `pos` inside the transaction: the GTID set is the one before it."""
        gtid = str(gtids) if gtids is not None else ""
        return BinlogOffset(stream.log_file, pos, 0, gtid, began or 0)

    def first_row(start: BinlogOffset) -> int | None:
        """Resumed inside a transaction: None for an event committed already, else the
        first of its rows not committed."""
        nonlocal resume_after
        if resume_after is None or resume_after.is_before(start):
            resume_after = None
            return 0
        if start.is_before(BinlogOffset(resume_after.file, resume_after.pos)):
            return None
        first, resume_after = resume_after.row, None
        return first

    for event in stream:
        if isinstance(event, RotateEvent):
            continue
        if isinstance(event, (GtidEvent, MariadbGtidEvent)):
            transaction_ended()  # if the previous one had no XID or COMMIT (DDL), it ends here
            pending_gtid = event.gtid
            touched.clear()
            began = event_start(stream, event).pos
            pieced = resume_after is not None  # resumed inside it: its first pieces were committed
            standalone = isinstance(event, GtidEvent) or bool(event.flags & MARIADB_GTID_STANDALONE)
            continue
        if isinstance(event, HeartbeatLogEvent):
            if not events and began is None:
                yield Heartbeat(resume_point(event.packet.log_pos))
            continue
        start = event_start(stream, event)
        if stop_at is not None and not start.is_before(stop_at):
            return
        if isinstance(event, BinlogRowsEvent):
            first = first_row(start)
            relaid = ddl.table_map_change(event, start) if ddl is not None and first is not None else None
            if relaid is not None and began is not None and not pieced:
                # At the transaction's start, so that what is read again is read as of a
                # transaction's end; the transaction's rows come after it, all of them.
                at = BinlogOffset(stream.log_file, began, 0, str(gtids) if gtids is not None else "")
                yield dataclasses.replace(relaid, position=at, resume_at=at)
                decoders.evolve(relaid.events)
            elif relaid is not None:  # inside a transaction given in pieces: no range can be read as of there
                if events:
                    yield Transaction(events, inside(events[-1].end), event.timestamp)
                    events, pending_bytes = [], 0
                yield dataclasses.replace(relaid, resume_at=inside(start.pos), reread=())
                decoders.evolve(relaid.events)
            rows = rows_event(event, start, decoders, first) if first is not None else None
            if rows is None:
                continue
            events.append(rows)
            touched.add(rows.table_id)
            pending_bytes += len(rows.body)
            if pending_bytes >= PIECE_BYTES and began is not None:
                yield Transaction(events, inside(rows.end), event.timestamp)
                events, pending_bytes, pieced = [], 0, True
        elif isinstance(event, QueryEvent) and event.query.strip().upper() == "BEGIN":
            standalone = False
            if began is None:  # no GTID event: the transaction begins here
                began = start.pos
        elif isinstance(event, XAPrepareEvent):
            if touched:
                raise SourceError(
                    f"an XA transaction prepared at {start} changes {', '.join(sorted(touched))}: Sluice does not "
                    "follow XA transactions "
                    "(their rows count only at a later XA COMMIT, and not at all after an XA ROLLBACK); leave the "
                    "captured tables out of XA transactions, or the tables out of the pipeline"
                )
            yield Transaction(events, resume_point(event.packet.log_pos), event.timestamp)
            began, pieced = None, False
        elif isinstance(event, XidEvent) or (isinstance(event, QueryEvent) and event.query.strip().upper() == "COMMIT"):
            yield Transaction(events, resume_point(event.packet.log_pos), event.timestamp)
            events, pending_bytes, pieced = [], 0, False
            began = None
            touched.clear()
        elif isinstance(event, QueryEvent):
            change = ddl.schema_change(event, start) if ddl is not None else None
            if change is not None:
                yield dataclasses.replace(change, resume_at=resume_point(event.packet.log_pos))
                decoders.evolve(change.events)
                for event in change.events:  # the names its tables have from here on
                    if isinstance(event, CreateTable):
                        watched.add(event.table_id)
                    elif isinstance(event, RenameTable):
                        watched.add(event.new_table_id)
                began = None
            elif standalone and not events:
                # A statement of its own that changes no captured table: its transaction
                # ends with it, so the heartbeats after it carry the position on (else
                # they wait for the next transaction, and a quiet source never sends one).
                transaction_ended()
                began = None


_NOT_A_STEP = object()  # a statement that is no step of a migration tool's
_TOOL_TABLE = re.compile(r"\b_\w+_(?:gho|new|ghc|del|old)\b", re.IGNORECASE)


class _DdlReader:
    """Reads the DDL of QueryEvents against the reader's own schemas, and where a statement
    on a captured table cannot be read, the table maps of the tables it names."""

    def __init__(
        self,
        captured: Captured,
        decoders: RowImageDecoders,
        watched: WatchedTables,
        mariadb: bool,
        lower_case_table_names: int,
        endpoint: SourceEndpoint,
        migrations: Mapping[str, Any] | None,
        schemas_read_at: Mapping[str, BinlogOffset] | None,
    ) -> None:
        self.endpoint = endpoint  # to read how the server spells a table's columns now
        self._control: pymysql.connections.Connection | None = None
        self.captured = captured
        self.decoders = decoders
        self.watched = watched
        self.mariadb = mariadb
        self.lower_case_table_names = lower_case_table_names
        self.unread: dict[str, str] = {}  # table id: the statement its next table map explains
        self._maps: dict[str, object] = {}  # table id: the table map last compared
        # By the table migrated; None: scan.parse.online.schema.changes.enabled is off.
        self.migrations = None if migrations is None else {t: Migration.from_json(m) for t, m in migrations.items()}
        self.read_at = dict(schemas_read_at or {})  # table id: where its schema was read (see read_transactions)

    def wait_for_table_map(self, table_id: str, statement: str) -> None:
        """`statement` (that could not be read) changed the table: its next table map tells how."""
        self.unread[table_id] = statement
        self.watched.add(table_id)  # a table it creates: its rows tell its layout

    def schema_change(self, event: QueryEvent, start: BinlogOffset) -> SchemaChange | None:
        """The DDL in `event` (starting at `start`) as a SchemaChange, if it changes a
        captured table (resume_at unset). What the schemas already show is left out: a run
        started at an older position (earliest-offset, timestamp) reads the history of
        tables it found as they are now."""
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

    def table_map_change(self, event: BinlogRowsEvent, start: BinlogOffset) -> SchemaChange | None:
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
        schemas = apply_events(schemas, [event])
    return tuple(kept)
