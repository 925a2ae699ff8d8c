"""Zero and partial dates ('0000-00-00', '2020-00-15', '0000-00-00 00:00:00'), which
MariaDB's default sql_mode accepts and legacy schemas are full of, never stop a pipeline.
A MySQL-dialect target keeps them exactly; PostgreSQL and the parquet changelog, whose
types have no such dates, get NULL where the column is nullable and the epoch where it is
NOT NULL (Debezium's rule), with a warning naming table, column and key once per column."""

from __future__ import annotations

import re
from datetime import date, datetime

import pytest

from sluice.sink.parquet import read_changelog
from tests.harness import compare
from tests.harness.pipelines import (
    every_sink,
    pipeline_per_sink,
    pipeline_yaml,
    postgres_sink,
    run_sluice,
    sluice_env,
    stream_until_equal,
    write_pipeline,
)

pytestmark = pytest.mark.slow

EPOCH_DAY, EPOCH = date(1970, 1, 1), datetime(1970, 1, 1)


def test_zero_dates_are_kept_by_mariadb_and_follow_the_rule_elsewhere(
    tmp_path, mariadb, mariadb_target, postgresql, source_db
):
    mariadb.execute(
        "CREATE TABLE legacy (id INT PRIMARY KEY, d DATE NOT NULL DEFAULT '0000-00-00', "
        "dt DATETIME NOT NULL DEFAULT '0000-00-00 00:00:00', dn DATE NULL, p DATETIME(3) NULL, ts TIMESTAMP NULL)",
        "INSERT INTO legacy VALUES "
        "(1, '0000-00-00', '0000-00-00 00:00:00', '0000-00-00', '2021-03-00 10:00:00.123', '0000-00-00 00:00:00'), "
        "(2, '2020-00-15', '2024-05-06 07:08:09', '0000-01-01', NULL, '2024-05-06 07:08:09'), "
        "(3, '2024-01-02', '2024-01-02 03:04:05', '2024-01-02', '2024-01-02 03:04:05.678', NULL)",
        database=source_db,
    )
    lake = tmp_path / "lake"
    sinks = every_sink(postgresql, mariadb_target, lake, 7180)
    pipelines = pipeline_per_sink(tmp_path, mariadb, f"{source_db}.legacy", sinks, "zero", {"parallelism": 1})

    def binlog_rows() -> None:
        mariadb.execute(
            "INSERT INTO legacy (id) VALUES (4)",  # the NOT NULL defaults: zero dates
            "UPDATE legacy SET d = '0000-00-00', dn = '2019-00-00' WHERE id = 3",
            "UPDATE legacy SET d = '2025-01-01', p = '0000-00-00 00:00:00.000' WHERE id = 1",
            database=source_db,
        )

    ruled = [  # PostgreSQL's and parquet's rows: NOT NULL zero dates are the epoch, nullable ones NULL
        (1, date(2025, 1, 1), EPOCH, None, None, None),
        (2, EPOCH_DAY, datetime(2024, 5, 6, 7, 8, 9), None, None, datetime(2024, 5, 6, 7, 8, 9)),
        (3, EPOCH_DAY, datetime(2024, 1, 2, 3, 4, 5), None, datetime(2024, 1, 2, 3, 4, 5, 678000), None),
        (4, EPOCH_DAY, EPOCH, None, None, None),
    ]

    def parquet_rows() -> list[tuple]:
        replayed = compare.replay_changelog(read_changelog(lake, f"{source_db}.legacy"), key="id")
        return [tuple(v.replace(tzinfo=None) if isinstance(v, datetime) else v for v in row) for row in replayed]

    def exact(target) -> bool:
        return compare.source_rows(target, source_db, "legacy") == compare.source_rows(mariadb, source_db, "legacy")

    said = stream_until_equal(
        pipelines,
        sluice_env(mariadb, postgresql, mariadb_target),
        binlog_rows,
        lambda: ruled,
        {
            "postgres": lambda: compare.postgres_rows(postgresql, source_db, "legacy"),
            # exactly the source's rows, zero dates and all ("ruled" stands for equal here)
            "mariadb": lambda: (
                ruled if exact(mariadb_target) else compare.source_rows(mariadb_target, source_db, "legacy")
            ),
            "parquet": parquet_rows,
        },
    )
    assert compare.source_rows(mariadb_target, source_db, "legacy")[0][1:3] == (date(2025, 1, 1), "0000-00-00 00:00:00")
    warnings = [line for line in said["postgres"].splitlines() if "no such date" in line]
    assert {re.search(r"target_values: (\S+):", w)[1] for w in warnings} == {
        f"{source_db}.legacy.{c}" for c in ("d", "dt", "dn", "p", "ts")
    }, said["postgres"]
    assert not any("no such date" in line for line in said["mariadb"].splitlines())


def test_values_changed_on_sparks_executors_are_counted_by_the_driver(tmp_path, mariadb, postgresql, source_db):
    """A snapshot read by Spark's executors (a driver pod with executors) changes values in
    their processes: the driver counts them with its own, for its summary and its metrics."""
    mariadb.execute(
        "CREATE TABLE legacy (id INT PRIMARY KEY, d DATE NOT NULL, note VARCHAR(10))",
        "INSERT INTO legacy VALUES (1, '0000-00-00', 'a'), (2, '2024-01-01', CONCAT('b', CHAR(0))), "
        "(3, '2020-00-15', 'c')",
        database=source_db,
    )
    definition = pipeline_yaml(
        mariadb,
        f"{source_db}.legacy",
        postgres_sink(postgresql),
        parallelism=1,
        **{"server-id": "7190-7191", "scan.startup.mode": "snapshot", "scan.snapshot.read-on-driver": False},
    )
    pipeline = write_pipeline(tmp_path / "p.yaml", definition)
    result = run_sluice(pipeline, tmp_path / "state", sluice_env(mariadb, postgresql))

    assert result.returncode == 0, result.stderr
    assert "Spark is up: executors read the 1 splits left" in result.stderr, result.stderr
    summary = "values changed to fit the target (the warnings say how): "
    assert f"{summary}{source_db}.legacy.d 2, {source_db}.legacy.note 1" in result.stderr, result.stderr
    assert compare.postgres_rows(postgresql, source_db, "legacy") == [
        (1, EPOCH_DAY, "a"),
        (2, date(2024, 1, 1), "b"),
        (3, EPOCH_DAY, "c"),
    ]
