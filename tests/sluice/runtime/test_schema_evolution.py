"""Schema changes reach the target as the pipeline's schema.change.behavior promises.

One script of DDL, each with DML on the table right before and right after it, runs while
pipelines into PostgreSQL, MariaDB, the parquet changelog, Iceberg and Delta Lake stream. Afterwards each target
holds what the behaviour promises: evolve, the source itself; lenient, every column it
ever had (rows written after a column left the source have NULL there) and the rows of
truncated or dropped tables; ignore, the first schema, with rows projected onto it.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg
import pymysql
import pytest
import yaml

from sluice.sink.parquet import read_changelog
from tests.harness import compare
from tests.harness.lakehouse import delta_sink, iceberg_sink, lakehouse_table
from tests.harness.pipelines import (
    every_sink,
    kill_pipeline,
    pipeline_per_sink,
    postgres_sink,
    read_state,
    sluice_env,
    start_sluice,
    stream_until_equal,
)
from tests.harness.services import start_mariadb

Table = dict[int, dict[str, Any]]  # id -> column -> value

SCRIPT = [
    "INSERT INTO t VALUES (1, 'a', 10)",
    "ALTER TABLE t ADD COLUMN c0 VARCHAR(10) AFTER id",
    "INSERT INTO t VALUES (2, 'x', 'b', 20)",
    "UPDATE t SET c0 = 'y' WHERE id = 1",
    "ALTER TABLE t MODIFY qty BIGINT",
    "INSERT INTO t VALUES (3, 'z', 'c', 30)",
    "ALTER TABLE t RENAME COLUMN name TO title",
    "INSERT INTO t VALUES (4, 'w', 'd', 40)",
    "UPDATE t SET title = 'bb' WHERE id = 2",
    "ALTER TABLE t DROP COLUMN qty",
    "INSERT INTO t VALUES (5, 'v', 'e')",
    "UPDATE t SET title = 'cc' WHERE id = 3",
    "DELETE FROM t WHERE id = 4",
    # Table-level changes, each with DML right before and after.
    "INSERT INTO u VALUES (1)",
    "TRUNCATE TABLE u",
    "INSERT INTO u VALUES (2)",
    "INSERT INTO w VALUES (1)",
    "DROP TABLE w",
]

SOURCE_T = {
    1: {"id": 1, "c0": "y", "title": "a"},
    2: {"id": 2, "c0": "x", "title": "bb"},
    3: {"id": 3, "c0": "z", "title": "cc"},
    5: {"id": 5, "c0": "v", "title": "e"},
}

EXPECTED: dict[str, dict[str, Table | None]] = {
    "evolve": {"t": SOURCE_T, "u": {2: {"id": 2}}, "w": None},
    "try_evolve": {"t": SOURCE_T, "u": {2: {"id": 2}}, "w": None},  # every target takes each change
    "lenient": {
        "t": {
            1: {"id": 1, "name": "a", "qty": 10, "c0": "y", "title": None},
            2: {"id": 2, "name": None, "qty": 20, "c0": "x", "title": "bb"},
            3: {"id": 3, "name": None, "qty": None, "c0": "z", "title": "cc"},
            5: {"id": 5, "name": None, "qty": None, "c0": "v", "title": "e"},
        },
        "u": {1: {"id": 1}, 2: {"id": 2}},
        "w": {1: {"id": 1}},
    },
    "ignore": {
        "t": {
            1: {"id": 1, "name": "a", "qty": 10},
            2: {"id": 2, "name": None, "qty": 20},
            3: {"id": 3, "name": None, "qty": None},
            5: {"id": 5, "name": None, "qty": None},
        },
        "u": {1: {"id": 1}, 2: {"id": 2}},
        "w": {1: {"id": 1}},
    },
}


def _rows_by_id(columns: list[str], rows: list[tuple]) -> Table:
    return {row[columns.index("id")]: dict(zip(columns, row, strict=True)) for row in rows}


def postgres_table(postgresql, db: str) -> Callable[[str], Table | None]:
    def read(table: str) -> Table | None:
        """None while the table is not there (a swap renames it away before the new one comes)."""
        with postgresql.connect() as conn:
            try:
                cur = conn.execute(f'SELECT * FROM "{db}"."{table}"')
            except psycopg.errors.UndefinedTable:
                return None
            return _rows_by_id([c.name for c in cur.description], cur.fetchall())

    return read


NO_SUCH_TABLE = 1146  # MySQL's ER_NO_SUCH_TABLE


def mariadb_table(server, db: str) -> Callable[[str], Table | None]:
    def read(table: str) -> Table | None:
        conn = server.connect()
        try:
            with conn.cursor() as cur:
                try:
                    cur.execute(f"SELECT * FROM `{db}`.`{table}`")
                except pymysql.err.ProgrammingError as exc:
                    if exc.args[0] != NO_SUCH_TABLE:
                        raise
                    return None
                return _rows_by_id([c[0] for c in cur.description], cur.fetchall())
        finally:
            conn.close()

    return read


def evolving_jdbc_pipelines(
    tmp_path: Path, mariadb, postgresql, mariadb_target, tables: str, prefix: str, first_server_id: int
) -> dict[str, tuple[Path, Path]]:
    """One `evolve` pipeline of parallelism 1 into PostgreSQL and one into MariaDB."""
    sinks = every_sink(postgresql, mariadb_target, tmp_path, first_server_id)
    jdbc = {name: sink for name, sink in sinks.items() if name != "parquet"}
    options = {"parallelism": 1, "schema.change.behavior": "evolve"}
    return pipeline_per_sink(tmp_path, mariadb, tables, jdbc, prefix, options)


def target_tables(
    tables: set[str], *readers: Callable[[str], Table | None]
) -> dict[str, Callable[[], dict[str, Table | None]]]:
    """What stream_until_equal reads of each target: `tables` by the reader of each (in
    the order postgres, mariadb, parquet)."""
    names = ("postgres", "mariadb", "parquet")
    return {name: (lambda read=read: {t: read(t) for t in tables}) for name, read in zip(names, readers, strict=False)}


def lakehouse_table_by_id(sink: dict[str, Any], db: str) -> Callable[[str], Table | None]:
    def read(table: str) -> Table | None:
        rows = lakehouse_table(sink, f"{db}.{table}")
        return None if rows is None else {row["id"]: row for row in rows.to_pylist()}

    return read


def parquet_table(lake: Path, db: str) -> Callable[[str], Table | None]:
    """The changelog replayed by key, in the current schema version. (A removal is matched
    by key: after a lenient or ignored change a before-image carries NULLs where the row
    written earlier has values.)"""

    def read(table: str) -> Table | None:
        changelog = read_changelog(lake, f"{db}.{table}")
        held: Table = {}
        for change in changelog:
            row = {k: v for k, v in change.items() if not k.startswith("_")}
            if change["_op"] in ("-U", "-D"):
                held.pop(row["id"])
            else:
                held[row["id"]] = row
        return held or None

    return read


@pytest.mark.parametrize("behavior", ["evolve", "try_evolve", "lenient", "ignore"])
def test_each_ddl_reaches_every_target_as_the_behaviour_promises(
    behavior, tmp_path, mariadb, mariadb_target, postgresql, source_db
):
    # Lenient makes a column the source renames or drops nullable in the target; ignore
    # leaves the target as it was, so there a NOT NULL `name` would refuse the rows after.
    not_null = "" if behavior == "ignore" else "NOT NULL"
    mariadb.execute(
        f"CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20) {not_null}, qty INT)",
        "CREATE TABLE u (id INT PRIMARY KEY)",
        "CREATE TABLE w (id INT PRIMARY KEY)",
        database=source_db,
    )
    lake = tmp_path / "lake"
    ids = {"evolve": 7100, "lenient": 7110, "ignore": 7120, "try_evolve": 7190}[behavior]
    sinks = every_sink(postgresql, mariadb_target, lake, ids)
    lakehouses = {"iceberg": iceberg_sink(tmp_path / "iceberg"), "delta": delta_sink(tmp_path / "delta")}
    sinks |= {name: (sink, f"{ids + 6 + 2 * i}-{ids + 7 + 2 * i}") for i, (name, sink) in enumerate(lakehouses.items())}
    if behavior == "try_evolve":  # the other targets take every change of the script: as evolve
        sinks = {name: sinks[name] for name in lakehouses}
    pipelines = pipeline_per_sink(
        tmp_path,
        mariadb,
        f"{source_db}.t,{source_db}.u,{source_db}.w",
        sinks,
        f"evolution-{behavior}",
        pipeline_options={"parallelism": 1, "schema.change.behavior": behavior},
    )
    readers = {
        "postgres": postgres_table(postgresql, source_db),
        "mariadb": mariadb_table(mariadb_target, source_db),
        "parquet": parquet_table(lake, source_db),
        **{name: lakehouse_table_by_id(sink, source_db) for name, sink in lakehouses.items()},
    }
    readers = {name: read for name, read in readers.items() if name in sinks}
    env = sluice_env(mariadb, postgresql, mariadb_target)
    want = EXPECTED[behavior]

    def target(name: str) -> Callable[[], tuple[int, dict]]:
        """The schema changes the pipeline resolved, and its target's tables."""
        read, state = readers[name], pipelines[name][1]
        return lambda: (len(read_state(state).get("schema_change_history", [])), {t: read(t) for t in want})

    stream_until_equal(
        pipelines,
        env,
        lambda: mariadb.execute(*SCRIPT, database=source_db),
        lambda: (6, want),
        {name: target(name) for name in readers},
    )
    if behavior == "evolve":  # the target's columns are the source's
        assert compare.source_rows(mariadb_target, source_db, "t") == compare.source_rows(mariadb, source_db, "t")


