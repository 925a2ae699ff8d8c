"""A DDL on a captured table while the pipeline streams: everything before it is committed
first (the flush), then the schema change behaviour decides. `exception` stops there, and
a rerun stops there again: nothing before the DDL is lost, nothing after it is written."""

from __future__ import annotations

import json
import time

from tests.harness import compare
from tests.harness.pipelines import (
    exit_message,
    pipeline_yaml,
    postgres_sink,
    read_state,
    run_sluice,
    sluice_env,
    start_sluice,
    wait_until_in_binlog_phase,
    write_pipeline,
)


def _last_line(stderr: str) -> str:
    return exit_message(stderr)


def test_exception_stops_at_the_ddl_after_committing_all_before_it(tmp_path, mariadb, postgresql, source_db):
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))", database=source_db)
    definition = pipeline_yaml(mariadb, f"{source_db}.t", postgres_sink(postgresql), **{"server-id": "7030-7031"})
    definition["pipeline"]["schema.change.behavior"] = "exception"
    pipeline, state = write_pipeline(tmp_path / "p.yaml", definition), tmp_path / "state"
    env = sluice_env(mariadb, postgresql)
    process = start_sluice(pipeline, state, env)
    wait_until_in_binlog_phase(process, state, time.monotonic() + 120)

    mariadb.execute(
        "INSERT INTO t VALUES (1, 'a')",
        "UPDATE t SET v = 'b' WHERE id = 1",
        "ALTER TABLE t ADD COLUMN c0 INT",
        "INSERT INTO t VALUES (2, 'c', 7)",
        database=source_db,
    )
    _, err = process.communicate(timeout=120)

    assert process.returncode == 1, err
    change = read_state(state)["schema_change"]
    assert change["step"] == "Failed" and change["tables"] == [f"{source_db}.t"]
    assert _last_line(err) == (
        f"sluice: error: schema change {change['id']} (ALTER TABLE t ADD COLUMN c0 INT): pipeline.schema.change."
        "behavior is exception; the pipeline stopped before it, with all before it committed"
    )
    assert "Traceback" not in err
    assert compare.postgres_rows(postgresql, source_db, "t") == [(1, "b")]
    with postgresql.connect() as conn:
        (position,) = conn.execute(
            "SELECT position FROM sluice_meta.offsets WHERE pipeline = %s AND split_id = 'binlog'",
            (definition["pipeline"]["name"],),
        ).fetchone()
    file, pos = change["id"].rsplit(":", 1)
    committed = json.loads(position)
    assert (committed["file"], committed["pos"]) <= (file, int(pos)), "nothing at or after the DDL is committed"

    rerun = run_sluice(pipeline, state, env, timeout=120)
    assert rerun.returncode == 1 and _last_line(rerun.stderr) == _last_line(err)
    assert compare.postgres_rows(postgresql, source_db, "t") == [(1, "b")]
