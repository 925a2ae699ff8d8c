"""Reads row changes for captured tables from the binlog with python-mysql-replication.

Used both for a split's backfill window [low watermark, high watermark) and for the
binlog split. Only captured tables are decoded; other tables' row events are skipped
before their rows are parsed.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterator, Mapping

from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.event import RotateEvent
from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

from sluice.binlog.row_image_decoder import RowImageDecoders
from sluice.errors import SourceError
from sluice.event.row_change import RowChange, RowKind
from sluice.source.connection import SourceEndpoint
from sluice.source.offset import BinlogOffset
from sluice.source.schema import TableSchema

log = logging.getLogger(__name__)

ROW_EVENTS = (WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent)


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


def open_stream(
    endpoint: SourceEndpoint,
    server_id: int,
    start: BinlogOffset,
    schemas: Mapping[str, TableSchema],
    mariadb: bool,
    blocking: bool,
    heartbeat_seconds: float | None = None,
    extra_events: tuple[type, ...] = (),
    gtid_set: str = "",
    watched: WatchedTables | None = None,
) -> BinLogStreamReader:
    """A stream from `start` (file/position), or from just after `gtid_set` when given."""
    watched = watched or WatchedTables(schemas)
    if gtid_set:
        where = {"auto_position": gtid_set, "is_mariadb": mariadb}
    else:
        # python-mysql-replication 1.0.17 ignores log_file/log_pos in its MariaDB dump
        # command (it starts from the oldest binlog); MariaDB also serves the classic
        # file/position dump, so that is what a file/position start sends.
        where = {"log_file": start.file, "log_pos": start.pos, "resume_stream": True, "is_mariadb": False}
    return BinLogStreamReader(
        connection_settings=endpoint.settings(),
        server_id=server_id,
        blocking=blocking,
        only_events=[*ROW_EVENTS, RotateEvent, *extra_events],
        only_schemas=watched.databases,
        only_tables=watched.tables,
        slave_heartbeat=heartbeat_seconds,
        enable_logging=False,
        # Parse a table id's table map once, not once per transaction (it costs more than a
        # small transaction's rows): every ALTER, even of a column default, gives the table
        # a new id, and the library forgets all ids at each binlog rotation, which a server
        # restart (the one time ids are reused) always brings.
        freeze_schema=True,
        **where,
    )


def event_start(stream: BinLogStreamReader, event: object) -> BinlogOffset:
    """Where an event begins in its binlog file. (`event.event_size` leaves out the header
    and checksum; the packet's size is the whole event.)"""
    packet = event.packet  # type: ignore[attr-defined]
    return BinlogOffset(stream.log_file, packet.log_pos - packet.event_size)


def row_changes(stream: BinLogStreamReader, event: object, decoders: RowImageDecoders) -> list[RowChange]:
    """The row changes of one rows event, if it belongs to a captured table."""
    table_id = f"{event.schema}.{event.table}"  # type: ignore[attr-defined]
    decoder = decoders.for_table(table_id, event.table_map[event.table_id])  # type: ignore[attr-defined]
    if decoder is None:
        return []
    start = event_start(stream, event)
    timestamp = event.timestamp  # type: ignore[attr-defined]
    packet = event.packet  # type: ignore[attr-defined]
    body = packet.read(event.event_size - packet.read_bytes)  # type: ignore[attr-defined]
    update = isinstance(event, UpdateRowsEvent)
    present = [event.columns_present_bitmap]  # type: ignore[attr-defined]
    if update:
        present.append(event.columns_present_bitmap2)  # type: ignore[attr-defined]
    try:
        images = decoder.images(body, present)
    except (ValueError, IndexError, struct.error) as exc:
        raise SourceError(f"cannot decode the rows event of {table_id} at binlog position {start}: {exc}") from exc
    file, pos = start.file, start.pos
    if update:
        return [
            RowChange(
                table_id, RowKind.UPDATE_AFTER, images[i], images[i + 1], BinlogOffset(file, pos, i // 2), timestamp
            )
            for i in range(0, len(images), 2)
        ]
    if isinstance(event, WriteRowsEvent):
        return [
            RowChange(table_id, RowKind.INSERT, None, row, BinlogOffset(file, pos, i), timestamp)
            for i, row in enumerate(images)
        ]
    return [
        RowChange(table_id, RowKind.DELETE, row, None, BinlogOffset(file, pos, i), timestamp)
        for i, row in enumerate(images)
    ]


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
    stream = open_stream(endpoint, server_id, start, schemas, mariadb, blocking=False)
    try:
        for event in stream:
            if isinstance(event, RotateEvent):
                continue  # its position belongs to the file it closes, not the one it opens
            if not event_start(stream, event).is_before(stop):
                return
            if isinstance(event, ROW_EVENTS):
                yield from row_changes(stream, event, decoders)
    finally:
        stream.close()