def test_a_column_added_while_the_pipeline_was_stopped_is_applied_before_the_rows_after_it(
    tmp_path, mariadb, postgresql, source_db
):
    """FLINK-35936: the change sits in the binlog between the stop and the restart; the
    rerun reads it there, before any row of the new shape. The row the table held gets the
    column's DEFAULT in the target too."""
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))", database=source_db)
    sinks = {"postgres": (postgres_sink(postgresql), "7130-7131")}
    pipelines = pipeline_per_sink(
        tmp_path, mariadb, f"{source_db}.t", sinks, "stopped", {"schema.change.behavior": "evolve"}
    )
    env = sluice_env(mariadb, postgresql)
    stream_until_equal(
        pipelines,
        env,
        lambda: mariadb.execute("INSERT INTO t VALUES (1, 'a')", database=source_db),
        lambda: [(1, "a")],
        {"postgres": lambda: compare.postgres_rows(postgresql, source_db, "t")},
    )
    mariadb.execute(
        "ALTER TABLE t ADD COLUMN c0 INT NOT NULL DEFAULT 7",
        "INSERT INTO t VALUES (2, 'b', 20)",
        database=source_db,
    )
    stream_until_equal(
        pipelines,
        env,
        lambda: None,
        lambda: [(1, "a", 7), (2, "b", 20)],
        {"postgres": lambda: compare.postgres_rows(postgresql, source_db, "t")},
    )


