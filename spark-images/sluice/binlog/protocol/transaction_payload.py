"""MySQL 8.0.20+'s Transaction_payload event (binlog_transaction_compression=ON): a whole
transaction's events, but its GTID event, in one event, compressed with zstd.

Its body (MySQL's libbinlogevents, codecs/binary.cpp) is a header of fields, each a type,
a length and a value, all length-coded integers: 1 the payload's size, 2 its compression
(0 zstd, 255 none), 3 its size uncompressed; type 0 ends the header. The payload follows:
the events, each with its common header and no checksum of its own (the payload event's
covers them).
"""

from __future__ import annotations

import zstandard

from sluice.binlog.protocol.packet_bytes import length_coded

_SIZE, _COMPRESSION, _UNCOMPRESSED = 1, 2, 3
ZSTD, NONE = 0, 255
_HEADER_SIZE = 19
_EVENT_SIZE_AT = 9  # in an event's common header


class PayloadError(ValueError):
    """A payload that is not as MySQL writes it."""


def _fields(body: bytes) -> tuple[dict[int, int], int]:
    """The payload's fields, each (type, length, value), to their end mark; and where the
    payload begins."""
    fields: dict[int, int] = {}
    at = 0
    try:
        while True:
            kind, at = length_coded(body, at)
            if kind == 0:
                return fields, at
            length, at = length_coded(body, at)
            fields[kind], _ = length_coded(body[at : at + length], 0)
            at += length
    except (IndexError, KeyError) as exc:  # past the end, or not a packed number
        raise PayloadError(f"its fields run past its {len(body)} bytes or hold no number at {at}") from exc


def inner_events(body: bytes) -> list[bytes]:
    """The events a payload event's body holds, each as it is in the payload."""
    fields, at = _fields(body)
    size, compression = fields.get(_SIZE), fields.get(_COMPRESSION, NONE)
    payload = body[at:]
    if size is None or size != len(payload):
        raise PayloadError(f"a payload of {len(payload)} bytes declares {size}")
    if compression == ZSTD:
        expected = fields.get(_UNCOMPRESSED, -1)
        try:
            payload = zstandard.ZstdDecompressor().decompressobj().decompress(payload)
        except zstandard.ZstdError as exc:
            raise PayloadError(f"zstd: {exc}") from exc
        if len(payload) != expected:
            raise PayloadError(f"{len(payload)} bytes decompressed, {expected} declared")
    elif compression != NONE:
        raise PayloadError(f"compression type {compression}, which Sluice does not know")
    events, at = [], 0
    while at < len(payload):
        if len(payload) - at < _HEADER_SIZE:
            raise PayloadError(f"{len(payload) - at} bytes left after its last event")
        size = int.from_bytes(payload[at + _EVENT_SIZE_AT : at + _EVENT_SIZE_AT + 4], "little")
        if size < _HEADER_SIZE or at + size > len(payload):
            raise PayloadError(f"an event of {size} bytes at {at} of {len(payload)}")
        events.append(payload[at : at + size])
        at += size
    return events
