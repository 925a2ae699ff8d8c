"""A binlog dump as MySQL 8.4 serves it (COM_BINLOG_DUMP by file and position,
COM_BINLOG_DUMP_GTID by a GTID set), from the stand-in's translated files: a fake Rotate
naming the file, its format description, then its events from the position, file after
file, following the binlog as it grows, with a heartbeat when idle for the period the
replica set. A replica that did not declare it takes checksums is refused, as MySQL
refuses it; so is a GTID set that lacks what the binlogs no longer have."""

from __future__ import annotations

import struct
import time
import uuid
import zlib
from dataclasses import dataclass

from tests.harness.mysql84 import events, wire
from tests.harness.mysql84.binlog import TranslatedBinlog, TranslatedFile

COM_BINLOG_DUMP, COM_BINLOG_DUMP_GTID = 0x12, 0x1E
BINLOG_DUMP_NON_BLOCK, BINLOG_THROUGH_GTID = 0x01, 0x04
POLL_SECONDS = 0.02


class DumpRefused(Exception):
    pass


@dataclass
class DumpRequest:
    file: str
    position: int
    non_blocking: bool
    server_id: int
    gtids: dict[tuple[str, str], list[tuple[int, int]]] | None  # per source uuid and tag, closed intervals

    @classmethod
    def parse(cls, packet: bytes) -> DumpRequest:
        if packet[0] == COM_BINLOG_DUMP:
            position, flags, server_id = struct.unpack_from("<IHI", packet, 1)
            return cls(packet[11:].decode(), position, bool(flags & BINLOG_DUMP_NON_BLOCK), server_id, None)
        flags, server_id, name_size = struct.unpack_from("<HII", packet, 1)
        name = packet[11 : 11 + name_size].rstrip(b"\x00").decode()
        position = struct.unpack_from("<Q", packet, 11 + name_size)[0]
        at = 19 + name_size
        gtids = None
        if flags & BINLOG_THROUGH_GTID:
            size = struct.unpack_from("<I", packet, at)[0]
            gtids = _decoded_gtid_set(packet[at + 4 : at + 4 + size])
        return cls(name, position, bool(flags & BINLOG_DUMP_NON_BLOCK), server_id, gtids)


def _decoded_gtid_set(data: bytes) -> dict[tuple[str, str], list[tuple[int, int]]]:
    """A dump request's GTID set (Gtid_set::add_gtid_encoding), untagged or tagged format:
    per (source uuid, tag), closed intervals."""
    (head,) = struct.unpack_from("<Q", data)
    tagged = head >> 56 == 1
    if head >> 56 not in (0, 1) or (tagged and head & 0xFF != 1):
        raise DumpRefused("Malformed GTID_set encoding.")
    count = (head >> 8) & 0xFFFF_FFFF_FFFF if tagged else head
    at, decoded = 8, {}
    for _ in range(count):
        sid = str(uuid.UUID(bytes=data[at : at + 16]))
        at += 16
        tag = ""
        if tagged:
            length, at = _read_varlen(data, at)
            tag, at = data[at : at + length].decode(), at + length
        (intervals,) = struct.unpack_from("<Q", data, at)
        at += 8
        spans = [struct.unpack_from("<qq", data, at + 16 * k) for k in range(intervals)]
        decoded[sid, tag] = [(first, end - 1) for first, end in spans]
        at += 16 * intervals
    return decoded


def _read_varlen(data: bytes, at: int) -> tuple[int, int]:
    """A serialization library number (events._varlen's inverse)."""
    if data[at] == 0xFF:
        return int.from_bytes(data[at + 1 : at + 9], "little"), at + 9
    size = (~data[at] & (data[at] + 1)).bit_length()  # the lowest zero bit's place, from 1
    return int.from_bytes(data[at : at + size], "little") >> size, at + size


