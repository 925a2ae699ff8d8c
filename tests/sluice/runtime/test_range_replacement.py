"""A chunk read again replaces its key range in the target. For a chunk key the target
orders as the source does, the chunk's own transaction deletes its range; for strings under
a collation the target cannot order as the source, so the target's rows in unread chunks
are found by asking the source where each key belongs, and deleted before the chunks are
read."""

from __future__ import annotations

from sluice.pipeline.sink_configs import JdbcSinkConfig
from sluice.runtime.range_replacement import tables_to_replace
from sluice.sink.jdbc.sink import JdbcSink
from sluice.snapshot.chunk_splitter import split_table
from sluice.snapshot.snapshot_split_assigner import SnapshotAssignerState
from sluice.source.offset import BinlogOffset
from sluice.source.schema import read_table_schema
from tests.harness import compare


def test_the_rows_in_unread_chunks_of_a_collation_keyed_table_are_deleted_and_no_others(mariadb, postgresql, source_db):
    mariadb.execute(
        "CREATE TABLE tags (name VARCHAR(20) COLLATE utf8mb4_general_ci PRIMARY KEY, n INT)",
        "INSERT INTO tags WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 100) "
        "SELECT CONCAT(IF(n % 2, 'tag-', 'TAG-'), LPAD(n, 3, '0')), n FROM s",
        database=source_db,
    )
    conn = mariadb.connect(source_db)
    schema = read_table_schema(conn, source_db, "tags", None)
    splits = split_table(conn, schema, 25)
    assert len(splits) == 4
    plan = SnapshotAssignerState.plan([schema], splits)
    for split in splits[:2]:  # committed: their rows stay
        plan.record(split.split_id, BinlogOffset("mysql-bin.000001", 4), 25)
    options = {"url": postgresql.url, "username": postgresql.user, "password": postgresql.password}
    sink = JdbcSink(JdbcSinkConfig.from_options({**options, "sink.batch-size": 100}), f"ranges-{source_db}")
    sink.prepare([schema])
    with postgresql.connect() as target, target.cursor() as cur:
        cur.executemany(
            f"INSERT INTO {source_db}.tags VALUES (%s, %s)",
            [(name, n) for name, n in compare.source_rows(mariadb, source_db, "tags")],
        )
        # PostgreSQL orders 'TAG-051' before 'tag-002'; the source does not.
        cur.execute(f"INSERT INTO {source_db}.tags VALUES ('a-stale', 0), ('TAG-099x', 0)")

    assert tables_to_replace(sink, conn, plan) == set()  # nothing left for the chunks' transactions

    # The source's order decides: the first two chunks (tag-001 .. TAG-050, 'a-stale' before
    # them) are kept, the rest (TAG-099x among them) is gone, whatever PostgreSQL's order.
    kept = sorted(compare.postgres_rows(postgresql, source_db, "tags"), key=lambda r: r[1])
    assert kept == [("a-stale", 0)] + [(f"{'tag' if n % 2 else 'TAG'}-{n:03d}", n) for n in range(1, 51)]
    conn.close()


def test_a_table_the_target_holds_no_rows_of_needs_no_replacing(mariadb, postgresql, source_db, table_t):
    conn = mariadb.connect(source_db)
    plan = SnapshotAssignerState.plan([table_t], split_table(conn, table_t, 25))
    options = {"url": postgresql.url, "username": postgresql.user, "password": postgresql.password}
    sink = JdbcSink(JdbcSinkConfig.from_options({**options, "sink.batch-size": 100}), f"ranges-{source_db}")
    sink.prepare([table_t])
    assert tables_to_replace(sink, conn, plan) == set()
    with postgresql.connect() as target:
        target.execute(f"INSERT INTO {source_db}.t VALUES (1, 'stale')")
    assert tables_to_replace(sink, conn, plan) == {table_t.table_id}  # an integer key: by range, in the chunk
    conn.close()
