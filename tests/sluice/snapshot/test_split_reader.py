"""The split reader against a real MariaDB: the chunk SELECT and the binlog decode every
column type to the same row, which the watermark fold and the emit rule depend on."""

from __future__ import annotations

from sluice.binlog.event_reader import read_window
from sluice.snapshot.snapshot_split import SnapshotSplit
from sluice.snapshot.split_reader import SplitTask, read_split
from sluice.source.connection import connect_scan, current_offset
from sluice.source.schema import read_table_schema

ALL_TYPES = """CREATE TABLE all_types (
  id INT PRIMARY KEY, ti TINYINT, si SMALLINT UNSIGNED, mi MEDIUMINT, bi BIGINT UNSIGNED,
  f FLOAT, d DOUBLE, dec1 DECIMAL(20,6), b BIT(10), y YEAR,
  dt DATE, dtm DATETIME(6), ts TIMESTAMP(3) NULL, tm TIME(2),
  c CHAR(5), vc VARCHAR(50), tx TEXT, bin BINARY(4), vb VARBINARY(20), bl BLOB,
  e ENUM('red', 'green', 'blue'), s SET('a', 'b', 'c'), j JSON, u VARCHAR(20) CHARACTER SET utf8mb4)"""

ROWS = [
    "(1, -128, 65535, -8388608, 18446744073709551615, 3.14159, 2.718281828459045, -12345678901234.123456,"
    " b'1010101010', 2024, '2024-02-29', '2024-02-29 23:59:59.123456', '2024-01-01 00:00:00.5', '-838:59:59.99',"
    " 'ab', 'hello', 'long text', x'00ff10ab', x'deadbeef', x'00', 'green', 'a,c',"
    " '{\"k\": [1, 2.5, null]}', 'Grüße 🎉')",
    "(2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,"
    " NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
    "(3, 0, 0, 0, 0, 0.1, 1e-300, 0, b'0', 1901, '1000-01-01', '1000-01-01 00:00:00', '1970-01-01 00:00:01',"
    " '00:00:00', '', '', '', x'00000000', x'', x'', 'red', '', '[]', '')",
    "(4, 1, 1, 1, 1, -1.5e38, -0.0, 0.000001, b'1', 2155, '9999-12-31', '9999-12-31 23:59:59.999999', NULL,"
    " '-00:00:01.01', 'x', 'y', 'z', x'ab00', x'4100', x'00', 'blue', 'b', '\"text\"', 'x')",
]


def test_select_and_binlog_decode_every_type_to_the_same_row(mariadb, source_db):
    mariadb.execute(ALL_TYPES, database=source_db)
    conn = mariadb.connect(source_db)
    start = current_offset(conn)
    mariadb.execute(*(f"INSERT INTO all_types VALUES {row}" for row in ROWS), database=source_db)
    stop = current_offset(conn)
    schema = read_table_schema(conn, source_db, "all_types", None)
    conn.close()
    endpoint = mariadb.endpoint()

    task = SplitTask(SnapshotSplit(schema.table_id, 0, None, None), schema, endpoint, 5401, 100)
    selected, _, _ = read_split(task, connect_scan(endpoint))
    from_binlog = [c.after for c in read_window(endpoint, 5401, start, stop, {schema.table_id: schema}, True)]

    assert len(selected) == len(ROWS)
    assert sorted(selected, key=lambda r: r[0]) == from_binlog


def test_split_reads_only_its_chunk_and_folds_changes_made_while_reading(mariadb, source_db):
    mariadb.execute(
        "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))",
        "INSERT INTO t VALUES (1, 'a'), (5, 'b'), (10, 'c'), (15, 'd')",
        database=source_db,
    )
    conn = mariadb.connect(source_db)
    schema = read_table_schema(conn, source_db, "t", None)
    conn.close()
    split = SnapshotSplit(schema.table_id, 1, 5, 15)

    endpoint = mariadb.endpoint()
    rows, high, folded = read_split(SplitTask(split, schema, endpoint, 5402, 100), connect_scan(endpoint))

    assert sorted(rows) == [(5, "b"), (10, "c")]
    assert folded == 0
    assert high.file
