"""A batch of binlog changes lands in the jdbc sink as each key's last image, in either
dialect: rows a batch inserts first go in by COPY where the target takes it (PostgreSQL),
and a key the target unexpectedly holds already still ends as the batch says."""

from __future__ import annotations

import time

import pytest

from sluice.errors import SinkError
from sluice.event.row_change import ChangeBatch, ChangeRow, RowKind
from sluice.pipeline.sink_configs import JdbcSinkConfig
from sluice.sink.jdbc.sink import JdbcSink
from sluice.source.offset import BinlogOffset
from sluice.source.schema import read_table_schema
from tests.harness import compare


def test_a_batch_lands_as_each_keys_last_image(target, table_t, source_db):
    schema = table_t
    options, target_rows = target
    sink = JdbcSink(JdbcSinkConfig.from_options({**options, "sink.batch-size": 3}), f"changes-{source_db}")
    sink.prepare([schema])
    writer = sink.writer()
    position = iter(range(1000, 100_000, 10))

    def change(kind: RowKind, key: int, value: str) -> ChangeRow:
        return ChangeRow(schema, kind, (key, value), 0, BinlogOffset("mysql-bin.000001", next(position)))

    insert, before, after, delete = RowKind.INSERT, RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER, RowKind.DELETE
    existing = [change(insert, k, "old") for k in (1, 2, 3, 4)]
    writer.write_changes(ChangeBatch(existing), BinlogOffset("mysql-bin.000001", 1), False)
    batch = [
        *(change(insert, k, "new") for k in range(10, 20)),  # new keys, more than a slice
        change(insert, 4, "again"),  # a key the target holds already (a replay, a pre-filled table)
        change(insert, 30, "a"),
        change(before, 30, "a"),
        change(after, 30, "b"),  # inserted, then updated: its last image
        change(insert, 31, "gone"),
        change(delete, 31, "gone"),  # inserted, then deleted: absent
        change(before, 1, "old"),
        change(after, 1, "upd"),  # an update of a row the target holds
        change(delete, 2, "old"),
        change(insert, 2, "back"),  # deleted, then inserted again
        change(delete, 3, "old"),
        change(before, 11, "new"),
        change(after, 40, "moved"),  # a primary-key change of a new row
    ]
    writer.write_changes(ChangeBatch(batch), BinlogOffset("mysql-bin.000001", 2), False)
    writer.close()

    expected = sorted(
        [(1, "upd"), (2, "back"), (4, "again"), (30, "b"), (40, "moved")]
        + [(k, "new") for k in range(10, 20) if k != 11]
    )
    assert target_rows(source_db) == expected
    assert writer.committed_binlog_offset() == BinlogOffset("mysql-bin.000001", 2)


def test_deletes_by_a_composite_key_take_every_key_of_the_batch(target, mariadb, source_db):
    mariadb.execute("CREATE TABLE t (a INT, b VARCHAR(10), v INT, PRIMARY KEY (a, b))", database=source_db)
    conn = mariadb.connect(source_db)
    schema = read_table_schema(conn, source_db, "t", None)
    conn.close()
    options, target_rows = target
    sink = JdbcSink(JdbcSinkConfig.from_options({**options, "sink.batch-size": 5000}), f"composite-{source_db}")
    sink.prepare([schema])
    writer = sink.writer()
    rows = [(a, f"b{a % 7}", a) for a in range(2500)]
    at = BinlogOffset("mysql-bin.000001", 10)

    def changes(kind: RowKind, images: list[tuple]) -> ChangeBatch:
        return ChangeBatch([ChangeRow(schema, kind, image, 0, at) for image in images])

    writer.write_changes(changes(RowKind.INSERT, rows), BinlogOffset("mysql-bin.000001", 1), False)
    deleted = [row for row in rows if row[0] % 5]  # more keys than one statement takes
    writer.write_changes(changes(RowKind.DELETE, deleted), BinlogOffset("mysql-bin.000001", 2), False)
    writer.close()

    assert target_rows(source_db) == [row for row in rows if not row[0] % 5]


