"""A source transaction far larger than a batch streams through in pieces: each piece is
committed with a resume point inside the transaction, and a pipeline SIGKILLed between two
pieces resumes after the last committed row, neither losing nor repeating one."""

from __future__ import annotations

import os
import time

from sluice.sink.parquet import read_changelog
from sluice.source.offset import BinlogOffset
from tests.harness import compare
from tests.harness.pipelines import (
    kill_pipeline,
    pipeline_per_sink,
    postgres_sink,
    read_state,
    sluice_env,
    start_sluice,
    stream_until_equal,
    wait_until_in_binlog_phase,
)
from tests.harness.workload import create_table

ROWS = int(os.environ.get("SLUICE_BIG_TRANSACTION_ROWS", "30000"))


def _inside_a_transaction(state: dict) -> bool:
    return bool(state.get("binlog") and BinlogOffset.from_json(state["binlog"]["offset"]).transaction)


def test_a_huge_transaction_resumes_inside_itself_after_sigkill(tmp_path, mariadb, postgresql, source_db):
    create_table(mariadb, source_db, "big", ROWS, seed=3)
    lake = tmp_path / "lake"
    sinks = {
        "postgres": ({**postgres_sink(postgresql), "sink.batch-size": 2000}, "7020-7021"),
        "parquet": ({"type": "parquet", "path": str(lake)}, "7022-7023"),
    }
    pipelines = pipeline_per_sink(tmp_path, mariadb, f"{source_db}.big", sinks, "big-transaction")
    env = sluice_env(mariadb, postgresql)
    processes = {name: start_sluice(path, state, env) for name, (path, state) in pipelines.items()}
    deadline = time.monotonic() + 240
    for name, (_, state) in pipelines.items():
        wait_until_in_binlog_phase(processes[name], state, deadline)

    mariadb.execute(  # one transaction: every row updated, a tenth deleted, new rows
        "BEGIN",
        "UPDATE big SET qty = qty + 1, name = CONCAT('u-', name)",
        "DELETE FROM big WHERE id % 100 = 0",
        f"INSERT INTO big (id, name, qty) SELECT id + {ROWS * 100}, 'copy', 1 FROM big WHERE id % 30 = 0",
        "COMMIT",
        database=source_db,
    )
    # Every pipeline is watched at once, each killed as soon as its state is inside the
    # transaction: watched one after the other, a fast one was past it before its turn came.
    watched = dict(pipelines)
    while watched:
        for name, (_, state) in list(watched.items()):
            if _inside_a_transaction(read_state(state)):
                kill_pipeline(processes[name])
                del watched[name]
            else:
                assert processes[name].poll() is None, processes[name].communicate()[1]
        assert time.monotonic() < deadline, f"{', '.join(watched)} never committed inside the transaction"
        time.sleep(0.002)

    stream_until_equal(
        pipelines,
        env,
        lambda: None,
        lambda: compare.source_rows(mariadb, source_db, "big"),
        {
            "postgres": lambda: compare.postgres_rows(postgresql, source_db, "big"),
            "parquet": lambda: compare.replay_changelog(read_changelog(lake, f"{source_db}.big"), key="id"),
        },
    )
