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
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

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

from sluice.binlog.ddl.ddl_reader import DdlFollowing, DdlReader
from sluice.binlog.protocol.event_stream import BinlogEventStream, BinlogRowsEvent
from sluice.binlog.rows.event_reader import (
    Following,
    Replica,
    RowsEvent,
    WatchedTables,
    event_start,
    open_stream,
    rows_event,
)
from sluice.binlog.rows.row_image_decoder import RowImageDecoders
from sluice.errors import PositionPurged, SourceError, SourceUnavailable
from sluice.event.schema_change import (
    CreateTable,
    RenameTable,
    SchemaChange,
)
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
    """The server a reader reads, and how: as `replica`, up to `stop_at` if given (else
    following the binlog, with a heartbeat every `heartbeat_seconds` when idle)."""

    replica: Replica
    heartbeat_seconds: float = 1.0
    stop_at: BinlogOffset | None = None
    lower_case_table_names: int = 0  # how the server resolves table names in a DDL


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
    decoders = RowImageDecoders(schemas)
    watched = WatchedTables(schemas)
    following = Following(source.heartbeat_seconds, before_waiting) if source.stop_at is None else None
    at = BinlogOffset(start.file, start.transaction or start.pos, 0, start.gtid)
    stream = open_stream(source.replica, at, watched, following, _EVENTS, by_gtid)
    try:
        ddl = None
        if ddl_following is not None:
            ddl = DdlReader(ddl_following, decoders, watched, source.replica, source.lower_case_table_names)
        # Without the GTID set at `start` (a MySQL file/position start), no set can be kept.
        gtids = gtid_state(start.gtid, source.replica.mariadb) if start.gtid else None
        assembler = _TransactionAssembler(stream, decoders, watched, start, gtids, ddl)
        yield from assembler.follow(source.stop_at)
    except pymysql.err.OperationalError as exc:
        where = f"after GTID set {start.gtid}" if by_gtid else f"from {start}"
        raise replication_error(exc, source.replica.server_id, where) from exc
    finally:
        stream.close()


_EVENTS = (XidEvent, QueryEvent, HeartbeatLogEvent, GtidEvent, MariadbGtidEvent, XAPrepareEvent)


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


_Given = tuple[Transaction | SchemaChange, ...]  # what one event gives the reader's consumer