def test_a_table_that_is_all_key_keeps_a_batchs_deleted_keys_and_written_rows_apart(target, mariadb, source_db):
    """Deleted keys and written rows are staged before either is applied (PostgreSQL takes
    a batch's COPYs first): where the rows are the keys, they still go to tables of their own."""
    mariadb.execute("CREATE TABLE pairs (a INT, b INT, PRIMARY KEY (a, b))", database=source_db)
    with mariadb.connect(source_db) as conn:
        schema = read_table_schema(conn, source_db, "pairs", None)
    options, _ = target
    sink = JdbcSink(JdbcSinkConfig.from_options(options), f"all-key-{source_db}")
    sink.prepare([schema])
    writer = sink.writer()
    at = BinlogOffset("mysql-bin.000001", 10)
    inserts = [ChangeRow(schema, RowKind.INSERT, (a, a), 0, at) for a in range(10)]
    writer.write_changes(ChangeBatch(inserts), BinlogOffset("mysql-bin.000001", 1), False)
    batch = [ChangeRow(schema, RowKind.DELETE, (a, a), 0, at) for a in range(5)]
    batch += [ChangeRow(schema, RowKind.INSERT, (a, a + 1), 0, at) for a in range(3)]
    writer.write_changes(ChangeBatch(batch), BinlogOffset("mysql-bin.000001", 2), False)
    with writer.conn.cursor() as cur:
        cur.execute(f"SELECT a, b FROM {writer.target.dialect.target_table(schema)} ORDER BY a, b")
        held = [tuple(row) for row in cur.fetchall()]
    writer.close()
    assert held == sorted([(a, a + 1) for a in range(3)] + [(a, a) for a in range(5, 10)])


def test_an_upsert_the_target_refuses_fails_the_commit_and_keeps_nothing_of_the_batch(target, table_t, source_db):
    """PostgreSQL runs a batch's last upsert and its commit while the binlog phase reads
    on: a refusal there still fails the batch, when the phase waits for it."""
    schema = table_t
    options, target_rows = target
    sink = JdbcSink(JdbcSinkConfig.from_options({**options, "sink.batch-size": 100}), f"refused-{source_db}")
    sink.prepare([schema])
    writer = sink.writer()
    first, second = BinlogOffset("mysql-bin.000001", 1), BinlogOffset("mysql-bin.000001", 2)
    at = BinlogOffset("mysql-bin.000001", 10)
    writer.write_changes(ChangeBatch([ChangeRow(schema, RowKind.INSERT, (1, "ok"), 0, at)]), first, False)
    with writer.conn.cursor() as cur:  # the target's own rule, which the source does not have
        cur.execute(f"ALTER TABLE {writer.target.dialect.target_table(schema)} ADD CHECK (v <> 'refused')")
    writer.conn.commit()
    batch = [
        ChangeRow(schema, RowKind.INSERT, (2, "new"), 0, at),
        ChangeRow(schema, RowKind.UPDATE_BEFORE, (1, "ok"), 0, at),
        ChangeRow(schema, RowKind.UPDATE_AFTER, (1, "refused"), 0, at),
    ]

    with pytest.raises(SinkError, match="refused|constraint|CONSTRAINT"):
        writer.prepare_changes(ChangeBatch(batch), second)(False).wait()

    assert target_rows(source_db) == [(1, "ok")]
    assert writer.committed_binlog_offset() == first
    writer.close()


