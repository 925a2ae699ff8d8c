"""The chunk as COPY text, rendered by the source server, lands in PostgreSQL (COPY) and in
MariaDB (LOAD DATA) exactly as the row path writes the same rows: every type it takes,
NULLs, zero and invalid dates (each by its target's rules), the characters COPY escapes,
binary bytes, JSON text, unsigned and BIT extremes, fractional TIMESTAMPs in a server zone that is not UTC. Tables with
other types keep the row path."""

from __future__ import annotations

import dataclasses

import pytest

from sluice.event.snapshot_split import SnapshotSplit, SplitTask
from sluice.pipeline.jdbc_url import parse_jdbc_url
from sluice.sink.jdbc import mysql
from sluice.sink.jdbc.mysql import MySqlDialect
from sluice.sink.jdbc.postgres import PostgresDialect, binary_copy_type
from sluice.sink.target_values import TargetValues
from sluice.snapshot.split_reader import end_split, read_split
from sluice.source.connection import connect_scan
from sluice.source.copy_text import copy_text_select
from sluice.source.schema import read_table_schema
from tests.harness.compare import postgres_rows, source_rows

TEXT_TYPES = """CREATE TABLE text_types (
  id INT PRIMARY KEY, ti TINYINT, tu TINYINT UNSIGNED, si SMALLINT UNSIGNED, mi MEDIUMINT, i INT UNSIGNED,
  bi BIGINT, bu BIGINT UNSIGNED, dec1 DECIMAL(20,6), y YEAR, b1 BIT(1), b10 BIT(10), b64 BIT(64),
  d DATE, dtm DATETIME(6), dt0 DATETIME, ts TIMESTAMP(3) NULL, c CHAR(5), vc VARCHAR(60), tx TEXT,
  lat VARCHAR(20) CHARACTER SET latin1, e ENUM('red', 'tab\tbed'), s SET('a', 'b'), j TEXT,
  bin BINARY(4), vb VARBINARY(20), bl BLOB,
  nn_i BIGINT NOT NULL, nn_dec DECIMAL(12,2) NOT NULL, nn_d DATETIME(3) NOT NULL, nn_ts TIMESTAMP NOT NULL,
  nn_vc VARCHAR(40) NOT NULL, nn_vb VARBINARY(8) NOT NULL, nn_b BIT(8) NOT NULL)"""

ROWS = [
    "(1, -128, 255, 65535, -8388608, 4294967295, -9223372036854775808, 18446744073709551615,"
    " -12345678901234.123456, 2024, b'1', b'1010101010', x'ffffffffffffffff',"
    " '2024-02-29', '2024-02-29 23:59:59.123456', '2024-01-01 00:00:00', '2024-03-31 01:30:00.5', 'ab',"
    " 'tab\\there\\nnew line\\\\back\\rcr \\\\N NULL Grüße 🎉', 'long\\ttext', 'café', 'tab\\tbed', 'a,b',"
    " '{\"k\": [1, 2.5, null], \"s\": \"a\\\\tb\"}', x'00091f5c', x'5c4e0a0d', x'00',"
    " -1, -0.5, '2024-02-29 23:59:59.999', '2024-03-31 01:30:00', 'a\\tb\\\\c\\nd\\re', x'5c0900', b'10000001')",
    "(2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,"
    " NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,"
    " 0, 0, '2024-01-01', '2024-01-01', '', x'', b'0')",
    "(3, 0, 0, 0, 0, 0, 0, 0, 0, 0000, b'0', b'0', b'0', '0000-00-00', '0000-00-00 00:00:00',"
    " '2024-00-15 10:00:00', '0000-00-00 00:00:00', '', '', '', '', 'red', '', '[]', x'00000000', x'', x'',"
    " 9223372036854775807, 9999999999.99, '9999-12-31 23:59:59.999', '2038-01-19 03:14:07', '\\\\N',"
    " x'ff', b'11111111')",
    "(4, 1, 1, 1, 1, 1, 1, 1, 0.000001, 1901, b'1', b'1', b'1', '1000-01-01', '9999-12-31 23:59:59.999999',"
    " '1000-01-01 00:00:00', '1970-01-01 00:00:01', 'x', 'NULL', '\\\\N', 'x', 'red', 'b', '\"text\"',"
    " x'ab00', x'4100', x'ff',"
    " 1, 1, '1000-01-01', '2000-01-01 00:00:01', 'NULL', x'00', b'1')",
]


@pytest.fixture(params=["postgresql", "mariadb"])
def target(request, postgresql, mariadb_target):
    """A target's dialect, a connection to it, and how to read a table DB.T back."""
    if request.param == "postgresql":
        connection = PostgresDialect().connect(parse_jdbc_url(postgresql.url), postgresql.user, postgresql.password)
        yield PostgresDialect(), connection, lambda db, table: postgres_rows(postgresql, db, table)
    else:
        url = parse_jdbc_url(f"mysql://{mariadb_target.host}:{mariadb_target.port}/mysql")
        connection = MySqlDialect().connect(url, mariadb_target.user, mariadb_target.password)
        yield MySqlDialect(), connection, lambda db, table: source_rows(mariadb_target, db, table)
    connection.close()


# Without the columns whose values binary COPY does not take as they are (an unsigned
# BIGINT or BIT(64) past int8), PostgreSQL's row path is binary COPY.
BINARY_COPY_TYPES = ("bu", "b64")


