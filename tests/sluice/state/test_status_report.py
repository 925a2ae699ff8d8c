"""`sluice status`: where a pipeline is, from its state directory alone, while it runs,
once it was killed, and after it failed; the same as text for people and JSON for tools."""

from __future__ import annotations

import json
import os
import subprocess
import time

from sluice.state.state_store import DirectoryStateStore
from tests.harness.pipelines import (
    SLUICE,
    exit_message,
    kill_pipeline,
    pipeline_yaml,
    postgres_sink,
    read_state,
    run_sluice,
    sluice_env,
    start_sluice,
    wait_until_in_binlog_phase,
    write_pipeline,
)


def sluice_status(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*SLUICE, "status", *args], capture_output=True, text=True, timeout=60)


def wait_for(condition, what: str, process: subprocess.Popen) -> None:  # noqa: ANN001
    deadline = time.monotonic() + 120
    while not condition():
        assert process.poll() is None, process.communicate()[1]
        assert time.monotonic() < deadline, f"waited for {what}"
        time.sleep(0.2)


def test_status_shows_phase_position_lag_tables_a_waiting_change_and_then_the_kill(
    tmp_path, mariadb, postgresql, source_db
):
    mariadb.execute(
        "CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(10))",
        "CREATE TABLE b (id INT PRIMARY KEY)",
        "INSERT INTO a WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 250) "
        "SELECT n, 'x' FROM s",
        "INSERT INTO b VALUES (1), (2), (3)",
        database=source_db,
    )
    definition = pipeline_yaml(
        mariadb,
        f"{source_db}.a,{source_db}.b",
        postgres_sink(postgresql),
        **{"server-id": "7320-7321", "scan.incremental.snapshot.chunk.size": 100},
    )
    definition["pipeline"]["schema.change.behavior"] = "manual"
    state = tmp_path / "state"
    process = start_sluice(write_pipeline(tmp_path / "p.yaml", definition), state, sluice_env(mariadb, postgresql))
    try:
        wait_until_in_binlog_phase(process, state, time.monotonic() + 120)
        mariadb.execute("INSERT INTO a VALUES (1000, 'y')", "ALTER TABLE a DROP COLUMN v", database=source_db)
        waiting = lambda: (read_state(state).get("schema_change") or {}).get("step") == "AwaitingApproval"  # noqa: E731
        wait_for(waiting, "the change to wait for approval", process)
        lag_recorded = lambda: "lag_seconds" in DirectoryStateStore(state).run_record()  # noqa: E731
        wait_for(lag_recorded, "the lag at the last commit", process)

        shown = sluice_status("--state-dir", str(state))
        assert shown.returncode == 0, shown.stderr
        lines = shown.stdout.splitlines()
        change = read_state(state)["schema_change"]
        name = definition["pipeline"]["name"]
        assert lines[0].startswith(f"pipeline {name}: SchemaChangePaused, running (pid {process.pid}, since 20")
        assert lines[1] == "snapshot: 4/4 splits, 253 rows"
        assert lines[2:4] == [f"  {source_db}.a: 3/3 splits, 250 rows", f"  {source_db}.b: 1/1 splits, 3 rows"]
        assert lines[4].startswith("position: mysql-bin.") and lines[5].startswith("lag: ")
        assert lines[6] == f"schema change {change['id']}: AwaitingApproval: ALTER TABLE a DROP COLUMN v"
        assert f"add '{change['id']}' to schema-change.approved" in lines[7]

        document = json.loads(sluice_status("--state-dir", str(state), "--json").stdout)
        assert document["run"]["running"] is True and document["phase"] == "SchemaChangePaused"
        assert document["snapshot"]["tables"][f"{source_db}.a"] == {"splitsDone": 3, "splitsTotal": 3, "rows": 250}
        assert document["binlog"]["lagSeconds"] >= 0 and document["schemaChange"]["id"] == change["id"]
    finally:
        kill_pipeline(process)
    killed = sluice_status("--state-dir", str(state)).stdout.splitlines()[0]
    assert killed.endswith("not running (its process ended without stopping: killed?)"), killed


def test_status_shows_the_last_runs_error_and_refuses_a_directory_without_state(
    tmp_path, mariadb, postgresql, source_db
):
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY)", database=source_db)
    definition = pipeline_yaml(mariadb, f"{source_db}.t", postgres_sink(postgresql), **{"server-id": "7322-7323"})
    path, state = write_pipeline(tmp_path / "p.yaml", definition), tmp_path / "state"
    env = sluice_env(mariadb, postgresql)
    first = start_sluice(path, state, env)
    wait_until_in_binlog_phase(first, state, time.monotonic() + 120)
    kill_pipeline(first)
    failed = run_sluice(path, state, {**env, "TARGET_PASSWORD": "s3cr3t-but-wrong"}, timeout=300)
    assert failed.returncode == 1

    shown = sluice_status(str(path), "--state-dir", str(state))
    assert shown.returncode == 0, shown.stderr
    error = exit_message(failed.stderr).removeprefix("sluice: error: ")
    assert shown.stdout.splitlines()[0].split(": ", 1)[1].startswith("Streaming, stopped ")
    assert shown.stdout.splitlines()[-1].endswith(f"): {error}"), shown.stdout
    assert "s3cr3t" not in shown.stdout  # the password never

    os.makedirs(tmp_path / "empty")
    refused = sluice_status("--state-dir", str(tmp_path / "empty"))
    assert refused.returncode == 1 and f"--state-dir {tmp_path / 'empty'}: no pipeline state there" in refused.stderr
