"""Reads row changes for captured tables from the binlog with python-mysql-replication.

Used both for a split's backfill window [low watermark, high watermark) and for the
binlog split. Only captured tables are decoded; other tables' row events are skipped
before their rows are parsed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping

from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.event import RotateEvent
from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

from sluice.binlog.row_change import RowChange, RowKind
from sluice.source.connection import SourceEndpoint
from sluice.source.offset import BinlogOffset
from sluice.source.row_decoding import RowDecoder
from sluice.source.schema import TableSchema

log = logging.getLogger(__name__)

ROW_EVENTS = (WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent)


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
) -> BinLogStreamReader:
    """A stream from `start` (file/position), or from just after `gtid_set` when given."""
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
        only_schemas=sorted({s.database for s in schemas.values()}),
        only_tables=sorted({s.table for s in schemas.values()}),
        slave_heartbeat=heartbeat_seconds,
        enable_logging=False,
        **where,
    )


def event_start(stream: BinLogStreamReader, event: object) -> BinlogOffset:
    """Where an event begins in its binlog file. (`event.event_size` leaves out the header
    and checksum; the packet's size is the whole event.)"""
    packet = event.packet  # type: ignore[attr-defined]
    return BinlogOffset(stream.log_file, packet.log_pos - packet.event_size)


def row_changes(stream: BinLogStreamReader, event: object, decoders: Mapping[str, RowDecoder]) -> Iterator[RowChange]:
    """The row changes of one rows event, if it belongs to a captured table."""
    table_id = f"{event.schema}.{event.table}"  # type: ignore[attr-defined]
    decoder = decoders.get(table_id)
    if decoder is None:
        return
    start = event_start(stream, event)
    timestamp = event.timestamp  # type: ignore[attr-defined]
    for index, row in enumerate(event.rows):  # type: ignore[attr-defined]
        offset = BinlogOffset(start.file, start.pos, index)
        if isinstance(event, WriteRowsEvent):
            after = decoder.from_binlog(row["values"], row["none_sources"])
            yield RowChange(table_id, RowKind.INSERT, None, after, offset, timestamp)
        elif isinstance(event, DeleteRowsEvent):
            before = decoder.from_binlog(row["values"], row["none_sources"])
            yield RowChange(table_id, RowKind.DELETE, before, None, offset, timestamp)
        else:
            yield RowChange(
                table_id,
                RowKind.UPDATE_AFTER,
                decoder.from_binlog(row["before_values"], row["before_none_sources"]),
                decoder.from_binlog(row["after_values"], row["after_none_sources"]),
                offset,
                timestamp,
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
    decoders = {table_id: RowDecoder(schema) for table_id, schema in schemas.items()}
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