def test_a_table_created_to_match_tables_is_captured_from_its_creation_with_a_column_list_or_like_another(
    tmp_path, mariadb, mariadb_target, postgresql, source_db
):
    mariadb.execute("CREATE TABLE t1 (id INT PRIMARY KEY)", database=source_db)
    lake = tmp_path / "lake"
    sinks = every_sink(postgresql, mariadb_target, lake, 7140)
    pipelines = pipeline_per_sink(tmp_path, mariadb, f"{source_db}.t\\d+", sinks, "created", {"parallelism": 1})

    def created() -> None:
        mariadb.execute(
            "CREATE TABLE t2 (id INT PRIMARY KEY, v VARCHAR(5) NOT NULL, at DATETIME)",
            "INSERT INTO t2 VALUES (1, 'a', '2026-11-22 10:00:00'), (2, 'b', NULL)",
            "UPDATE t2 SET v = 'c' WHERE id = 2",
            "CREATE TABLE other (id INT PRIMARY KEY)",  # outside `tables`
            "INSERT INTO other VALUES (1)",
            "CREATE TABLE t3 LIKE t2",  # t2's layout
            "INSERT INTO t3 VALUES (7, 'l', NULL)",
            database=source_db,
        )

    tables = {"t2", "other", "t3"}
    stream_until_equal(
        pipelines,
        sluice_env(mariadb, postgresql, mariadb_target),
        created,
        lambda: {
            "t2": {1: {"id": 1, "v": "a", "at": datetime(2026, 11, 22, 10)}, 2: {"id": 2, "v": "c", "at": None}},
            "other": None,
            "t3": {7: {"id": 7, "v": "l", "at": None}},
        },
        target_tables(
            tables,
            postgres_table(postgresql, source_db),
            mariadb_table(mariadb_target, source_db),
            parquet_table(lake, source_db),
        ),
    )


def test_a_table_added_to_tables_is_snapshotted_and_joins_the_binlog_alone(tmp_path, mariadb, postgresql, source_db):
    """Flink CDC's scan.newly-added-table.enabled: the rerun snapshots only the new table,
    while its rows change, and streams it from there; the table already captured is not
    read again. A table taken out of `tables` leaves the capture."""
    mariadb.execute(
        "CREATE TABLE t1 (id INT PRIMARY KEY, v INT)",
        "INSERT INTO t1 VALUES " + ", ".join(f"({i}, {i})" for i in range(50)),
        "CREATE TABLE t2 (id INT PRIMARY KEY, v INT)",
        "INSERT INTO t2 VALUES " + ", ".join(f"({i}, {i})" for i in range(30)),
        database=source_db,
    )
    sinks = {"postgres": (postgres_sink(postgresql), "7150-7151")}
    options = {"scan.incremental.snapshot.chunk.size": 10}
    pipelines = pipeline_per_sink(tmp_path, mariadb, f"{source_db}.t1", sinks, "added", **options)
    env = sluice_env(mariadb, postgresql)
    t1 = lambda: compare.postgres_rows(postgresql, source_db, "t1")  # noqa: E731
    stream_until_equal(
        pipelines,
        env,
        lambda: mariadb.execute("UPDATE t1 SET v = -1 WHERE id = 1", database=source_db),
        lambda: compare.source_rows(mariadb, source_db, "t1"),
        {"postgres": t1},
    )

    path, state = pipelines["postgres"]
    definition = yaml.safe_load(path.read_text())
    definition["source"]["tables"] = f"{source_db}.t2"
    path.write_text(yaml.safe_dump(definition))
    process = start_sluice(path, state, env)
    try:
        deadline = time.monotonic() + 120

        def saved(condition) -> None:
            while not condition(read_state(state)):
                assert process.poll() is None, process.communicate()[1]
                assert time.monotonic() < deadline, read_state(state)
                time.sleep(0.05)

        saved(lambda s: s["definition"]["source.tables"] == f"{source_db}.t2")  # planned, Spark starting
        mariadb.execute("UPDATE t2 SET v = -2 WHERE id < 5", "DELETE FROM t2 WHERE id = 7", database=source_db)
        saved(lambda s: "adding_tables" not in s)  # snapshotted, streaming
        mariadb.execute("INSERT INTO t2 VALUES (100, 100)", "UPDATE t1 SET v = -3", database=source_db)
        want = compare.source_rows(mariadb, source_db, "t2")
        while (actual := compare.postgres_rows(postgresql, source_db, "t2")) != want:
            assert process.poll() is None, process.communicate()[1]
            assert time.monotonic() < deadline, compare.diff(want, actual)
            time.sleep(0.2)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            kill_pipeline(process)
    assert process.returncode == 0, err
    assert f"capture: 1 tables added ({source_db}.t2), 1 removed ({source_db}.t1)" in err
    assert "snapshot: 3/3 splits" in err  # t2's chunks only
    assert (1, -1) in t1() and (2, 2) in t1()  # t1 left the capture: its later update is not in the target
    assert list(read_state(state)["tables"]) == [f"{source_db}.t2"]


