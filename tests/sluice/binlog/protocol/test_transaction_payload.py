"""MySQL 8.0.20+'s compressed transactions (binlog_transaction_compression=ON): one
Transaction_payload event holding a transaction's events but its GTID, zstd-compressed.
No MySQL server can be installed here, so the events are built as MySQL's libbinlogevents
writes them (codecs/binary.cpp) around a real transaction's events, read from a MariaDB
binlog file with their checksums taken off (events inside a payload have none)."""

from __future__ import annotations

import struct
import zlib

import pytest

from sluice.binlog.protocol.binlog_format import BinlogFormat
from sluice.binlog.protocol.transaction_payload import NONE, ZSTD
from sluice.errors import SourceError
from tests.harness.binlog_reading import position
from tests.harness.mysql84 import events as mysql84_events

HEADER = struct.Struct("<IBIIIH")  # timestamp, type, server id, event size, next position, flags
PAYLOAD_AT = 8_000  # where the payload event begins in its file


def _transaction(mariadb, db: str) -> list[bytes]:
    """A transaction's events as its binlog file holds them (checksums included), but its GTID event."""
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, note VARCHAR(20))", database=db)
    with mariadb.connect(db) as conn, conn.cursor() as cur:
        start = position(cur)
        cur.execute("INSERT INTO t VALUES (1, 'one'), (2, 'two')")
        cur.execute("UPDATE t SET note = 'uno' WHERE id = 1")
        cur.execute("DELETE FROM t WHERE id = 2")
        conn.commit()
        end = position(cur)
    data = (mariadb.datadir / start.file).read_bytes()[start.pos : end.pos]
    events, at = [], 0
    while at < len(data):
        size = HEADER.unpack_from(data, at)[3]
        events.append(data[at : at + size])
        at += size
    assert events[0][4] == 0xA2 and events[-1][4] == 0x10  # its GTID ... its XID
    return events[1:]


def _payload_event(events: list[bytes], compression: int) -> bytes:
    """The Transaction_payload event MySQL writes for these events, with its checksum."""
    inner = []
    for event in events:  # without their checksums, their sizes said so
        bare = bytearray(event[:-4])
        struct.pack_into("<I", bare, 9, len(bare))
        inner.append(bytes(bare))
    body = mysql84_events.transaction_payload(inner, compressed=compression == ZSTD)
    size = HEADER.size + len(body) + 4
    event = HEADER.pack(1_700_000_000, 40, 1, size, PAYLOAD_AT + size, 0) + body
    return event + struct.pack("<I", zlib.crc32(event))


@pytest.mark.parametrize("described", [False, True], ids=["alone", "after-mysql-8.4s-format-description"])
@pytest.mark.parametrize("compression", [ZSTD, NONE], ids=["zstd", "none"])
def test_a_transaction_payload_is_read_as_the_events_it_holds(mariadb, source_db, compression, described):
    """MySQL 8.x's format description declares 40 as the payload event's post-header
    length, though its fields begin right after the common header (the reader was
    skipping 40 bytes of them)."""
    events = _transaction(mariadb, source_db)
    payload = _payload_event(events, compression)
    binlog = BinlogFormat(checksum=True)
    binlog.file = "binlog.000007"
    if described:
        binlog.packets(b"\x00" + mysql84_events.event(15, mysql84_events.format_description("8.4.3", 0), 124, 0, 1))
        assert binlog.post_header_length(40, 0) == 40

    packets = binlog.packets(b"\x00" + payload)

    end = PAYLOAD_AT + len(payload)
    assert len(packets) == len(events)
    for k, (packet, event) in enumerate(zip(packets, events, strict=True)):
        timestamp, kind, server, size, next_at, flags = HEADER.unpack_from(packet, 1)
        assert packet[1 + HEADER.size : -4] == event[HEADER.size : -4]  # the body as the file has it
        assert (timestamp, kind, server, flags, size) == (
            *HEADER.unpack_from(event)[:3],
            HEADER.unpack_from(event)[5],
            len(event),
        )
        assert struct.unpack("<I", packet[-4:])[0] == zlib.crc32(packet[1:-4])
        # a position of its own inside the payload's, in order; the last ends where the payload does
        assert next_at == (end if k == len(events) - 1 else PAYLOAD_AT + k + 1)
        assert next_at - binlog.size_in_file(next_at, size) == PAYLOAD_AT + k
    assert [packet[5] for packet in packets] == [e[4] for e in events]  # BEGIN, table map, rows..., XID


def test_a_payload_that_is_not_as_mysql_writes_it_stops_the_reader_naming_it(mariadb, source_db):
    payload = bytearray(_payload_event(_transaction(mariadb, source_db), ZSTD))
    payload[HEADER.size + 12] ^= 0xFF  # a byte of the compressed payload
    binlog = BinlogFormat(checksum=True)
    binlog.file = "binlog.000007"
    with pytest.raises(SourceError, match=f"cannot read the Transaction_payload event at binlog.000007:{PAYLOAD_AT}"):
        binlog.packets(b"\x00" + bytes(payload))


def test_a_payload_whose_fields_run_past_its_end_stops_the_reader_naming_it():
    """Fields with no end mark (read as MySQL 8.x describes it, 40 bytes into its fields,
    the reader met garbage there and crashed with an IndexError)."""
    body = b"\x02\x01\x00\x03\x02\xfc"  # compression type zstd, then an uncompressed size cut short
    size = HEADER.size + len(body) + 4
    event = HEADER.pack(1_700_000_000, 40, 1, size, PAYLOAD_AT + size, 0) + body
    binlog = BinlogFormat(checksum=True)
    binlog.file = "binlog.000007"
    with pytest.raises(SourceError, match=f"cannot read the Transaction_payload event at binlog.000007:{PAYLOAD_AT}"):
        binlog.packets(b"\x00" + event + struct.pack("<I", zlib.crc32(event)))
