"""The binlog's events, read off python-mysql-replication's replication connection.

The library builds a generic event object for every event, and for a small transaction
that costs more than its rows: measured on a one-row transaction, its GTID, table map,
rows and XID events took 29 of the reader's 47 µs. So the events every transaction has
are parsed here from the packet's bytes: a MariaDB GTID, an XID, rows events, and the
table map of a table already mapped (the stream freezes table maps: nothing to read).
Every other event goes through the library as before: connecting, rotations, format
descriptions, new table maps, DDL, heartbeats and reconnects after a lost connection.
A packet this module does not parse is handed back to the connection, and the library
reads it from there as if it came off the wire.

Rows events come out as `BinlogRowsEvent`s whichever way they were read, rows still bytes.

Those four are parsed in C (_event_parse.c, built by `make install` and into the image)
where it is built: the Python parsers here are the reference the tests hold it to, and
they read whatever packet it leaves to them (a new table map, a table with compressed
columns, a packet shorter than its fields).
"""

from __future__ import annotations

import collections
import errno
import select
import struct
from collections.abc import Callable
from typing import Any, NamedTuple

import pymysql
from pymysql.connections import MAX_PACKET_LEN
from pymysql.constants.CR import CR_SERVER_LOST
from pymysql.protocol import MysqlPacket
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.constants import FIELD_TYPE
from pymysqlreplication.event import BinLogEvent, GtidEvent, MariadbGtidEvent, XidEvent
from pymysqlreplication.packet import BinLogPacketWrapper
from pymysqlreplication.row_event import DeleteRowsEvent, TableMapEvent, UpdateRowsEvent, WriteRowsEvent
from pymysqlreplication.table import Table

from sluice.binlog.protocol.binlog_format import BinlogFormat, table_id
from sluice.binlog.protocol.event_types import AS_SENT
from sluice.binlog.protocol.packet_bytes import length_coded
from sluice.binlog.protocol.packet_frames import frames
from sluice.binlog.protocol.tagged_gtids import (
    COM_BINLOG_DUMP_GTID,
    GTID_TAGGED_LOG_EVENT,
    TaggedGtidError,
    tagged_dump,
    tagged_gtid,
    with_gtid_set,
)
from sluice.errors import SourceError
from sluice.event.row_change import RowKind
from sluice.source.connection import SharedTlsConnection
from sluice.source.server_flavour import server_flavour

try:
    from sluice.binlog.protocol import _event_parse
except ImportError:  # a source tree nobody built: the Python parsers read every event
    _event_parse = None  # type: ignore[assignment]

ROW_EVENTS = (WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent)
_HEADER = struct.Struct("<IBIIIH")  # timestamp, type, server id, event size, next position, flags
_BODY = 1 + _HEADER.size  # a packet is an OK byte, the event's header, its body (and a checksum)
_XID, _MARIADB_GTID, _TABLE_MAP = 0x10, 0xA2, 0x13
READ_SIZE = 1 << 16  # bytes read off the replication connection at a time, at least
_ROWS = {  # event type: (kind, the library's class, version 2)
    0x17: (RowKind.INSERT, WriteRowsEvent, False),
    0x18: (RowKind.UPDATE_AFTER, UpdateRowsEvent, False),
    0x19: (RowKind.DELETE, DeleteRowsEvent, False),
    0x1E: (RowKind.INSERT, WriteRowsEvent, True),
    0x1F: (RowKind.UPDATE_AFTER, UpdateRowsEvent, True),
    0x20: (RowKind.DELETE, DeleteRowsEvent, True),
}


class EventHeader(NamedTuple):
    """The header fields the readers use, named as the library's packet names them, so an
    event of either origin answers `event.packet.log_pos`."""

    timestamp: int
    server_id: int
    event_size: int  # the whole event: header, body and checksum
    log_pos: int  # where the next event begins


class BinlogRowsEvent(NamedTuple):
    """A rows event with its rows undecoded: `present` holds the images' column bitmaps
    (two for an update) and `body` the images."""

    kind: RowKind  # INSERT, UPDATE_AFTER or DELETE, for every row
    table: Table  # the table map in force
    body: bytes
    present: tuple[bytes, ...]
    packet: EventHeader

    @property
    def table_id(self) -> str:
        return f"{self.table.schema}.{self.table.table}"

    @property
    def timestamp(self) -> int:
        return self.packet.timestamp


