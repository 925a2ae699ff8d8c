"""Verification ranges against a real MariaDB: each holds half a chunk to a chunk of rows
whatever the keys' spread, ends at the roundest key it can, and stays put while the rows
around it change."""

from __future__ import annotations

from sluice.snapshot.chunk_scan import chunk_query
from sluice.source.schema import read_table_schema
from sluice.verify.range_planner import plan_ranges
from sluice.verify.range_text import range_text


def _planned(mariadb, db, table, chunk_size, chunk_key=None):
    conn = mariadb.connect(db)
    try:
        schema = read_table_schema(conn, db, table, chunk_key)
        return schema, plan_ranges(conn, schema, chunk_size)
    finally:
        conn.close()


def _rows_in(mariadb, db, schema, splits) -> list[int]:
    conn = mariadb.connect(db)
    try:
        with conn.cursor() as cur:
            counts = []
            for split in splits:
                sql, params = chunk_query(schema, split)
                cur.execute(f"SELECT COUNT(*) FROM ({sql}) t", params)
                counts.append(cur.fetchone()[0])
            return counts
    finally:
        conn.close()


def test_a_skewed_integer_key_gets_ranges_of_half_a_chunk_to_a_chunk_ending_at_round_ids(mariadb, source_db):
    mariadb.execute(
        "CREATE TABLE t (id BIGINT PRIMARY KEY)",
        "INSERT INTO t SELECT seq FROM seq_1_to_5000",
        "INSERT INTO t SELECT seq FROM seq_1000000_to_1003000",
        database=source_db,
    )
    schema, splits = _planned(mariadb, source_db, "t", 1000)
    counts = _rows_in(mariadb, source_db, schema, splits)
    assert sum(counts) == 8001
    assert all(500 <= n <= 1000 for n in counts[:-1]) and counts[-1] <= 1000
    assert [range_text(s) for s in splits[:3]] == ["[-inf, 1000)", "[1000, 2000)", "[2000, 3000)"]
    assert all(s.end % 100 == 0 for s in splits[:-1])  # round: readable, and stable


def test_ranges_stay_put_while_rows_come_and_go_elsewhere(mariadb, source_db):
    mariadb.execute(
        "CREATE TABLE t (id INT PRIMARY KEY)",
        "INSERT INTO t SELECT seq * 7 FROM seq_1_to_20000",
        database=source_db,
    )
    _, before = _planned(mariadb, source_db, "t", 1000)
    mariadb.execute(
        "DELETE FROM t WHERE id BETWEEN 30000 AND 30700",
        "INSERT INTO t SELECT seq * 7 + 1 FROM seq_10000_to_10050",
        database=source_db,
    )
    _, after = _planned(mariadb, source_db, "t", 1000)
    moved = {(s.start, s.end) for s in before} ^ {(s.start, s.end) for s in after}
    assert len(before) > 20 and len(moved) <= 6  # the ranges holding the changes, no others


def test_a_string_key_under_a_collation_is_ranged_in_its_order_by_short_prefixes(mariadb, source_db):
    mariadb.execute(
        "CREATE TABLE people (email VARCHAR(100) COLLATE utf8mb4_unicode_ci PRIMARY KEY)",
        "INSERT INTO people SELECT CONCAT(IF(seq % 2, 'User', 'user'), seq, '@example.com') FROM seq_1_to_3000",
        "INSERT INTO people SELECT CONCAT('Émile', seq, '@example.com') FROM seq_1_to_300",
        database=source_db,
    )
    schema, splits = _planned(mariadb, source_db, "people", 500)
    counts = _rows_in(mariadb, source_db, schema, splits)
    assert sum(counts) == 3300 and len(splits) > 4
    assert all(250 <= n <= 500 for n in counts[:-1])
    assert all(len(s.end) < len("user1000@example.com") for s in splits[:-1])  # a prefix, not a key


def test_many_rows_sharing_a_key_and_null_keys_fill_one_range(mariadb, source_db):
    mariadb.execute(
        "CREATE TABLE bag (author INT, note VARCHAR(10), KEY (author))",
        "INSERT INTO bag SELECT NULL, 'x' FROM seq_1_to_1500",
        "INSERT INTO bag SELECT 5, 'x' FROM seq_1_to_1500",
        "INSERT INTO bag SELECT seq, 'x' FROM seq_6_to_800",
        database=source_db,
    )
    schema, splits = _planned(mariadb, source_db, "bag", 1000, chunk_key="author")
    counts = _rows_in(mariadb, source_db, schema, splits)
    assert sum(counts) == 3795
    assert counts[0] == 1500 and counts[1] == 1500  # the NULLs, then author 5: each whole
    assert all(n <= 1000 for n in counts[2:])


def test_a_temporal_key_ends_ranges_at_the_start_of_days_and_months(mariadb, source_db):
    mariadb.execute(
        "CREATE TABLE events (at DATETIME(6) PRIMARY KEY)",
        "INSERT INTO events SELECT '2024-01-01' + INTERVAL seq * 3607 SECOND + INTERVAL seq MICROSECOND "
        "FROM seq_1_to_4000",
        database=source_db,
    )
    schema, splits = _planned(mariadb, source_db, "events", 500)
    counts = _rows_in(mariadb, source_db, schema, splits)
    assert sum(counts) == 4000 and all(250 <= n <= 500 for n in counts[:-1])
    assert all(s.end.minute == s.end.second == s.end.microsecond == 0 for s in splits[:-1])