def test_a_table_renamed_into_tables_is_snapshotted_and_streamed_from_the_rename(
    tmp_path, mariadb, mariadb_target, postgresql, source_db
):
    mariadb.execute(
        "CREATE TABLE t1 (id INT PRIMARY KEY)",
        "CREATE TABLE staging (id INT PRIMARY KEY, v INT)",
        "INSERT INTO staging VALUES " + ", ".join(f"({i}, {i})" for i in range(40)),
        database=source_db,
    )
    lake = tmp_path / "lake"
    sinks = every_sink(postgresql, mariadb_target, lake, 7160)
    pipelines = pipeline_per_sink(
        tmp_path, mariadb, f"{source_db}.t\\d+", sinks, "renamed", **{"scan.incremental.snapshot.chunk.size": 10}
    )

    def renamed() -> None:
        mariadb.execute(
            "UPDATE staging SET v = -1 WHERE id = 1",  # before the rename: only the snapshot has it
            "RENAME TABLE staging TO t5",
            "UPDATE t5 SET v = -2 WHERE id < 5",
            database=source_db,
        )
        deadline = time.monotonic() + 60
        while not all(f"{source_db}.t5" in read_state(state).get("tables", {}) for _, state in pipelines.values()):
            assert time.monotonic() < deadline, "t5 did not join the capture"
            time.sleep(0.1)
        # After its snapshot: only the binlog reader can bring these.
        mariadb.execute("INSERT INTO t5 VALUES (100, 100)", "DELETE FROM t5 WHERE id = 7", database=source_db)

    def source() -> dict:
        rows = compare.source_rows(mariadb, source_db, "t5")
        return {"t5": {row[0]: {"id": row[0], "v": row[1]} for row in rows}}

    stream_until_equal(
        pipelines,
        sluice_env(mariadb, postgresql, mariadb_target),
        renamed,
        source,
        {
            "postgres": lambda: {"t5": postgres_table(postgresql, source_db)("t5")},
            "mariadb": lambda: {"t5": mariadb_table(mariadb_target, source_db)("t5")},
            "parquet": lambda: {"t5": parquet_table(lake, source_db)("t5")},
        },
    )


def test_column_names_resolve_case_insensitively_as_mysql_resolves_them(
    tmp_path, mariadb, mariadb_target, postgresql, source_db
):
    """MySQL column names are case-insensitive: `PRIMARY KEY (ID)` keys column `id`, `DROP
    COLUMN Y` drops `y`; a MODIFY or CHANGE spelled otherwise respells the column. Every
    target follows with the source's own spelling."""
    mariadb.execute(
        "CREATE TABLE t (id INT PRIMARY KEY, v INT, w INT)", "INSERT INTO t VALUES (1, 1, 1)", database=source_db
    )
    pipelines = evolving_jdbc_pipelines(
        tmp_path, mariadb, postgresql, mariadb_target, f"{source_db}.(t|k)", "case", 7150
    )

    def ddl() -> None:
        mariadb.execute(
            "CREATE TABLE k (id INT, v INT, PRIMARY KEY (ID))",
            "INSERT INTO k VALUES (1, 1), (2, 2)",
            "UPDATE k SET v = 3 WHERE id = 2",
            "ALTER TABLE t MODIFY V BIGINT",
            "INSERT INTO t VALUES (2, 2, 2)",
            "ALTER TABLE t ADD x INT AFTER ID",
            "ALTER TABLE t CHANGE W W2 INT",
            "ALTER TABLE t RENAME COLUMN X TO y",
            "UPDATE t SET y = 5",
            "ALTER TABLE t DROP COLUMN Y",
            "INSERT INTO t VALUES (3, 3, 3)",
            database=source_db,
        )

    tables = {"t", "k"}
    stream_until_equal(
        pipelines,
        sluice_env(mariadb, postgresql, mariadb_target),
        ddl,
        lambda: {
            "t": {i: {"id": i, "V": i, "W2": i} for i in (1, 2, 3)},
            "k": {1: {"id": 1, "v": 1}, 2: {"id": 2, "v": 3}},
        },
        target_tables(tables, postgres_table(postgresql, source_db), mariadb_table(mariadb_target, source_db)),
    )


