"""MySQL 8.4's binlog events as the stand-in writes them, from libbinlogevents' documented
layouts (control_events.h, statement_events.h, rows_event.h): the common header, the format
description with 8.4's post-header lengths, GTID and Previous_gtids events, Query and Rotate
events. Every event carries a CRC32 (binlog_checksum=CRC32, 8.4's default)."""

from __future__ import annotations

import struct
import uuid
import zlib

import zstandard

from tests.harness.mysql84 import wire

HEADER = struct.Struct("<IBIIIH")  # timestamp, type, server id, event size, end position, flags
HEADER_LENGTH = 19
CHECKSUM_CRC32 = 1
LOG_EVENT_ARTIFICIAL_F = 0x20

QUERY, STOP, ROTATE, FORMAT_DESCRIPTION, XID, TABLE_MAP = 2, 3, 4, 15, 16, 19
WRITE_ROWS_V1, UPDATE_ROWS_V1, DELETE_ROWS_V1 = 23, 24, 25
HEARTBEAT = 27
WRITE_ROWS, UPDATE_ROWS, DELETE_ROWS = 30, 31, 32
GTID, PREVIOUS_GTIDS, TRANSACTION_PAYLOAD, GTID_TAGGED = 33, 35, 40, 42

# Each event type's post-header length as MySQL 8.4's format description declares it (type
# 1 first). 8.4 removed the V1 rows events (0 there); the Transaction_payload entry is the
# number 40, though the event's fields start right after the common header.
POST_HEADER_LENGTHS = bytes(
    [
        0,
        13,
        0,
        8,
        0,
        0,
        0,
        0,
        4,
        0,
        4,
        0,
        0,
        0,
        99,
        0,
        4,
        26,
        8,
        0,
        0,
        0,
        0,
        0,
        0,
        2,
        0,
        0,
        0,
        10,
        10,
        10,
        42,
        42,
        0,
        18,
    ]
    + [52, 0, 10, 40, 0, 0]
)
assert len(POST_HEADER_LENGTHS) == 42


def event(kind: int, body: bytes, end: int, timestamp: int, server_id: int, flags: int = 0) -> bytes:
    """An event ending at `end` in its file (0: sent, not written), with its checksum."""
    size = HEADER_LENGTH + len(body) + 4
    data = HEADER.pack(timestamp, kind, server_id, size, end, flags) + body
    return data + struct.pack("<I", zlib.crc32(data))


def bare_event(kind: int, body: bytes, timestamp: int, server_id: int) -> bytes:
    """An event as a Transaction_payload holds it: no checksum, no position of its own."""
    return HEADER.pack(timestamp, kind, server_id, HEADER_LENGTH + len(body), 0, 0) + body


def _payload_field(kind: int, value: int) -> bytes:
    encoded = wire.lenenc_int(value)
    return wire.lenenc_int(kind) + wire.lenenc_int(len(encoded)) + encoded


def transaction_payload(inner: list[bytes], compressed: bool = True) -> bytes:
    """A Transaction_payload event's body (binlog_transaction_compression=ON; codecs/binary.cpp):
    its fields as (type, length, value), each a packed number: the payload's size (1), the
    compression type (2; 0 is zstd), the uncompressed size (3); an end mark (0); then the
    transaction's events, zstd-compressed."""
    plain = b"".join(inner)
    if not compressed:
        return _payload_field(1, len(plain)) + wire.lenenc_int(0) + plain
    payload = zstandard.ZstdCompressor().compress(plain)
    fields = _payload_field(2, 0) + _payload_field(3, len(plain)) + _payload_field(1, len(payload))
    return fields + wire.lenenc_int(0) + payload


def format_description(version: str, created: int) -> bytes:
    return (
        struct.pack("<H", 4)
        + version.encode().ljust(50, b"\x00")
        + struct.pack("<IB", created, HEADER_LENGTH)
        + POST_HEADER_LENGTHS
        + bytes([CHECKSUM_CRC32])
    )


