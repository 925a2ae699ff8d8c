"""A crash at any step of a schema change resumes at that step: the change reaches the
target exactly once, and no row before or after it is lost or written twice.

The pipeline SIGKILLs itself at a failpoint (SLUICE_FAILPOINT) right after the step is
recorded, or right after the target took the change or its offset, then runs again. The
DDL adds a column and renames another in one statement: applying it twice would fail
(a duplicate column, a missing one), so a run that ends equal to the source applied it once.
The same statement in a form Sluice's parser cannot read (ZEROFILL after UNSIGNED) takes
the table-map path, and its DEFAULT fills the rows already there without row events: the
table is read again after it, also when the crash comes in the middle of that.
"""

from __future__ import annotations

import time

import pytest

from tests.harness import compare
from tests.harness.pipelines import (
    kill_pipeline,
    mysql_sink,
    pipeline_per_sink,
    postgres_sink,
    read_state,
    sluice_env,
    start_sluice,
    wait_until_in_binlog_phase,
)

FAILPOINTS = [
    "schema-change:Flushed",
    "schema-change:Applying",
    "schema-change:applied-to-target",
    "schema-change:Applied",
    "schema-change:target-resumed",
    "schema-change:Resumed",
]


STATEMENTS = {
    "read": "ALTER TABLE t ADD COLUMN c0 INT, RENAME COLUMN v TO w",
    "table map": "ALTER TABLE t ADD COLUMN c0 INT ZEROFILL UNSIGNED DEFAULT 5, RENAME COLUMN v TO w",
}


@pytest.mark.parametrize("statement", STATEMENTS)
@pytest.mark.parametrize("failpoint", FAILPOINTS)
def test_a_crash_at_each_step_applies_the_change_once(
    failpoint, statement, tmp_path, mariadb, mariadb_target, postgresql, source_db
):
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))", database=source_db)
    ids = (7200, 7700)[list(STATEMENTS).index(statement)] + 10 * FAILPOINTS.index(failpoint)
    sinks = {
        "postgres": (postgres_sink(postgresql), f"{ids}-{ids + 1}"),
        "mariadb": (mysql_sink(mariadb_target), f"{ids + 2}-{ids + 3}"),
    }
    pipelines = pipeline_per_sink(
        tmp_path,
        mariadb,
        f"{source_db}.t",
        sinks,
        f"crash-{ids}",
        pipeline_options={"parallelism": 1, "schema.change.behavior": "evolve"},
        **{"scan.startup.mode": "latest-offset"},
    )
    env = sluice_env(mariadb, postgresql, mariadb_target)
    crashing = {
        name: start_sluice(path, state, {**env, "SLUICE_FAILPOINT": failpoint})
        for name, (path, state) in pipelines.items()
    }
    try:
        deadline = time.monotonic() + 120
        for name, (_, state) in pipelines.items():
            wait_until_in_binlog_phase(crashing[name], state, deadline)
        mariadb.execute(
            "INSERT INTO t VALUES (1, 'a'), (2, 'b')",
            "UPDATE t SET v = 'c' WHERE id = 2",
            STATEMENTS[statement],
            "INSERT INTO t VALUES (3, 'd', 30)",
            "UPDATE t SET c0 = 10 WHERE id = 1",
            database=source_db,
        )
        for name, process in crashing.items():
            _, err = process.communicate(timeout=60)
            assert process.returncode == -9, f"{name} did not reach {failpoint}: {err}"
    finally:
        for process in crashing.values():
            if process.poll() is None:
                kill_pipeline(process)

    reruns = {name: start_sluice(path, state, env) for name, (path, state) in pipelines.items()}
    try:
        want = compare.source_rows(mariadb, source_db, "t")
        targets = {
            "postgres": lambda: compare.postgres_rows(postgresql, source_db, "t"),
            "mariadb": lambda: compare.source_rows(mariadb_target, source_db, "t"),
        }
        deadline = time.monotonic() + 120
        for name, rows in targets.items():
            while (actual := rows()) != want:
                assert reruns[name].poll() is None, f"{name}: {reruns[name].communicate()[1]}"
                assert time.monotonic() < deadline, f"{name}: {compare.diff(want, actual)}"
                time.sleep(0.2)
            state = read_state(pipelines[name][1])
            assert "schema_change" not in state and state["phase"] == "Streaming"
            assert [entry["step"] for entry in state["schema_change_history"]] == ["Resumed"]
            assert [c["name"] for c in state["tables"][f"{source_db}.t"]["columns"]] == ["id", "w", "c0"]
    finally:
        for process in reruns.values():
            kill_pipeline(process)
    assert compare.postgres_columns(postgresql, source_db, "t") == ["id", "w", "c0"]
