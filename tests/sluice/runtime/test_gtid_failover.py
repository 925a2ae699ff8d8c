"""Resuming by GTID: a pipeline stopped on a primary resumes on its promoted replica, whose
binlog has the same transactions at other files and positions, and the targets end equal to
the source with every change exactly once."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sluice.sink.parquet import read_changelog
from tests.harness import compare
from tests.harness.pipelines import pipeline_per_sink, sluice_env, start_sluice, wait_until_in_binlog_phase
from tests.harness.services import MariaDB, replicate, start_mariadb, wait_replicated


@pytest.fixture(scope="module")
def primary_and_replica(services_dir: Path) -> Iterator[tuple[MariaDB, MariaDB]]:
    primary = start_mariadb(services_dir / "gtid-primary", server_id=21)
    replica = start_mariadb(services_dir / "gtid-replica", server_id=22, options=["--log-slave-updates"])
    # Writes of the replica's own, in a domain of their own, move every position in its
    # binlog away from the primary's.
    replica.execute(
        "SET SESSION gtid_domain_id = 9",
        "CREATE DATABASE replica_local",
        "CREATE TABLE replica_local.pad (id INT PRIMARY KEY, x TEXT)",
        "INSERT INTO replica_local.pad VALUES (1, REPEAT('x', 20000)), (2, REPEAT('y', 7777))",
    )
    replicate(replica, primary)
    yield primary, replica
    replica.stop()
    primary.stop()


def _stream_until_equal(pipelines, server: MariaDB, postgresql, lake: Path, db: str, write) -> None:
    """Runs every pipeline against `server`, applies `write` once they stream, waits until the
    targets equal the source, and stops them with SIGTERM."""
    env = sluice_env(server, postgresql)
    processes = {name: start_sluice(yaml, state, env) for name, (yaml, state) in pipelines.items()}
    deadline = time.monotonic() + 180
    for name, (_, state) in pipelines.items():
        wait_until_in_binlog_phase(processes[name], state, deadline)
    write()
    expected = compare.source_rows(server, db, "t")
    while True:
        for name, process in processes.items():
            assert process.poll() is None, f"{name}: {process.communicate()[1]}"
        in_postgres = compare.postgres_rows(postgresql, db, "t")
        in_lake = compare.replay_changelog(read_changelog(lake, f"{db}.t"), key="id") if lake.exists() else []
        if in_postgres == expected and in_lake == expected:
            break
        assert time.monotonic() < deadline, "postgres: " + compare.diff(expected, in_postgres)
        time.sleep(0.2)
    for name, process in processes.items():
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
        assert process.returncode == 0, f"{name}: {err}"


def test_a_pipeline_resumes_on_the_promoted_replica_by_gtid(tmp_path, primary_and_replica, postgresql):
    primary, replica = primary_and_replica
    db = "failover"
    primary.execute(
        f"CREATE DATABASE {db}",
        f"CREATE TABLE {db}.t (id INT PRIMARY KEY, v VARCHAR(20))",
        *(f"INSERT INTO {db}.t VALUES ({i}, 'row {i}')" for i in range(1, 21)),
    )
    lake = tmp_path / "lake"
    sinks = {
        "postgres": (
            {"type": "jdbc", "url": postgresql.url, "username": postgresql.user, "password": "${TARGET_PASSWORD}"},
            "6900-6901",
        ),
        "parquet": ({"type": "parquet", "path": str(lake)}, "6902-6903"),
    }

    def write_on_primary() -> None:
        primary.execute(
            *(f"INSERT INTO {db}.t VALUES ({i}, 'row {i}')" for i in range(21, 31)),
            f"UPDATE {db}.t SET v = 'changed' WHERE id = 3",
            f"DELETE FROM {db}.t WHERE id = 4",
        )

    on_primary = pipeline_per_sink(tmp_path, primary, f"{db}.t", sinks, prefix="failover")
    _stream_until_equal(on_primary, primary, postgresql, lake, db, write_on_primary)

    # While no pipeline runs, the primary takes more writes, the replica catches up, and the
    # primary is gone: the pipelines move to the replica with the state they had.
    primary.execute(
        *(f"INSERT INTO {db}.t VALUES ({i}, 'row {i}')" for i in range(31, 41)),
        f"UPDATE {db}.t SET id = 100 WHERE id = 5",
        f"DELETE FROM {db}.t WHERE id = 6",
    )
    wait_replicated(replica, primary)
    primary.stop()
    replica.execute("STOP SLAVE")  # promoted

    def write_on_replica() -> None:
        replica.execute(
            f"INSERT INTO {db}.t VALUES (41, 'after failover')",
            f"UPDATE {db}.t SET v = 'changed again' WHERE id = 3",
        )

    on_replica = pipeline_per_sink(tmp_path, replica, f"{db}.t", sinks, prefix="failover")  # same names and state
    _stream_until_equal(on_replica, replica, postgresql, lake, db, write_on_replica)
