"""The chunk splitter against a real MariaDB: fixed ranges for even keys, queries otherwise."""

from __future__ import annotations

import pytest

from sluice.errors import SourceError
from sluice.event.snapshot_split import SnapshotSplit
from sluice.snapshot.chunk_scan import chunk_query
from sluice.snapshot.chunk_splitter import split_table
from sluice.source.schema import read_table_schema


def _splits(mariadb, db, table, chunk_size, chunk_key=None):
    conn = mariadb.connect(db)
    try:
        schema = read_table_schema(conn, db, table, chunk_key)
        return schema, split_table(conn, schema, chunk_size)
    finally:
        conn.close()


def _chunk_sizes(mariadb, db, schema, splits):
    conn = mariadb.connect(db)
    sizes = []
    with conn.cursor() as cur:
        for split in splits:
            sql, params = chunk_query(schema, split)
            cur.execute(f"SELECT COUNT(*) FROM ({sql}) t", params)
            sizes.append(cur.fetchone()[0])
    conn.close()
    return sizes


def _fill(mariadb, db, ddl, rows_sql):
    mariadb.execute(ddl, rows_sql, database=db)


def test_evenly_distributed_integer_key_gets_fixed_ranges(mariadb, source_db):
    _fill(
        mariadb,
        source_db,
        "CREATE TABLE t (id INT PRIMARY KEY)",
        "INSERT INTO t WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM s WHERE n < 1000) SELECT n FROM s",
    )
    schema, splits = _splits(mariadb, source_db, "t", 100)
    # Fixed ranges: one step (from the server's row estimate, ~100 here) from the minimum,
    # computed without walking the index.
    inner = [s.end for s in splits[:-1]]
    step = inner[0] - 1
    assert 90 <= step <= 110
    assert inner == list(range(1 + step, 1001, step))
    assert splits[0].start is None and splits[-1].end is None
    sizes = _chunk_sizes(mariadb, source_db, schema, splits)
    assert sum(sizes) == 1000 and max(sizes) <= 110


def test_skewed_integer_key_walks_the_index(mariadb, source_db):
    _fill(
        mariadb,
        source_db,
        "CREATE TABLE t (id BIGINT PRIMARY KEY)",
        "INSERT INTO t WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM s WHERE n < 500) "
        "SELECT IF(n % 50 = 0, n * 100000000, n) FROM s",
    )
    schema, splits = _splits(mariadb, source_db, "t", 100)
    sizes = _chunk_sizes(mariadb, source_db, schema, splits)
    # Fixed ranges over [1, 5e10] would give millions of empty chunks; walking gives full ones.
    assert len(splits) == 5 and sum(sizes) == 500 and max(sizes) <= 100


def test_string_key_chunks_follow_the_server_collation(mariadb, source_db):
    _fill(
        mariadb,
        source_db,
        "CREATE TABLE t (code VARCHAR(20) PRIMARY KEY, v INT)",
        "INSERT INTO t WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM s WHERE n < 300) "
        "SELECT CONCAT(IF(n % 2 = 0, 'k', 'K'), LPAD(n, 4, '0')), n FROM s",
    )
    schema, splits = _splits(mariadb, source_db, "t", 50)
    sizes = _chunk_sizes(mariadb, source_db, schema, splits)
    assert sum(sizes) == 300 and max(sizes) <= 50 and len(splits) >= 6


def test_composite_key_chunks_on_its_first_column_and_keeps_equal_keys_together(mariadb, source_db):
    _fill(
        mariadb,
        source_db,
        "CREATE TABLE t (tenant INT, id INT, PRIMARY KEY (tenant, id))",
        "INSERT INTO t WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM s WHERE n < 600) "
        "SELECT IF(n <= 300, 1, n % 7 + 2), n FROM s",
    )
    schema, splits = _splits(mariadb, source_db, "t", 100)
    assert schema.chunk_key == "tenant"
    sizes = _chunk_sizes(mariadb, source_db, schema, splits)
    assert sum(sizes) == 600
    assert any(s.start == 1 or s.end == 2 for s in splits)  # tenant 1's 300 rows share a chunk
    assert 300 in sizes