class BinlogDump:
    """One replica's dump, on its connection, until it goes or (non-blocking) the end."""

    def __init__(self, binlog: TranslatedBinlog, client: wire.PacketStream, server_id: int) -> None:
        self.binlog, self.client, self.server_id = binlog, client, server_id

    def serve(self, request: DumpRequest, heartbeat_seconds: float) -> None:
        self.binlog.catch_up()
        index, position, have = self._start(request)
        while True:
            translated = self.binlog.files[index]
            self._send(
                events.event(
                    events.ROTATE,
                    events.rotate(position, translated.name),
                    0,
                    0,
                    self.server_id,
                    events.LOG_EVENT_ARTIFICIAL_F,
                )
            )
            self._send(self._format_description(translated, position))
            position = max(position, translated.starts[1] if len(translated.starts) > 1 else 4)
            index, position = self._follow(index, position, have, request.non_blocking, heartbeat_seconds)
            if index is None:
                self.client.write(wire.eof_packet())
                return

    def _start(self, request: DumpRequest) -> tuple[int, int, dict[str, int]]:
        """The file to start in, the position there, and (by GTIDs) the last number the
        replica has: its transactions are not sent."""
        files = self.binlog.files
        if request.gtids is None:
            names = [f.name for f in files]
            if request.file not in names:
                raise DumpRefused(f"Could not find first log file name in binary log index file ({request.file})")
            return names.index(request.file), max(request.position, 4), {}
        sid = self.binlog.settings.server_uuid
        have = {tag: spans[0][1] for (s, tag), spans in request.gtids.items() if s == sid and spans[0][0] == 1}
        purged = files[0].previous
        if any(last > have.get(tag, 0) for tag, last in purged.items()):
            raise DumpRefused(
                "Cannot replicate because the source purged required binary logs. Replicate the missing "
                "transactions from elsewhere, or provision a new replica from backup."
            )
        index = max(i for i, f in enumerate(files) if all(last <= have.get(tag, 0) for tag, last in f.previous.items()))
        return index, 4, have

    def _format_description(self, translated: TranslatedFile, position: int) -> bytes:
        """The file's format description; sent before a later position, it ends at 0 (the
        replica keeps the position it asked for)."""
        end = translated.starts[1] if len(translated.starts) > 1 else len(translated.data)
        described = bytes(translated.data[translated.starts[0] : end])
        if position <= 4:
            return described
        header = bytearray(described[: events.HEADER_LENGTH])
        struct.pack_into("<I", header, 13, 0)
        return _rechecked(bytes(header) + described[events.HEADER_LENGTH : -4])

    def _follow(self, index: int, position: int, have: dict[str, int], non_blocking: bool, heartbeat: float):
        idle_since = time.monotonic()
        while True:
            translated = self.binlog.files[index]
            sent_any = False
            for start in [s for s in translated.starts if s >= position]:
                end = next((s for s in translated.starts if s > start), len(translated.data))
                if end > len(translated.data):
                    break
                if not self._skipped(translated, start, have):
                    self._send(bytes(translated.data[start:end]))
                position, sent_any = end, True
            if sent_any:
                idle_since = time.monotonic()
            if translated.closed and position >= len(translated.data) and index + 1 < len(self.binlog.files):
                return index + 1, 4
            if non_blocking and not sent_any:
                return None, position
            if heartbeat and time.monotonic() - idle_since >= heartbeat:
                self._send(
                    events.event(
                        events.HEARTBEAT,
                        translated.name.encode(),
                        position,
                        0,
                        self.server_id,
                        events.LOG_EVENT_ARTIFICIAL_F,
                    )
                )
                idle_since = time.monotonic()
            time.sleep(POLL_SECONDS)
            self.binlog.catch_up()

    def _skipped(self, translated: TranslatedFile, start: int, have: dict[str, int]) -> bool:
        """Whether the event at `start` is in a transaction the replica has."""
        return any(a <= start < b and number <= have.get(tag, 0) for tag, number, a, b in translated.transactions)

    def _send(self, event: bytes) -> None:
        self.client.write(b"\x00" + event)


def _rechecked(event: bytes) -> bytes:
    return event + struct.pack("<I", zlib.crc32(event))
