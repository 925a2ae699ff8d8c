"""Progress a user reads on stderr: binlog position, rows and lag."""

from __future__ import annotations

import re
import signal
import time

from sluice.source.connection import current_offset
from sluice.source.offset import BinlogOffset
from tests.harness import compare
from tests.harness.pipelines import (
    pipeline_yaml,
    postgres_sink,
    read_state,
    sluice_env,
    start_sluice,
    wait_until_in_binlog_phase,
    write_pipeline,
)


def test_lag_is_zero_once_caught_up_however_long_the_source_is_quiet(tmp_path, mariadb, postgresql, source_db):
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY)", database=source_db)
    definition = pipeline_yaml(mariadb, f"{source_db}.t", postgres_sink(postgresql), **{"server-id": "7010-7011"})
    state = tmp_path / "state"
    process = start_sluice(write_pipeline(tmp_path / "p.yaml", definition), state, sluice_env(mariadb, postgresql))
    deadline = time.monotonic() + 120
    wait_until_in_binlog_phase(process, state, deadline)
    mariadb.execute("INSERT INTO t VALUES (1)", database=source_db)
    while compare.postgres_rows(postgresql, source_db, "t") != [(1,)]:
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.1)
    time.sleep(5)  # quiet: the reader only sees heartbeats
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)

    assert process.returncode == 0, err
    lags = [float(lag) for lag in re.findall(r"^binlog: .* lag ([\d.]+)s$", err, re.M)]
    assert lags, err
    assert lags[-1] < 1.0, err


def test_the_position_reaches_the_end_when_the_source_goes_quiet_after_a_statement_that_changes_nothing(
    tmp_path, mariadb, postgresql, source_db
):
    """A DDL of a table the pipeline does not capture is a transaction of its own: once it
    is read, the server's heartbeats carry the position on, and the batch committed before
    it is recorded, however long the source stays quiet after it."""
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY)", "CREATE TABLE other (id INT)", database=source_db)
    definition = pipeline_yaml(mariadb, f"{source_db}.t", postgres_sink(postgresql), **{"server-id": "7012-7013"})
    state = tmp_path / "state"
    process = start_sluice(write_pipeline(tmp_path / "p.yaml", definition), state, sluice_env(mariadb, postgresql))
    deadline = time.monotonic() + 120
    wait_until_in_binlog_phase(process, state, deadline)
    mariadb.execute("INSERT INTO t VALUES (1)", "ALTER TABLE other ADD COLUMN v INT", database=source_db)
    conn = mariadb.connect()
    end = current_offset(conn)
    conn.close()
    recorded = lambda: BinlogOffset.from_json(read_state(state)["binlog"]["offset"])  # noqa: E731
    while recorded().is_before(end):
        assert process.poll() is None, process.communicate()[1]
        assert time.monotonic() < deadline, f"the state stayed at {recorded()}, the source's end is {end}"
        time.sleep(0.1)
    assert compare.postgres_rows(postgresql, source_db, "t") == [(1,)]
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
