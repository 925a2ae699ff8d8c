"""A source that compresses its binlog (log_bin_compress, as large estates run MariaDB)
loses no change: the pipeline snapshots, streams inserts, updates, deletes, an ALTER and
a table created mid-stream into PostgreSQL and a MySQL target, whether the server was
started with compression or had it switched on while the pipeline streamed. (The
crash-consistency test runs with compression on too: SIGKILLs, restarts, DDL, lakehouses.)"""

from __future__ import annotations

import contextlib

import pymysql

from tests.harness import compare
from tests.harness.pipelines import every_sink, pipeline_per_sink, sluice_env, stream_until_equal
from tests.harness.services import MariaDB

TABLES = ("orders", "notes")


def _stream_changes_into_every_target(source: MariaDB, db: str, postgresql, mariadb_target, tmp_path, writes) -> None:
    """Each pipeline named after its database: targets keep records by pipeline name."""
    source.execute(
        "CREATE TABLE orders (id INT PRIMARY KEY, customer VARCHAR(40), total DECIMAL(10,2), memo TEXT)",
        "INSERT INTO orders SELECT seq, CONCAT('customer-', seq), seq * 1.25, REPEAT('m', seq % 300) FROM seq_1_to_500",
        database=db,
    )
    sinks = every_sink(postgresql, mariadb_target, tmp_path / "lake", 7400)
    del sinks["parquet"]
    pipelines = pipeline_per_sink(
        tmp_path, source, f"{db}.({'|'.join(TABLES)})", sinks, db, {"schema.change.behavior": "evolve"}
    )

    def expected() -> list[tuple]:
        return [(table, *row) for table in TABLES for row in compare.source_rows(source, db, table)]

    def postgres() -> list[tuple]:
        held = {table: compare.postgres_rows_once_created(postgresql, db, table) or [] for table in TABLES}
        return [(table, *row) for table, rows in held.items() for row in rows]

    def mysql() -> list[tuple]:
        held = []
        for table in TABLES:
            with contextlib.suppress(pymysql.err.ProgrammingError):  # not created yet
                held += [(table, *row) for row in compare.source_rows(mariadb_target, db, table)]
        return held

    stream_until_equal(
        pipelines,
        sluice_env(source, postgresql, mariadb_target),
        writes,
        expected,
        {"postgres": postgres, "mariadb": mysql},
    )


def _changes(source: MariaDB, db: str) -> None:
    source.execute(
        "INSERT INTO orders SELECT seq, 'late', seq / 3, REPEAT('n', 2000) FROM seq_501_to_800",
        "UPDATE orders SET total = total + 1, memo = CONCAT(memo, '+') WHERE id % 5 = 0",
        "UPDATE orders SET id = id + 10000 WHERE id BETWEEN 100 AND 120",
        "DELETE FROM orders WHERE id % 7 = 0",
        "ALTER TABLE orders ADD COLUMN region VARCHAR(10) NULL",
        "UPDATE orders SET region = 'north' WHERE id < 50",
        "CREATE TABLE notes (id INT PRIMARY KEY, body TEXT)",
        "INSERT INTO notes SELECT seq, REPEAT('note ', seq) FROM seq_1_to_200",
        database=db,
    )


def test_a_server_started_with_binlog_compression(
    mariadb_compressed, source_db_compressed, postgresql, mariadb_target, tmp_path
):
    server, db = mariadb_compressed, source_db_compressed
    _stream_changes_into_every_target(server, db, postgresql, mariadb_target, tmp_path, lambda: _changes(server, db))


def test_binlog_compression_switched_on_while_streaming(mariadb, source_db, postgresql, mariadb_target, tmp_path):
    def switch_on_then_write() -> None:
        with mariadb.global_setting("log_bin_compress", "ON"), mariadb.global_setting("log_bin_compress_min_len", 10):
            _changes(mariadb, source_db)

    _stream_changes_into_every_target(mariadb, source_db, postgresql, mariadb_target, tmp_path, switch_on_then_write)
