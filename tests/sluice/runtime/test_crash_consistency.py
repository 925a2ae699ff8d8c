"""The core correctness test: random writes while pipelines snapshot, switch to the binlog
and stream, each pipeline SIGKILLed again and again and restarted; at the end every
target equals the source row for row. Once every pipeline streams, the writes include
schema changes (ADD, RENAME, DROP, MODIFY COLUMN) on random tables, applied by evolve.
Some rows hold what legacy estates do (zero and partial dates, NUL characters): MariaDB
keeps them as they are, PostgreSQL, the changelog and the lakehouse tables (Iceberg and
Delta Lake, read back by their own libraries) as the value rules say. The source
compresses its binlog (log_bin_compress), as large estates run it.

CI runs it with a fixed seed and a small size. `make soak` runs it bigger with a random
seed: SLUICE_SOAK_SEED, SLUICE_SOAK_ROWS and SLUICE_SOAK_KILLS override the defaults.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator

import pytest
import yaml

from sluice.sink.parquet import read_changelog
from sluice.source.connection import current_offset
from sluice.source.schema import read_table_schema
from tests.harness import compare
from tests.harness.kills import run_with_kills, stop_caught_up
from tests.harness.lakehouse import assert_no_change_committed_twice, delta_sink, iceberg_sink, lakehouse_rows
from tests.harness.mysql84.front import mysql84_front
from tests.harness.mysql84.statements import Mysql84Settings
from tests.harness.pipelines import (
    every_sink,
    pipeline_per_sink,
    read_state,
    sluice_env,
)
from tests.harness.services import start_mariadb
from tests.harness.workload import RandomWorkload, create_table

SEED = int(os.environ.get("SLUICE_SOAK_SEED", "20261121"))
ROWS = int(os.environ.get("SLUICE_SOAK_ROWS", "3000"))
KILLS = int(os.environ.get("SLUICE_SOAK_KILLS", "5"))
# Table -> how `id` identifies its rows (see workload.KEYS).
TABLES = {"orders": "primary", "customers": "primary", "shipments": "primary", "items": "unique", "events": "bag"}
BAGS = [table for table, key in TABLES.items() if key == "bag"]
DDL_TABLES = [table for table in TABLES if table not in BAGS]
CHUNK = max(ROWS // 8, 100)
WRITES_PER_SECOND = 150
STATE_LOSSES = 0.4  # how often a kill also deletes the state directory


@pytest.fixture
def compressing(mariadb) -> Iterator[None]:
    """Every event of 10 bytes or more compressed, for the length of the test."""
    with mariadb.global_setting("log_bin_compress", "ON"), mariadb.global_setting("log_bin_compress_min_len", 10):
        yield


def test_targets_equal_the_source_after_repeated_sigkills(
    tmp_path, mariadb, mariadb_target, postgresql, source_db, compressing
):
    for i, (table, key) in enumerate(TABLES.items()):
        create_table(mariadb, source_db, table, ROWS, seed=SEED + i, key=key, legacy=True)
    env = sluice_env(mariadb, postgresql, mariadb_target)
    lake = tmp_path / "lake"
    sinks = every_sink(postgresql, mariadb_target, lake, 6500, ids_each=10)
    source_options = {
        "scan.incremental.snapshot.chunk.size": CHUNK,
        "scan.incremental.snapshot.chunk.key-column": ";".join(f"{source_db}.{t}:id" for t in BAGS),
    }
    evolve = {"schema.change.behavior": "evolve"}
    pipelines = pipeline_per_sink(
        tmp_path, mariadb, f"{source_db}.({'|'.join(TABLES)})", sinks, "crash", evolve, **source_options
    )
    # A lakehouse table is upserted by key: the bag is left out of those pipelines.
    # Their maintenance runs every few seconds, so kills fall in compactions and expiries too.
    maintained = {
        "sink.maintenance.interval": "2s",
        "sink.maintenance.retention": "0s",
        "sink.maintenance.min-small-files": 3,
        "sink.maintenance.delete-ratio": 0.05,
    }
    lakehouses = {
        "iceberg": {**iceberg_sink(tmp_path / "iceberg"), **maintained},
        "delta": {**delta_sink(tmp_path / "delta"), **maintained},
    }
    keyed = f"{source_db}.({'|'.join(t for t in TABLES if t not in BAGS)})"
    lakehouse_sinks = {
        name: (sink, f"{6530 + 10 * i}-{6539 + 10 * i}") for i, (name, sink) in enumerate(lakehouses.items())
    }
    pipelines |= pipeline_per_sink(tmp_path, mariadb, keyed, lakehouse_sinks, "crash", evolve, **source_options)

    # The PostgreSQL pipeline's driver reads splits while Spark starts; the MariaDB one leaves
    # every split to Spark's executors (the parquet sink writes with Spark anyway).
    mariadb_pipeline = pipelines["mariadb"][0]
    definition = yaml.safe_load(mariadb_pipeline.read_text())
    definition["source"]["scan.snapshot.read-on-driver"] = False
    mariadb_pipeline.write_text(yaml.safe_dump(definition, sort_keys=False))
    workload = RandomWorkload(
        mariadb, source_db, list(TABLES), seed=SEED, max_key=ROWS * 10, bags=BAGS, ddl_tables=DDL_TABLES, legacy=True
    )
    workload.start(operations=10**9, rate=WRITES_PER_SECOND)
    # The snapshot reads with the schema it planned with: schema changes wait for the binlog.
    threading.Thread(target=_allow_schema_changes, args=(pipelines, workload), daemon=True).start()
    final = _run_each_with_kills(pipelines, env, KILLS)
    workload.join()
    print(f"seed {SEED}: {workload.operations} random operations on {len(TABLES)} tables of {ROWS} rows")
    print(f"{len(workload.schema_changes)} schema changes: {workload.schema_changes}")
    assert workload.schema_changes, "no schema change ran while the pipelines streamed"

    conn = mariadb.connect()
    end = current_offset(conn)
    for name, (process, phases) in final.items():
        stop_caught_up(name, pipelines[name][1], process, phases, end)

    for table in TABLES:
        expected = compare.source_rows(mariadb, source_db, table)  # zero dates and NULs as they are
        in_mysql = compare.source_rows(mariadb_target, source_db, table)
        assert in_mysql == expected, f"mariadb {table}: " + compare.diff(expected, in_mysql)
        in_postgres = compare.postgres_rows(postgresql, source_db, table)
        stored = compare.as_stored(expected, nul_removed=True)
        assert in_postgres == stored, f"postgresql {table}: " + compare.diff(stored, in_postgres)
        changelog = read_changelog(lake, f"{source_db}.{table}")
        replayed = compare.replay_changelog(changelog, key=None if table in BAGS else "id")
        stored = compare.as_stored(expected, nul_removed=False)
        assert replayed == stored, f"parquet {table}: " + compare.diff(stored, replayed)
        if table in BAGS:
            continue
        schema = read_table_schema(conn, source_db, table, None)
        for name, sink in lakehouses.items():  # read back by the format's own library
            held = compare.as_stored(lakehouse_rows(sink, schema) or [], nul_removed=False)
            assert held == stored, f"{name} {table}: " + compare.diff(stored, held)
            assert_no_change_committed_twice(pipelines[name][0], env, schema.table_id)
    conn.close()


def _run_each_with_kills(pipelines: dict, env: dict, kills: int) -> dict:
    """Every pipeline started and SIGKILLed `kills` times at once, each in a thread of its
    own, then left running: their processes and phases by name."""
    final: dict = {}
    threads = [
        threading.Thread(target=run_with_kills, args=(name, path, state, env, SEED + i, final, kills, STATE_LOSSES))
        for i, (name, (path, state)) in enumerate(pipelines.items())
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    failed = {name: result for name, result in final.items() if isinstance(result, BaseException)}
    assert not failed, f"pipelines failed between kills: {failed}"
    time.sleep(2)  # some streaming after the last restart
    return final


def _allow_schema_changes(pipelines: dict, workload: RandomWorkload) -> None:
    while not all("binlog" in read_state(state) for _, state in pipelines.values()):
        time.sleep(0.1)
    workload.allow_schema_changes.set()


PARTIAL_TABLES = {"orders": "primary", "customers": "primary", "items": "unique"}


def test_keyed_targets_equal_the_source_when_sessions_write_partial_images(
    tmp_path, mariadb, mariadb_target, postgresql, source_db
):
    """Every operation's session picks binlog_row_image FULL, MINIMAL or NOBLOB, while the
    pipelines into PostgreSQL and a MySQL target snapshot, stream, and are SIGKILLed: the
    columns the binlog left out are read from the source by key. (No DDL here: a column
    renamed or dropped before its left-out value was read stops the pipeline, by design.)"""
    rows = max(ROWS // 2, 500)
    for i, (table, key) in enumerate(PARTIAL_TABLES.items()):
        create_table(mariadb, source_db, table, rows, seed=SEED + i, key=key)
    env = sluice_env(mariadb, postgresql, mariadb_target)
    sinks = every_sink(postgresql, mariadb_target, tmp_path / "lake", 6600, ids_each=10)
    del sinks["parquet"]  # a changelog needs the whole before image: it stops (test_partial_row_images)
    options = {"scan.incremental.snapshot.chunk.size": max(rows // 8, 100)}
    pipelines = pipeline_per_sink(
        tmp_path, mariadb, f"{source_db}.({'|'.join(PARTIAL_TABLES)})", sinks, source_db, **options
    )
    workload = RandomWorkload(
        mariadb, source_db, list(PARTIAL_TABLES), seed=SEED, max_key=rows * 10, row_images=["FULL", "MINIMAL", "NOBLOB"]
    )
    workload.start(operations=10**9, rate=WRITES_PER_SECOND)
    final = _run_each_with_kills(pipelines, env, KILLS - 1)
    workload.join()
    conn = mariadb.connect()
    end = current_offset(conn)
    conn.close()
    for name, (process, phases) in final.items():
        stop_caught_up(name, pipelines[name][1], process, phases, end)
    _assert_sql_targets_equal(mariadb, mariadb_target, postgresql, source_db, PARTIAL_TABLES)


def test_targets_equal_a_mysql_8_4_source_after_repeated_sigkills(tmp_path, services_dir, mariadb_target, postgresql):
    """The same, from the MySQL 8.4 stand-in (tests/harness/mysql84): its binlog in MySQL's
    format, its positions and GTID sets, tagged transactions among the untagged (a MariaDB
    of its own, whose GTID domain 7 stands for the tag `etl`), its authentication; a
    restart resumes by GTID set where no table is switching from snapshot to binlog any
    more, by position before. A smaller run: two targets, fewer tables."""
    tables = {"orders": "primary", "items": "unique", "events": "bag"}
    bags = [t for t, key in tables.items() if key == "bag"]
    mariadb = start_mariadb(services_dir / "crash84", server_id=12)
    settings = Mysql84Settings(tags={0: "", 7: "etl"}, variables={"binlog_row_metadata": "FULL"})
    db = "crash84"
    try:
        mariadb.execute(f"CREATE DATABASE {db}")
        for i, (table, key) in enumerate(tables.items()):
            create_table(mariadb, db, table, ROWS, seed=SEED + i, key=key, legacy=True)
        with mysql84_front(mariadb, settings) as front:
            source = front.server()
            sinks = every_sink(postgresql, mariadb_target, tmp_path / "lake", 6600, ids_each=10)
            del sinks["parquet"]
            pipelines = pipeline_per_sink(
                tmp_path,
                source,
                f"{db}.({'|'.join(tables)})",
                sinks,
                "crash84",
                {"schema.change.behavior": "evolve"},
                **{
                    "scan.incremental.snapshot.chunk.size": CHUNK,
                    "scan.incremental.snapshot.chunk.key-column": ";".join(f"{db}.{t}:id" for t in bags),
                },
            )
            workload = RandomWorkload(
                mariadb,
                db,
                list(tables),
                seed=SEED,
                max_key=ROWS * 10,
                bags=bags,
                ddl_tables=[t for t in tables if t not in bags],
                legacy=True,
                gtid_domains=[0, 7],
            )
            workload.start(operations=10**9, rate=WRITES_PER_SECOND)
            threading.Thread(target=_allow_schema_changes, args=(pipelines, workload), daemon=True).start()
            final = _run_each_with_kills(pipelines, sluice_env(source, postgresql, mariadb_target), KILLS)
            workload.join()
            assert workload.schema_changes, "no schema change ran while the pipelines streamed"
            with source.connect() as conn:
                end = current_offset(conn)
            assert f"{settings.server_uuid}:1-" in end.gtid and ":etl:1-" in end.gtid, end.gtid
            for name, (process, phases) in final.items():
                stop_caught_up(name, pipelines[name][1], process, phases, end)
        assert front.dumps, "the pipelines read no binlog from the stand-in"
        _assert_sql_targets_equal(mariadb, mariadb_target, postgresql, db, tables)
    finally:
        mariadb.stop()


def _assert_sql_targets_equal(mariadb, mariadb_target, postgresql, source_db: str, tables) -> None:  # noqa: ANN001
    """The MariaDB and PostgreSQL targets hold each table's rows as the source does."""
    for table in tables:
        expected = compare.source_rows(mariadb, source_db, table)
        in_mysql = compare.source_rows(mariadb_target, source_db, table)
        assert in_mysql == expected, f"mariadb {table}: " + compare.diff(expected, in_mysql)
        in_postgres = compare.postgres_rows(postgresql, source_db, table)
        stored = compare.as_stored(expected, nul_removed=True)
        assert in_postgres == stored, f"postgresql {table}: " + compare.diff(stored, in_postgres)
