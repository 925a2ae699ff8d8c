"""A DDL on a table while its snapshot splits are read: no chunk mixes two schemas. The
splits not read before it are deferred, the binlog reader applies the change to the
target, then they are read again with the new columns, and the target equals the source."""

from __future__ import annotations

import signal
import time

from sluice.sink.parquet import read_changelog
from tests.harness import compare
from tests.harness.pipelines import (
    every_sink,
    kill_pipeline,
    pipeline_per_sink,
    read_state,
    sluice_env,
    start_sluice,
)

ROWS = 200_000


def test_splits_read_after_a_ddl_are_read_again_with_the_new_columns(
    tmp_path, mariadb, mariadb_target, postgresql, source_db
):
    mariadb.execute(
        "SET SESSION max_recursive_iterations = 1000000",
        "CREATE TABLE t (id INT PRIMARY KEY, v INT, name VARCHAR(20))",
        f"INSERT INTO t WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < {ROWS}) "
        "SELECT n, n % 97, CONCAT('n', n) FROM s",
        database=source_db,
    )
    lake = tmp_path / "lake"
    sinks = every_sink(postgresql, mariadb_target, lake, 7400)
    pipelines = pipeline_per_sink(
        tmp_path,
        mariadb,
        f"{source_db}.t",
        sinks,
        "ddl-snapshot",
        {"parallelism": 1, "schema.change.behavior": "evolve"},
        **{"scan.incremental.snapshot.chunk.size": 1000},
    )
    env = sluice_env(mariadb, postgresql, mariadb_target)
    processes = {name: start_sluice(path, state, env) for name, (path, state) in pipelines.items()}
    try:
        deadline = time.monotonic() + 300
        while not any(read_state(state).get("snapshot", {}).get("finished") for _, state in pipelines.values()):
            for name, process in processes.items():
                assert process.poll() is None, f"{name}: {process.communicate()[1]}"
            assert time.monotonic() < deadline, "no split finished"
            time.sleep(0.05)
        mariadb.execute(
            "ALTER TABLE t ADD COLUMN c0 INT NOT NULL DEFAULT 5 AFTER id, DROP COLUMN v",
            "UPDATE t SET c0 = id WHERE id % 1000 = 0",
            "INSERT INTO t (id, c0, name) VALUES (0, 0, 'zero'), (300000, 3, 'last')",
            "DELETE FROM t WHERE id % 999 = 0",
            database=source_db,
        )
        want = compare.source_rows(mariadb, source_db, "t")
        targets = {
            "postgres": lambda: compare.postgres_rows(postgresql, source_db, "t", '"id", "c0", "name"'),
            "mariadb": lambda: compare.source_rows(mariadb_target, source_db, "t"),
            "parquet": lambda: compare.replay_changelog(read_changelog(lake, f"{source_db}.t"), key="id"),
        }
        for name, rows in targets.items():
            while (actual := _or_error(rows)) != want:
                assert processes[name].poll() is None, f"{name}: {processes[name].communicate()[1]}"
                assert time.monotonic() < deadline, (
                    f"{name}: {actual if isinstance(actual, Exception) else compare.diff(want, actual)}"
                )
                time.sleep(0.5)
        errors = {}
        for name, process in processes.items():
            process.send_signal(signal.SIGTERM)
            _, errors[name] = process.communicate(timeout=60)
            assert process.returncode == 0, f"{name}: {errors[name]}"
    finally:
        for process in processes.values():
            if process.poll() is None:
                kill_pipeline(process)
    deferred = [name for name, err in errors.items() if "changed while it was read" in err]
    assert deferred, "the DDL landed after every snapshot: nothing was deferred (" + repr(errors) + ")"
    for name in deferred:
        assert f"deferred splits of {source_db}.t again" in errors[name]


def _or_error(rows):
    """The target's rows, or why they cannot be read yet (the new column not there yet)."""
    try:
        return rows()
    except Exception as exc:  # noqa: BLE001 - shown if it lasts
        return exc
