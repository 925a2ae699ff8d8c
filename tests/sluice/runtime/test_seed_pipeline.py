"""A Flink CDC user brings a pipeline definition over unchanged: the one in the schema
evolution article (../shared/seeds), its ${...} placeholders filled from the environment,
runs into the values sink with `server-time-zone: UTC+8`."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

from tests.harness.pipelines import SLUICE, read_state, wait_until_in_binlog_phase

SEED = Path(__file__).parents[3].parent / "shared" / "seeds" / "flink-cdc-3-schema-evolution.md"


def seed_pipeline_yaml() -> str:
    """The article's pipeline YAML, as printed there."""
    text = SEED.read_text()
    block = re.search(r"### pipeline yaml\n```\n(.*?)```", text, re.S)
    assert block, f"{SEED} no longer has its pipeline yaml"
    return block.group(1)


def test_the_seed_pipeline_runs_unchanged_into_the_values_sink(tmp_path, mariadb, source_db):
    definition = seed_pipeline_yaml()
    assert "server-time-zone: UTC+8" in definition and "type: values" in definition
    mariadb.execute(
        "CREATE TABLE t1 (id INT PRIMARY KEY, name VARCHAR(32), at TIMESTAMP NULL)",
        "INSERT INTO t1 VALUES (12, 'l', '2024-06-01 04:00:00')",
        database=source_db,
    )
    pipeline = tmp_path / "mysql-to-values.yaml"
    pipeline.write_text(definition)
    env = dict(
        os.environ,
        ip=mariadb.host,
        port=str(mariadb.port),
        username=mariadb.user,
        password=mariadb.password,
        database=source_db,
        table="t1",
    )
    process = subprocess.Popen(
        [*SLUICE, "run", str(pipeline), "--state-dir", str(tmp_path / "state")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    wait_until_in_binlog_phase(process, tmp_path / "state", time.monotonic() + 120)
    mariadb.execute(
        "INSERT INTO t1 VALUES (13, 'm', NULL)",
        "ALTER TABLE t1 ADD COLUMN c0 VARCHAR(255)",
        "INSERT INTO t1 VALUES (14, 'n', NULL, 'x')",
        database=source_db,
    )
    deadline = time.monotonic() + 60
    while not read_state(tmp_path / "state").get("schema_change_history") and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(1)
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=60)

    assert process.returncode == 0, err
    lines = out.splitlines()
    assert f"CreateTableEvent{{tableId={source_db}.t1, columns=['id', 'name', 'at'], primaryKeys=['id']}}" in lines
    # A TIMESTAMP is shown as its instant in server-time-zone (04:00 UTC is 12:00 at UTC+8).
    assert f"{source_db}.t1> +I[12, 'l', 2024-06-01T12:00:00+08:00]" in lines
    assert f"{source_db}.t1> +I[13, 'm', None]" in lines
    # The article's ALTER TABLE: the event first, then rows with the new column.
    added = (
        f"AddColumnEvent{{tableId={source_db}.t1, addedColumns=[ColumnWithPosition{{column=`c0` VARCHAR(255), "
        "position=LAST}]}"
    )
    assert lines.index(added) < lines.index(f"{source_db}.t1> +I[14, 'n', None, 'x']")