class ParsedXid(XidEvent):
    """An XID event parsed here. The library's class, for `isinstance`; its constructor
    is the cost this module saves, so it is not called."""

    def __init__(self, header: EventHeader, xid: int) -> None:
        self.packet, self.timestamp, self.xid = header, header.timestamp, xid


class ParsedMariadbGtid(MariadbGtidEvent):
    """A MariaDB GTID event parsed here (see ParsedXid)."""

    def __init__(self, header: EventHeader, gtid: str, flags: int) -> None:
        self.packet, self.timestamp, self.gtid, self.flags = header, header.timestamp, gtid, flags


class TaggedGtidEvent(GtidEvent):
    """A MySQL 8.3+ tagged GTID event (type 42). Its gtid reads `uuid:tag:number`, as MySQL
    prints one. The library has no reader for the type and drops what it cannot read: it
    is given this one (registered below), for the events it reads itself (those right after
    a connection), and the stream's own parser makes the same (tagged())."""

    gtid = ""  # the library's is a property of the event it parsed

    def __init__(self, from_packet: Any, event_size: int, *args: Any, **kwargs: Any) -> None:
        BinLogEvent.__init__(self, from_packet, event_size, *args, **kwargs)
        self.gtid = _tagged_text(self.packet.read(event_size), "")

    @classmethod
    def tagged(cls, header: EventHeader, gtid: str) -> TaggedGtidEvent:
        event = cls.__new__(cls)
        event.packet, event.timestamp, event.gtid = header, header.timestamp, gtid
        return event


def _tagged_text(body: bytes, where: str) -> str:
    try:
        sid, tag, number = tagged_gtid(body)
    except TaggedGtidError as exc:
        raise SourceError(f"cannot read the tagged GTID event{where}: {exc}") from exc
    return f"{sid}:{tag}:{number}"


BinLogPacketWrapper._BinLogPacketWrapper__event_map[GTID_TAGGED_LOG_EVENT] = TaggedGtidEvent  # type: ignore[attr-defined]


