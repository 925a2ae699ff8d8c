"""The MySQL 8.4 stand-in says what MySQL 8.4 says, where Sluice depends on it: its greeting,
caching_sha2_password's fast and full authentication (the public key asked for over
plaintext), the removed statements refused with MySQL's error, and the replication
statements and GTID variables in MySQL's format, tags included."""

from __future__ import annotations

import MySQLdb
import pymysql
import pytest

from tests.harness.mysql84.front import Mysql84Front
from tests.harness.mysql84.statements import Mysql84Settings
from tests.harness.services import start_mariadb


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


def test_gtid_sets_are_mysqls_with_a_tag_for_each_mariadb_domain_standing_for_one(services_dir):
    """On a MariaDB of its own: the session's keeps one GTID domain."""
    mariadb = start_mariadb(services_dir / "mysql84-tags", server_id=9)
    front = Mysql84Front(mariadb, {mariadb.user: mariadb.password}, Mysql84Settings(tags={0: "", 7: "etl"}))
    try:
        mariadb.execute("CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY)")
        with mariadb.connect("app") as conn, conn.cursor() as cur:
            cur.execute("SET SESSION gtid_domain_id = 7")
            cur.execute("INSERT INTO t VALUES (1)")
            cur.execute("INSERT INTO t VALUES (2)")
            cur.execute("SELECT @@gtid_binlog_pos")
            (position,) = cur.fetchone()
        untagged = next(p for p in position.split(",") if p.startswith("0-")).rsplit("-", 1)[1]
        with front.server().connect() as conn, conn.cursor() as cur:
            cur.execute("SELECT @@gtid_executed")
            (executed,) = cur.fetchone()
            cur.execute("SHOW BINARY LOG STATUS")
            status = cur.fetchone()
        assert executed == f"3e11fa47-71ca-11e1-9e33-c80aa9429562:1-{untagged}:etl:1-2"
        assert status[4] == executed
    finally:
        front.close()
        mariadb.stop()


def test_a_binlog_dump_is_refused_until_the_stand_in_serves_mysqls_events(mysql84: Mysql84Front):
    from pymysqlreplication import BinLogStreamReader

    server = mysql84.server()
    settings = {"host": server.host, "port": server.port, "user": server.user, "passwd": server.password}
    stream = BinLogStreamReader(connection_settings=settings, server_id=7391, blocking=False)
    try:
        with pytest.raises(pymysql.err.OperationalError) as refused:
            stream.fetchone()
        assert refused.value.args[0] == 1236, refused.value.args
    finally:
        stream.close()
