"""The MySQL 8.4 stand-in says what MySQL 8.4 says, where Sluice depends on it: its greeting,
caching_sha2_password's fast and full authentication (the public key asked for over
plaintext), the removed statements refused with MySQL's error, and the replication
statements and GTID variables in MySQL's format, tags included."""

from __future__ import annotations

import struct

import MySQLdb
import pymysql
import pytest

from tests.harness.mysql84.front import Mysql84Front
from tests.harness.mysql84.statements import Mysql84Settings


def test_it_greets_as_mysql_8_4_and_authenticates_fully_first_then_from_its_cache(mysql84: Mysql84Front):
    server = mysql84.server()
    with server.connect() as conn:
        assert conn.get_server_info() == "8.4.3"
        assert conn._auth_plugin_name == "caching_sha2_password"
        with conn.cursor() as cur:
            cur.execute("SELECT @@version_comment, @@gtid_mode")
            assert cur.fetchone() == ("MySQL Community Server - GPL", "ON")
    server.connect().close()
    mysql84.flush_privileges()
    server.connect().close()
    assert mysql84.authentications == [("root", "full"), ("root", "fast"), ("root", "full")]
    with pytest.raises(pymysql.err.OperationalError) as denied:
        pymysql.connect(host=server.host, port=server.port, user="root", password="wrong")
    assert denied.value.args[0] == 1045


def test_mysqlclient_authenticates_fully_over_plaintext_by_the_servers_public_key(mysql84: Mysql84Front):
    """libmariadb's caching_sha2_password client, as the snapshot's chunk readers use it."""
    server = mysql84.server()
    conn = MySQLdb.connect(host=server.host, port=server.port, user=server.user, password=server.password)
    try:
        cur = conn.cursor()
        cur.execute("SELECT 1")
        assert cur.fetchone() == (1,)
    finally:
        conn.close()
    assert mysql84.authentications == [("root", "full")]


def test_the_statements_8_4_removed_are_syntax_errors_and_their_replacements_answer(mysql84: Mysql84Front):
    with mysql84.server().connect() as conn, conn.cursor() as cur:
        for removed, near in (("SHOW SLAVE HOSTS", "SLAVE HOSTS"), ("SHOW MASTER STATUS", "MASTER STATUS")):
            with pytest.raises(pymysql.err.ProgrammingError) as refused:
                cur.execute(removed)
            assert refused.value.args == (
                1064,
                "You have an error in your SQL syntax; check the manual that corresponds to your MySQL server "
                f"version for the right syntax to use near '{near}' at line 1",
            )
        cur.execute("SHOW REPLICAS")
        assert [d[0] for d in cur.description] == ["Server_Id", "Host", "Port", "Source_Id", "Replica_UUID"]
        cur.execute("SHOW BINARY LOG STATUS")
        assert [d[0] for d in cur.description] == [
            "File",
            "Position",
            "Binlog_Do_DB",
            "Binlog_Ignore_DB",
            "Executed_Gtid_Set",
        ]
        with pytest.raises(pymysql.err.OperationalError) as unknown:
            cur.execute("SELECT @@gtid_binlog_pos")
        assert unknown.value.args == (1193, "Unknown system variable 'gtid_binlog_pos'")
        cur.execute("SHOW STATUS WHERE Variable_name IN ('binlog_snapshot_file', 'binlog_snapshot_position')")
        assert cur.fetchall() == ()  # MariaDB's alone


def test_gtid_sets_print_as_mysqls_with_a_tag_for_each_mariadb_domain_standing_for_one():
    settings = Mysql84Settings(tags={0: "", 7: "etl"})
    assert settings.mysql_gtid_set({"": 12, "etl": 2}) == "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-12:etl:1-2"
    assert settings.mysql_gtid_set({"": 1}) == "3e11fa47-71ca-11e1-9e33-c80aa9429562:1"


def test_the_binlog_is_served_in_mysql_8_4s_format_at_the_positions_it_reports(mysql84: Mysql84Front, source_db):
    """As python-mysql-replication reads a MySQL server: its format description, a GTID
    event of the server's uuid and a BEGIN before each transaction's rows (V2 events), the
    XID; the executed set and the position say the same as the stream."""
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.event import FormatDescriptionEvent, GtidEvent, QueryEvent, XidEvent
    from pymysqlreplication.row_event import TableMapEvent, WriteRowsEvent

    server = mysql84.server()
    with server.connect(source_db) as conn, conn.cursor() as cur:
        cur.execute("SHOW BINARY LOG STATUS")
        file, position, _, _, _ = cur.fetchone()
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))")
        cur.execute("INSERT INTO t VALUES (1, 'one'), (2, 'two')")
        cur.execute("SHOW BINARY LOG STATUS")
        _, end, _, _, executed = cur.fetchone()
    settings = {"host": server.host, "port": server.port, "user": server.user, "password": server.password}
    stream = BinLogStreamReader(
        connection_settings=settings,
        server_id=7391,
        blocking=False,
        log_file=file,
        log_pos=position,
        resume_stream=True,
        only_events=[FormatDescriptionEvent, GtidEvent, QueryEvent, TableMapEvent, WriteRowsEvent, XidEvent],
    )
    try:
        read = list(stream)
    finally:
        stream.close()
    described, ddl, create, gtid, begin, table_map, insert, xid = read
    assert described.mysql_version_str == "8.4.3"
    assert [type(e) for e in (ddl, create, gtid, begin, table_map, insert, xid)] == [
        GtidEvent,
        QueryEvent,
        GtidEvent,
        QueryEvent,
        TableMapEvent,
        WriteRowsEvent,
        XidEvent,
    ]
    assert (create.query, begin.query) == ("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))", "BEGIN")
    assert insert.packet.event_type == 30  # WRITE_ROWS_EVENT (V2)
    # binlog_row_metadata=MINIMAL (8.4's default): no column names in the table map
    assert table_map.optional_metadata.column_name_list == []
    assert table_map.optional_metadata.unsigned_column_list == [False, False]
    assert [row["values"] for row in insert.rows] == [
        {"UNKNOWN_COL0": 1, "UNKNOWN_COL1": "one"},
        {"UNKNOWN_COL0": 2, "UNKNOWN_COL1": "two"},
    ]
    sid, number = gtid.gtid.rsplit(":", 1)
    assert ddl.gtid == f"{sid}:{int(number) - 1}" and sid == "3e11fa47-71ca-11e1-9e33-c80aa9429562"
    assert executed == f"{sid}:1-{number}"
    assert xid.packet.log_pos == end


def test_a_binlog_dump_without_checksums_declared_is_refused_as_mysql_refuses_it(mysql84: Mysql84Front):
    server = mysql84.server()
    with server.connect() as conn:
        conn._execute_command(0x12, struct.pack("<IHI", 4, 1, 7392) + b"mysql-bin.000001")
        with pytest.raises(pymysql.err.OperationalError) as refused:
            conn._read_packet()
    assert refused.value.args[0] == 1236
    assert "checksum" in refused.value.args[1]