@pytest.mark.parametrize("dropped", [(), BINARY_COPY_TYPES], ids=["every_text_type", "binary_row_path"])
def test_the_servers_copy_text_lands_as_the_row_path_writes_it(mariadb, target, source_db, dropped):
    mariadb.execute(
        "SET SESSION sql_mode = ''",  # zero and invalid dates, as older applications write them
        "SET SESSION time_zone = '+02:00'",
        TEXT_TYPES,
        *(f"INSERT INTO text_types VALUES {row}" for row in ROWS),
        *(f"ALTER TABLE text_types DROP COLUMN {column}" for column in dropped),
        database=source_db,
    )
    conn = mariadb.connect(source_db)
    schema = read_table_schema(conn, source_db, "text_types", None)
    conn.close()
    assert copy_text_select(schema) is not None
    assert all(binary_copy_type(c) for c in schema.columns) == bool(dropped)
    dialect, connection, read_back = target
    task = SplitTask(SnapshotSplit(schema.table_id, 0, None, None), schema, mariadb.endpoint(), 5401, 2)
    source = connect_scan(mariadb.endpoint())
    try:
        for path in ("row_path", "text_path"):
            placed = dataclasses.replace(schema, database=f"{source_db}_{path}")
            with connection.cursor() as cur:
                for statement in dialect.create_table_statements(placed):
                    cur.execute(statement)
            rows, _, _ = read_split(task, source)
            assert rows.has_copy_text
            # As the jdbc writer hands them over: what the target cannot hold fitted by its rules.
            rules = TargetValues(None, None) if dialect.holds_mysql_values else TargetValues("", "")
            dialect.insert_new(connection, placed, rules.rows(placed, rows if path == "text_path" else list(rows)))
            end_split(source)
            connection.commit()
    finally:
        source.close()
    by_rows = read_back(f"{source_db}_row_path", "text_types")
    by_text = read_back(f"{source_db}_text_path", "text_types")
    assert len(by_text) == len(ROWS)
    assert sorted(by_text) == sorted(by_rows)


def test_a_table_with_a_type_outside_the_text_path_keeps_the_row_path(mariadb, source_db):
    for column in ("f FLOAT", "d DOUBLE", "t TIME", "g POINT", "u INET6"):
        name = column.split()[0]
        mariadb.execute(f"CREATE TABLE t_{name} (id INT PRIMARY KEY, {column})", database=source_db)
        conn = mariadb.connect(source_db)
        schema = read_table_schema(conn, source_db, f"t_{name}", None)
        conn.close()
        assert copy_text_select(schema) is None, column
        task = SplitTask(SnapshotSplit(schema.table_id, 0, None, None), schema, mariadb.endpoint(), 5401, 10)
        source = connect_scan(mariadb.endpoint())
        rows, _, _ = read_split(task, source)
        assert not rows.has_copy_text
        end_split(source)
        source.close()


def test_a_mariadb_target_refusing_local_files_gets_the_chunks_by_upserts(
    mariadb, mariadb_target, source_db, caplog, monkeypatch
):
    monkeypatch.setattr(mysql, "_REFUSING", set())  # what this process learns of the target stays here
    valid_dates = (ROWS[1], ROWS[3])  # zero dates become NULL, on either path
    mariadb.execute(TEXT_TYPES, *(f"INSERT INTO text_types VALUES {row}" for row in valid_dates), database=source_db)
    conn = mariadb.connect(source_db)
    schema = read_table_schema(conn, source_db, "text_types", None)
    conn.close()
    dialect = MySqlDialect()
    url = parse_jdbc_url(f"mysql://{mariadb_target.host}:{mariadb_target.port}/mysql")
    task = SplitTask(SnapshotSplit(schema.table_id, 0, None, None), schema, mariadb.endpoint(), 5402, 2)
    source = connect_scan(mariadb.endpoint())
    try:
        with mariadb_target.global_setting("local_infile", "OFF"):
            connection = dialect.connect(url, mariadb_target.user, mariadb_target.password)
            with connection.cursor() as cur:
                for statement in dialect.create_table_statements(schema):
                    cur.execute(statement)
            for _ in range(2):  # a second chunk: the target is not asked again
                rows, _, _ = read_split(task, source)
                assert rows.has_copy_text
                dialect.insert_new(connection, schema, rows)
                end_split(source)
                connection.commit()
            connection.close()
    finally:
        source.close()

    assert sorted(source_rows(mariadb_target, source_db, "text_types")) == sorted(
        source_rows(mariadb, source_db, "text_types")
    )
    assert caplog.text.count("refuses LOAD DATA LOCAL INFILE") == 1


@pytest.mark.parametrize("kind", ["MEDIUMTEXT", "LONGTEXT", "JSON"])
def test_text_that_can_pass_64_kb_keeps_the_row_path(mariadb, source_db, kind):
    """The server's REPLACE costs the square of a value's length when it lengthens it: a
    20 MB LONGTEXT of short lines kept a source core busy for minutes, no row sent."""
    mariadb.execute(f"CREATE TABLE long_text (id INT PRIMARY KEY, body {kind}, note TEXT)", database=source_db)
    with mariadb.connect(source_db) as conn:
        schema = read_table_schema(conn, source_db, "long_text", None)
    assert copy_text_select(schema) is None
    assert copy_text_select(dataclasses.replace(schema, columns=schema.columns[::2])) is not None  # id, note