class _TransactionAssembler:
    """Follows a stream's events into transactions, keeping what the transaction being read
    has come to: its rows events, its GTID, where it began, whether pieces of it were given."""

    def __init__(
        self,
        stream: BinlogEventStream,
        decoders: RowImageDecoders,
        watched: WatchedTables,
        start: BinlogOffset,
        gtids: GtidState | None,
        ddl: DdlReader | None,
    ) -> None:
        self.stream, self.decoders, self.watched, self.ddl = stream, decoders, watched, ddl
        self.gtids = gtids  # executed so far; None: not kept
        self.resume_after: BinlogOffset | None = start if start.transaction else None
        self.events: list[RowsEvent] = []
        self.pending_bytes = 0
        self.pending_gtid = ""  # the GTID of the transaction being read, executed once it ends
        self.began: int | None = None  # where the transaction being read begins (GTID or BEGIN event)
        self.pieced = False  # pieces of the transaction being read were given already
        self.touched: set[str] = set()  # the captured tables it changed, pieces given or not
        # The transaction being read is one statement with no BEGIN or COMMIT (a DDL): MariaDB
        # flags its GTID so; after a MySQL GTID, a statement other than BEGIN is one.
        self.standalone = False

    def follow(self, stop_at: BinlogOffset | None) -> Iterator[Transaction | SchemaChange | Heartbeat]:
        stream = self.stream
        for event in stream:
            if isinstance(event, RotateEvent):
                continue
            if isinstance(event, (GtidEvent, MariadbGtidEvent)):
                self._gtid(event)
                continue
            if isinstance(event, HeartbeatLogEvent):
                if not self.events and self.began is None:
                    yield Heartbeat(self._resume_point(event.packet.log_pos))
                continue
            start = event_start(stream, event)
            if stop_at is not None and not start.is_before(stop_at):
                return
            if isinstance(event, BinlogRowsEvent):
                yield from self._rows(event, start)
            elif isinstance(event, XidEvent):
                yield self._committed(event)
            elif isinstance(event, XAPrepareEvent):
                yield self._xa_prepared(event, start)
            elif isinstance(event, QueryEvent):
                yield from self._statement(event, start)

    def _gtid(self, event: GtidEvent | MariadbGtidEvent) -> None:
        self._transaction_ended()  # if the previous one had no XID or COMMIT (DDL), it ends here
        self.pending_gtid = event.gtid
        self.touched.clear()
        self.began = event_start(self.stream, event).pos
        self.pieced = self.resume_after is not None  # resumed inside it: its first pieces were committed
        self.standalone = isinstance(event, GtidEvent) or bool(event.flags & MARIADB_GTID_STANDALONE)

    def _rows(self, event: BinlogRowsEvent, start: BinlogOffset) -> _Given:
        first = self._first_row(start)
        if first is None:
            return ()
        relaid = self.ddl.table_map_change(event, start) if self.ddl is not None else None
        given = self._relaid(relaid, start, event.timestamp) if relaid is not None else ()
        rows = rows_event(event, start, self.decoders, first)
        if rows is None:
            return given
        self.events.append(rows)
        self.touched.add(rows.table_id)
        self.pending_bytes += len(rows.body)
        if self.pending_bytes >= PIECE_BYTES and self.began is not None:
            piece = Transaction(self.events, self._inside(rows.end), event.timestamp, time.time())
            self.events, self.pending_bytes, self.pieced = [], 0, True
            return (*given, piece)
        return given

    def _relaid(self, relaid: SchemaChange, start: BinlogOffset, timestamp: int) -> _Given:
        """A table map that changed the table's layout, as the schema change it makes."""
        if self.began is not None and not self.pieced:
            # At the transaction's start, so that what is read again is read as of a
            # transaction's end; the transaction's rows come after it, all of them.
            at = BinlogOffset(self.stream.log_file, self.began, 0, self._gtid_text())
            self.decoders.evolve(relaid.events)
            return (dataclasses.replace(relaid, position=at, resume_at=at),)
        # Inside a transaction given in pieces: no range can be read as of there.
        given: _Given = ()
        if self.events:
            given = (Transaction(self.events, self._inside(self.events[-1].end), timestamp, time.time()),)
            self.events, self.pending_bytes = [], 0
        self.decoders.evolve(relaid.events)
        return (*given, dataclasses.replace(relaid, resume_at=self._inside(start.pos), reread=()))

    def _committed(self, event: XidEvent | QueryEvent) -> Transaction:
        transaction = Transaction(self.events, self._resume_point(event.packet.log_pos), event.timestamp, time.time())
        self.events, self.pending_bytes, self.pieced = [], 0, False
        self.began = None
        self.touched.clear()
        return transaction

    def _xa_prepared(self, event: XAPrepareEvent, start: BinlogOffset) -> Transaction:
        if self.touched:
            raise SourceError(
                f"an XA transaction prepared at {start} changes {', '.join(sorted(self.touched))}: Sluice does not "
                "follow XA transactions "
                "(their rows count only at a later XA COMMIT, and not at all after an XA ROLLBACK); leave the "
                "captured tables out of XA transactions, or the tables out of the pipeline"
            )
        transaction = Transaction(self.events, self._resume_point(event.packet.log_pos), event.timestamp, time.time())
        self.began, self.pieced = None, False
        return transaction

    def _statement(self, event: QueryEvent, start: BinlogOffset) -> _Given:
        query = event.query.strip().upper()
        if query == "BEGIN":
            self.standalone = False
            if self.began is None:  # no GTID event: the transaction begins here
                self.began = start.pos
            return ()
        if query == "COMMIT":
            return (self._committed(event),)
        change = self.ddl.schema_change(event, start) if self.ddl is not None else None
        if change is not None:
            given = dataclasses.replace(change, resume_at=self._resume_point(event.packet.log_pos))
            self.decoders.evolve(change.events)
            for changed in change.events:  # the names its tables have from here on
                if isinstance(changed, CreateTable):
                    self.watched.add(changed.table_id)
                elif isinstance(changed, RenameTable):
                    self.watched.add(changed.new_table_id)
            self.began = None
            return (given,)
        if self.standalone and not self.events:
            # A statement of its own that changes no captured table: its transaction
            # ends with it, so the heartbeats after it carry the position on (else
            # they wait for the next transaction, and a quiet source never sends one).
            self._transaction_ended()
            self.began = None
        return ()

    def _transaction_ended(self) -> None:
        if self.gtids is not None and self.pending_gtid:
            self.gtids.add(self.pending_gtid)
        self.pending_gtid = ""

    def _gtid_text(self) -> str:
        return str(self.gtids) if self.gtids is not None else ""

    def _resume_point(self, pos: int) -> BinlogOffset:
        self._transaction_ended()
        return BinlogOffset(self.stream.log_file, pos, 0, self._gtid_text())

    def _inside(self, pos: int) -> BinlogOffset:
        """At `pos` inside the transaction: the GTID set is the one before it."""
        return BinlogOffset(self.stream.log_file, pos, 0, self._gtid_text(), self.began or 0)

    def _first_row(self, start: BinlogOffset) -> int | None:
        """Resumed inside a transaction: None for an event committed already, else the
        first of its rows not committed."""
        resume_after = self.resume_after
        if resume_after is None or resume_after.is_before(start):
            self.resume_after = None
            return 0
        if start.is_before(BinlogOffset(resume_after.file, resume_after.pos)):
            return None
        self.resume_after = None
        return resume_after.row
