"""Each scan.startup.mode against a real MariaDB and PostgreSQL: where reading starts
decides exactly which changes reach the target."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from sluice.source.connection import current_offset, executed_gtids
from tests.harness import compare
from tests.harness.pipelines import (
    pipeline_yaml,
    postgres_sink,
    sluice_env,
    start_sluice,
    wait_until_in_binlog_phase,
    write_pipeline,
)


def _insert(mariadb, db: str, ids: range) -> None:
    mariadb.execute(*(f"INSERT INTO t VALUES ({i}, 'row {i}')" for i in ids), database=db)


def _offset(mariadb):
    conn = mariadb.connect()
    try:
        return current_offset(conn)
    finally:
        conn.close()


def _stream(tmp_path: Path, mariadb, postgresql, db: str, server_ids: str, options: dict, then_insert: range):
    """Runs the pipeline until it streams, inserts `then_insert`, waits for them, stops it."""
    definition = pipeline_yaml(
        mariadb,
        f"{db}.t",
        postgres_sink(postgresql),
        name=f"start-{server_ids.split('-')[0]}",
        **options,
        **{"server-id": server_ids},
    )
    pipeline = write_pipeline(tmp_path / "p.yaml", definition)
    state = tmp_path / "state"
    process = start_sluice(pipeline, state, sluice_env(mariadb, postgresql))
    deadline = time.monotonic() + 120
    wait_until_in_binlog_phase(process, state, deadline)
    _insert(mariadb, db, then_insert)
    last = then_insert[-1]
    while not compare.postgres_rows(postgresql, db, "t") or compare.postgres_rows(postgresql, db, "t")[-1][0] < last:
        assert process.poll() is None, process.stderr.read()
        assert time.monotonic() < deadline, "the inserts did not arrive"
        time.sleep(0.1)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    return [row[0] for row in compare.postgres_rows(postgresql, db, "t")]


@pytest.fixture
def table(mariadb, source_db):
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))", database=source_db)
    return source_db


def test_latest_offset_reads_only_changes_after_the_start(tmp_path, mariadb, postgresql, table):
    _insert(mariadb, table, range(1, 4))
    ids = _stream(
        tmp_path,
        mariadb,
        postgresql,
        table,
        "6600-6601",
        {"scan.startup.mode": "latest-offset"},
        then_insert=range(10, 13),
    )
    assert ids == [10, 11, 12]


def test_earliest_offset_reads_the_whole_binlog(tmp_path, mariadb, postgresql, table):
    _insert(mariadb, table, range(1, 4))
    mariadb.execute("DELETE FROM t WHERE id = 2", database=table)
    ids = _stream(
        tmp_path,
        mariadb,
        postgresql,
        table,
        "6602-6603",
        {"scan.startup.mode": "earliest-offset"},
        then_insert=range(10, 12),
    )
    assert ids == [1, 3, 10, 11]


def test_specific_offset_by_file_and_position(tmp_path, mariadb, postgresql, table):
    _insert(mariadb, table, range(1, 4))
    start = _offset(mariadb)
    _insert(mariadb, table, range(4, 6))
    options = {
        "scan.startup.mode": "specific-offset",
        "scan.startup.specific-offset.file": start.file,
        "scan.startup.specific-offset.pos": start.pos,
    }
    ids = _stream(tmp_path, mariadb, postgresql, table, "6604-6605", options, then_insert=range(10, 11))
    assert ids == [4, 5, 10]


def test_specific_offset_by_gtid_set(tmp_path, mariadb, postgresql, table):
    _insert(mariadb, table, range(1, 4))
    conn = mariadb.connect()
    gtid = executed_gtids(conn, current_offset(conn)).gtid
    conn.close()
    assert gtid, "MariaDB reports the GTID position of a binlog position"
    _insert(mariadb, table, range(4, 6))
    options = {"scan.startup.mode": "specific-offset", "scan.startup.specific-offset.gtid-set": gtid}
    ids = _stream(tmp_path, mariadb, postgresql, table, "6606-6607", options, then_insert=range(10, 11))
    assert ids == [4, 5, 10]


def test_timestamp_skips_transactions_before_the_time(tmp_path, mariadb, postgresql, table):
    _insert(mariadb, table, range(1, 4))
    time.sleep(1.2)  # binlog event times have whole seconds
    millis = int(time.time() * 1000)
    _insert(mariadb, table, range(4, 6))
    options = {"scan.startup.mode": "timestamp", "scan.startup.timestamp-millis": millis}
    ids = _stream(tmp_path, mariadb, postgresql, table, "6608-6609", options, then_insert=range(10, 11))
    assert ids == [4, 5, 10]
