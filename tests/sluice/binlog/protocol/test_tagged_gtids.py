"""MySQL 8.3+'s tagged GTIDs as the wire carries them: numbers as MySQL's serialization
library documents them (its readme's own examples), a GTID_TAGGED_LOG_EVENT as the MySQL
8.4 stand-in writes one from Gtid_event's field definitions, and a GTID set with tags in
Gtid_set::encode's tagged format. Malformed events stop, naming what is wrong."""

from __future__ import annotations

import struct
import uuid

import pytest

from sluice.binlog.protocol.tagged_gtids import (
    TaggedGtidError,
    encoded_gtid_set,
    read_signed,
    read_unsigned,
    tagged_gtid,
)
from tests.harness.mysql84 import events

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"


@pytest.mark.parametrize(
    ("encoded", "value", "signed"),
    [
        # the readme's examples, written there most significant byte first
        (bytes.fromhex("07fffb")[::-1], 65535, False),
        (bytes.fromhex("0ffff3")[::-1], 65535, True),
        (bytes.fromhex("0fffeb")[::-1], -65535, True),
        (bytes.fromhex("0ffffb")[::-1], -65536, True),
        (b"\x00", 0, False),
        (bytes([127 << 1]), 127, False),
        ((128 << 2 | 1).to_bytes(2, "little"), 128, False),
        (b"\xff" + (2**63 + 5).to_bytes(8, "little"), 2**63 + 5, False),
    ],
)
def test_numbers_read_as_the_serialization_library_documents_them(encoded, value, signed):
    assert (read_signed if signed else read_unsigned)(encoded + b"rest", 0) == (value, len(encoded))


def test_a_tagged_gtid_event_gives_its_source_tag_and_number():
    body = events.gtid_tagged(UUID, "etl", 1234567, 41, 42, 1_732_000_000_000_000, 4321)
    assert tagged_gtid(body) == (UUID, "etl", 1234567)


def test_a_tagged_gtid_event_that_is_not_as_mysql_writes_it_is_refused():
    body = bytearray(events.gtid_tagged(UUID, "etl", 7, 0, 1, 0, 100))
    with pytest.raises(TaggedGtidError, match="serialization format 2"):
        tagged_gtid(bytes([4]) + bytes(body[1:]))  # the version, 1, written 2
    with pytest.raises(TaggedGtidError, match="a message of 4[0-9] bytes in an event body of 20"):
        tagged_gtid(bytes(body[:20]))
    with pytest.raises(TaggedGtidError, match="runs past the end"):
        tagged_gtid(bytes(body[:2]))
    last_needed_at = 2
    body[last_needed_at] = 40 << 1  # a needed field past those Sluice knows
    with pytest.raises(TaggedGtidError, match="field 39 is needed and unknown"):
        tagged_gtid(bytes(body))


def test_a_gtid_set_with_tags_is_encoded_in_the_tagged_format():
    other = "00000000-0000-0000-0000-000000000001"
    data = encoded_gtid_set(f"{UUID}:1-9:etl:1-3:5,{other}:4")
    assert data[:8] == struct.pack("<Q", (1 << 56) | (3 << 8) | 1)  # three sources, between format bytes
    at = 8
    sources = []
    for _ in range(3):
        sid, at = str(uuid.UUID(bytes=data[at : at + 16])), at + 16
        length = data[at] >> 1  # a short length: one byte
        tag, at = data[at + 1 : at + 1 + length].decode(), at + 1 + length
        (count,) = struct.unpack_from("<Q", data, at)
        spans = [struct.unpack_from("<qq", data, at + 8 + 16 * k) for k in range(count)]
        at += 8 + 16 * count
        sources.append((sid, tag, spans))
    assert at == len(data)
    assert sources == [(other, "", [(4, 5)]), (UUID, "", [(1, 10)]), (UUID, "etl", [(1, 4), (5, 6)])]


def test_a_gtid_set_without_tags_keeps_the_untagged_format():
    assert encoded_gtid_set(f"{UUID}:1-9") == events.gtid_set({(UUID, ""): [(1, 9)]})
