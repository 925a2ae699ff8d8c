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
import time
from collections.abc import Callable, Collection, Iterator, Mapping
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

from sluice.binlog.ddl.ddl_context import Captured
from sluice.binlog.ddl.ddl_reader import DdlReader, SchemaChange
from sluice.binlog.protocol.event_stream import BinlogRowsEvent
from sluice.binlog.rows.event_reader import RowsEvent, WatchedTables, event_start, open_stream, rows_event
from sluice.binlog.rows.row_image_decoder import RowImageDecoders
from sluice.errors import PositionPurged, SourceError, SourceUnavailable
from sluice.event.schema_change import (
    CreateTable,
    RenameTable,
)
from sluice.source.endpoint import SourceEndpoint
from sluice.source.gtid_state import GtidState, gtid_state
from sluice.source.offset import BinlogOffset
from sluice.source.schema import TableSchema

MARIADB_GTID_STANDALONE = 1  # a MariaDB GTID event's flag: the group is one statement, no BEGIN or COMMIT
PIECE_BYTES = 128 * 1024  # of row images: about a thousand rows of a narrow table


@dataclass(frozen=True)
class Transaction:
    """A whole transaction, or a piece of one (`end` is then inside it)."""

    events: list[RowsEvent]
    end: BinlogOffset  # where reading resumes after these changes
    timestamp: int  # the server's, whole seconds
    received: float = 0.0  # when the reader had read it (time.time()): the lag's finer clock

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
class Heartbeat:
    """The server had nothing more to send: everything before `end` has been read."""

    end: BinlogOffset


@dataclass(frozen=True)
class BinlogSource:
    """The server a reader reads, and how: as replica `server_id`, up to `stop_at` if given
    (else following the binlog, with a heartbeat every `heartbeat_seconds` when idle)."""

    endpoint: SourceEndpoint
    server_id: int
    mariadb: bool
    heartbeat_seconds: float = 1.0
    stop_at: BinlogOffset | None = None
    lower_case_table_names: int = 0  # how the server resolves table names in a DDL


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


def read_transactions(
    source: BinlogSource,
    start: BinlogOffset,
    schemas: Mapping[str, TableSchema],
    by_gtid: bool = False,
    ddl_following: DdlFollowing | None = None,
    before_waiting: Callable[[], None] | None = None,
) -> Iterator[Transaction | SchemaChange | Heartbeat]:
    """Transactions from `start` (its file/position, or after its GTID set if `by_gtid`),
    and DDL where `ddl_following` says. `before_waiting`: called before the stream waits
    for the server (a reader handing on what it read in batches hands on what it holds)."""
    endpoint, server_id, mariadb, stop_at = source.endpoint, source.server_id, source.mariadb, source.stop_at
    decoders = RowImageDecoders(schemas)
    watched = WatchedTables(schemas)
    stream = open_stream(
        endpoint,
        server_id,
        BinlogOffset(start.file, start.transaction or start.pos, 0, start.gtid),
        schemas,
        mariadb,
        blocking=stop_at is None,
        heartbeat_seconds=source.heartbeat_seconds if stop_at is None else None,
        extra_events=(XidEvent, QueryEvent, HeartbeatLogEvent, GtidEvent, MariadbGtidEvent, XAPrepareEvent),
        gtid_set=start.gtid if by_gtid else "",
        watched=watched,
        before_waiting=before_waiting,
    )
    # Without the GTID set at `start` (a MySQL file/position start), no set can be kept.
    gtids = gtid_state(start.gtid, mariadb) if start.gtid else None
    try:
        resume_after = start if start.transaction else None
        ddl = None
        if ddl_following is not None:
            follow = ddl_following
            ddl = DdlReader(
                follow.captured,
                decoders,
                watched,
                mariadb,
                source.lower_case_table_names,
                endpoint,
                follow.migrations,
                follow.schemas_read_at,
            )
            for table_id in follow.unread:  # their statements were read before a restart
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
    ddl: DdlReader | None,
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
                    yield Transaction(events, inside(events[-1].end), event.timestamp, time.time())
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
                yield Transaction(events, inside(rows.end), event.timestamp, time.time())
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
            yield Transaction(events, resume_point(event.packet.log_pos), event.timestamp, time.time())
            began, pieced = None, False
        elif isinstance(event, XidEvent) or (isinstance(event, QueryEvent) and event.query.strip().upper() == "COMMIT"):
            yield Transaction(events, resume_point(event.packet.log_pos), event.timestamp, time.time())
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
