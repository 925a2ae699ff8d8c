"""Every binlog event's CRC32 is verified before anything reads it: an event whose bytes
changed on the source's disk (or in the network, or in a proxy) stops the reader, naming
the file and position, by the compiled parser and the Python one alike, rather than
becoming a wrong value in the target."""

from __future__ import annotations

import struct
import types
import zlib

import pytest

from sluice.binlog.protocol import _event_parse, event_stream
from sluice.binlog.protocol.binlog_format import BinlogFormat, ChecksumMismatch, checksum_holds
from sluice.binlog.transaction_reader import Transaction
from sluice.source.schema import read_table_schema
from tests.harness.binlog_reading import position, read_between
from tests.harness.services import start_mariadb


@pytest.fixture(params=["compiled", "python"])
def parser(request, monkeypatch):
    monkeypatch.setattr(event_stream, "COMPILED", request.param == "compiled")
    return request.param


def _written(mariadb, db: str, value: str):
    """A row holding `value`, and the binlog span its transaction takes."""
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(40))", database=db)
    with mariadb.connect(db) as conn, conn.cursor() as cur:
        schema = read_table_schema(conn, db, "t")
        start = position(cur)
        cur.execute("INSERT INTO t VALUES (1, 'plain'), (2, %s), (3, 'after')", (value,))
        conn.commit()
        cur.execute("FLUSH BINARY LOGS")  # the file is closed: nothing appends to it while it is changed
        return schema, start, position(cur)


@pytest.fixture(scope="module")
def damaged(tmp_path_factory):
    """A server of its own: its binlog is damaged on purpose (replicas of the shared one
    would stop at the damage)."""
    server = start_mariadb(tmp_path_factory.mktemp("damaged"))
    yield server
    server.stop()


def test_an_event_changed_on_the_sources_disk_stops_the_reader_at_it(damaged, parser):
    mariadb, source_db = damaged, f"damaged_{parser}"
    mariadb.execute(f"CREATE DATABASE {source_db}")
    schema, start, end = _written(mariadb, source_db, "amount=1000")
    path = mariadb.datadir / start.file
    data = path.read_bytes()
    at = data.rindex(b"amount=1000")  # in the rows event (the statement, annotating it, comes first)
    path.write_bytes(data[:at] + b"amount=9000" + data[at + len(b"amount=1000") :])  # one digit, as a bit rot

    with pytest.raises(ChecksumMismatch, match=rf"binlog event at {start.file}:\d+ fails its CRC32 checksum"):
        read_between(mariadb, source_db, start, end, {schema.table_id: schema})


def test_events_whose_checksums_hold_are_read(mariadb, source_db, parser):
    schema, start, end = _written(mariadb, source_db, "amount=1000")
    read = read_between(mariadb, source_db, start, end, {schema.table_id: schema})
    rows = [c.after for item in read if isinstance(item, Transaction) for e in item.events for c in e.changes()]
    assert rows == [(1, "plain"), (2, "amount=1000"), (3, "after")]


def test_the_python_check_is_the_compiled_ones_reference():
    event = bytes(20) + b"body"
    packet = event + zlib.crc32(event[1:]).to_bytes(4, "little")
    assert checksum_holds(packet, True) and checksum_holds(packet[:-4], False)
    assert not checksum_holds(packet[:-1] + bytes([packet[-1] ^ 1]), True)


@pytest.mark.skipif(
    not event_stream.COMPILED, reason="the compiled parser is not built"
)  # test_the_compiled_* fails then
def test_the_compiled_parser_refuses_a_packet_whose_checksum_does_not_hold():
    import zlib

    event = struct.pack("<IBIIIH", 1700000000, 0x10, 1, 19 + 8 + 4, 4711, 0) + (42).to_bytes(8, "little")  # an XID
    packet = b"\x00" + event + zlib.crc32(event).to_bytes(4, "little")
    bent = packet[:-6] + bytes([packet[-6] ^ 0x10]) + packet[-5:]
    stream, fmt = types.SimpleNamespace(log_pos=0), BinlogFormat(checksum=True)
    parse = _event_parse.parse

    assert parse(packet, stream, {}, fmt, _event_parse.WANT_XID | _event_parse.VERIFY).xid == 42
    with pytest.raises(_event_parse.ChecksumMismatch):
        parse(bent, stream, {}, fmt, _event_parse.WANT_XID | _event_parse.VERIFY)
    assert parse(bent, stream, {}, fmt, _event_parse.WANT_XID).xid != 42  # unverified, read as it came
