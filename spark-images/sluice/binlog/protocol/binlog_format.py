"""The binlog as each of its files declares it, and its events made readable.

Every packet of the replication stream passes through `BinlogFormat.readable` before
anything reads it, so what follows holds for both the stream's own parsers and the
library's:
- Each file's format description says whether its events end in a checksum. A server whose
  binlog_checksum changes rotates to a new file that says so; the setting at connection
  time is only the first file's.
- MariaDB's compressed events (log_bin_compress) are inflated into their plain twins: a
  Query_compressed event into a Query event, a Write/Update/Delete_rows_compressed event
  into the rows event it compresses (log_event.cc: a header byte, 0x80 | how many bytes of
  length follow, the big-endian length, then a zlib stream). The twin keeps the event's
  position; its size in the file is kept apart (`size_in_file`), for where it begins.
- MariaDB's compressed columns (VARCHAR/BLOB ... COMPRESSED) have column types of their
  own in a table map, which the library does not know: it misreads the rest of the map.
  Table maps name them as their uncompressed twins, whose metadata they share, and
  `compressed` keeps which columns they were, by table id, for the row image decoder to
  inflate their values.
- An Execute_load_query event (LOAD DATA logged as a statement) is read as the Query event
  it extends, so the statement is judged as any other.
- MySQL's Transaction_payload event (binlog_transaction_compression) becomes the events it
  holds (binlog/protocol/transaction_payload.py). They have no place in the file of their own: the
  k-th is given the payload's position plus k, the last ends where the payload ends, so
  a transaction inside one resumes and orders as any other.
- An event type the reader neither reads nor may pass over (binlog/protocol/event_types.py) stops
  the reader, naming it and where it is.
"""

from __future__ import annotations

import struct
import zlib

from sluice.binlog.protocol.event_types import (
    EXECUTE_LOAD_QUERY,
    FORMAT_DESCRIPTION,
    PASSED_OVER,
    QUERY,
    QUERY_COMPRESSED,
    READ,
    ROTATE,
    ROWS_COMPRESSED,
    TABLE_MAP,
    TRANSACTION_PAYLOAD,
    name,
)
from sluice.binlog.protocol.packet_bytes import length_coded
from sluice.binlog.protocol.transaction_payload import PayloadError, inner_events
from sluice.errors import SourceError

_HEADER = struct.Struct("<IBIIIH")  # timestamp, type, server id, event size, next position, flags
_BODY = 1 + _HEADER.size  # a packet is an OK byte, the event's header, its body (and a checksum)
_SIZE_AT = 1 + 4 + 1 + 4  # the event size's offset in a packet
_NEXT_AT = _SIZE_AT + 4  # the next event's position's
_FORMAT_FIXED = 2 + 50 + 4 + 1  # binlog version, server version, created, header length
_COMPRESSED_TWINS = {140: 252, 141: 15}  # MariaDB's BLOB_COMPRESSED, VARCHAR_COMPRESSED: BLOB, VARCHAR
_UPDATES = frozenset({24, 31})  # rows events with two column bitmaps
_LOAD_FIELDS = 4 + 4 + 4 + 1  # Execute_load_query's file id, filename start and end, duplicate handling
_SIZES_KEPT = 64  # inflated events whose size in the file is kept: the ones still being read
_PLAIN_MAPS_KEPT = 4096  # table maps known to hold no compressed column (one per table, mostly)


class UnknownEvent(SourceError):
    """An event the reader can neither read nor pass over: reading on could lose changes."""

    troubleshooting = "unknown-event"


class ChecksumMismatch(SourceError):
    """An event whose bytes changed after the server wrote them: read, it would put wrong
    values in the target."""

    troubleshooting = "checksum-mismatch"


def checksum_holds(data: bytes, checksum: bool) -> bool:
    """Whether an event packet (an OK byte, then the event) ends in the CRC32 of the event
    before it, where its file's events carry one (`checksum`; a format description's own
    byte says for it). The compiled parser checks the same (_event_parse.c)."""
    if len(data) < _BODY or data[0] != 0:
        return True
    if data[5] == FORMAT_DESCRIPTION:
        checksum = len(data) >= _BODY + 5 and data[-5] != 0
    if not checksum:
        return True
    return len(data) >= _BODY + 4 and zlib.crc32(memoryview(data)[1:-4]) == int.from_bytes(data[-4:], "little")


