"""What a JDBC target holds of what MariaDB takes.

Names as long as MariaDB takes (64 characters, a CJK character three bytes in UTF-8)
reach targets whose limits are shorter or counted otherwise (PostgreSQL: 63 bytes; MySQL:
64 characters for the names Sluice derives, as an index's) as one documented rule has
them: a name that does not fit is cut, plus `_` and eight hex digits of a hash of the
whole name. Tables and columns differing only at the end stay apart, and the names Sluice
derives from them (staging tables, indexes) are as unique as the names.

Tables wider than a target holds (PostgreSQL: 1,600 columns; MySQL's InnoDB: 1,017) are
refused by `sluice check` and at start, naming the table and what to do."""

from __future__ import annotations

import contextlib
import re
import subprocess
from collections.abc import Iterator
from decimal import Decimal

import psycopg
import pymysql
import pytest

from sluice.sink.jdbc.target_limits import postgres_identifier
from tests.harness import compare
from tests.harness.pipelines import (
    SLUICE,
    every_sink,
    mysql_sink,
    pipeline_per_sink,
    pipeline_yaml,
    postgres_sink,
    run_sluice,
    sluice_env,
    stream_until_equal,
    write_pipeline,
)
from tests.harness.services import MariaDB, start_mariadb

TWIN_A = "orders_archive_2024_" + "x" * 43 + "1"  # 64 characters, differing at the last
TWIN_B = "orders_archive_2024_" + "x" * 43 + "2"
CJK_A = "订单" * 10 + "甲一"  # 22 characters, 66 bytes
CJK_B = "订单" * 10 + "甲二"
STAGED = "subscription_renewal_reminder_dispatch_log_entries"  # with its database, past 47 bytes
BAG = "audit_events_" + "y" * 51  # keyless, 64 characters: its index name is longer
WIDE = "wide"
COLUMN_A = ("customer_lifetime_value_adjusted_for_inflation_and_seasonality_" + "q" * 10)[:63] + "1"  # 64
COLUMN_B = COLUMN_A[:63] + "2"
TABLES = (TWIN_A, TWIN_B, CJK_A, CJK_B, STAGED, BAG, WIDE)


def _source(mariadb, db: str) -> None:
    statements = []
    for table in (TWIN_A, TWIN_B, CJK_A, CJK_B):
        statements += [
            f"CREATE TABLE `{table}` (id INT PRIMARY KEY, amount DECIMAL(10,2), note VARCHAR(20))",
            f"INSERT INTO `{table}` VALUES (1, 1.25, '{table[-1]}'), (2, 2.5, 'two')",
        ]
    statements += [
        f"CREATE TABLE `{STAGED}` (id INT PRIMARY KEY, v VARCHAR(20), n INT)",
        f"INSERT INTO `{STAGED}` VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3)",
        f"CREATE TABLE `{BAG}` (a INT NOT NULL, b VARCHAR(10))",
        f"INSERT INTO `{BAG}` VALUES (1, 'x'), (1, 'x'), (2, 'y')",
        f"CREATE TABLE `{WIDE}` (id INT PRIMARY KEY, `{COLUMN_A}` INT, `{COLUMN_B}` INT)",
        f"INSERT INTO `{WIDE}` VALUES (1, 10, 20)",
    ]
    mariadb.execute(*statements, database=db)


def _changes(mariadb, db: str) -> None:
    mariadb.execute(
        f"UPDATE `{TWIN_A}` SET note = 'changed' WHERE id = 2",
        f"DELETE FROM `{TWIN_B}` WHERE id = 1",
        f"INSERT INTO `{CJK_B}` VALUES (3, 3.75, '三')",
        f"ALTER TABLE `{TWIN_A}` MODIFY amount DECIMAL(10,4)",
        f"UPDATE `{TWIN_A}` SET amount = 1.2345 WHERE id = 1",
        f"ALTER TABLE `{CJK_A}` ADD COLUMN extra INT NULL",
        f"UPDATE `{CJK_A}` SET extra = 9 WHERE id = 1",
        f"DELETE FROM `{STAGED}` WHERE id = 1",  # a staging table of the key's shape
        f"UPDATE `{STAGED}` SET v = 'bb' WHERE id = 2",  # then one of every column's
        f"DELETE FROM `{BAG}` WHERE a = 1 LIMIT 1",
        f"INSERT INTO `{BAG}` VALUES (3, 'z')",
        f"UPDATE `{WIDE}` SET `{COLUMN_B}` = 21 WHERE id = 1",
        database=db,
    )


