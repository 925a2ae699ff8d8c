"""Reads row changes for captured tables from the binlog with python-mysql-replication.

Used both for a split's backfill window [low watermark, high watermark) and for the
binlog split. Only captured tables are decoded; other tables' row events are skipped
before their rows are parsed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from pymysqlreplication.event import RotateEvent

from sluice.binlog.protocol.event_stream import ROW_EVENTS, BinlogEventStream, BinlogRowsEvent
from sluice.binlog.rows.row_image_decoder import RowImageDecoder, RowImageDecoders, changelog_rows
from sluice.binlog.rows.system_versioning import current_changes
from sluice.errors import SourceError
from sluice.event.row_change import ChangeRow, RowChange, RowKind
from sluice.source.endpoint import SourceEndpoint
from sluice.source.offset import BinlogOffset
from sluice.source.row_decoding import Row
from sluice.source.schema import TableSchema

log = logging.getLogger(__name__)


class WatchedTables:
    """The databases and table names whose rows events the stream parses (others it skips
    unread). The stream keeps these very lists, so a table that joins the capture (a CREATE
    TABLE matching `tables`) is watched from the next event on."""

    def __init__(self, schemas: Mapping[str, TableSchema]) -> None:
        self.databases = sorted({s.database for s in schemas.values()})
        self.tables = sorted({s.table for s in schemas.values()})

    def add(self, table_id: str) -> None:
        database, table = table_id.split(".", 1)
        for names, name in ((self.databases, database), (self.tables, table)):
            if name not in names:
                names.append(name)


@dataclass(frozen=True)
class Replica:
    """Whom a stream reads, as which replica."""

    endpoint: SourceEndpoint
    server_id: int
    mariadb: bool


@dataclass(frozen=True)
class Following:
    """A stream that follows the binlog past the server's end, waiting for more: a
    heartbeat every `heartbeat_seconds` while the server is idle, `before_waiting` called
    before a read that would wait (a reader handing on what it read in batches)."""

    heartbeat_seconds: float | None = None
    before_waiting: Callable[[], None] | None = None


def open_stream(
    replica: Replica,
    start: BinlogOffset,
    watched: WatchedTables,
    following: Following | None = None,
    extra_events: tuple[type, ...] = (),
    by_gtid: bool = False,
) -> BinlogEventStream:
    """A stream from `start` (file/position), or from just after its GTID set `by_gtid`,
    to the server's end, or on if `following`."""
    if by_gtid:
        where = {"auto_position": start.gtid, "is_mariadb": replica.mariadb}
    else:
        # python-mysql-replication 1.0.17 ignores log_file/log_pos in its MariaDB dump
        # command (it starts from the oldest binlog); MariaDB also serves the classic
        # file/position dump, so that is what a file/position start sends.
        where = {"log_file": start.file, "log_pos": start.pos, "resume_stream": True, "is_mariadb": False}
    return BinlogEventStream(
        before_waiting=following.before_waiting if following else None,
        connection_settings=replica.endpoint.settings(),
        server_id=replica.server_id,
        blocking=following is not None,
        only_events=[*ROW_EVENTS, RotateEvent, *extra_events],
        only_schemas=watched.databases,
        only_tables=watched.tables,
        slave_heartbeat=following.heartbeat_seconds if following else None,
        # The stream freezes table maps: a table id's is read once, not once per transaction
        # (it costs more than a small transaction's rows). Every ALTER, even of a column
        # default, gives the table a new id, and the library forgets all ids at each binlog
        # rotation, which a server restart (the one time ids are reused) always brings.
        enable_logging=False,
        **where,
    )


def event_start(stream: BinlogEventStream, event: object) -> BinlogOffset:
    """Where an event begins in its binlog file."""
    # Made as a tuple: a named tuple's own constructor is a Python call, three a transaction.
    return tuple.__new__(BinlogOffset, (stream.log_file, stream.event_start(event.packet), 0, "", 0))  # type: ignore[attr-defined]


