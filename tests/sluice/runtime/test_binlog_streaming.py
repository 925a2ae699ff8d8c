"""The binlog phase's batches against a real MariaDB: a batch is committed when it holds
sink.batch-size rows (or is old enough), unless the target is still committing the batch
before it, when it goes on growing while the reader has more, to ten times that size:
behind, the pipeline commits less often, and nothing is lost or doubled either way. Into a
target whose commits are cheap, a batch is committed as soon as the source goes quiet."""

from __future__ import annotations

import threading
import time

import pytest

from sluice.binlog.binlog_split import BinlogSplit
from sluice.binlog.transaction_reader import Transaction
from sluice.runtime.binlog_streaming import BATCH_GROWTH, BinlogRun, BinlogSettings, run_binlog_phase, transaction_lag
from sluice.sink.base import PendingCommit, SinkWriter, StartCommit
from sluice.source.connection import current_offset
from sluice.source.offset import BinlogOffset
from sluice.source.schema import read_table_schema

TRANSACTIONS, ROWS_EACH = 40, 500


class TargetTakingItsTime(SinkWriter):
    """Keeps each batch's rows; each commit is ready `seconds` after it was started."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.batches: list[int] = []
        self.started: list[float] = []  # when each commit was started
        self.keys: list[int] = []

    def write_changes(self, batch, end, drop_split_records) -> None:  # noqa: ANN001
        self._start(batch).wait()

    def prepare_changes(self, batch, end) -> StartCommit:  # noqa: ANN001
        return lambda drop_split_records: self._start(batch)

    def _start(self, batch) -> PendingCommit:  # noqa: ANN001
        self.batches.append(len(batch))
        self.started.append(time.monotonic())
        self.keys += [change.row[0] for change in batch]
        done_at = time.monotonic() + self.seconds
        return PendingCommit(
            wait=lambda: time.sleep(max(0.0, done_at - time.monotonic())), ready=lambda: time.monotonic() >= done_at
        )

    def apply_schema_change(self, change_id, evolution) -> None:  # noqa: ANN001 - no DDL here
        raise AssertionError("no schema change was written")


def batches_into(writer: TargetTakingItsTime, mariadb, source_db: str, server_id: int) -> None:
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))", database=source_db)
    conn = mariadb.connect(source_db)
    start = current_offset(conn)
    with conn.cursor() as cur:
        for i in range(TRANSACTIONS):
            first = i * ROWS_EACH
            cur.execute(f"INSERT INTO t SELECT seq, 'v' FROM seq_{first}_to_{first + ROWS_EACH - 1}")
    end = current_offset(conn)
    schema = read_table_schema(conn, source_db, "t", None)
    conn.close()
    settings = BinlogSettings(server_id=server_id, heartbeat_seconds=1.0, batch_rows=ROWS_EACH, max_batch_delay=5.0)
    run_binlog_phase(
        BinlogRun(
            mariadb.endpoint(),
            settings,
            BinlogSplit(start),
            {schema.table_id: schema},
            writer,
            threading.Event(),
            lambda *_: None,
            lambda *_: None,
            stop_at=end,
        )
    )


def test_a_batch_is_committed_at_its_size_while_the_target_keeps_up(mariadb, source_db):
    writer = TargetTakingItsTime(seconds=0.0)

    batches_into(writer, mariadb, source_db, server_id=6901)

    assert writer.batches == [ROWS_EACH] * TRANSACTIONS
    assert sorted(writer.keys) == list(range(TRANSACTIONS * ROWS_EACH))


def test_batches_grow_while_the_target_is_busy_and_every_row_arrives_once(mariadb, source_db):
    writer = TargetTakingItsTime(seconds=0.3)

    batches_into(writer, mariadb, source_db, server_id=6902)

    assert sorted(writer.keys) == list(range(TRANSACTIONS * ROWS_EACH))
    assert len(writer.batches) < TRANSACTIONS / 2
    assert max(writer.batches) <= BATCH_GROWTH * ROWS_EACH


def first_commit_after_one_insert(mariadb, source_db: str, server_id: int, quiet: bool) -> float:
    """Seconds from a one-row transaction to its batch's commit, the pipeline streaming with
    a max_batch_delay of 3 s into a target that does or does not commit when quiet."""
    table = f"quiet_{int(quiet)}"
    mariadb.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY)", database=source_db)
    with mariadb.connect(source_db) as conn:
        start, schema = current_offset(conn), read_table_schema(conn, source_db, table, None)
    writer, stopping = TargetTakingItsTime(seconds=0.0), threading.Event()
    settings = BinlogSettings(server_id, heartbeat_seconds=1.0, max_batch_delay=3.0, commits_when_quiet=quiet)
    run = BinlogRun(
        mariadb.endpoint(),
        settings,
        BinlogSplit(start),
        {schema.table_id: schema},
        writer,
        stopping,
        *[lambda *_: None] * 2,
    )
    phase = threading.Thread(target=run_binlog_phase, args=(run,))
    phase.start()
    try:
        time.sleep(1.0)  # the reader is following the binlog
        written = time.monotonic()
        mariadb.execute(f"INSERT INTO {table} VALUES (1)", database=source_db)
        while not writer.started and time.monotonic() < written + 10:
            time.sleep(0.01)
    finally:
        stopping.set()
        phase.join()
    assert writer.keys == [1]
    return writer.started[0] - written


def test_a_batch_is_committed_once_the_source_is_quiet_into_a_target_whose_commits_are_cheap(mariadb, source_db):
    assert first_commit_after_one_insert(mariadb, source_db, server_id=6903, quiet=True) < 1.0
    assert first_commit_after_one_insert(mariadb, source_db, server_id=6904, quiet=False) >= 2.9


def test_the_lag_of_a_transaction_read_as_it_was_written_runs_from_its_receipt():
    """The binlog's whole seconds made a live pipeline's lag read 0.8-1.0 s while its rows
    reached the target 0.15 s after their commit."""
    live = Transaction([], BinlogOffset("mysql-bin.000001", 4), timestamp=1_000, received=1_000.85)
    assert transaction_lag(live, now=1_001.0) == pytest.approx(0.15)


def test_the_lag_of_a_transaction_read_late_runs_from_its_timestamp():
    behind = Transaction([], BinlogOffset("mysql-bin.000001", 4), timestamp=1_000, received=1_030.0)
    assert transaction_lag(behind, now=1_030.2) == pytest.approx(30.2)
    assert transaction_lag(behind, now=999.0) == 0.0  # a clock behind the source's: never negative
