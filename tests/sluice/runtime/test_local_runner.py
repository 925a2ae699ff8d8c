"""`sluice run` end to end: real MariaDB, real PostgreSQL, PySpark in local mode."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path

from tests.harness import compare
from tests.harness.pipelines import (
    kill_pipeline,
    mysql_sink,
    pipeline_per_sink,
    pipeline_yaml,
    postgres_sink,
    read_state,
    run_sluice,
    sluice_env,
    start_sluice,
    stream_until_equal,
    wait_until_target_is,
    write_pipeline,
)
from tests.harness.workload import RandomWorkload, create_table

ROWS = 20_000
CHUNK = 1_000


def _finished_splits(state_dir: Path) -> dict:
    return read_state(state_dir).get("snapshot", {}).get("finished", {})


def _events_pipeline(tmp_path, mariadb, postgresql, source_db, name, server_ids, parallelism=2, **options):
    """A pipeline of table `events` into PostgreSQL in chunks of CHUNK rows: its YAML, state
    directory and environment."""
    definition = pipeline_yaml(
        mariadb,
        f"{source_db}.events",
        postgres_sink(postgresql),
        name=name,
        parallelism=parallelism,
        **{"scan.incremental.snapshot.chunk.size": CHUNK, "server-id": server_ids, **options},
    )
    return write_pipeline(tmp_path / f"{name}.yaml", definition), tmp_path / "state", sluice_env(mariadb, postgresql)


def test_snapshot_under_concurrent_writes_equals_the_source(tmp_path, mariadb, mariadb_target, postgresql, source_db):
    tables = ["orders", "customers"]
    for table in tables:
        create_table(mariadb, source_db, table, ROWS, seed=len(table))
    env = sluice_env(mariadb, postgresql, mariadb_target)
    workload = RandomWorkload(mariadb, source_db, tables, seed=7, max_key=ROWS * 10)

    sinks = {"pg": (postgres_sink(postgresql), "6400-6409"), "mysql": (mysql_sink(mariadb_target), "6410-6419")}
    runs = pipeline_per_sink(
        tmp_path, mariadb, f"{source_db}.\\.*", sinks, "concurrent", **{"scan.incremental.snapshot.chunk.size": CHUNK}
    )

    # Writes from before the plan until the pipelines stream: chunks are read while rows change.
    workload.start(operations=1_000_000, rate=500)

    def every_table(rows: Callable[[str], list[tuple]]) -> Callable[[], list[tuple]]:
        return lambda: [(table, *row) for table in tables for row in rows(table)]

    def stop_writing() -> None:
        time.sleep(0.5)
        workload.join()

    try:
        stream_until_equal(
            runs,
            env,
            stop_writing,
            every_table(lambda t: compare.source_rows(mariadb, source_db, t)),
            {
                "pg": every_table(lambda t: compare.postgres_rows(postgresql, source_db, t)),
                "mysql": every_table(lambda t: compare.source_rows(mariadb_target, source_db, t)),
            },
        )
    finally:
        workload.join()
    state = read_state(runs["pg"][1])
    assert "snapshot_summary" in state and "snapshot" not in state, "all tables reached pure binlog phase"
    assert workload.operations >= 250


def test_rerun_after_sigkill_skips_finished_splits(tmp_path, mariadb, postgresql, source_db):
    create_table(mariadb, source_db, "events", 200_000, seed=3)  # commits of 50 splits: the kill lands between
    pipeline, state_dir, env = _events_pipeline(
        tmp_path, mariadb, postgresql, source_db, "killed", "6420-6429", **{"scan.startup.mode": "snapshot"}
    )

    process = start_sluice(pipeline, state_dir, env)
    deadline = time.monotonic() + 180
    while len(_finished_splits(state_dir)) < 5 and time.monotonic() < deadline:
        time.sleep(0.02)
    kill_pipeline(process)  # mid-snapshot
    before_kill = _finished_splits(state_dir)
    total = len(read_state(state_dir)["snapshot"]["splits"])
    assert 5 <= len(before_kill) < total, "killed mid-snapshot"

    # Changes after the kill reach the target through the bounded binlog read.
    RandomWorkload(mariadb, source_db, ["events"], seed=11, max_key=2_000_000).run(operations=300)
    rerun = run_sluice(pipeline, state_dir, env)
    assert rerun.returncode == 0, rerun.stderr

    resumed = int(rerun.stderr.split("snapshot: resuming, ")[1].split(" of ")[0])
    assert resumed >= len(before_kill)
    assert f"({total - resumed} read by this run)" in rerun.stderr
    expected = compare.source_rows(mariadb, source_db, "events")
    actual = compare.postgres_rows(postgresql, source_db, "events")
    assert actual == expected, compare.diff(expected, actual)


def test_sigterm_mid_snapshot_commits_what_is_in_flight_and_exits_0(tmp_path, mariadb, postgresql, source_db):
    # One reader, three Spark jobs of splits (75, 65 and 10): the signal comes while the
    # first commits, so at most the second can still start.
    create_table(mariadb, source_db, "events", 150_000, seed=5)
    pipeline, state_dir, env = _events_pipeline(
        tmp_path,
        mariadb,
        postgresql,
        source_db,
        "stopped",
        "6970-6979",
        parallelism=1,
        **{"scan.snapshot.read-on-driver": False},
    )

    process = start_sluice(pipeline, state_dir, env)
    deadline = time.monotonic() + 180
    while not _finished_splits(state_dir) and time.monotonic() < deadline:
        time.sleep(0.02)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    total = len(read_state(state_dir)["snapshot"]["splits"])
    finished = len(_finished_splits(state_dir))
    assert 0 < finished < total, "stopped mid-snapshot"
    assert f"snapshot: stopped; the next run resumes with the {total - finished} splits left" in err

    rerun = start_sluice(pipeline, state_dir, env)  # streams after the snapshot: stop it once equal
    expected = compare.source_rows(mariadb, source_db, "events")
    wait_until_target_is(rerun, expected, lambda: compare.postgres_rows(postgresql, source_db, "events"), deadline)
    rerun.send_signal(signal.SIGTERM)
    _, err = rerun.communicate(timeout=120)
    assert rerun.returncode == 0, err
    assert f"snapshot: resuming, {finished} of {total} splits already finished" in err
