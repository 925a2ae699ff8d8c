"""The events parsed from the packet's bytes are the events python-mysql-replication reads
from the same binlog, and the stream survives a lost connection without losing or
repeating one."""

from __future__ import annotations

import collections
import random
import socket
import struct
import types

import pytest
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.event import MariadbGtidEvent, QueryEvent, RotateEvent, XidEvent

from sluice.binlog.protocol import event_stream, packet_frames
from sluice.binlog.protocol.binlog_format import BinlogFormat
from sluice.binlog.protocol.event_stream import ROW_EVENTS, BinlogRowsEvent, ParsedMariadbGtid, ParsedXid
from sluice.binlog.rows.event_reader import Following, Replica, WatchedTables, open_stream
from sluice.source.connection import current_offset
from sluice.source.offset import BinlogOffset

EXTRA = (XidEvent, QueryEvent, MariadbGtidEvent)
_library_rows = event_stream._library_rows


def _as_rows(event) -> BinlogRowsEvent:
    """A library rows event in the stream's form."""
    return _library_rows(event, event.packet.event_size)


def _history(mariadb, database: str) -> tuple[BinlogOffset, BinlogOffset]:
    """Transactions of every shape on a captured table `a` and an uncaptured table `b`."""
    with mariadb.connect(database) as conn:
        start = current_offset(conn)
    wide = "REPEAT('w', 300)"
    mariadb.execute(
        "CREATE TABLE a (id INT PRIMARY KEY, name VARCHAR(400), qty DECIMAL(10,2) NULL)",
        "CREATE TABLE b (id INT PRIMARY KEY, note TEXT)",
        "INSERT INTO a VALUES (1, 'one', 1.5), (2, 'two', NULL)",
        "INSERT INTO b VALUES (1, 'not captured')",
        "BEGIN",
        "INSERT INTO b VALUES (2, 'between')",
        "UPDATE a SET name = 'uno', id = 11 WHERE id = 1",
        "DELETE FROM a WHERE id = 2",
        "COMMIT",
        f"INSERT INTO a SELECT seq, {wide}, seq / 7 FROM seq_100_to_2099",  # rows events of ~8 KB
        "ALTER TABLE a ADD COLUMN extra INT NULL",  # a new table id, a new table map
        "UPDATE a SET extra = id WHERE id < 150",
        "DELETE FROM a WHERE id >= 2000",
        database=database,
    )
    with mariadb.connect(database) as conn:
        return start, current_offset(conn)


def _open(mariadb, database: str, start: BinlogOffset, following: Following | None = None) -> BinLogStreamReader:
    watched = WatchedTables({})
    watched.add(f"{database}.a")
    return open_stream(Replica(mariadb.endpoint(), 7601, True), start, watched, following, EXTRA)


def _library(mariadb, database: str, start: BinlogOffset) -> BinLogStreamReader:
    """The library's own stream with the same choices as open_stream."""
    return BinLogStreamReader(
        connection_settings=mariadb.endpoint().settings(),
        server_id=7602,
        blocking=False,
        only_events=[*ROW_EVENTS, RotateEvent, *EXTRA],
        only_schemas=[database],
        only_tables=["a"],
        freeze_schema=True,
        log_file=start.file,
        log_pos=start.pos,
        resume_stream=True,
    )


def _seen(event: object) -> tuple:
    """What the readers use of an event."""
    if isinstance(event, ROW_EVENTS):
        event = _as_rows(event)
    header = event.packet
    if isinstance(event, BinlogRowsEvent):
        return ("rows", event.kind, event.table_id, event.body, event.present, header.log_pos, event.timestamp)
    if isinstance(event, XidEvent):
        return ("xid", event.xid, header.log_pos, header.event_size, event.timestamp)
    if isinstance(event, MariadbGtidEvent):
        return ("gtid", event.gtid, header.log_pos, header.event_size, event.timestamp)
    return (type(event).__name__, header.log_pos)


