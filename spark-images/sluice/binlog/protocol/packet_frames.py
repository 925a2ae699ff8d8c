"""Cutting the replication connection's packets out of what was read off the wire.

A one-row transaction is four packets (GTID, table map, rows, XID), and a read of 64 KB
holds hundreds: cut one at a time in Python (a header, then a payload), the framing cost
more than the events' parsing. `frames` cuts every whole packet of a read in one call; it
is C (_packet_frames.c, built by `make install` and into the image) where it is built, and
`frames_python` is the reference the tests hold it to and what runs where it is not.

It leaves to the connection's own read what is not a plain packet in sequence: a packet
not wholly read yet, a payload of 16 MB (it goes on in the next packet), and a sequence
number out of order (the connection raises as pymysql does).
"""

from __future__ import annotations

try:
    from sluice.binlog.protocol import _packet_frames
except ImportError:  # a source tree nobody built: the Python loop runs
    _packet_frames = None  # type: ignore[assignment]

MAX_PAYLOAD = 0xFFFFFF  # pymysql's MAX_PACKET_LEN: a payload this long goes on in the next packet


def frames_python(read: bytes, at: int, sequence: int) -> tuple[list[bytes], int, int]:
    """The payloads of the whole packets in sequence in `read` from `at`, where they end,
    and the sequence number of the packet after them."""
    if not (0 <= at <= len(read) and 0 <= sequence <= 255):
        raise ValueError(f"no packet at {at} of {len(read)} bytes (sequence {sequence})")
    payloads = []
    while len(read) - at >= 4:
        length = read[at] | read[at + 1] << 8 | read[at + 2] << 16
        if read[at + 3] != sequence or length == MAX_PAYLOAD or len(read) - at - 4 < length:
            break
        payloads.append(read[at + 4 : at + 4 + length])
        at += 4 + length
        sequence = (sequence + 1) & 0xFF
    return payloads, at, sequence


frames = _packet_frames.frames if _packet_frames is not None else frames_python
COMPILED = _packet_frames is not None