class BinlogFormat:
    """One replication stream's view of the file it reads: checksums, post-header lengths,
    the file's name, and the sizes in the file of the events it inflated."""

    def __init__(self, checksum: bool) -> None:
        # checksum, compressed, post_header and sizes are read per event by the compiled
        # event parser too (binlog/protocol/_event_parse.c).
        self.checksum = checksum  # as agreed at connection, until a format description says
        self.file = ""
        self.compressed: dict[int, frozenset[int]] = {}  # table id: its compressed columns
        self.post_header = b""  # each event type's post-header length, as the format description says
        self.sizes: dict[int, int] = {}  # an inflated event's end position: its size in the file
        self._plain_maps: set[bytes] = set()  # bodies of table maps with no compressed column

    def size_in_file(self, log_pos: int, event_size: int) -> int:
        """The size of the event ending at `log_pos` in the file (an inflated event's
        `event_size` is its plain twin's)."""
        return self.sizes.get(log_pos, event_size)

    def packets(self, data: bytes) -> list[bytes]:
        """A packet's bytes (an OK byte, then an event) as the readers read them: one packet,
        or the events a transaction payload holds."""
        if len(data) >= _BODY and data[0] == 0 and data[5] == TRANSACTION_PAYLOAD:
            return self._unpacked(data)
        return [self.readable(data)]

    def readable(self, data: bytes) -> bytes:
        """A packet's bytes (an OK byte, then an event) as the readers read them."""
        if len(data) < _BODY or data[0] != 0:
            return data
        kind = data[5]
        if kind == FORMAT_DESCRIPTION:
            self._described(data)
        elif kind == ROTATE:
            self.file = data[_BODY + 8 : len(data) - (4 if self.checksum else 0)].decode()
        elif kind == TABLE_MAP:
            return self._uncompressed_columns(data)
        elif kind == QUERY_COMPRESSED or kind in ROWS_COMPRESSED:
            return self._inflated(data, kind)
        elif kind == EXECUTE_LOAD_QUERY:  # a Query event with the loaded file's offsets after its post-header
            head = _BODY + self.post_header_length(QUERY, 13)
            checksum = 4 if self.checksum else 0
            return self._retyped(data, data[:head], data[head + _LOAD_FIELDS : len(data) - checksum], QUERY)
        elif kind not in READ and kind not in PASSED_OVER:
            raise UnknownEvent(
                f"the binlog holds a {name(kind)} event at {self.where(data)}, which Sluice cannot read: reading "
                "on could lose changes, so the pipeline stops there. Turn off the server setting that writes it, or "
                "report it to the Sluice project with the server's version"
            )
        return data

    def verify(self, data: bytes) -> None:
        """Refuses a packet as read off the wire whose checksum does not hold."""
        if not checksum_holds(data, self.checksum):
            raise self.mismatch(data)

    def mismatch(self, data: bytes) -> ChecksumMismatch:
        return ChecksumMismatch(
            f"the binlog event at {self.where(data)} fails its CRC32 checksum: its bytes changed after the source "
            "wrote them (on the source's disk, in the network or in a proxy), so the pipeline stopped before it, with "
            "everything before it committed. Check the source's binlog there (mariadb-binlog or mysqlbinlog "
            "--verify-binlog-checksum); the pipeline resumes at this event once the source serves it intact"
        )

    def where(self, data: bytes) -> str:
        _, _, _, event_size, log_pos, _ = _HEADER.unpack_from(data, 1)
        return f"{self.file or 'binlog'}:{log_pos - self.size_in_file(log_pos, event_size)}"

    def _described(self, data: bytes) -> None:
        """A format description ends in its checksum algorithm and 4 bytes (its checksum,
        or nothing the algorithm is off): log_event.cc's get_checksum_alg."""
        self.checksum = data[-5] != 0
        self.post_header = bytes(data[_BODY + _FORMAT_FIXED : -5])

    def post_header_length(self, kind: int, default: int) -> int:
        """As the file's format description declares it for events of type `kind`."""
        return self.post_header[kind - 1] if len(self.post_header) >= kind else default

    def _inflated(self, data: bytes, kind: int) -> bytes:
        at = _BODY
        if kind == QUERY_COMPRESSED:
            plain = QUERY
            database_length, status_length = data[at + 8], struct.unpack_from("<H", data, at + 11)[0]
            at += self.post_header_length(kind, 13) + status_length + database_length + 1
        else:
            plain = ROWS_COMPRESSED[kind]
            at += 8  # table id and flags
            if self.post_header_length(kind, 8) == 10:  # version 2: extra data, its length counting itself
                at += struct.unpack_from("<H", data, at)[0]
            columns, at = length_coded(data, at)
            at += (columns + 7) // 8 * (2 if plain in _UPDATES else 1)
        header = data[at]
        length_bytes = header & 7
        if header & 0xF0 != 0x80 or not 1 <= length_bytes <= 4:  # compressed, by zlib (the one algorithm)
            raise self._not_inflated(data, kind, f"a compression header {header:#x} it does not know")
        length = int.from_bytes(data[at + 1 : at + 1 + length_bytes], "big")
        inflater = zlib.decompressobj()
        try:
            body = inflater.decompress(data[at + 1 + length_bytes :])
        except zlib.error as exc:
            raise self._not_inflated(data, kind, str(exc)) from exc
        checksum = inflater.unused_data  # what follows the zlib stream: the event's checksum, if any
        if not inflater.eof or len(body) != length or len(checksum) != (4 if self.checksum else 0):
            raise self._not_inflated(data, kind, f"{len(body)} bytes inflated, {length} declared")
        return self._retyped(data, data[:at], body, plain)

    def _retyped(self, data: bytes, head: bytes, body: bytes, kind: int) -> bytes:
        """The event of `data` as an event of type `kind` made of `head` and `body`, with a
        checksum of its own where the file's events have one."""
        event = bytearray(head)
        event += body
        event[5] = kind
        struct.pack_into("<I", event, _SIZE_AT, len(event) - 1 + (4 if self.checksum else 0))
        if self.checksum:
            event += struct.pack("<I", zlib.crc32(event[1:]))
        self._keep_size(data)
        return bytes(event)

    def _unpacked(self, data: bytes) -> list[bytes]:
        _, _, _, event_size, end, _ = _HEADER.unpack_from(data, 1)
        start = end - event_size
        # Its fields begin right after the common header: MySQL's format description declares
        # 40 as its post-header length (the event type's number), and its reader skips none.
        body = data[_BODY : len(data) - (4 if self.checksum else 0)]
        try:
            events = inner_events(body)
        except PayloadError as exc:
            raise SourceError(f"cannot read the Transaction_payload event at {self.where(data)}: {exc}") from exc
        if not events or len(events) > event_size:
            raise SourceError(
                f"the Transaction_payload event at {self.where(data)} holds {len(events)} events in {event_size} "
                "bytes: more than Sluice can give positions of their own"
            )
        packets = []
        for k, event in enumerate(events):
            at = start + k
            next_at = end if k == len(events) - 1 else at + 1
            packet = bytearray(b"\x00" + event)
            struct.pack_into("<II", packet, _SIZE_AT, len(event) + (4 if self.checksum else 0), next_at)
            if self.checksum:
                packet += struct.pack("<I", zlib.crc32(packet[1:]))
            self.sizes[next_at] = next_at - at  # kept until the next packet off the wire: they are read before it
            packets.append(self.readable(bytes(packet)))
        return packets

    def _not_inflated(self, data: bytes, kind: int, why: str) -> SourceError:
        return SourceError(f"cannot inflate the {name(kind)} event at {self.where(data)}: {why}")

    def _keep_size(self, data: bytes) -> None:
        _, _, _, event_size, log_pos, _ = _HEADER.unpack_from(data, 1)
        self.sizes[log_pos] = event_size
        while len(self.sizes) > _SIZES_KEPT:
            del self.sizes[next(iter(self.sizes))]

    def _uncompressed_columns(self, data: bytes) -> bytes:
        """A table map with its compressed columns' types as their plain twins' (the
        columns are kept in `compressed`). Every transaction brings its tables' maps again,
        the same but for the header: one seen before and found plain is given as it is."""
        body = data[_BODY : len(data) - (4 if self.checksum else 0)]
        if body in self._plain_maps:
            return data
        at = _BODY + 8  # table id and flags
        at += 1 + data[at] + 1  # the database's name, NUL-terminated
        at += 1 + data[at] + 1  # the table's
        count, at = length_coded(data, at)
        types = data[at : at + count]
        compressed = frozenset(i for i, kind in enumerate(types) if kind in _COMPRESSED_TWINS)
        if not compressed:
            self._plain_maps.add(body)
            while len(self._plain_maps) > _PLAIN_MAPS_KEPT:
                self._plain_maps.pop()  # any: one dropped is parsed again when it comes back
            return data
        self.compressed[table_id(data)] = compressed
        rewritten = bytearray(data)
        for i in compressed:
            rewritten[at + i] = _COMPRESSED_TWINS[types[i]]
        return bytes(rewritten)


def table_id(data: bytes) -> int:
    """The table id of a table map or rows event's packet."""
    return int.from_bytes(data[_BODY : _BODY + 6], "little")
