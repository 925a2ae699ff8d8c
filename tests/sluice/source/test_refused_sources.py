"""A source Sluice cannot read correctly is refused before anything is read, with a message
that names the setting or position to fix, and the CLI exits non-zero."""

from __future__ import annotations

import json
import signal
import time

import pytest

from sluice.errors import SourceError
from sluice.source.checks import binlog_settings_problem, check_binlog_settings
from tests.harness import compare
from tests.harness.pipelines import (
    pipeline_yaml,
    postgres_sink,
    run_sluice,
    sluice_env,
    start_sluice,
    wait_until_in_binlog_phase,
    write_pipeline,
)
from tests.harness.services import start_mariadb


@pytest.mark.parametrize(
    ("name", "value"),
    [("binlog_format", "STATEMENT"), ("binlog_row_image", "MINIMAL"), ("binlog_row_metadata", "MINIMAL")],
)
def test_binlog_settings_other_than_required_are_refused(mariadb, name, value):
    with mariadb.global_setting(name, value):
        conn = mariadb.connect()
        with pytest.raises(SourceError, match=f"{name}={value}; Sluice needs {name}="):
            check_binlog_settings(conn)
        conn.close()


def test_the_cli_refuses_a_wrongly_configured_source_with_one_line(tmp_path, mariadb, postgresql, source_db):
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY)", database=source_db)
    pipeline = write_pipeline(tmp_path / "p.yaml", pipeline_yaml(mariadb, f"{source_db}.t", postgres_sink(postgresql)))
    with mariadb.global_setting("binlog_row_image", "MINIMAL"):
        result = run_sluice(pipeline, tmp_path / "state", sluice_env(mariadb, postgresql))
    assert result.returncode == 1
    assert "binlog_row_image=MINIMAL; Sluice needs binlog_row_image=FULL" in result.stderr.strip().splitlines()[-1]


def test_a_purged_start_position_fails_naming_it_and_the_oldest_binlog(tmp_path, mariadb, postgresql, source_db):
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY)", database=source_db)
    options = {
        "scan.startup.mode": "specific-offset",
        "scan.startup.specific-offset.file": "mysql-bin.000000",
        "scan.startup.specific-offset.pos": 1234,
    }
    pipeline = write_pipeline(
        tmp_path / "p.yaml", pipeline_yaml(mariadb, f"{source_db}.t", postgres_sink(postgresql), **options)
    )
    result = run_sluice(pipeline, tmp_path / "state", sluice_env(mariadb, postgresql))
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert "binlog position mysql-bin.000000:1234 is no longer on the source" in last
    assert "the oldest binlog the server has is mysql-bin.000001:4" in last


def test_an_unreachable_source_is_retried_with_backoff_then_fails_clearly(tmp_path, mariadb, postgresql, source_db):
    definition = pipeline_yaml(
        mariadb, f"{source_db}.t", postgres_sink(postgresql), **{"connect.max-retries": 2, "connect.timeout": "1s"}
    )
    definition["source"]["port"] = 9  # discard: nothing listens
    pipeline = write_pipeline(tmp_path / "p.yaml", definition)
    result = run_sluice(pipeline, tmp_path / "state", sluice_env(mariadb, postgresql))
    assert result.returncode == 1
    assert result.stderr.count("retrying in") == 2, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert "source 127.0.0.1:9 unreachable after 3 attempts" in last
    assert "check source.hostname and source.port" in last


def test_partial_json_updates_are_refused():
    """MySQL only (this machine has MariaDB): the settings as SHOW GLOBAL VARIABLES gives them."""
    mysql = {"log_bin": "ON", "binlog_format": "ROW", "binlog_row_image": "FULL", "binlog_row_metadata": "FULL"}

    assert binlog_settings_problem({**mysql, "binlog_row_value_options": ""}) is None
    assert binlog_settings_problem({**mysql, "binlog_row_value_options": "PARTIAL_JSON"}) == (
        "source server has binlog_row_value_options=PARTIAL_JSON; Sluice needs it without PARTIAL_JSON "
        "(SET GLOBAL binlog_row_value_options='')"
    )


def _purge_all_but_the_current_binlog(server) -> None:
    """MariaDB keeps a binlog until InnoDB no longer needs it for crash recovery: retry."""
    conn = server.connect()
    with conn.cursor() as cur:
        cur.execute("SHOW MASTER STATUS")
        (current, *_) = cur.fetchone()
        deadline = time.monotonic() + 30
        while True:
            cur.execute(f"PURGE BINARY LOGS TO '{current}'")
            cur.execute("SHOW BINARY LOGS")
            if [row[0] for row in cur.fetchall()] == [current]:
                break
            assert time.monotonic() < deadline, "MariaDB kept the older binlogs"
            time.sleep(0.2)
    conn.close()


def test_a_purged_gtid_position_fails_naming_it(tmp_path, services_dir, postgresql):
    """A streaming pipeline resumes after its GTID set; if the server purged the binlog
    after that set, the run fails naming the set, rather than silently starting from now."""
    server = start_mariadb(services_dir / "purging", server_id=31)
    try:
        server.execute("CREATE DATABASE purging", "CREATE TABLE purging.t (id INT PRIMARY KEY)")
        definition = pipeline_yaml(server, "purging.t", postgres_sink(postgresql), name="purging")
        definition["source"]["server-id"] = "6960-6961"
        pipeline = write_pipeline(tmp_path / "p.yaml", definition)
        state = tmp_path / "state"
        process = start_sluice(pipeline, state, sluice_env(server, postgresql))
        deadline = time.monotonic() + 120
        wait_until_in_binlog_phase(process, state, deadline)
        server.execute("INSERT INTO purging.t VALUES (0)")  # streaming once it arrives
        while compare.postgres_rows(postgresql, "purging", "t") != [(0,)]:
            assert process.poll() is None and time.monotonic() < deadline, process.communicate()[1]
            time.sleep(0.1)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
        committed = json.loads((state / "state.json").read_text())["binlog"]["offset"]["gtid"]

        server.execute("INSERT INTO purging.t VALUES (1)", "FLUSH BINARY LOGS")
        _purge_all_but_the_current_binlog(server)
        result = run_sluice(pipeline, state, sluice_env(server, postgresql), timeout=120)

        assert result.returncode == 1
        last = result.stderr.strip().splitlines()[-1]
        assert f"the source cannot serve the binlog after GTID set {committed}" in last
        assert "restart the pipeline from a fresh snapshot" in last
    finally:
        server.stop()