def rotate(position: int, file: str) -> bytes:
    return struct.pack("<Q", position) + file.encode()


def gtid_set(intervals: dict[tuple[str, str], list[tuple[int, int]]]) -> bytes:
    """A GTID set as Previous_gtids and COM_BINLOG_DUMP_GTID carry it (Gtid_set::encode):
    per source uuid and tag, in order, its intervals, each end one past its last number.
    With a tag anywhere in it, the tagged format: the count between format bytes, and each
    source's tag after its uuid."""
    tagged = any(tag for _, tag in intervals)
    count = len(intervals)
    data = struct.pack("<Q", (1 << 56) | (count << 8) | 1 if tagged else count)
    for sid, tag in sorted(intervals):
        data += uuid.UUID(sid).bytes
        if tagged:
            data += _varlen(len(tag)) + tag.encode()
        data += struct.pack("<Q", len(intervals[sid, tag]))
        data += b"".join(struct.pack("<qq", first, last + 1) for first, last in intervals[sid, tag])
    return data


def _varlen(n: int) -> bytes:
    """MySQL's serialization library's variable-length unsigned number: as many bytes as
    its bits need at 7 a byte (9 past 56 bits), the byte count - 1 as trailing ones."""
    if n.bit_length() > 56:
        return b"\xff" + n.to_bytes(8, "little")
    size = max(1, -(-n.bit_length() // 7))
    return ((n << size) | ((1 << (size - 1)) - 1)).to_bytes(size, "little")


def _zigzag(n: int) -> int:
    return n << 1 if n >= 0 else ((-(n + 1)) << 1) | 1


def gtid_tagged(
    sid: str, tag: str, gno: int, last_committed: int, sequence: int, commit_micros: int, transaction_length: int
) -> bytes:
    """A GTID_TAGGED_LOG_EVENT's body: Gtid_event's fields as a serialized message (format
    version 1 as its id, its size from that id on, the last field id written + 1, then
    each field's id and value). The optional fields (the original server's timestamp and
    version, the commit ticket) are left out, as a transaction's own server writes it."""
    fields = [
        (0, _varlen(0)),
        (1, b"".join(_varlen(octet) for octet in uuid.UUID(sid).bytes)),
        (2, _varlen(_zigzag(gno))),
        (3, _varlen(len(tag)) + tag.encode()),
        (4, _varlen(_zigzag(last_committed))),
        (5, _varlen(_zigzag(sequence))),
        (6, _varlen(commit_micros)),
        (8, _varlen(transaction_length)),
        (9, _varlen(80403)),
    ]
    encoded = b"".join(_varlen(field) + value for field, value in fields)
    last_needed = fields[-1][0] + 1
    head = _varlen(1), _varlen(len(encoded)), _varlen(last_needed)
    return head[0] + _varlen(sum(map(len, head)) + len(encoded)) + head[2] + encoded


def gtid(sid: str, gno: int, last_committed: int, sequence: int, commit_micros: int, transaction_length: int) -> bytes:
    """A GTID event's body (untagged): flags (1: may have statement-based events; 0 here),
    the source uuid and number, the logical clock, the commit timestamp (one: the
    transaction originated here), the transaction's length and the server version."""
    return (
        b"\x00"
        + uuid.UUID(sid).bytes
        + struct.pack("<qBqq", gno, 2, last_committed, sequence)
        + commit_micros.to_bytes(7, "little")
        + wire.lenenc_int(transaction_length)
        + struct.pack("<I", 80403)
    )


def query(thread_id: int, database: str, statement: str, status: bytes, error_code: int = 0) -> bytes:
    db = database.encode()
    return (
        struct.pack("<IIBHH", thread_id, 0, len(db), error_code, len(status))
        + status
        + db
        + b"\x00"
        + statement.encode()
    )