def test_postgresql_copies_a_batchs_new_rows_straight_in_and_upserts_them_once_one_was_there(
    postgresql, table_t, source_db, caplog
):
    """New rows go into the table by COPY, with no staging table (a third of the server's
    work of an upsert). A row the target held already (here: written by someone else)
    fails that commit; the batch goes again with its new rows upserted, and so do the
    table's later batches, with one warning."""
    options = {"url": postgresql.url, "username": postgresql.user, "password": postgresql.password}
    sink = JdbcSink(JdbcSinkConfig.from_options(options), f"direct-inserts-{source_db}")
    sink.prepare([table_t])
    writer = sink.writer()

    def batch(*keys: int) -> ChangeBatch:
        at = BinlogOffset("mysql-bin.000001", 10)
        return ChangeBatch([ChangeRow(table_t, RowKind.INSERT, (k, f"v{k}"), 0, at) for k in keys])

    writer.prepare_changes(batch(1, 2, 3), BinlogOffset("mysql-bin.000001", 100))(False).wait()
    assert _staging_tables(postgresql, source_db) == []
    with postgresql.connect() as other:
        other.execute(f"INSERT INTO {source_db}.t VALUES (5, 'theirs')")

    with caplog.at_level("WARNING", logger="sluice.sink.jdbc.sink"):
        writer.prepare_changes(batch(4, 5, 6), BinlogOffset("mysql-bin.000001", 200))(False).wait()
        writer.prepare_changes(batch(7, 6), BinlogOffset("mysql-bin.000001", 300))(False).wait()
    assert _staging_tables(postgresql, source_db) != []  # upserted: staged
    writer.close()

    assert compare.postgres_rows(postgresql, source_db, "t") == [(k, f"v{k}") for k in range(1, 8)]
    assert writer.committed_binlog_offset() == BinlogOffset("mysql-bin.000001", 300)
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 1 and "was in the target already" in warned[0] and f"{source_db}.t" in warned[0], warned
    assert "Key (id)=(5)" in warned[0] or "t_pkey" in warned[0]


def _staging_tables(postgresql, schema: str) -> list[str]:
    """Staging tables of table `t` in any session (temporary tables are listed for all)."""
    with postgresql.connect() as conn:
        query = "SELECT tablename FROM pg_tables WHERE tablename LIKE %s"
        return [row[0] for row in conn.execute(query, (f"stage_{schema}_t_%",)).fetchall()]


def test_postgresql_finds_a_batchs_deleted_keys_by_the_primary_key_not_by_reading_the_table(
    postgresql, table_t, source_db
):
    """A batch's deletes join its staged keys with the target table: the planner, not
    knowing how few keys the staging table holds, read the whole table for every batch
    (45 ms a batch at 200,000 rows, growing with the table)."""
    options = {"url": postgresql.url, "username": postgresql.user, "password": postgresql.password}
    sink = JdbcSink(JdbcSinkConfig.from_options(options), f"index-deletes-{source_db}")
    sink.prepare([table_t])
    at = BinlogOffset("mysql-bin.000001", 10)
    filled = sink.writer()
    rows = [(k, "v") for k in range(20_000)]
    filled.write_changes(ChangeBatch([ChangeRow(table_t, RowKind.INSERT, r, 0, at) for r in rows]), at, False)
    filled.close()
    scans_before = _table_scans(postgresql, source_db, n_tup_ins=len(rows))

    writer = sink.writer()
    deleted = [ChangeRow(table_t, RowKind.DELETE, (k, "v"), 0, at) for k in range(1000, 2000)]
    writer.write_changes(ChangeBatch(deleted), BinlogOffset("mysql-bin.000001", 20), False)
    writer.close()

    assert _table_scans(postgresql, source_db, n_tup_del=1000) == scans_before


def _table_scans(postgresql, schema: str, **flushed: int) -> int:
    """The target table's sequential scans, once the statistics show `flushed` (a closed
    connection's counts arrive shortly after it ends)."""
    names = ", ".join(flushed)
    query = f"SELECT seq_scan, {names} FROM pg_stat_user_tables WHERE schemaname = %s AND relname = 't'"
    deadline = time.monotonic() + 30
    with postgresql.connect() as conn:
        while True:
            conn.execute("SELECT pg_stat_clear_snapshot()")
            scans, *counts = conn.execute(query, (schema,)).fetchone()
            if counts == list(flushed.values()) or time.monotonic() > deadline:
                assert counts == list(flushed.values()), f"statistics never showed {flushed}"
                return scans
            time.sleep(0.1)


