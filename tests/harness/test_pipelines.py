"""The pipeline harness: a `sluice run` a test left going dies with the test, so it cannot
write into the next test's databases."""

from __future__ import annotations

import time
from pathlib import Path

from tests.harness.pipelines import (
    kill_leftover_pipelines,
    pipeline_yaml,
    postgres_sink,
    sluice_env,
    start_sluice,
    wait_until_in_binlog_phase,
    write_pipeline,
)


def test_a_run_its_test_left_going_is_killed_with_everything_it_started(tmp_path, mariadb, postgresql, source_db):
    mariadb.execute(f"CREATE TABLE {source_db}.t (id INT PRIMARY KEY)")
    definition = pipeline_yaml(mariadb, f"{source_db}.t", postgres_sink(postgresql), **{"server-id": "6980-6981"})
    pipeline = write_pipeline(tmp_path / "left.yaml", definition)
    process = start_sluice(pipeline, tmp_path / "state", sluice_env(mariadb, postgresql))
    deadline = time.monotonic() + 120
    wait_until_in_binlog_phase(process, tmp_path / "state", deadline)
    # The state says binlog a moment before the binlog reader's process is forked.
    while not (children := Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text().split()):
        assert process.poll() is None and time.monotonic() < deadline, "a streaming run has its binlog reader process"
        time.sleep(0.05)

    assert kill_leftover_pipelines() == [process.pid]

    assert process.poll() is not None
    assert not [pid for pid in children if Path(f"/proc/{pid}").exists()]
    assert kill_leftover_pipelines() == []  # what is dead is not killed again