class PushbackConnection(SharedTlsConnection):
    """A replication connection that takes back the packet (or the error) just read from
    it, and gives it again at the next read. On the stream's connection every packet read
    is made readable first (binlog/protocol/binlog_format.py), but those taken as sent (most), and
    packets are cut from reads of up to 64 KB (binlog/protocol/packet_frames.py): pymysql reads a
    packet's four header bytes, then its payload, and makes an object of it, which cost
    more than a one-row transaction's events themselves.

    read_payload gives what was pushed back, then what a payload unpacked to (`_unread`),
    then the packets cut from the last read (`_framed`). BinlogEventStream.fetchone takes the
    next of `_framed` itself when neither of the others holds one, if the compiled parser
    reads it as it is: a known table id's map, which readable() would only rewrite, then
    goes unread, as the stream keeps the first map of a table id (frozen) anyway."""

    _pushed: bytes | Exception | None = None
    _unread: collections.deque[bytes] | None = None  # made from one read off the wire (a payload's)
    _read: bytes = b""  # read off the wire, from `_at` on not yet a packet's
    _at: int = 0
    _framed: list[bytes] | None = None  # payloads cut from `_read` and not read yet, the next last
    binlog: BinlogFormat | None = None  # set on the stream's connection, at the handshake
    # Called before a read that would wait for the server: a reader handing on what it read
    # in batches hands on what it holds (the stream sets its own, see BinlogEventStream).
    before_waiting: Callable[[], None] | None = None

    # The GTID set of a dump request, encoded here where it has tags (see tagged_dump).
    gtid_dump: bytes | None = None

    def push_back(self, item: bytes | Exception) -> None:
        self._pushed = item

    def _write_bytes(self, data: bytes) -> None:
        if self.gtid_dump is not None and len(data) > 4 and data[4] == COM_BINLOG_DUMP_GTID:
            data = with_gtid_set(data, self.gtid_dump)
        super()._write_bytes(data)

    def _read_packet(self, packet_type: type = MysqlPacket) -> MysqlPacket:
        if self.binlog is None:
            return super()._read_packet(packet_type)
        return packet_type(self.read_payload(), self.encoding)

    def read_payload(self) -> bytes:
        """The next packet's bytes on the stream's connection, made readable."""
        pushed, self._pushed = self._pushed, None
        if pushed is not None:
            if isinstance(pushed, Exception):
                raise pushed
            return pushed
        if self._unread:
            return self._unread.popleft()
        assert self.binlog is not None
        data = self._payload()
        self.binlog.verify(data)  # before anything reads or rewrites it
        if data[0] == 0xFF:  # an error packet, raised as pymysql raises it
            if self._result is not None and self._result.unbuffered_active is True:
                self._result.unbuffered_active = False
            MysqlPacket(data, self.encoding).raise_for_error()
        if len(data) > 5 and data[5] in AS_SENT and data[0] == 0:  # most packets: nothing to do
            return data
        first, *rest = self.binlog.packets(data)
        if rest:
            self._unread = collections.deque(rest)
        return first

    def _payload(self) -> bytes:
        """A packet's payload, as pymysql frames it (a payload of 16 MB goes on in the next):
        the next of those cut from the last read, else read off the wire."""
        if self._framed:
            return self._framed.pop()
        framed, self._at, self._next_seq_id = frames(self._read, self._at, self._next_seq_id)
        if framed:
            framed.reverse()
            self._framed = framed
            return framed.pop()
        if self._current_timeout != self._read_timeout:
            self._sock.settimeout(self._read_timeout)
            self._current_timeout = self._read_timeout
        parts = []
        while True:
            header = self._take(4)
            length, number = header[0] | header[1] << 8 | header[2] << 16, header[3]
            if number != self._next_seq_id:
                self._force_close()
                if number == 0:  # MariaDB sends an error packet numbered 0 when it shuts down
                    raise pymysql.err.OperationalError(CR_SERVER_LOST, "Lost connection to MySQL server during query")
                raise pymysql.err.InternalError(
                    f"Packet sequence number wrong - got {number} expected {self._next_seq_id}"
                )
            self._next_seq_id = (self._next_seq_id + 1) % 256
            parts.append(self._take(length))
            if length < MAX_PACKET_LEN:
                return parts[0] if len(parts) == 1 else b"".join(parts)

    def _take(self, size: int) -> bytes:
        read, at = self._read, self._at
        if len(read) - at >= size:
            self._at = at + size
            return read[at : at + size]
        pieces, have = [read[at:]], len(read) - at
        if self.before_waiting is not None and not select.select([self._sock], [], [], 0)[0]:
            self.before_waiting()
        while have < size:
            try:
                piece = self._rfile.read1(max(size - have, READ_SIZE))
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue
                self._force_close()
                raise pymysql.err.OperationalError(
                    CR_SERVER_LOST, f"Lost connection to MySQL server during query ({exc})"
                ) from exc
            if not piece:
                self._force_close()
                raise pymysql.err.OperationalError(CR_SERVER_LOST, "Lost connection to MySQL server during query")
            pieces.append(piece)
            have += len(piece)
        self._read, self._at = b"".join(pieces), size
        return self._read[:size]


_SKIPPED = object()  # an event parsed here that nobody asked for
_new = tuple.__new__
if _event_parse is not None:
    _event_parse.setup(
        EventHeader,
        BinlogRowsEvent,
        ParsedXid,
        ParsedMariadbGtid,
        _SKIPPED,
        (RowKind.INSERT, RowKind.UPDATE_AFTER, RowKind.DELETE),
    )
COMPILED = _event_parse is not None  # tests turn it off to run the Python parsers alone