def test_alter_statements_as_mysql_runs_them_reach_every_target_with_their_rows(
    tmp_path, mariadb, mariadb_target, postgresql, source_db
):
    """ALTER ONLINE was read as no change at all, `DROP z, ADD z` lost z, and a key added or
    changed never reached the target: statements MySQL shops run every day, each with rows
    after it. One ALTER's clauses name columns as they were (a swap), CREATE OR REPLACE
    starts the table afresh, and the target is keyed as the source is."""
    mariadb.execute(
        "CREATE TABLE t (id INT PRIMARY KEY, a INT, b INT, z INT)",
        "INSERT INTO t VALUES (1, 10, 20, 7)",
        "CREATE TABLE k (id INT PRIMARY KEY, v INT)",
        "INSERT INTO k VALUES (1, 1)",
        "CREATE TABLE g (id INT NOT NULL, v VARCHAR(5))",
        "INSERT INTO g VALUES (1, 'a'), (2, 'b')",
        database=source_db,
    )
    pipelines = evolving_jdbc_pipelines(
        tmp_path, mariadb, postgresql, mariadb_target, f"{source_db}.(t|k|g)", "daily", 7160
    )

    def ddl() -> None:
        mariadb.execute(
            "ALTER ONLINE TABLE t ADD COLUMN o INT",
            "INSERT INTO t VALUES (2, 11, 21, 8, 2)",
            "ALTER TABLE t CHANGE a b INT, CHANGE b a INT, DISABLE KEYS",
            "INSERT INTO t (id, a, b) VALUES (3, 23, 13)",
            "ALTER TABLE t DROP COLUMN z, ADD COLUMN z VARCHAR(3)",
            "UPDATE t SET z = 'u' WHERE id = 1",
            "ALTER TABLE t ADD COLUMN IF NOT EXISTS a BIGINT, ADD KEY IF NOT EXISTS ka (a)",
            "ALTER TABLE t ADD COLUMN (p INT, q INT)",
            "INSERT INTO t (id, a, b, p) VALUES (4, 24, 14, 4)",
            "CREATE OR REPLACE TABLE k (id INT PRIMARY KEY, w VARCHAR(5))",
            "INSERT INTO k VALUES (9, 'new')",
            "ALTER TABLE g ADD PRIMARY KEY (id)",
            "UPDATE g SET v = 'bb' WHERE id = 2",
            "ALTER TABLE k DROP PRIMARY KEY, ADD CONSTRAINT kw PRIMARY KEY (w)",
            "INSERT INTO k VALUES (10, 'other')",
            "UPDATE k SET id = 11 WHERE w = 'new'",
            database=source_db,
        )

    def row(i: int, b: int, a: int, o: int | None = None, z: str | None = None, p: int | None = None) -> dict:
        return {"id": i, "b": b, "a": a, "o": o, "z": z, "p": p, "q": None}

    tables = {"t", "k", "g"}
    stream_until_equal(
        pipelines,
        sluice_env(mariadb, postgresql, mariadb_target),
        ddl,
        lambda: {
            "t": {1: row(1, 10, 20, z="u"), 2: row(2, 11, 21, o=2), 3: row(3, 13, 23), 4: row(4, 14, 24, p=4)},
            "k": {11: {"id": 11, "w": "new"}, 10: {"id": 10, "w": "other"}},
            "g": {1: {"id": 1, "v": "a"}, 2: {"id": 2, "v": "bb"}},
        },
        target_tables(tables, postgres_table(postgresql, source_db), mariadb_table(mariadb_target, source_db)),
    )
    keys = (
        "SELECT k.column_name FROM information_schema.table_constraints c JOIN information_schema.key_column_usage k "
    )
    keys += (
        "ON k.constraint_name = c.constraint_name AND k.table_schema = c.table_schema AND k.table_name = c.table_name "
    )
    keys += "WHERE c.constraint_type = 'PRIMARY KEY' AND c.table_schema = %s AND c.table_name = %s"
    for table, key in (("k", ["w"]), ("g", ["id"]), ("t", ["id"])):
        with postgresql.connect() as conn:
            assert [r[0] for r in conn.execute(keys, (source_db, table)).fetchall()] == key, table
        with mariadb_target.connect() as conn, conn.cursor() as cur:
            cur.execute(keys, (source_db, table))
            assert [r[0] for r in cur.fetchall()] == key, table


def test_table_names_in_ddl_resolve_as_the_servers_lower_case_table_names_says(tmp_path, services_dir, postgresql):
    """With lower_case_table_names=1 the server stores `Orders` as `orders` and takes any
    spelling after: `ALTER TABLE ORDERS ...` changes the captured table, and the target
    follows (it was missed: the DDL named no captured table as written)."""
    source = start_mariadb(
        services_dir / "lower-case-table-names", server_id=71, options=["--lower-case-table-names=1"]
    )
    try:
        source.execute("CREATE DATABASE CaseShop", "CREATE TABLE CaseShop.Orders (id INT PRIMARY KEY, v INT)")
        source.execute("INSERT INTO Orders VALUES (1, 1)", database="caseshop")
        sinks = {"postgres": (postgres_sink(postgresql), "7170-7171")}
        pipelines = pipeline_per_sink(
            tmp_path, source, "caseshop.orders", sinks, "lctn", {"parallelism": 1, "schema.change.behavior": "evolve"}
        )

        def ddl() -> None:
            source.execute(
                "ALTER TABLE ORDERS ADD COLUMN w INT",
                "INSERT INTO orders VALUES (2, 2, 2)",
                "ALTER TABLE CASESHOP.Orders RENAME COLUMN v TO x",
                "UPDATE Orders SET x = 5 WHERE id = 1",
                database="CaseShop",
            )

        stream_until_equal(
            pipelines,
            sluice_env(source, postgresql),
            ddl,
            lambda: {1: {"id": 1, "x": 5, "w": None}, 2: {"id": 2, "x": 2, "w": 2}},
            {"postgres": lambda: postgres_table(postgresql, "caseshop")("orders")},
        )
    finally:
        source.stop()