def _read(stream: BinLogStreamReader, end: BinlogOffset, interrupt_after: int | None = None) -> tuple[list, int]:
    """The events up to `end`, and how many connections served them (each starts with a
    rotate event)."""
    events, connections = [], 0
    for event in stream:
        if isinstance(event, RotateEvent):
            connections += 1
            continue
        events.append(event)
        if len(events) == interrupt_after:  # the network drops it (what the server sent is lost)
            stream._stream_connection._sock.shutdown(socket.SHUT_RDWR)
        if event.packet.log_pos >= end.pos:
            break
    stream.close()
    return events, connections


@pytest.fixture(params=["compiled", "python"])
def compiled(request, monkeypatch) -> bool:
    """The compiled framing and parsing, or the Python reference alone."""
    if request.param == "python":
        monkeypatch.setattr(event_stream, "frames", packet_frames.frames_python)
        monkeypatch.setattr(event_stream, "COMPILED", False)
    else:
        assert packet_frames.COMPILED, "make install builds binlog/protocol/_packet_frames.c"
        assert event_stream.COMPILED, "make install builds binlog/protocol/_event_parse.c"
    return request.param == "compiled"


def test_every_event_parsed_here_is_the_one_the_library_reads(mariadb, source_db, monkeypatch, compiled):
    start, end = _history(mariadb, source_db)
    from_library = []
    monkeypatch.setattr(event_stream, "_library_rows", lambda e, size: from_library.append(e) or _as_rows(e))
    ours, _ = _read(_open(mariadb, source_db, start), end)
    theirs, _ = _read(_library(mariadb, source_db, start), end)

    assert [_seen(e) for e in ours] == [_seen(e) for e in theirs]
    rows = [e for e in ours if isinstance(e, BinlogRowsEvent)]
    assert {e.kind.name for e in rows} == {"INSERT", "UPDATE_AFTER", "DELETE"}
    # The library read on only after a table map it parsed: a's two, and b's (filtered out).
    assert len(rows) > 80 and len(from_library) == 3
    assert any(isinstance(e, ParsedXid) for e in ours) and any(isinstance(e, ParsedMariadbGtid) for e in ours)


def test_a_lost_replication_connection_resumes_at_the_next_event(mariadb, source_db, compiled):
    start, end = _history(mariadb, source_db)
    uninterrupted, _ = _read(_open(mariadb, source_db, start), end)

    interrupted, connections = _read(
        _open(mariadb, source_db, start, Following(heartbeat_seconds=1)), end, interrupt_after=5
    )

    assert connections == 2
    assert [_seen(e) for e in interrupted] == [_seen(e) for e in uninterrupted]


def test_a_version_2_rows_event_skips_its_extra_data():
    """MySQL writes version 2 rows events (MariaDB, version 1): the same event with extra
    row info after its post-header gives the same rows. (No MySQL server on this machine.)"""
    stream = event_stream.BinlogEventStream.__new__(event_stream.BinlogEventStream)
    stream.table_map = {42: "table a"}
    stream._format = BinlogFormat(checksum=True)
    rows = b"\xfc\x01\x00\x00\x00" * 3
    checksum = b"\xde\xad\xbe\xef"

    def packet(event_type: int, post_header: bytes) -> bytes:
        body = (42).to_bytes(6, "little") + b"\x01\x00" + post_header + b"\x03\x07" + rows
        size = 19 + len(body) + len(checksum)
        header = struct.pack("<IBIIIH", 1700000000, event_type, 1, size, 4096, 0)
        return b"\x00" + header + body + checksum

    v1 = packet(0x17, b"")
    v2 = packet(0x1E, b"\x07\x00" + b"\x01\x02\x03\x04\x05")  # length 7: itself and 5 bytes
    one = stream._rows(v1, stream._header(v1), 0x17)
    two = stream._rows(v2, stream._header(v2), 0x1E)

    assert (two.kind, two.table, two.present, two.body) == (one.kind, one.table, (b"\x07",), rows)
    assert one.body == rows


def _stream(wanted: set[type], checksum: bool, tables: dict[int, object]) -> event_stream.BinlogEventStream:
    """A stream that parses packets handed to it (no connection)."""
    stream = event_stream.BinlogEventStream.__new__(event_stream.BinlogEventStream)
    stream.table_map, stream._format, stream.log_pos = dict(tables), BinlogFormat(checksum=checksum), 0
    stream.parse_only(wanted)
    return stream