class BinlogEventStream(BinLogStreamReader):
    """python-mysql-replication's stream with the frequent events parsed here. Table maps
    are frozen: a table id's first table map is the one in force (see open_stream)."""

    def __init__(self, before_waiting: Callable[[], None] | None = None, **settings: Any) -> None:
        """`before_waiting`: called before a read that would wait for the server."""
        self._before_waiting = before_waiting
        self._gtid_dump = tagged_dump(settings)
        wanted = set(settings["only_events"])
        tagged = [TaggedGtidEvent] if GtidEvent in wanted else []  # the library filters by exact class
        settings["only_events"] = [*settings["only_events"], TableMapEvent, *tagged]  # see _from_library
        self._format = BinlogFormat(checksum=False)
        super().__init__(pymysql_wrapper=PushbackConnection, freeze_schema=True, **settings)
        self.parse_only(wanted)

    def parse_only(self, wanted: set[type]) -> None:
        """Parses the events of the classes `wanted` (and table maps); skips the others."""
        self._parsers: dict[int, Callable[[bytes, EventHeader, int], object]] = {
            _TABLE_MAP: self._table_map,
            _XID: self._xid if XidEvent in wanted else self._skipped,
            _MARIADB_GTID: self._mariadb_gtid if MariadbGtidEvent in wanted else self._skipped,
            GTID_TAGGED_LOG_EVENT: self._tagged_gtid if GtidEvent in wanted else self._skipped,
        }
        for event_type, (_, event_class, _) in _ROWS.items():
            self._parsers[event_type] = self._rows if event_class in wanted else self._skipped
        self._wanted = 0  # the compiled parser's WANT_* bits
        self._verify_wanted = 0  # and VERIFY, for a packet as read off the wire
        if _event_parse is not None:
            for event_class, bit in (
                (XidEvent, _event_parse.WANT_XID),
                (MariadbGtidEvent, _event_parse.WANT_GTID),
                (WriteRowsEvent, _event_parse.WANT_INSERT),
                (UpdateRowsEvent, _event_parse.WANT_UPDATE),
                (DeleteRowsEvent, _event_parse.WANT_DELETE),
            ):
                self._wanted |= bit if event_class in wanted else 0
            self._verify_wanted = self._wanted | _event_parse.VERIFY

    def _BinLogStreamReader__checksum_enabled(self) -> bool:  # noqa: N802 - the library's private name
        """The checksum handshake, made on every connection: the server then sends each
        file's events as the file has them, and each file's format description says
        whether that is with a checksum (the library declared itself only when the
        server's setting was on, so a file written before it was switched off was refused).
        """
        connection = self._stream_connection
        flavour = server_flavour(connection)
        variable = flavour.checksum_variable
        with connection.cursor() as cur:
            cur.execute(f"SET {variable} = @@global.binlog_checksum")
            cur.execute(f"SELECT {variable}")
            (agreed,) = cur.fetchone()
            if self.slave_heartbeat and flavour.heartbeat_variable != "@master_heartbeat_period":
                # the library asks by the old name only
                cur.execute(f"SET {flavour.heartbeat_variable} = %s", (int(self.slave_heartbeat * 1e9),))
        self._format = connection.binlog = BinlogFormat(checksum=agreed != "NONE")
        connection.before_waiting = self._before_waiting  # each connection the stream opens
        connection.gtid_dump = self._gtid_dump
        return self._format.checksum

    @property
    def _BinLogStreamReader__use_checksum(self) -> bool:  # noqa: N802 - what the library reads per event
        return self._format.checksum

    @_BinLogStreamReader__use_checksum.setter
    def _BinLogStreamReader__use_checksum(self, value: bool) -> None:  # noqa: N802
        self._format.checksum = value

    def event_start(self, packet: Any) -> int:
        """Where the event of `packet` (its header fields) begins in its file."""
        return packet.log_pos - self._format.size_in_file(packet.log_pos, packet.event_size)

    def fetchone(self) -> object:
        while True:
            connection = getattr(self, "_stream_connection", None)
            if connection is None or not connection.open or self.end_log_pos or self.skip_to_timestamp:
                return self._from_library()
            framed = connection._framed
            if framed and COMPILED and connection._pushed is None and not connection._unread:
                # The next packet cut from the last read, parsed in place: a one-row
                # transaction's four packets took three Python calls each to get here.
                # What the compiled parser leaves goes the way below, made readable first.
                try:
                    event = _event_parse.parse(framed[-1], self, self.table_map, self._format, self._verify_wanted)
                except _event_parse.ChecksumMismatch:
                    raise self._format.mismatch(framed[-1]) from None
                if event is not None:
                    framed.pop()
                    if event is _SKIPPED:
                        continue
                    return event
            try:
                data = connection.read_payload()
            except pymysql.err.OperationalError as exc:  # the library reconnects, or raises it
                connection.push_back(exc)
                return self._from_library()
            event = self.parsed(data)
            if event is None:
                connection.push_back(data)
                return self._from_library()
            if event is not _SKIPPED:
                return event

    def parsed(self, data: bytes) -> object | None:
        """The event of a packet, the skipped sentinel for one nobody asked for, or None
        for one the library reads. Sets log_pos, where the library reconnects from."""
        if COMPILED:
            event = _event_parse.parse(data, self, self.table_map, self._format, self._wanted)
            if event is not None:
                return event
        parse = self._parsers.get(data[5]) if data[0] == 0 and len(data) >= _BODY else None
        return parse(data, self._header(data), data[5]) if parse is not None else None

    def _from_library(self) -> object:
        event = super().fetchone()
        while isinstance(event, TableMapEvent):
            _keep_layout(event)
            event = super().fetchone()
        if isinstance(event, ROW_EVENTS):
            self._mark_compressed(event.table_map[event.table_id], event.table_id)
            packet = event.packet
            return _library_rows(event, self._format.size_in_file(packet.log_pos, packet.event_size))
        return event

    def _mark_compressed(self, table: Table, table_id: int) -> None:
        """Sets `compressed` on the columns of `table` that are (see BinlogFormat)."""
        for i in self._format.compressed.get(table_id, ()):
            table.columns[i].compressed = True

    def _header(self, data: bytes) -> EventHeader:
        timestamp, _, server_id, event_size, log_pos, _ = _HEADER.unpack_from(data, 1)
        if log_pos:
            self.log_pos = log_pos  # where the library reconnects from
        # Made as a tuple: a named tuple's own constructor is a Python call, four a transaction.
        return _new(EventHeader, (timestamp, server_id, self._format.size_in_file(log_pos, event_size), log_pos))

    def _skipped(self, data: bytes, header: EventHeader, event_type: int) -> object:
        return _SKIPPED

    def _xid(self, data: bytes, header: EventHeader, event_type: int) -> object:
        return ParsedXid(header, int.from_bytes(data[_BODY : _BODY + 8], "little"))

    def _mariadb_gtid(self, data: bytes, header: EventHeader, event_type: int) -> object:
        sequence, domain, flags = struct.unpack_from("<QIB", data, _BODY)
        return ParsedMariadbGtid(header, f"{domain}-{header.server_id}-{sequence}", flags)

    def _tagged_gtid(self, data: bytes, header: EventHeader, event_type: int) -> object:
        body = data[_BODY : len(data) - (4 if self._format.checksum else 0)]
        return TaggedGtidEvent.tagged(header, _tagged_text(body, f" at {self._format.where(data)}"))

    def _table_map(self, data: bytes, header: EventHeader, event_type: int) -> object | None:
        """A table already mapped has nothing new (frozen); a new one the library reads."""
        return _SKIPPED if table_id(data) in self.table_map else None

    def _rows(self, data: bytes, header: EventHeader, event_type: int) -> object:
        tid = table_id(data)
        table = self.table_map.get(tid)
        if table is None:  # its table map was filtered out: a table not captured
            return _SKIPPED
        self._mark_compressed(table, tid)
        kind, _, version2 = _ROWS[event_type]
        at = _BODY + self._format.post_header_length(event_type, 10 if version2 else 8)
        if version2:  # extra data (its length counts its own two bytes)
            at += struct.unpack_from("<H", data, _BODY + 8)[0] - 2
        columns, at = length_coded(data, at)
        width = (columns + 7) // 8
        if kind is RowKind.UPDATE_AFTER:
            present, at = (data[at : at + width], data[at + width : at + 2 * width]), at + 2 * width
        else:
            present, at = (data[at : at + width],), at + width
        end = len(data) - (4 if self._format.checksum else 0)
        return _new(BinlogRowsEvent, (kind, table, data[at:end], present, header))