def test_a_mysql_target_takes_a_batchs_new_images_in_one_load_data(mariadb_target, table_t, source_db):
    """Set-based, as PostgreSQL's COPY: a batch's inserted and changed rows go in one LOAD
    DATA ... REPLACE, whatever sink.batch-size says (it slices multi-row upserts), and
    the only INSERT is the offsets record's."""
    url = f"mysql://{mariadb_target.host}:{mariadb_target.port}/mysql"
    options = {"url": url, "username": mariadb_target.user, "password": mariadb_target.password}
    sink = JdbcSink(JdbcSinkConfig.from_options({**options, "sink.batch-size": 3}), f"loads-{source_db}")
    sink.prepare([table_t])
    writer = sink.writer()
    at = BinlogOffset("mysql-bin.000001", 10)
    writer.write_changes(ChangeBatch([ChangeRow(table_t, RowKind.INSERT, (1, "old"), 0, at)]), at, False)
    before = _statements(mariadb_target)
    batch = [ChangeRow(table_t, RowKind.INSERT, (k, f"v{k}"), 0, at) for k in range(2, 30)]
    batch += [ChangeRow(table_t, RowKind.UPDATE_BEFORE, (1, "old"), 0, at)]
    batch += [ChangeRow(table_t, RowKind.UPDATE_AFTER, (1, "tab\tnew"), 0, at)]

    writer.write_changes(ChangeBatch(batch), BinlogOffset("mysql-bin.000001", 20), False)
    writer.close()

    after = _statements(mariadb_target)
    assert (after["Com_load"] - before["Com_load"], after["Com_insert"] - before["Com_insert"]) == (1, 1)
    assert compare.source_rows(mariadb_target, source_db, "t") == [(1, "tab\tnew")] + [
        (k, f"v{k}") for k in range(2, 30)
    ]


def test_a_mysql_target_table_made_by_hand_keeps_what_replace_would_lose(mariadb_target, table_t, source_db):
    """REPLACE deletes the row it replaces: a column the pipeline does not write would go
    back to its default, and a foreign key's ON DELETE CASCADE would take the rows that
    refer to it. Such a table's rows are upserted instead."""
    mariadb_target.execute(
        f"CREATE DATABASE {source_db}",
        f"CREATE TABLE {source_db}.t (id INT PRIMARY KEY, v VARCHAR(10), theirs VARCHAR(10) DEFAULT 'default')",
        f"CREATE TABLE {source_db}.child (id INT PRIMARY KEY, t_id INT, "
        f"FOREIGN KEY (t_id) REFERENCES {source_db}.t (id) ON DELETE CASCADE)",
        f"INSERT INTO {source_db}.t VALUES (1, 'old', 'kept')",
        f"INSERT INTO {source_db}.child VALUES (10, 1)",
    )
    url = f"mysql://{mariadb_target.host}:{mariadb_target.port}/mysql"
    options = {"url": url, "username": mariadb_target.user, "password": mariadb_target.password}
    sink = JdbcSink(JdbcSinkConfig.from_options(options), f"by-hand-{source_db}")
    sink.prepare([table_t])
    writer = sink.writer()
    at = BinlogOffset("mysql-bin.000001", 10)
    batch = [
        ChangeRow(table_t, RowKind.UPDATE_BEFORE, (1, "old"), 0, at),
        ChangeRow(table_t, RowKind.UPDATE_AFTER, (1, "new"), 0, at),
        ChangeRow(table_t, RowKind.INSERT, (2, "two"), 0, at),
    ]

    writer.write_changes(ChangeBatch(batch), BinlogOffset("mysql-bin.000001", 20), False)
    writer.close()

    conn = mariadb_target.connect(source_db)
    with conn.cursor() as cur:
        cur.execute("SELECT id, v, theirs FROM t ORDER BY id")
        assert cur.fetchall() == ((1, "new", "kept"), (2, "two", "default"))
        cur.execute("SELECT id, t_id FROM child")
        assert cur.fetchall() == ((10, 1),)
    conn.close()


def _statements(server) -> dict[str, int]:
    """The server's counts of LOAD DATA and INSERT statements, all sessions'."""
    conn = server.connect()
    with conn.cursor() as cur:
        cur.execute("SHOW GLOBAL STATUS WHERE Variable_name IN ('Com_load', 'Com_insert')")
        counts = {name: int(value) for name, value in cur.fetchall()}
    conn.close()
    return counts
