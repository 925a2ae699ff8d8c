"""Verification's binlog windows: row changes of the verified tables in windows that only
move forward, all read on one replication connection (the ranges' windows start at the
target's committed position, which never moves back)."""

from __future__ import annotations

from collections.abc import Mapping

from pymysqlreplication.event import HeartbeatLogEvent, QueryEvent, RotateEvent, XidEvent

from sluice.binlog.protocol.event_stream import BinlogEventStream, BinlogRowsEvent
from sluice.binlog.rows.event_reader import (
    Following,
    Replica,
    RowsEvent,
    WatchedTables,
    event_start,
    open_stream,
    rows_event,
    window_changes,
)
from sluice.binlog.rows.row_image_decoder import RowImageDecoders
from sluice.errors import SourceError
from sluice.event.row_change import RowChange
from sluice.source.endpoint import SourceEndpoint
from sluice.source.offset import BinlogOffset
from sluice.source.schema import TableSchema


class ForwardWindows:
    """Row changes of the given tables in windows [start, stop) that only move forward, all
    read on one replication connection: verification's, whose ranges' windows start at the
    target's committed position, which never moves back. What one window read past the
    next one's start is kept for it.

    The stream blocks at the binlog's end. A window ends at the first event at or past its
    stop; where none comes (the source went quiet), at a heartbeat that says the server
    has sent everything up to it (other tables' events are passed over unseen, so each
    transaction's end, XID or COMMIT, is read to see the position move)."""

    def __init__(
        self,
        endpoint: SourceEndpoint,
        server_id: int,
        schemas: Mapping[str, TableSchema],
        mariadb: bool,
        heartbeat_seconds: float = 0.5,
    ) -> None:
        self._endpoint, self._server_id, self._schemas, self._mariadb = endpoint, server_id, schemas, mariadb
        self._heartbeat = heartbeat_seconds
        self._decoders = RowImageDecoders(schemas)
        self._stream: BinlogEventStream | None = None
        self._began = self._reached = BinlogOffset("", 0)  # the stream's start; everything before reached is read
        self._read: list[RowsEvent] = []  # captured tables' rows events read, undecoded until a window asks

    def window(self, start: BinlogOffset, stop: BinlogOffset, table_id: str) -> list[RowChange]:
        """The table's row changes in [start, stop)."""
        if self._stream is None or start.is_before(self._began):
            self._open(start)
        stream = self._stream
        assert stream is not None
        while self._reached.is_before(stop):
            event = stream.fetchone()
            if event is None:
                raise SourceError(f"the binlog stream ended at {self._reached}, before {stop}")
            if isinstance(event, RotateEvent):
                continue  # its position belongs to the file it closes
            end = BinlogOffset(stream.log_file, event.packet.log_pos)
            # A heartbeat says the server is idle: every event up to it was sent.
            if isinstance(event, BinlogRowsEvent):
                rows = rows_event(event, event_start(stream, event), self._decoders)
                if rows is not None:
                    self._read.append(rows)
            self._reached = max(self._reached, end)
        # What this call read from where the last window stopped may begin before `start` too.
        self._read = [rows for rows in self._read if not rows.start.is_before(start)]
        inside = [rows for rows in self._read if rows.table_id == table_id and rows.start.is_before(stop)]
        return [change for rows in inside for change in window_changes(rows)]

    def _open(self, start: BinlogOffset) -> None:
        self.close()
        self._stream = open_stream(
            Replica(self._endpoint, self._server_id, self._mariadb),
            start,
            WatchedTables(self._schemas),
            Following(self._heartbeat),
            extra_events=(HeartbeatLogEvent, XidEvent, QueryEvent),
        )
        self._began = self._reached = BinlogOffset(start.file, start.pos)
        self._read = []

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None