def _keep_layout(event: TableMapEvent) -> None:
    """Keeps on the event's Table what the library reads and leaves on the event: which
    columns are nullable, and the primary key's columns in key order (binlog_row_metadata=
    FULL). A table map is a layout of its own (binlog/rows/table_map_layout.py)."""
    table, bitmask = event.get_table(), event.null_bitmask
    table.nullable = tuple(bool(bitmask[i >> 3] >> (i & 7) & 1) for i in range(len(table.columns)))
    metadata = event.optional_metadata
    keyed = list(metadata.simple_primary_key_list) or list(metadata.primary_keys_with_prefix)
    table.key_order = tuple(table.columns[i].name for i in keyed)
    spatial = [c for c in table.columns if c.type == FIELD_TYPE.GEOMETRY]
    for column, kind in zip(spatial, metadata.geometry_type_list, strict=False):
        column.geometry_type = kind


def _library_rows(event: Any, size_in_file: int) -> BinlogRowsEvent:
    """A rows event the library read (after an event it read on), in this module's form."""
    packet = event.packet
    body = packet.read(event.event_size - packet.read_bytes)
    present = (event.columns_present_bitmap,)
    if isinstance(event, UpdateRowsEvent):
        kind, present = RowKind.UPDATE_AFTER, (*present, event.columns_present_bitmap2)
    else:
        kind = RowKind.INSERT if isinstance(event, WriteRowsEvent) else RowKind.DELETE
    header = EventHeader(event.timestamp, packet.server_id, size_in_file, packet.log_pos)
    return BinlogRowsEvent(kind, event.table_map[event.table_id], body, present, header)
