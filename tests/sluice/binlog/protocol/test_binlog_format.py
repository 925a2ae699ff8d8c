"""The binlog as servers write it in production: compressed events, a checksum setting
changed while a reader follows it, and events the reader does not know, which stop it
rather than pass unseen."""

from __future__ import annotations

import struct
from datetime import datetime

import pytest

from sluice.binlog import transaction_reader
from sluice.binlog.protocol.binlog_format import BinlogFormat, UnknownEvent
from sluice.binlog.transaction_reader import Transaction
from sluice.errors import SourceError
from sluice.event.row_change import RowKind
from sluice.event.schema_change import SchemaChange
from sluice.source.schema import read_table_schema
from tests.harness.binlog_reading import position, read_between


def _changes(read) -> list[tuple]:
    return [
        (change.kind, change.before, change.after)
        for item in read
        if isinstance(item, Transaction)
        for event in item.events
        for change in event.changes()
    ]


def test_compressed_query_and_rows_events_are_read_as_their_plain_twins(mariadb_compressed, source_db_compressed):
    """With log_bin_compress on, MariaDB writes Query_compressed and Write/Update/
    Delete_rows_compressed events: the reader passed over all of them."""
    server, db = mariadb_compressed, source_db_compressed
    server.execute("CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(100), note TEXT)", database=db)
    with server.connect(db) as conn, conn.cursor() as cur:
        schema = read_table_schema(conn, db, "t")
        start = position(cur)
        cur.execute("INSERT INTO t VALUES (1, 'one', REPEAT('x', 2000)), (2, 'two', NULL)")
        cur.execute("UPDATE t SET name = 'uno' WHERE id = 1")
        cur.execute("DELETE FROM t WHERE id = 2")
        cur.execute("ALTER TABLE t ADD COLUMN extra INT NULL")
        cur.execute("INSERT INTO t VALUES (3, 'three', 'n', 33)")
        conn.commit()
        end = position(cur)
        cur.execute("SHOW BINLOG EVENTS IN %s FROM %s", (start.file, start.pos))
        kinds = {row[2] for row in cur.fetchall()}
    assert {"Query_compressed", "Write_rows_compressed_v1", "Update_rows_compressed_v1"} <= kinds
    read = read_between(server, db, start, end, {schema.table_id: schema})
    assert _changes(read) == [
        (RowKind.INSERT, None, (1, "one", "x" * 2000)),
        (RowKind.INSERT, None, (2, "two", None)),
        (RowKind.UPDATE_AFTER, (1, "one", "x" * 2000), (1, "uno", "x" * 2000)),
        (RowKind.DELETE, (2, "two", None), None),
        (RowKind.INSERT, None, (3, "three", "n", 33)),
    ]
    changes = [item for item in read if isinstance(item, SchemaChange)]
    assert [type(e).__name__ for c in changes for e in c.events] == ["AddColumn"]


def _checksum_switches(server, db: str) -> tuple:
    """Changes on both sides of binlog_checksum switched off and on again: each switch
    rotates to a file whose format description says how its events end."""
    server.execute("CREATE TABLE t (id INT PRIMARY KEY, at DATETIME, note VARCHAR(20))", database=db)
    with server.connect(db) as conn, conn.cursor() as cur:
        schema = read_table_schema(conn, db, "t")
        start = position(cur)
        cur.execute("INSERT INTO t VALUES (1, '2024-01-02 03:04:05', 'crc')")
        conn.commit()
        with server.global_setting("binlog_checksum", "NONE"):
            cur.execute("INSERT INTO t VALUES (2, '2024-02-03 04:05:06', 'none')")
            cur.execute("UPDATE t SET id = 20 WHERE id = 2")
            conn.commit()
        cur.execute("INSERT INTO t VALUES (3, '2024-03-04 05:06:07', 'crc again')")
        conn.commit()
        end = position(cur)
    return schema, start, end


_SWITCHED = [
    (RowKind.INSERT, None, (1, datetime(2024, 1, 2, 3, 4, 5), "crc")),
    (RowKind.INSERT, None, (2, datetime(2024, 2, 3, 4, 5, 6), "none")),
    (RowKind.UPDATE_AFTER, (2, datetime(2024, 2, 3, 4, 5, 6), "none"), (20, datetime(2024, 2, 3, 4, 5, 6), "none")),
    (RowKind.INSERT, None, (3, datetime(2024, 3, 4, 5, 6, 7), "crc again")),
]


