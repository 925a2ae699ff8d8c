"""Packets are cut from a read as the protocol frames them (a 3-byte length, a sequence
number, the payload), and what is not a whole packet in sequence is left to the
connection's own read. The compiled loop is held to the Python one."""

from __future__ import annotations

import random

import pytest

from sluice.binlog.protocol import packet_frames
from sluice.binlog.protocol.packet_frames import MAX_PAYLOAD, frames_python

CUTS = {"python": frames_python, "compiled": packet_frames.frames}


def packet(payload: bytes, sequence: int) -> bytes:
    return len(payload).to_bytes(3, "little") + bytes([sequence]) + payload


def test_the_compiled_loop_is_built():
    assert packet_frames.COMPILED, "make install builds binlog/protocol/_packet_frames.c"


@pytest.mark.parametrize("cut", CUTS.values(), ids=CUTS.keys())
def test_every_whole_packet_of_a_read_is_cut_and_the_partial_one_left(cut):
    payloads = [b"\x00event one", b"", b"\x00" + bytes(range(256)) * 3]
    stream = b"".join(packet(p, 254 + i & 0xFF) for i, p in enumerate(payloads))  # 254, 255, 0
    read = b"junk" + stream + packet(b"\x00the next", 1)[:7]

    assert cut(read, 4, 254) == (payloads, 4 + len(stream), 1)
    assert cut(read, 4 + len(stream), 1) == ([], 4 + len(stream), 1)  # three bytes of nine are no packet


@pytest.mark.parametrize("cut", CUTS.values(), ids=CUTS.keys())
def test_a_packet_out_of_sequence_or_of_16_mb_stops_the_cut(cut):
    out_of_sequence = packet(b"\x00a", 7) + packet(b"\x00b", 9)
    assert cut(out_of_sequence, 0, 7) == ([b"\x00a"], 6, 8)
    # A payload of 0xFFFFFF bytes goes on in the next packet: the connection joins them.
    header = MAX_PAYLOAD.to_bytes(3, "little") + bytes([8])
    assert cut(packet(b"\x00a", 7) + header + b"\x00" * 100, 0, 7) == ([b"\x00a"], 6, 8)


@pytest.mark.parametrize("cut", CUTS.values(), ids=CUTS.keys())
def test_a_position_outside_the_read_is_refused(cut):
    with pytest.raises(ValueError, match="no packet at 9 of 4 bytes"):
        cut(b"abcd", 9, 0)


def test_the_compiled_loop_cuts_random_streams_as_the_python_one():
    chance = random.Random(42)
    for _ in range(300):
        sequence, parts = chance.randrange(256), []
        for i in range(chance.randrange(12)):
            parts.append(packet(chance.randbytes(chance.choice([0, 1, 5, 300, 70_000])), sequence + i & 0xFF))
        read = b"".join(parts)
        if chance.random() < 0.3:
            read = read[: chance.randrange(len(read) + 1)]  # a read ends anywhere
        if chance.random() < 0.2 and read:
            flipped = bytearray(read)
            flipped[chance.randrange(len(read))] ^= 0xFF  # a corrupt length or sequence
            read = bytes(flipped)
        at = chance.randrange(min(len(read), 3) + 1)
        assert packet_frames.frames(read, at, sequence) == frames_python(read, at, sequence)