def test_rows_a_partition_statement_changes_without_row_events_are_read_again(
    tmp_path, mariadb, mariadb_target, postgresql, source_db
):
    """TRUNCATE, EXCHANGE and DROP PARTITION change rows and write no row event: the pipeline
    stopped at them. Now each table they change is read again into the target, range by
    range, as of right after the statement, and streaming goes on."""
    mariadb.execute(
        "CREATE TABLE p (id INT PRIMARY KEY, v INT) PARTITION BY RANGE (id) "
        "(PARTITION p0 VALUES LESS THAN (100), PARTITION p1 VALUES LESS THAN MAXVALUE)",
        "INSERT INTO p VALUES (1, 1), (2, 2), (150, 150), (151, 151)",
        "CREATE TABLE x (id INT PRIMARY KEY, v INT)",  # not captured: swapped with a partition
        "INSERT INTO x VALUES (50, 50)",
        database=source_db,
    )
    pipelines = evolving_jdbc_pipelines(tmp_path, mariadb, postgresql, mariadb_target, f"{source_db}.p", "parts", 7180)

    def partitions() -> None:
        mariadb.execute(
            "ALTER TABLE p TRUNCATE PARTITION p0",
            "INSERT INTO p VALUES (7, 7)",
            "ALTER TABLE p EXCHANGE PARTITION p0 WITH TABLE x",  # p0 now holds 50, x holds 7
            "UPDATE p SET v = 151 WHERE id = 150",
            "ALTER TABLE p DROP PARTITION p1",  # 150 and 151 go
            "UPDATE p SET v = 51 WHERE id = 50",
            database=source_db,
        )

    said = stream_until_equal(
        pipelines,
        sluice_env(mariadb, postgresql, mariadb_target),
        partitions,
        lambda: {"p": {50: {"id": 50, "v": 51}}},
        target_tables({"p"}, postgres_table(postgresql, source_db), mariadb_table(mariadb_target, source_db)),
    )
    assert all("read again" in text for text in said.values()), said


def test_ddl_the_parser_cannot_read_reaches_every_target_through_the_next_table_map(
    tmp_path, mariadb, mariadb_target, postgresql, source_db
):
    """Statements MariaDB accepts that Sluice's parser cannot read (ZEROFILL after UNSIGNED,
    a DEFAULT of LAST_VALUE(), NCHAR VARCHAR, table options after a column) stopped the
    pipeline. Now the table's next table map tells what they did: a column added, a type
    widened, a table created, also when a readable statement on the same table comes
    between the unreadable one and the rows."""
    mariadb.execute(
        "CREATE TABLE t (id INT PRIMARY KEY, a INT, b VARCHAR(10))",
        "INSERT INTO t VALUES (1, 1, 'x')",
        database=source_db,
    )
    pipelines = evolving_jdbc_pipelines(
        tmp_path, mariadb, postgresql, mariadb_target, f"{source_db}.(t|n)", "unread", 7180
    )

    def ddl() -> None:
        mariadb.execute(
            "ALTER TABLE t ADD COLUMN e INT ZEROFILL UNSIGNED",
            "INSERT INTO t VALUES (2, 2, 'y', 5)",
            "UPDATE t SET e = 7 WHERE id = 1",
            "ALTER TABLE t MODIFY b VARCHAR(40) DEFAULT LAST_VALUE(a, id)",
            "INSERT INTO t (id, a, b) VALUES (3, 3, 'longer than ten characters')",
            "ALTER TABLE t ADD COLUMN c2 NCHAR VARYING(10), CHECKSUM=1",
            "ALTER TABLE t ADD COLUMN f INT",
            "INSERT INTO t (id, c2, f) VALUES (4, 'n', 9)",
            "CREATE TABLE n (id INT PRIMARY KEY, c NCHAR VARCHAR(10))",
            "INSERT INTO n VALUES (1, 'n1')",
            "UPDATE t SET c2 = 'm' WHERE id = 1",
            # Values for the rows already there, written without row events: read again.
            "ALTER TABLE t ADD COLUMN h INT AS (id + 100) PERSISTENT, CHECKSUM=1",
            "ALTER TABLE t ADD COLUMN k INT ZEROFILL UNSIGNED NOT NULL DEFAULT 6",
            "UPDATE t SET k = 8 WHERE id = 2",
            database=source_db,
        )

    def row(i: int, a: int | None, b: str | None, e: int | None, c2: str | None = None, f: int | None = None) -> dict:
        return {"id": i, "a": a, "b": b, "e": e, "c2": c2, "f": f, "h": i + 100, "k": 8 if i == 2 else 6}

    stream_until_equal(
        pipelines,
        sluice_env(mariadb, postgresql, mariadb_target),
        ddl,
        lambda: {
            "t": {
                1: row(1, 1, "x", 7, "m"),
                2: row(2, 2, "y", 5),
                3: row(3, 3, "longer than ten characters", None),
                4: row(4, None, "4", None, "n", 9),  # b defaults to LAST_VALUE(a, id)
            },
            "n": {1: {"id": 1, "c": "n1"}},
        },
        target_tables({"t", "n"}, postgres_table(postgresql, source_db), mariadb_table(mariadb_target, source_db)),
    )