class RowsEvent(NamedTuple):
    """A captured table's rows event with its rows still bytes: reading the binlog and
    decoding rows can happen in different processes, and bytes are cheap to move.
    `start` is where the event begins and `end` where the next one does; rows before
    `first_row` were committed already (a run resumed inside this event)."""

    table_id: str
    kind: RowKind  # INSERT, UPDATE_AFTER or DELETE, for every row of the event
    decoder: RowImageDecoder
    body: bytes
    present: tuple[bytes, ...]  # the images' column bitmaps (two for an update)
    start: BinlogOffset
    end: int
    first_row: int
    timestamp: int

    @property
    def is_partial(self) -> bool:
        """Whether its images leave columns out (binlog_row_image MINIMAL or NOBLOB)."""
        return self.present not in self.decoder.whole and bool(self.decoder.left_out(self.present))

    def changes(self) -> list[RowChange]:
        """The rows as changes, for the emit rule to judge against the watermarks."""
        images, first = self._images(), self.first_row
        if self.decoder.row_end is not None:  # a system-versioned table: changes of its current rows
            width = len(self.decoder.schema.columns)
            return [
                RowChange(self.table_id, kind, before, after, BinlogOffset(*self.start[:2], i), self.timestamp)
                for i, kind, before, after in current_changes(self.kind, images, self.decoder.row_end, width)
                if i >= first
            ]
        if self.kind is RowKind.UPDATE_AFTER:
            befores, afters = images[0::2], images[1::2]
        elif self.kind is RowKind.INSERT:
            befores, afters = [None] * len(images), images
        else:
            befores, afters = images, [None] * len(images)
        table_id, kind, timestamp, file, pos = self.table_id, self.kind, self.timestamp, *self.start[:2]
        # Tuples made as tuples: a named tuple's own constructor is a Python call.
        new, change, offset = tuple.__new__, RowChange, BinlogOffset
        return [
            new(change, (table_id, kind, befores[i], afters[i], new(offset, (file, pos, i, "", 0)), timestamp))
            for i in range(first, len(afters))
        ]

    def changelog(self, schema: TableSchema, before_only: frozenset[int] | None = None) -> list[ChangeRow]:
        """Every row as changelog rows, straight from the images: what the emit rule gives
        once the table is past its snapshot's watermarks. `before_only`: the slots an
        update's before image (-U) needs to hold (its row key's, for a target that writes
        rows by key), or None for all."""
        if self.decoder.row_end is not None:
            return [row for change in self.changes() for row in change.changelog(schema)]
        if self.kind is RowKind.UPDATE_AFTER:  # images alternate before (-U) and after (+U)
            kinds: tuple[RowKind, ...] = (RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER)
        else:  # +I of the after images, or -D of the before images
            kinds = (self.kind,)
        return changelog_rows(self._images(before_only), self.first_row, schema, kinds, self.timestamp, self.start)

    def _images(self, before_only: frozenset[int] | None = None) -> list[Row]:
        try:
            return self.decoder.images(self.body, self.present, before_only)
        except Exception as exc:  # whatever bytes MySQL never writes raise, the pipeline stops here
            raise undecodable(self.table_id, self.start, exc) from exc


_STATEMENT = {RowKind.INSERT: "insert", RowKind.UPDATE_AFTER: "update", RowKind.DELETE: "delete"}


def rows_event(
    event: BinlogRowsEvent, start: BinlogOffset, decoders: RowImageDecoders, first_row: int = 0
) -> RowsEvent | None:
    """The rows event starting at `start`, undecoded, if it belongs to a captured table."""
    table_id = event.table_id
    try:
        decoder = decoders.for_table(table_id, event.table)
    except ValueError as exc:  # a table map MySQL never writes
        raise undecodable(table_id, start, exc) from exc
    if decoder is None:
        return None
    end, timestamp = event.packet.log_pos, event.timestamp
    return RowsEvent(table_id, event.kind, decoder, event.body, event.present, start, end, first_row, timestamp)


def undecodable(table_id: str, start: BinlogOffset, exc: BaseException) -> SourceError:
    """The stop for a rows event whose bytes are none MySQL writes (a flipped bit on disk or
    in a proxy): naming the table, the position and, in `exc`, the column."""
    why = f"{type(exc).__name__}: {exc}" if not isinstance(exc, ValueError) else str(exc)
    return SourceError(
        f"cannot decode the rows event of {table_id} at binlog position {start}: {why}; the binlog there is corrupt "
        "or was written by a server Sluice does not know: check the source's binlog (mariadb-binlog or mysqlbinlog "
        "at that position)"
    )


def partial_images_stop(event: RowsEvent, why: str) -> SourceError:
    """The stop for a rows event whose images leave columns out, where they cannot be read
    from the source by key (`why`)."""
    return SourceError(
        f"the {_STATEMENT[event.kind]} rows event of {event.table_id} at binlog position {event.start} leaves out "
        f"{', '.join(event.decoder.left_out(event.present))}: the session that wrote it had binlog_row_image "
        f"MINIMAL or NOBLOB (SET SESSION binlog_row_image), and {why}. Keep binlog_row_image=FULL in every session "
        "that writes this table; this event's changes cannot be read from the binlog, so run the pipeline again "
        "from a fresh snapshot (a new pipeline.name into an empty target)"
    )


def read_window(
    endpoint: SourceEndpoint,
    server_id: int,
    start: BinlogOffset,
    stop: BinlogOffset,
    schemas: Mapping[str, TableSchema],
    mariadb: bool,
) -> Iterator[RowChange]:
    """Row changes of the given tables in [start, stop): a split's backfill window."""
    decoders = RowImageDecoders(schemas)
    stream = open_stream(Replica(endpoint, server_id, mariadb), start, WatchedTables(schemas))
    try:
        for event in stream:
            if isinstance(event, RotateEvent):
                continue  # its position belongs to the file it closes, not the one it opens
            start = event_start(stream, event)
            if not start.is_before(stop):
                return
            if isinstance(event, BinlogRowsEvent) and (rows := rows_event(event, start, decoders)) is not None:
                yield from window_changes(rows)
    finally:
        stream.close()


def window_changes(rows: RowsEvent) -> list[RowChange]:
    """A rows event's changes, folded onto a range: every column is needed."""
    if rows.is_partial:
        raise partial_images_stop(rows, "a window of changes folded onto a range needs every column")
    return rows.changes()
