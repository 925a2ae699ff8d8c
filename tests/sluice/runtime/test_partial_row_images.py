"""Sessions that write with binlog_row_image MINIMAL or NOBLOB (the server's setting stays
FULL) while pipelines snapshot and stream: every keyed target ends equal to the source,
the DEFAULTs and LOBs the binlog left out read from the source by key (PostgreSQL, a MySQL
target, Iceberg). A target that keeps
every change with its before image (the parquet changelog) stops at the first such event,
naming it. (The crash-consistency test's partial-image run adds SIGKILLs and restarts.)"""

from __future__ import annotations

import time

import pytest

from sluice.source.schema import read_table_schema
from tests.harness import compare
from tests.harness.lakehouse import iceberg_sink, lakehouse_rows
from tests.harness.pipelines import (
    every_sink,
    pipeline_per_sink,
    run_sluice,
    sluice_env,
    start_sluice,
    stream_until_equal,
    wait_until_in_binlog_phase,
)

TABLE = (
    "CREATE TABLE orders (id INT PRIMARY KEY, customer VARCHAR(40) DEFAULT 'walk-in', total DECIMAL(10,2) "
    "DEFAULT 0.50, status VARCHAR(10) DEFAULT 'new', memo TEXT, photo BLOB)"
)


def _writes(mariadb, db: str) -> None:
    """Each image setting, with what it leaves out: defaults, unchanged columns, LOBs."""
    mariadb.execute(
        "SET SESSION binlog_row_image = MINIMAL",
        "INSERT INTO orders (id) SELECT seq FROM seq_1001_to_1200",  # every default left to the server
        "INSERT INTO orders (id, memo) VALUES (1201, 'minimal memo')",
        "UPDATE orders SET status = 'paid' WHERE id % 3 = 0",  # the key only before, the status after
        "UPDATE orders SET id = id + 5000 WHERE id BETWEEN 20 AND 40",  # a key change, in no image after
        "DELETE FROM orders WHERE id % 11 = 0",
        "BEGIN",
        "UPDATE orders SET total = total * 2 WHERE id = 7",
        "UPDATE orders SET customer = 'twice' WHERE id = 7",
        "COMMIT",
        database=db,
    )
    mariadb.execute(
        "SET SESSION binlog_row_image = NOBLOB",
        "UPDATE orders SET status = 'sent' WHERE id % 4 = 0",  # the LOBs it did not change left out
        "UPDATE orders SET photo = x'ff00ff' WHERE id = 8",
        "INSERT INTO orders (id, customer) VALUES (1300, 'noblob')",
        database=db,
    )


@pytest.fixture
def orders(mariadb, source_db) -> None:
    mariadb.execute(
        TABLE,
        "INSERT INTO orders SELECT seq, CONCAT('c', seq), seq / 4, 'old', REPEAT('m', seq % 50), UNHEX(HEX(seq)) "
        "FROM seq_1_to_600",
        database=source_db,
    )


def test_sessions_writing_partial_images_reach_every_keyed_target_whole(
    mariadb, source_db, postgresql, mariadb_target, tmp_path, orders
):
    sinks = every_sink(postgresql, mariadb_target, tmp_path / "lake", 7480)
    del sinks["parquet"]
    iceberg = iceberg_sink(tmp_path / "iceberg")
    sinks["iceberg"] = (iceberg, "7486-7487")
    pipelines = pipeline_per_sink(tmp_path, mariadb, f"{source_db}.orders", sinks, source_db)
    with mariadb.connect(source_db) as conn:
        schema = read_table_schema(conn, source_db, "orders")
    stream_until_equal(
        pipelines,
        sluice_env(mariadb, postgresql, mariadb_target),
        lambda: _writes(mariadb, source_db),
        lambda: compare.source_rows(mariadb, source_db, "orders"),
        {
            "postgres": lambda: compare.postgres_rows(postgresql, source_db, "orders"),
            "mariadb": lambda: compare.source_rows(mariadb_target, source_db, "orders"),
            "iceberg": lambda: sorted(lakehouse_rows(iceberg, schema) or []),
        },
    )


def test_a_changelog_target_stops_at_the_first_partial_event(mariadb, source_db, tmp_path, orders):
    changelog = {"parquet": ({"type": "parquet", "path": str(tmp_path / "lake")}, "7490-7491")}
    pipelines = pipeline_per_sink(tmp_path, mariadb, f"{source_db}.orders", changelog, source_db)
    path, state = pipelines["parquet"]
    env = sluice_env(mariadb)
    process = start_sluice(path, state, env)
    try:
        wait_until_in_binlog_phase(process, state, deadline=time.monotonic() + 240)
        mariadb.execute("SET SESSION binlog_row_image = NOBLOB", "UPDATE orders SET status = 'x'", database=source_db)
        _, said = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode != 0
    assert f"the update rows event of {source_db}.orders at binlog position" in said
    assert "leaves out memo, photo" in said
    assert "the target keeps every change with its before image" in said
    again = run_sluice(path, state, env, timeout=120)  # a restart meets the same event
    assert again.returncode != 0 and "leaves out memo, photo" in again.stderr