SWAP = [
    "CREATE TABLE t_new LIKE t",
    "ALTER TABLE t_new ADD COLUMN w INT",
    "INSERT INTO t_new (id, v, w) SELECT id, v, 7 FROM t",
    "RENAME TABLE t TO t_old, t_new TO t",  # the cut-over of gh-ost and pt-online-schema-change
    "INSERT INTO t VALUES (5000, 1, 2)",
    "UPDATE t SET v = -1 WHERE id < 10",
    # The tools drop the old table, and the next migration swaps again: the name is free.
    "DROP TABLE t_old",
    "CREATE TABLE t_new LIKE t",
    "INSERT INTO t_new SELECT * FROM t",
    "RENAME TABLE t TO t_old, t_new TO t",
    "UPDATE t SET v = -2 WHERE id = 11",
]


def _table_t(postgresql, mariadb_target, source_db: str, lake: Path | None = None) -> dict:
    """Table t as each sink holds it (the parquet changelog's too, given its lake)."""
    targets = {
        "postgres": lambda: {"t": postgres_table(postgresql, source_db)("t")},
        "mariadb": lambda: {"t": mariadb_table(mariadb_target, source_db)("t")},
    }
    if lake is not None:
        targets["parquet"] = lambda: {"t": parquet_table(lake, source_db)("t")}
    return targets


@pytest.mark.parametrize("behavior", ["evolve", "lenient", "ignore"])
def test_a_table_swapped_by_one_rename_statement_goes_on_with_the_new_table(
    tmp_path, mariadb, mariadb_target, postgresql, source_db, behavior
):
    """RENAME TABLE t TO t_old, t_new TO t: t leaves the capture and the new t joins it, in
    one pause; the target's t is the new t from the cut-over on (under ignore, projected
    onto the columns the target kept), and every row after it arrives."""
    mariadb.execute(
        "CREATE TABLE t (id INT PRIMARY KEY, v INT)",
        "INSERT INTO t VALUES " + ", ".join(f"({i}, {i})" for i in range(1000)),
        database=source_db,
    )
    lake = tmp_path / "lake"
    first_id = 7400 + 10 * ["evolve", "lenient", "ignore"].index(behavior)
    sinks = every_sink(postgresql, mariadb_target, lake, first_id)
    options = {"schema.change.behavior": behavior}
    pipelines = pipeline_per_sink(tmp_path, mariadb, f"{source_db}.t", sinks, f"swap-{behavior}", options)
    kept = ("id", "v") if behavior == "ignore" else ("id", "v", "w")

    def source() -> dict:
        rows = compare.source_rows(mariadb, source_db, "t")
        return {"t": {r[0]: dict(zip(kept, r, strict=False)) for r in rows}}

    stream_until_equal(
        pipelines,
        sluice_env(mariadb, postgresql, mariadb_target),
        lambda: mariadb.execute(*SWAP, database=source_db),
        source,
        _table_t(postgresql, mariadb_target, source_db, lake),
    )


def test_a_swapped_table_keyed_by_a_unique_key_joins_with_its_key(
    tmp_path, mariadb, mariadb_target, postgresql, source_db
):
    """A table without a primary key but with a UNIQUE NOT NULL key is keyed by it in the
    target, also when it joins the capture by a swap: its changes after the cut-over are
    upserts by that key."""
    mariadb.execute(
        "CREATE TABLE t (id INT NOT NULL, v INT, UNIQUE KEY (id))",
        "INSERT INTO t VALUES " + ", ".join(f"({i}, {i})" for i in range(300)),
        database=source_db,
    )
    sinks = every_sink(postgresql, mariadb_target, tmp_path / "lake", 7470)
    sinks.pop("parquet")
    options = {"schema.change.behavior": "evolve"}
    pipelines = pipeline_per_sink(tmp_path, mariadb, f"{source_db}.t", sinks, "swap-unique", options)

    def source() -> dict:
        return {
            "t": {
                r[0]: dict(zip(("id", "v", "w"), r, strict=True)) for r in compare.source_rows(mariadb, source_db, "t")
            }
        }

    stream_until_equal(
        pipelines,
        sluice_env(mariadb, postgresql, mariadb_target),
        lambda: mariadb.execute(*SWAP, database=source_db),
        source,
        _table_t(postgresql, mariadb_target, source_db),
    )
    assert compare.postgres_primary_key(postgresql, source_db, "t") == ["id"]