def test_long_names_stay_apart_in_every_target(mariadb, source_db, postgresql, mariadb_target, tmp_path):
    _source(mariadb, source_db)
    sinks = every_sink(postgresql, mariadb_target, tmp_path / "lake", 7460)
    del sinks["parquet"]
    pipelines = pipeline_per_sink(
        tmp_path,
        mariadb,
        f"{source_db}.\\.*",  # every table of the database
        sinks,
        source_db,
        {"schema.change.behavior": "evolve"},
        **{"scan.incremental.snapshot.chunk.key-column": f"{source_db}.{BAG}:a"},
    )

    def expected() -> list[tuple]:
        return sorted((table, *row) for table in TABLES for row in compare.source_rows(mariadb, source_db, table))

    def postgres() -> list[tuple]:
        held = []
        for table in TABLES:
            with contextlib.suppress(psycopg.errors.UndefinedTable):
                held += [
                    (table, *row) for row in compare.postgres_rows(postgresql, source_db, postgres_identifier(table))
                ]
        return sorted(held)

    def mysql() -> list[tuple]:
        held = []
        for table in TABLES:
            with contextlib.suppress(pymysql.err.ProgrammingError):
                held += [(table, *row) for row in compare.source_rows(mariadb_target, source_db, table)]
        return sorted(held)

    stream_until_equal(
        pipelines,
        sluice_env(mariadb, postgresql, mariadb_target),
        lambda: _changes(mariadb, source_db),
        expected,
        {"postgres": postgres, "mariadb": mysql},
        timeout=180,
    )
    env = sluice_env(mariadb, postgresql, mariadb_target)
    checked = subprocess.run([*SLUICE, "check", str(pipelines["postgres"][0])], env=env, capture_output=True, text=True)
    held = (
        f'{source_db}.{TWIN_A} is longer than the target\'s names: it is "{source_db}"."{postgres_identifier(TWIN_A)}"'
    )
    assert held in checked.stdout, checked.stdout
    in_postgres = compare.postgres_rows(postgresql, source_db, postgres_identifier(TWIN_A))
    assert in_postgres[0][1] == Decimal("1.2345")  # the long table's MODIFY reached it
    long_columns = [postgres_identifier(COLUMN_A), postgres_identifier(COLUMN_B)]
    assert compare.postgres_columns(postgresql, source_db, WIDE) == ["id", *long_columns]


@pytest.mark.parametrize(("target", "columns", "most"), [("postgres", 1700, "1,600"), ("mysql", 1100, "1,017")])
def test_a_table_wider_than_the_target_holds_is_refused_naming_it(
    mariadb, source_db, postgresql, mariadb_target, tmp_path, target, columns, most
):
    """PostgreSQL's raw `tables can have at most 1600 columns` said nothing of what to do."""
    wide = ", ".join(f"c{i} TINYINT" for i in range(columns))
    mariadb.execute(f"CREATE TABLE wide (id INT PRIMARY KEY, {wide}) ENGINE=Aria", database=source_db)
    sink = postgres_sink(postgresql) if target == "postgres" else mysql_sink(mariadb_target)
    pipeline = write_pipeline(tmp_path / "p.yaml", pipeline_yaml(mariadb, f"{source_db}.wide", sink))
    env = sluice_env(mariadb, postgresql, mariadb_target)
    said = f"{source_db}.wide has {columns + 1:,} columns and .* tables hold at most {most}: leave it out"

    checked = subprocess.run([*SLUICE, "check", str(pipeline)], env=env, capture_output=True, text=True)
    assert checked.returncode == 1 and re.search(f"error +sink: {said}", checked.stdout), checked.stdout
    ran = run_sluice(pipeline, tmp_path / "state", env, timeout=180)
    assert ran.returncode != 0 and re.search(said, ran.stderr.strip().splitlines()[-1]), ran.stderr[-2000:]


@pytest.fixture
def case_blind_target(services_dir) -> Iterator[MariaDB]:
    """A MySQL-dialect target that ignores the case of table names, as Windows, macOS and
    many managed servers run (lower_case_table_names=1)."""
    server = start_mariadb(services_dir / "case-blind-target", server_id=41, options=("--lower-case-table-names=1",))
    yield server
    server.stop()


def test_tables_a_target_would_hold_as_one_are_refused_naming_both(mariadb, source_db, case_blind_target, tmp_path):
    """`Orders` and `orders` are two tables in MariaDB on Linux; a target that ignores case
    would have written both into one."""
    mariadb.execute(
        "CREATE TABLE Orders (id INT PRIMARY KEY)", "CREATE TABLE orders (id INT PRIMARY KEY)", database=source_db
    )
    sink = mysql_sink(case_blind_target)
    pipeline = write_pipeline(tmp_path / "p.yaml", pipeline_yaml(mariadb, f"{source_db}.[Oo]rders", sink))
    env = sluice_env(mariadb, target=case_blind_target)
    said = f"{source_db}.Orders and {source_db}.orders would be one table in the target"

    checked = subprocess.run([*SLUICE, "check", str(pipeline)], env=env, capture_output=True, text=True)
    assert checked.returncode == 1 and said in checked.stdout, checked.stdout
    ran = run_sluice(pipeline, tmp_path / "state", env, timeout=180)
    assert ran.returncode != 0 and said in ran.stderr.strip().splitlines()[-1], ran.stderr[-2000:]
