"""A streaming pipeline rides through a restart of its source: the binlog reader reconnects
by itself, with backoff, and the target ends equal to the source, with the changes written
before, while the server was shutting down, and after it came back."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pymysql
import pytest

from tests.harness import compare
from tests.harness.pipelines import (
    kill_pipeline,
    pipeline_yaml,
    postgres_sink,
    sluice_env,
    start_sluice,
    wait_until_in_binlog_phase,
    wait_until_target_is,
    write_pipeline,
)
from tests.harness.services import MariaDB, start_mariadb

pytestmark = pytest.mark.slow
DOWN_SECONDS = 30


@pytest.fixture
def source(services_dir: Path) -> Iterator[MariaDB]:
    server = start_mariadb(services_dir / "restarted-source", server_id=31)
    yield server
    server.stop()


def write_until_refused(server: MariaDB, first: int, stop: threading.Event) -> None:
    """Single-row transactions, as an application keeps writing while its database restarts."""
    key = first
    while not stop.is_set():
        try:
            server.execute(
                f"INSERT INTO app.orders VALUES ({key}, 'during', 1)",
                f"UPDATE app.orders SET total = total + 1 WHERE id = {key - first + 1}",
            )
        except pymysql.err.Error:
            return  # the server is going down
        key += 1


def test_the_pipeline_stays_up_through_a_source_restart_and_loses_nothing(source, postgresql, tmp_path):
    source.execute(
        "CREATE DATABASE app",
        "CREATE TABLE app.orders (id INT PRIMARY KEY, note VARCHAR(20), total INT)",
        "INSERT INTO app.orders WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 2000) "
        "SELECT n, 'seed', 0 FROM s",
    )
    pipeline = write_pipeline(
        tmp_path / "pipeline.yaml", pipeline_yaml(source, "app.orders", postgres_sink(postgresql), parallelism=1)
    )
    process = start_sluice(pipeline, tmp_path / "state", sluice_env(source, postgresql))
    try:
        wait_until_in_binlog_phase(process, tmp_path / "state", time.monotonic() + 180)
        source.execute("UPDATE app.orders SET note = 'before' WHERE id % 3 = 0", "DELETE FROM app.orders WHERE id < 50")
        stop = threading.Event()
        writer = threading.Thread(target=write_until_refused, args=(source, 100_000, stop))
        writer.start()
        time.sleep(0.5)
        source.stop()  # a restart's start, with writes still arriving
        stop.set()
        writer.join()
        time.sleep(DOWN_SECONDS)
        assert process.poll() is None, process.communicate()[1]
        source.start_again()
        source.execute(
            "INSERT INTO app.orders VALUES (200000, 'after', 7)",
            "UPDATE app.orders SET id = id + 300000 WHERE id BETWEEN 50 AND 60",  # primary-key changes
            "DELETE FROM app.orders WHERE id % 7 = 0",
        )
        expected = compare.source_rows(source, "app", "orders")
        rows = lambda: compare.postgres_rows(postgresql, "app", "orders")  # noqa: E731
        wait_until_target_is(process, expected, rows, time.monotonic() + 120)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
        assert process.returncode == 0, err
        assert "reconnecting in" in err and "reconnected to the source after" in err, err
    finally:
        if process.poll() is None:
            kill_pipeline(process)