@pytest.mark.parametrize("behavior", ["evolve", "lenient"])
def test_a_chain_of_renames_in_one_statement_and_an_alter_rename_keep_every_row(
    tmp_path, mariadb, mariadb_target, postgresql, source_db, behavior
):
    """`RENAME TABLE a1 TO a2, a2 TO a3` moves a1 twice, clause by clause; ALTER TABLE ...
    RENAME moves it again. The rows written under each name arrive under the last one."""
    mariadb.execute(
        "CREATE TABLE a1 (id INT PRIMARY KEY, v INT)",
        "INSERT INTO a1 VALUES " + ", ".join(f"({i}, {i})" for i in range(100)),
        database=source_db,
    )
    sinks = every_sink(postgresql, mariadb_target, tmp_path / "lake", 7440 + 10 * ["evolve", "lenient"].index(behavior))
    sinks.pop("parquet")
    options = {"schema.change.behavior": behavior}
    pipelines = pipeline_per_sink(tmp_path, mariadb, f"{source_db}.a\\d", sinks, f"chain-{behavior}", options)

    def renames() -> None:
        mariadb.execute(
            "UPDATE a1 SET v = -1 WHERE id = 1",
            "RENAME TABLE a1 TO a2, a2 TO a3",
            "INSERT INTO a3 VALUES (100, 100)",
            "ALTER TABLE a3 RENAME TO a4",
            "DELETE FROM a4 WHERE id = 2",
            "UPDATE a4 SET id = 1000 WHERE id = 3",
            database=source_db,
        )

    def source() -> dict:
        return {"a4": {r[0]: {"id": r[0], "v": r[1]} for r in compare.source_rows(mariadb, source_db, "a4")}}

    stream_until_equal(
        pipelines,
        sluice_env(mariadb, postgresql, mariadb_target),
        renames,
        source,
        {
            "postgres": lambda: {"a4": postgres_table(postgresql, source_db)("a4")},
            "mariadb": lambda: {"a4": mariadb_table(mariadb_target, source_db)("a4")},
        },
    )


REPLACED = [
    "DROP TABLE t",  # dropped and created again under its name
    "CREATE TABLE t (id INT PRIMARY KEY, v INT, z VARCHAR(5))",
    "INSERT INTO t VALUES (1, 10, 'a'), (2, 20, 'b')",
    "TRUNCATE TABLE t",
    "INSERT INTO t VALUES (3, 30, 'c')",
    "CREATE TABLE t_copy LIKE t",  # a copy made under another name, then given the name
    "INSERT INTO t_copy SELECT * FROM t",
    "INSERT INTO t_copy VALUES (4, 40, 'd')",
    "DROP TABLE t",
    "RENAME TABLE t_copy TO t",
    "UPDATE t SET z = 'e' WHERE id = 3",
]


@pytest.mark.parametrize("behavior", ["evolve", "try_evolve", "lenient", "ignore"])
def test_a_table_dropped_truncated_and_replaced_under_its_name_keeps_streaming(
    tmp_path, mariadb, mariadb_target, postgresql, source_db, behavior
):
    """DROP then CREATE of a captured name, TRUNCATE, and a copy renamed onto the name.
    Under lenient, which leaves the DROP and the TRUNCATE alone, the CREATE met the table
    the target kept and stopped the pipeline (a column it lacked): it gets the columns it
    lacks. Under evolve (and try_evolve) the target's t ends as the source's; under lenient
    the rows the DROP and the TRUNCATE took stay beside them; under ignore too, in the
    columns the target kept."""
    mariadb.execute(
        "CREATE TABLE t (id INT PRIMARY KEY, v INT)",
        "INSERT INTO t VALUES " + ", ".join(f"({i}, {i})" for i in range(100, 110)),
        database=source_db,
    )
    first_id = 7600 + 10 * ["evolve", "try_evolve", "lenient", "ignore"].index(behavior)
    sinks = every_sink(postgresql, mariadb_target, tmp_path / "lake", first_id)
    sinks.pop("parquet")
    options = {"schema.change.behavior": behavior}
    pipelines = pipeline_per_sink(tmp_path, mariadb, f"{source_db}.t", sinks, f"replaced-{behavior}", options)
    kept = ("id", "v") if behavior == "ignore" else ("id", "v", "z")

    def expected() -> dict:
        rows = {r[0]: {"id": r[0], "v": r[1], "z": r[2]} for r in compare.source_rows(mariadb, source_db, "t")}
        if behavior in ("lenient", "ignore"):  # the rows the DROP and the TRUNCATE took stay
            rows |= {i: {"id": i, "v": i, "z": None} for i in range(100, 110)}
            rows |= {1: {"id": 1, "v": 10, "z": "a"}, 2: {"id": 2, "v": 20, "z": "b"}}
        return {"t": {key: {c: row[c] for c in kept} for key, row in rows.items()}}

    stream_until_equal(
        pipelines,
        sluice_env(mariadb, postgresql, mariadb_target),
        lambda: mariadb.execute(*REPLACED, database=source_db),
        expected,
        _table_t(postgresql, mariadb_target, source_db),
    )
