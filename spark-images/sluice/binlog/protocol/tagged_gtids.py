"""MySQL 8.3+'s tagged GTIDs on the wire, from MySQL's serialization library documentation
(libs/mysql/serialization/readme.md) and libbinlogevents' Gtid_event field definitions:

- GTID_TAGGED_LOG_EVENT (type 42) is a serialized message: the format version as its id
  (1), its size, the last non-ignorable field id plus one, then each field as its id and
  its value: flags, the source uuid (16 numbers), the number, the tag, the logical clock,
  the commit timestamps, the transaction's length, the server versions, the ticket.
- A GTID set with a tag in it travels (COM_BINLOG_DUMP_GTID, Previous_gtids) in the
  tagged encoding: the source count between a format byte at each end, and each source's
  tag (a length and its text) after its uuid.

Numbers in a message are variable-length: the count of trailing one bits of the first
byte, plus one, is the count of bytes (nine: a 0xff byte, then the whole number), and the
bits above them hold the number, least significant first; a signed number is zig-zagged."""

from __future__ import annotations

import struct
import uuid
from typing import Any

from sluice.source.gtid_state import MysqlGtidSet

GTID_TAGGED_LOG_EVENT = 42
COM_BINLOG_DUMP_GTID = 0x1E
_FORMAT_VERSION = 1  # mysql::serialization::serialization_format_version, the message's id
_TAGGED_FORMAT = 1  # mysql::gtid::Gtid_format::tagged
# Gtid_event::define_fields, in order: each field's id is its place
_FIELDS = (
    "flags",
    "uuid",
    "number",
    "tag",
    "last_committed",
    "sequence_number",
    "immediate_commit_timestamp",
    "original_commit_timestamp",
    "transaction_length",
    "immediate_server_version",
    "original_server_version",
    "commit_group_ticket",
)
_SIGNED = {"number", "last_committed", "sequence_number"}  # int64_t in MySQL


class TaggedGtidError(ValueError):
    pass


def read_unsigned(data: bytes, at: int) -> tuple[int, int]:
    """A variable-length unsigned number at `at`: it and where the next begins."""
    if at >= len(data):
        raise TaggedGtidError("a number runs past the end")
    first = data[at]
    if first == 0xFF:
        if at + 9 > len(data):
            raise TaggedGtidError("a number runs past the end")
        return int.from_bytes(data[at + 1 : at + 9], "little"), at + 9
    size = 1
    while first & (1 << (size - 1)):
        size += 1
    if at + size > len(data):
        raise TaggedGtidError("a number runs past the end")
    return int.from_bytes(data[at : at + size], "little") >> size, at + size


def read_signed(data: bytes, at: int) -> tuple[int, int]:
    value, at = read_unsigned(data, at)
    return (-(value >> 1) - 1 if value & 1 else value >> 1), at


def tagged_gtid(body: bytes) -> tuple[str, str, int]:
    """(source uuid, tag, number) of a GTID_TAGGED_LOG_EVENT's body (checksum off)."""
    version, at = read_unsigned(body, 0)
    if version != _FORMAT_VERSION:
        raise TaggedGtidError(f"serialization format {version}, not {_FORMAT_VERSION}")
    size, at = read_unsigned(body, at)
    last_needed, at = read_unsigned(body, at)
    if last_needed > len(_FIELDS):
        raise TaggedGtidError(f"field {last_needed - 1} is needed and unknown")
    if size > len(body):
        raise TaggedGtidError(f"a message of {size} bytes in an event body of {len(body)}")
    values: dict[str, object] = {}
    while at < size:
        field, at = read_unsigned(body, at)
        if field >= len(_FIELDS):
            break  # a newer server's field past the last needed one: ignorable
        name = _FIELDS[field]
        if name == "uuid":
            octets = []
            for _ in range(16):
                octet, at = read_unsigned(body, at)
                octets.append(octet)
            values[name] = str(uuid.UUID(bytes=bytes(octets)))
        elif name == "tag":
            length, at = read_unsigned(body, at)
            values[name] = body[at : at + length].decode("ascii")
            at += length
        else:
            values[name], at = (read_signed if name in _SIGNED else read_unsigned)(body, at)
    missing = [n for n in ("uuid", "tag", "number") if n not in values]
    if missing:
        raise TaggedGtidError(f"no {', '.join(missing)}")
    return str(values["uuid"]), str(values["tag"]), int(values["number"])  # type: ignore[call-overload]


def _unsigned(value: int) -> bytes:
    for size in range(1, 9):
        if value < 1 << (7 * size):
            return ((value << size) | ((1 << (size - 1)) - 1)).to_bytes(size, "little")
    return b"\xff" + value.to_bytes(8, "little")


def encoded_gtid_set(text: str) -> bytes:
    """A MySQL GTID set as COM_BINLOG_DUMP_GTID carries it: the tagged encoding where a tag
    is in it (the untagged one otherwise); sources in order of uuid, then tag."""
    gtids = MysqlGtidSet(text)
    sources = sorted(gtids.intervals().items())
    tagged = any(tag for (_, tag), _ in sources)
    count = len(sources)
    data = bytearray(struct.pack("<Q", (_TAGGED_FORMAT << 56) | (count << 8) | _TAGGED_FORMAT if tagged else count))
    for (sid, tag), intervals in sources:
        data += uuid.UUID(sid).bytes
        if tagged:
            data += _unsigned(len(tag)) + tag.encode("ascii")
        data += struct.pack("<Q", len(intervals))
        data += b"".join(struct.pack("<qq", first, last + 1) for first, last in intervals)
    return bytes(data)


def tagged_dump(settings: dict[str, Any]) -> bytes | None:
    """A MySQL GTID set with tags, encoded as 8.3+ takes it in a dump request, which the
    library cannot (its GtidSet knows no tags): the library is given the set's untagged
    sources (or one source's first number: a placeholder it encodes and the connection
    replaces) to choose the GTID dump and build the request around it."""
    text = settings.get("auto_position")
    if not text or settings.get("is_mariadb"):
        return None
    gtids = MysqlGtidSet(text)
    if not gtids.tags:
        return None
    intervals = gtids.intervals()
    untagged = ",".join(
        sid + "".join(f":{a}-{b}" for a, b in spans) for (sid, tag), spans in sorted(intervals.items()) if not tag
    )
    settings["auto_position"] = untagged or f"{min(sid for sid, _ in intervals)}:1"
    return encoded_gtid_set(text)


def with_gtid_set(packet: bytes, gtid_set: bytes) -> bytes:
    """A COM_BINLOG_DUMP_GTID packet (its 4-byte header first) carrying `gtid_set` instead."""
    name_size = struct.unpack_from("<I", packet, 4 + 7)[0]
    fixed = packet[4 : 4 + 11 + name_size + 8]  # command, flags, server id, name size, name, position
    payload = fixed + struct.pack("<I", len(gtid_set)) + gtid_set
    return len(payload).to_bytes(3, "little") + packet[3:4] + payload
