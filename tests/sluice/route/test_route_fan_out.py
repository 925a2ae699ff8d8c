"""Flink CDC's default route-mode, ALL_MATCH: a table two rules name goes into both targets
(an ODS copy of one shard beside the merged table of every shard), each change exactly
once in each, through the snapshot on Spark's executors, streaming (a key change too), ADD
COLUMN and a restart; into PostgreSQL and Iceberg."""

from __future__ import annotations

import psycopg
import pytest

from tests.harness import compare
from tests.harness.lakehouse import iceberg_sink, lakehouse_column_rows
from tests.harness.pipelines import (
    exit_message,
    pipeline_yaml,
    postgres_sink,
    run_sluice,
    sluice_env,
    stream_until_equal,
    write_pipeline,
)


@pytest.mark.parametrize("target", ["postgresql", "iceberg"])
def test_a_table_two_rules_name_reaches_both_targets_exactly_once(tmp_path, mariadb, postgresql, source_db, target):
    mariadb.execute(
        "CREATE TABLE orders_1 (id INT PRIMARY KEY, amount INT)",
        "CREATE TABLE orders_2 (id INT PRIMARY KEY, amount INT)",
        "INSERT INTO orders_1 SELECT seq, seq * 10 FROM seq_1_to_40",
        "INSERT INTO orders_2 SELECT seq, seq * 100 FROM seq_1_to_30",
        database=source_db,
    )
    sink = iceberg_sink(tmp_path / "lake") if target == "iceberg" else postgres_sink(postgresql)
    options = {
        "server-id": "7420-7423" if target == "iceberg" else "7424-7427",
        "scan.incremental.snapshot.chunk.size": 8,
        "scan.snapshot.read-on-driver": False,
    }
    definition = pipeline_yaml(mariadb, f"{source_db}.orders_[0-9]", sink, **options)
    definition["pipeline"]["schema.change.behavior"] = "evolve"
    definition["route"] = [
        {"source-table": f"{source_db}.orders_1", "sink-table": f"{source_db}.ods_orders_1"},
        {"source-table": f"{source_db}.orders_[0-9]", "sink-table": f"{source_db}.all_orders"},
    ]
    definition["transform"] = [
        {
            "source-table": f"{source_db}.orders_[0-9]",
            "projection": "\\*, __table_name__ AS shard",
            "primary-keys": "id, shard",
        }
    ]
    path = write_pipeline(tmp_path / "pipeline.yaml", definition)
    pipelines = {target: (path, tmp_path / "state")}
    env = sluice_env(mariadb, postgresql)

    def expected(columns: str) -> tuple[list[tuple], list[tuple]]:
        shards = [
            compare.query_rows(mariadb, f"SELECT {columns}, '{t}' FROM {source_db}.{t}")
            for t in ("orders_1", "orders_2")
        ]
        return sorted(shards[0]), sorted(shards[0] + shards[1])

    def actual(columns: list[str]) -> tuple[list[tuple] | None, list[tuple] | None]:
        return _rows(target, sink, postgresql, source_db, "ods_orders_1", columns), _rows(
            target, sink, postgresql, source_db, "all_orders", columns
        )

    def first() -> None:
        mariadb.execute(
            "INSERT INTO orders_1 VALUES (41, 1)",
            "UPDATE orders_1 SET amount = -1 WHERE id = 2",
            "DELETE FROM orders_1 WHERE id = 3",
            "UPDATE orders_1 SET id = 103 WHERE id = 4",
            "UPDATE orders_2 SET id = 105 WHERE id = 5",
            database=source_db,
        )

    stream_until_equal(
        pipelines, env, first, lambda: expected("id, amount"), {target: lambda: actual(["id", "amount", "shard"])}
    )

    def second() -> None:
        mariadb.execute(
            "ALTER TABLE orders_1 ADD COLUMN note VARCHAR(8)",
            "INSERT INTO orders_1 VALUES (42, 2, 'x')",
            "UPDATE orders_1 SET note = 'y' WHERE id = 1",
            "DELETE FROM orders_2 WHERE id = 6",
            database=source_db,
        )

    def expected_with_note() -> tuple[list[tuple], list[tuple]]:
        ods = compare.query_rows(mariadb, f"SELECT id, amount, note, 'orders_1' FROM {source_db}.orders_1")
        other = compare.query_rows(mariadb, f"SELECT id, amount, NULL, 'orders_2' FROM {source_db}.orders_2")
        return sorted(ods), sorted(ods + other, key=repr)

    def actual_with_note() -> tuple[list[tuple] | None, list[tuple] | None]:
        ods, merged = actual(["id", "amount", "note", "shard"])
        return ods, None if merged is None else sorted(merged, key=repr)

    stream_until_equal(pipelines, env, second, expected_with_note, {target: actual_with_note})


def _rows(target, sink, postgresql, db: str, table: str, columns: list[str]) -> list[tuple] | None:
    """The target table's rows in these columns; None while it lacks the table or a column."""
    if target == "iceberg":
        return lakehouse_column_rows(sink, f"{db}.{table}", columns)
    try:
        return sorted(compare.postgres_rows(postgresql, db, table, ", ".join(columns)))
    except psycopg.errors.Error:
        return None


def test_a_parquet_changelog_refuses_a_fanned_out_table_naming_it(tmp_path, mariadb, source_db):
    """The changelog writes a table's snapshot in one Spark job, into one directory."""
    mariadb.execute("CREATE TABLE orders_1 (id INT PRIMARY KEY)", database=source_db)
    sink = {"type": "parquet", "path": str(tmp_path / "lake")}
    definition = pipeline_yaml(mariadb, f"{source_db}.orders_1", sink, **{"server-id": "7428-7429"})
    definition["route"] = [
        {"source-table": f"{source_db}.orders_1", "sink-table": f"{source_db}.a"},
        {"source-table": f"{source_db}.orders_1", "sink-table": f"{source_db}.b"},
    ]
    ran = run_sluice(write_pipeline(tmp_path / "pipeline.yaml", definition), tmp_path / "state", sluice_env(mariadb))
    assert ran.returncode != 0
    assert exit_message(ran.stderr) == (
        f"sluice: error: route: {source_db}.orders_1 goes to 2 target tables, and the parquet changelog writes a "
        "table's snapshot into one: set pipeline.route-mode: FIRST_MATCH, or narrow the rules' source-table"
    )
