"""The split reader against a real MariaDB: the chunk SELECT and the binlog decode every
column type to the same row, which the watermark fold and the emit rule depend on."""

from __future__ import annotations

import itertools
import random
import threading
import time

from sluice.binlog.rows.event_reader import read_window
from sluice.event.row_change import RowChange, RowKind
from sluice.event.snapshot_split import SnapshotSplit, SplitTask
from sluice.snapshot import split_reader
from sluice.snapshot.split_reader import end_split, fold, read_split
from sluice.source.connection import connect_scan, current_offset
from sluice.source.offset import BinlogOffset
from sluice.source.row_decoding import RowDecoder
from sluice.source.schema import Column, TableSchema, read_table_schema

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
    rows, _, _ = read_split(task, connect_scan(endpoint))
    selected = list(rows)
    from_binlog = [c.after for c in read_window(endpoint, 5401, start, stop, {schema.table_id: schema}, True)]

    assert len(selected) == len(ROWS)
    assert sorted(selected, key=lambda r: r[0]) == from_binlog


def _table_t(mariadb, db: str, *statements: str) -> TableSchema:
    """Table t (id INT PRIMARY KEY, v VARCHAR(10)), filled by `statements`: its schema."""
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))", *statements, database=db)
    conn = mariadb.connect(db)
    schema = read_table_schema(conn, db, "t", None)
    conn.close()
    return schema


def test_split_reads_only_its_chunk_and_folds_changes_made_while_reading(mariadb, source_db):
    schema = _table_t(mariadb, source_db, "INSERT INTO t VALUES (1, 'a'), (5, 'b'), (10, 'c'), (15, 'd')")
    split = SnapshotSplit(schema.table_id, 1, 5, 15)

    endpoint = mariadb.endpoint()
    rows, high, folded = read_split(SplitTask(split, schema, endpoint, 5402, 100), connect_scan(endpoint))

    assert sorted(rows) == [(5, "b"), (10, "c")]
    assert folded == 0
    assert high.file


def _writers(mariadb, db: str, stop: threading.Event, count: int = 4) -> list[threading.Thread]:
    """Threads committing one-row transactions as fast as the server takes them (group commit)."""

    def write(first: int) -> None:
        conn = mariadb.connect(db)
        with conn.cursor() as cur:
            key = first
            while not stop.is_set():
                cur.execute("INSERT INTO t VALUES (%s, 'w')", (key,))
                key += count
        conn.close()

    return [threading.Thread(target=write, args=(i,), daemon=True) for i in range(count)]


def test_the_low_watermark_matches_the_selects_read_view_while_transactions_commit(mariadb, source_db):
    """Every row the SELECT sees was written before the low watermark, and every row written
    before it is seen: the chunk is exactly the table as of that binlog position."""
    schema = _table_t(mariadb, source_db)
    conn = mariadb.connect(source_db)
    start = current_offset(conn)
    stop = threading.Event()
    writers = _writers(mariadb, source_db, stop)
    for thread in writers:
        thread.start()
    endpoint = mariadb.endpoint()
    scan_conn = connect_scan(endpoint)
    task = SplitTask(SnapshotSplit(schema.table_id, 0, None, None), schema, endpoint, 5403, 100)
    samples = []
    for _ in range(25):
        time.sleep(0.02)
        rows, low, _ = read_split(task, scan_conn)
        samples.append((low, {row[0] for row in rows}))
        end_split(scan_conn)
    stop.set()
    for thread in writers:
        thread.join()
    end = current_offset(conn)
    conn.close()
    scan_conn.close()

    written = [
        (change.offset, change.after[0])
        for change in read_window(endpoint, 5403, start, end, {schema.table_id: schema}, True)
    ]
    assert len(written) > 1000, "the writers kept the server busy"
    for low, seen in samples:
        assert seen == {key for offset, key in written if offset.is_before(low)}, f"low watermark {low}"
    assert len({len(seen) for _, seen in samples}) > 5, "the samples were taken while rows were committing"


def _schema(primary_key: tuple[str, ...] = ("id",)) -> TableSchema:
    columns = (Column("id", "int", "int", False), Column("v", "varchar", "varchar(10)", True))
    return TableSchema("db", "t", columns, primary_key, "id")


def _change(kind: RowKind, before, after) -> RowChange:
    return RowChange("db.t", kind, before, after, BinlogOffset("b.000001", 4), 0)


def test_the_fold_upserts_by_key():
    rows = [(1, "a"), (2, "b")]
    changes = [
        (_change(RowKind.INSERT, None, (2, "b")), False, True),  # already seen by the SELECT
        (_change(RowKind.UPDATE_AFTER, (1, "a"), (1, "x")), True, True),
        (_change(RowKind.DELETE, (2, "b"), None), True, False),
    ]
    assert sorted(fold(rows, changes, RowDecoder(_schema()))) == [(1, "x")]