def test_a_keyless_table_is_chunked_by_an_indexed_column_it_picks_not_null_first(mariadb, source_db):
    _fill(
        mariadb,
        source_db,
        "CREATE TABLE logs (tag VARCHAR(10), seq INT NOT NULL, line TEXT, KEY (tag), KEY (seq))",
        "INSERT INTO logs SELECT CONCAT('t', seq % 3), seq, 'x' FROM seq_1_to_250",
    )
    schema, splits = _splits(mariadb, source_db, "logs", 100)
    assert schema.chunk_key == "seq" and not schema.single_split
    assert len(splits) == 3 and sum(_chunk_sizes(mariadb, source_db, schema, splits)) == 250


def test_a_keyless_table_no_indexed_column_splits_is_read_as_one_split(mariadb, source_db):
    _fill(
        mariadb,
        source_db,
        "CREATE TABLE logs (at DATETIME, line TEXT, level ENUM('a', 'b'), KEY (line(10)))",
        "INSERT INTO logs SELECT NOW(), 'x', 'a' FROM seq_1_to_250",
    )
    schema, splits = _splits(mariadb, source_db, "logs", 100)
    assert schema.single_split and splits == [SnapshotSplit(f"{source_db}.logs", 0, None, None)]
    assert _chunk_sizes(mariadb, source_db, schema, splits) == [250]


def test_configured_chunk_key_is_used_for_a_table_without_primary_key(mariadb, source_db):
    _fill(
        mariadb,
        source_db,
        "CREATE TABLE logs (seq INT, line TEXT)",
        "INSERT INTO logs WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM s WHERE n < 250) "
        "SELECT n, 'x' FROM s",
    )
    schema, splits = _splits(mariadb, source_db, "logs", 100, chunk_key="seq")
    assert schema.chunk_key == "seq" and sum(_chunk_sizes(mariadb, source_db, schema, splits)) == 250


def test_unknown_chunk_key_column_is_named(mariadb, source_db):
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY)", database=source_db)
    with pytest.raises(SourceError, match=rf"{source_db}\.t has no column 'nope'"):
        _splits(mariadb, source_db, "t", 100, chunk_key="nope")


def test_enum_and_bit_keys_split_by_their_numbers_as_the_server_orders_them(mariadb, source_db):
    """An ENUM orders by its members' index, not their text (MIN and MAX would compare the
    text); a BIT by its value. Both are chunked by that number."""
    _fill(
        mariadb,
        source_db,
        "CREATE TABLE levels (lvl ENUM('zeta', 'alpha', 'mid') NOT NULL, n INT NOT NULL, PRIMARY KEY (lvl, n))",
        "INSERT INTO levels SELECT ELT(1 + seq % 3, 'zeta', 'alpha', 'mid'), seq FROM seq_1_to_300",
    )
    mariadb.execute("ANALYZE TABLE levels", database=source_db)
    schema, splits = _splits(mariadb, source_db, "levels", 50)
    assert schema.chunk_key == "lvl" and not schema.single_split
    assert [s.end for s in splits[:-1]] == [2, 3]  # each member's rows in one chunk, by index
    assert _chunk_sizes(mariadb, source_db, schema, splits) == [100, 100, 100]

    _fill(
        mariadb,
        source_db,
        "CREATE TABLE flags (f BIT(12) PRIMARY KEY, v INT)",
        "INSERT INTO flags SELECT seq * 7, seq FROM seq_1_to_300",
    )
    # The even ranges come from the server's row estimate: exact once the statistics are
    # taken (InnoDB recalculates them in the background, so a loaded server may lag).
    mariadb.execute("ANALYZE TABLE flags", database=source_db)
    schema, splits = _splits(mariadb, source_db, "flags", 50)
    assert schema.chunk_key == "f" and not schema.single_split and len(splits) == 6
    assert all(isinstance(s.end, int) for s in splits[:-1])
    assert _chunk_sizes(mariadb, source_db, schema, splits) == [50] * 6