def test_a_checksum_setting_changed_while_reading_is_followed_file_by_file(mariadb, source_db):
    """The events after `SET GLOBAL binlog_checksum=NONE` were decoded with their last 4
    bytes cut (a key change's DATETIME came out NULL), then the reader stopped."""
    schema, start, end = _checksum_switches(mariadb, source_db)
    assert start.file != end.file
    assert _changes(read_between(mariadb, source_db, start, end, {schema.table_id: schema})) == _SWITCHED


def test_files_written_with_checksums_are_read_while_the_setting_is_off(mariadb, source_db):
    """A reader that connects while binlog_checksum is NONE still reads older files that
    have checksums (the server refuses them to a replica that made no checksum handshake)."""
    schema, start, end = _checksum_switches(mariadb, source_db)
    with mariadb.global_setting("binlog_checksum", "NONE"):
        read = read_between(mariadb, source_db, start, end, {schema.table_id: schema})
    assert _changes(read) == _SWITCHED


def test_load_data_logged_as_a_statement_has_a_captured_table_read_again(mariadb, source_db, tmp_path):
    """A session in statement format logs LOAD DATA as Begin_load_query and
    Execute_load_query events: rows no rows event carries. The reader passed over them.
    The statement is read as any statement logged so: its table is read again. Into a
    table the pipeline does not capture it is no change (a run from the earliest
    offset meets every such statement the server ever logged)."""
    mariadb.execute(
        "CREATE TABLE t (id INT PRIMARY KEY)", "CREATE TABLE other (id INT PRIMARY KEY)", database=source_db
    )
    data = tmp_path / "rows.txt"
    data.write_text("5\n6\n")
    data.chmod(0o644)
    with mariadb.connect(source_db) as conn, conn.cursor() as cur:
        schema = read_table_schema(conn, source_db, "t")
        start = position(cur)
        cur.execute("SET SESSION binlog_format = STATEMENT")
        cur.execute(f"LOAD DATA INFILE '{data}' INTO TABLE other")
        conn.commit()
        between = position(cur)
        cur.execute(f"LOAD DATA INFILE '{data}' INTO TABLE t")
        conn.commit()
        cur.execute("SHOW BINLOG EVENTS IN %s FROM %s", (between.file, between.pos))
        load = next(row[1] for row in cur.fetchall() if row[2] == "Execute_load_query")
        end = position(cur)
    assert _changes(read_between(mariadb, source_db, start, between, {schema.table_id: schema})) == []
    read = read_between(mariadb, source_db, start, end, {schema.table_id: schema})
    assert [(c.position.pos, c.reread) for c in read if isinstance(c, SchemaChange)] == [(load, (schema.table_id,))]


def test_an_event_type_no_server_wrote_before_stops_the_reader():
    binlog = BinlogFormat(checksum=True)
    binlog.file = "mysql-bin.000042"
    event = struct.pack("<IBIIIH", 1700000000, 172, 1, 19 + 6 + 4, 4096 + 29, 0) + b"\x00" * 10
    with pytest.raises(UnknownEvent, match="a unknown type 172 event at mysql-bin.000042:4096"):
        binlog.readable(b"\x00" + event)
    for passed_over in (160, 161, 163, 35):  # annotate rows, checkpoints, GTID lists
        packet = b"\x00" + event[:4] + bytes([passed_over]) + event[5:]
        assert binlog.readable(packet) is packet


@pytest.mark.parametrize("piece_bytes", [transaction_reader.PIECE_BYTES, 1])
def test_an_xa_transaction_of_captured_rows_stops_the_reader(mariadb, source_db, monkeypatch, piece_bytes):
    """Its rows were kept and given with the next transaction's, after its XA COMMIT (or
    its XA ROLLBACK). One given in pieces (here every rows event a piece) is stopped all the
    same: its rows had gone out before the XA PREPARE, which then found none."""
    monkeypatch.setattr(transaction_reader, "PIECE_BYTES", piece_bytes)
    mariadb.execute(
        "CREATE TABLE t (id INT PRIMARY KEY)", "CREATE TABLE other (id INT PRIMARY KEY)", database=source_db
    )
    with mariadb.connect(source_db) as conn, conn.cursor() as cur:
        schema = read_table_schema(conn, source_db, "t")
        start = position(cur)
        for xid, table in (("x1", "other"), ("x2", "t")):
            cur.execute(f"XA START '{xid}'")
            cur.execute(f"INSERT INTO {table} VALUES (1)")
            cur.execute(f"XA END '{xid}'")
            cur.execute(f"XA PREPARE '{xid}'")
            cur.execute(f"XA ROLLBACK '{xid}'")
        end = position(cur)
    with pytest.raises(SourceError, match=f"XA transaction prepared at {start.file}:.* changes {source_db}.t:"):
        read_between(mariadb, source_db, start, end, {schema.table_id: schema})