def test_a_chunk_read_again_after_an_abandoned_pass_gives_every_row(mariadb, source_db):
    """A sink whose COPY fails part way (rows already in the target) writes the chunk again
    by upsert: the second pass starts while the first one's rows are still unread."""
    schema = _table_t(mariadb, source_db, "INSERT INTO t SELECT seq, 'v' FROM seq_1_to_5000")
    endpoint = mariadb.endpoint()
    scan_conn = connect_scan(endpoint)
    try:  # an open read view holds a lock the test database's DROP would wait on
        task = SplitTask(SnapshotSplit(schema.table_id, 0, None, None), schema, endpoint, 5404, 100)
        rows, _, _ = read_split(task, scan_conn)
        first = iter(rows)
        assert [next(first) for _ in range(10)][0] == (1, "v")  # abandoned after 10 of 5,000 rows

        assert len(list(rows)) == 5000
    finally:
        scan_conn.close()


def test_adjacent_splits_share_a_read_view_up_to_its_row_budget(mariadb, source_db, monkeypatch):
    """Adjacent chunks are read in one consistent snapshot while fewer than READ_VIEW_ROWS
    rows were read: each read covers whole chunks, with each chunk's own row count, and is
    exactly the table as of its one watermark while transactions commit in every chunk."""
    monkeypatch.setattr(split_reader, "READ_VIEW_ROWS", 1_750)  # 1,000 to 1,500 rows a chunk
    schema = _table_t(mariadb, source_db, "INSERT INTO t SELECT seq * 4 + 3, 'v' FROM seq_0_to_9999")
    conn = mariadb.connect(source_db)
    start = current_offset(conn)
    arriving = list(range(1, 40_000, 8))
    random.Random(5).shuffle(arriving)

    def write(keys: list[int]) -> None:
        writer = mariadb.connect(source_db)
        with writer.cursor() as cur:
            for key in keys:
                cur.execute("INSERT INTO t VALUES (%s, 'w')", (key,))
        writer.close()

    writers = [threading.Thread(target=write, args=(arriving[i::2],), daemon=True) for i in range(2)]
    for thread in writers:
        thread.start()
    endpoint = mariadb.endpoint()
    bounds = [None, *range(4_000, 40_000, 4_000), None]  # 1,000 seeded rows a chunk
    splits = [SnapshotSplit(schema.table_id, i, lo, hi) for i, (lo, hi) in enumerate(itertools.pairwise(bounds))]
    tasks = [SplitTask(s, schema, endpoint, 5405, 500) for s in splits]
    time.sleep(0.2)
    reads = []
    for read in split_reader.read_splits(tasks[:7] + tasks[8:]):  # split 7 is read elsewhere
        rows = list(read.rows)
        reads.append((read.high_watermark, rows, read.covered()))
        time.sleep(0.1)
    for thread in writers:
        thread.join()
    end = current_offset(conn)
    conn.close()

    covered = [[split.index for split, _ in read_covered] for _, _, read_covered in reads]
    assert covered[:3] == [[0, 1], [2, 3], [4, 5]], "a read stops once it has READ_VIEW_ROWS rows"
    assert covered[3:] == [[6], [8, 9]], "and at a gap"
    written = [
        (change.offset, change.after[0])
        for change in read_window(endpoint, 5405, start, end, {schema.table_id: schema}, True)
    ]
    assert len(written) == len(arriving)
    seen_arriving = set()
    for high, rows, read_covered in reads:
        keys = [row[0] for row in rows]
        assert len(set(keys)) == len(keys) == sum(count for _, count in read_covered)
        before = {key for offset, key in written if offset.is_before(high)}
        for split, count in read_covered:
            lo, hi = split.start if split.start is not None else -1, split.end if split.end is not None else 10**9
            in_chunk = {k for k in keys if lo <= k < hi}
            assert len(in_chunk) == count, f"split {split.index}"
            expected = {k for k in range(3, 40_000, 4) if lo <= k < hi} | {k for k in before if lo <= k < hi}
            assert in_chunk == expected, f"split {split.index} is the table at {high}"
            seen_arriving |= {k for k in in_chunk if k % 4 == 1}
    assert 0 < len(seen_arriving) < len(arriving), "the reads ran while rows arrived"


def test_a_chunk_whose_strings_hold_surrogates_part_way_gives_every_row_once(mariadb, source_db):
    """libmariadb's C decoding refuses a UTF-16 surrogate (which MariaDB keeps where a legacy
    client wrote one): the scan goes on decoding in Python where it stopped, in the read
    view, and reads the chunk again from its start in the binlog window (no read view)."""
    schema = _table_t(
        mariadb,
        source_db,
        "SET SESSION sql_mode = ''",
        "INSERT INTO t SELECT seq, 'v' FROM seq_1_to_500",
        "UPDATE t SET v = _binary 0x61EDA080 WHERE id IN (250, 499)",
    )
    expected = [(k, "a\ud800" if k in (250, 499) else "v") for k in range(1, 501)]
    endpoint = mariadb.endpoint()
    scan_conn = connect_scan(endpoint)
    try:
        task = SplitTask(SnapshotSplit(schema.table_id, 0, None, None), schema, endpoint, 5405, 100)
        rows, _, _ = read_split(task, scan_conn)
        assert list(rows) == expected
        assert list(rows) == expected  # a second pass (an upsert after a failed COPY)
        end_split(scan_conn)
        windowed, _, _ = split_reader.read_split_with_window(task, scan_conn)
        assert windowed == expected
    finally:
        scan_conn.close()
