"""Progress a user reads on stderr: the snapshot's splits, rows, rate and time left; the
binlog position, rows and lag."""

from __future__ import annotations

import io
import re
import signal
import time

from sluice.event.row_change import RowKind
from sluice.runtime.pipeline_metrics import PipelineMetrics
from sluice.runtime.progress import BinlogProgress, SnapshotProgress
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


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_snapshot_on_a_terminal_is_one_line_redrawn_with_splits_rows_rate_and_time_left():
    out = Terminal()
    metrics = PipelineMetrics("terminal")
    progress = SnapshotProgress(4, 0, 0, metrics, out=out)
    progress.split_finished("db.t", 100)
    progress.split_finished("db.t", 100)
    progress.show(final=True)
    *redrawn, final = out.getvalue().split("\r")[1:]
    assert re.fullmatch(r"snapshot: 1/4 splits, 100 rows, [\d,]+ rows/s, \d+s left", redrawn[0]), redrawn
    assert re.fullmatch(r"snapshot: 2/4 splits, 200 rows, [\d,]+ rows/s, \d+s left", redrawn[1]), redrawn
    assert re.fullmatch(r"snapshot: 2/4 splits, 200 rows, [\d,]+ rows/s, \d+s left \(2 read by this run\)\n", final)
    finished = {"pipeline": "terminal", "table": "db.t"}
    assert metrics.registry.get_sample_value("sluice_snapshot_splits_finished", finished) == 2  # the same, counted


def test_a_snapshot_logged_elsewhere_is_plain_lines_a_few_seconds_apart():
    out = io.StringIO()  # CI logs, kubectl logs
    progress = SnapshotProgress(10, 3, 3000, PipelineMetrics("logged"), out=out)
    for _ in range(4):
        progress.split_finished("db.t", 1000)
    progress.show(final=True)
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue()
    assert re.fullmatch(r"snapshot: 4/10 splits, 4,000 rows, [\d,]+ rows/s, \d+s left", lines[0]), lines
    assert len(lines) == 2 and lines[1].startswith("snapshot: 7/10 splits, 7,000 rows, ")  # the rest within 2 s
    assert lines[1].endswith("(4 read by this run)")


def test_the_binlog_line_counts_row_changes_as_the_metrics_do():
    """An update is one row change, though its before and after images are two changelog rows."""
    out = io.StringIO()
    metrics = PipelineMetrics("changes")
    progress = BinlogProgress(None, metrics, out=out)
    changes = {
        ("db.t", RowKind.INSERT): 3,
        ("db.t", RowKind.UPDATE_BEFORE): 2,
        ("db.t", RowKind.UPDATE_AFTER): 2,
        ("db.t", RowKind.DELETE): 1,
    }
    progress.committed(BinlogOffset("mysql-bin.000001", 400), changes, lag=0.25, seconds=0.01)
    progress.show(final=True)

    assert out.getvalue().splitlines()[-1] == "binlog: stopped at mysql-bin.000001:400, 6 row changes, lag 0.2s"
    counted = sum(
        metrics.registry.get_sample_value(
            "sluice_changes_applied_total", {"pipeline": "changes", "table": "db.t", "kind": k}
        )
        for k in ("insert", "update", "delete")
    )
    assert counted == 6