def _random_packet(chance: random.Random, checksum: bool) -> bytes:
    """A GTID, XID, table map or rows event packet (or another type), of any length, with
    fields of any value: what the compiled parser must read as the Python one does."""
    kind = chance.choice([0x10, 0xA2, 0x13, 0x17, 0x18, 0x19, 0x1E, 0x1F, 0x20, 0x02, 0x04])
    table = chance.choice([42, 43, 44]).to_bytes(6, "little") + b"\x01\x00"
    if kind in (0x1E, 0x1F, 0x20):
        table += chance.choice([b"\x02\x00", b"\x07\x00" + chance.randbytes(5), b"\x01\x00"])
    columns = chance.choice([b"\x03", b"\x09", b"\xfc\x0a\x00", b"\xfb", b"\xfe" + (300).to_bytes(8, "little")])
    body = {
        0x10: chance.randbytes(8),
        0xA2: chance.randbytes(13),
        0x13: table + chance.randbytes(10),
    }.get(kind, table + columns + chance.randbytes(chance.randrange(40)))
    body += chance.randbytes(4) if checksum else b""
    log_pos = chance.choice([0, 4096, chance.randrange(1 << 32)])
    header = struct.pack("<IBIIIH", chance.randrange(1 << 32), kind, chance.randrange(1 << 32), 0, log_pos, 0)
    packet = bytearray(b"\x00" + header + body)
    struct.pack_into("<I", packet, 10, len(packet) - 1)
    cut = chance.random()
    return bytes(packet[: chance.randrange(len(packet))] if cut < 0.15 else packet)


def _outcome(stream: event_stream.BinlogEventStream, packet: bytes) -> tuple:
    """What parsing gives (an event's class and fields, or the error), and the log_pos it leaves."""
    try:
        event = stream.parsed(packet)
    except Exception as exc:  # noqa: BLE001 - a malformed packet fails either way, the same way
        return ("raised", type(exc).__name__), stream.log_pos
    if isinstance(event, tuple) or event is None or event is event_stream._SKIPPED:
        return (type(event).__name__, event), stream.log_pos
    return (type(event).__name__, sorted(vars(event).items())), stream.log_pos


def test_the_compiled_parser_reads_every_packet_as_the_python_parsers_do(monkeypatch):
    assert event_stream.COMPILED, "make install builds binlog/protocol/_event_parse.c"
    chance = random.Random(2026)
    tables = {42: "table a", 43: "table b"}  # 44: a table whose map was filtered out
    kinds = [XidEvent, MariadbGtidEvent, *ROW_EVENTS]
    seen = collections.Counter()
    for round_ in range(3000):
        checksum = chance.random() < 0.5
        wanted = {kind for kind in kinds if chance.random() < 0.8}
        compressed = {43: frozenset({1})} if chance.random() < 0.2 else {}
        sizes = {4096: 777} if chance.random() < 0.2 else {}
        packet = _random_packet(chance, checksum)
        if compressed:  # a table with compressed columns: its rows events mark them
            tables[43] = types.SimpleNamespace(columns=[types.SimpleNamespace(), types.SimpleNamespace()])
        outcomes = []
        for compiled in (True, False):
            monkeypatch.setattr(event_stream, "COMPILED", compiled)
            stream = _stream(wanted, checksum, tables)
            stream._format.compressed, stream._format.sizes = dict(compressed), dict(sizes)
            stream._format.post_header = bytes(range(1, 40)) if round_ % 7 == 0 else b""
            outcomes.append(_outcome(stream, packet))
        assert outcomes[0] == outcomes[1], packet.hex()
        seen[outcomes[0][0][0]] += 1
    # Every outcome came up: events of each class, skipped ones, the library's, failures.
    assert set(seen) == {"BinlogRowsEvent", "ParsedXid", "ParsedMariadbGtid", "object", "NoneType", "raised"}, seen
