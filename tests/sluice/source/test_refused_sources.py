"""A source Sluice cannot read correctly is refused before anything is read, with a message
that names the setting or position to fix, and the CLI exits non-zero."""

from __future__ import annotations

import json
import signal
import time

import pymysql
import pytest

from sluice.errors import SourceError
from sluice.source.checks import (
    binlog_settings_problem,
    check_binlog_settings,
    check_privileges,
    missing_privileges,
)
from sluice.source.server_flavour import ServerFlavour
from tests.harness import compare
from tests.harness.pipelines import (
    exit_message,
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


def test_a_purged_gtid_position_fails_naming_it(tmp_path, services_dir, postgresql):
    """A streaming pipeline resumes after its GTID set; if the server purged the binlog
    after that set and the pipeline has no snapshot to read again (it started from the
    latest position), the run fails naming the set, rather than silently starting from now."""
    server = start_mariadb(services_dir / "purging", server_id=31)
    try:
        server.execute("CREATE DATABASE purging", "CREATE TABLE purging.t (id INT PRIMARY KEY)")
        definition = pipeline_yaml(server, "purging.t", postgres_sink(postgresql), name="purging")
        definition["source"].update({"server-id": "6960-6961", "scan.startup.mode": "latest-offset"})
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

        server.execute("INSERT INTO purging.t VALUES (1)")
        server.purge_binlogs()
        result = run_sluice(pipeline, state, sluice_env(server, postgresql), timeout=120)

        assert result.returncode == 1
        last = result.stderr.strip().splitlines()[-1]
        assert f"the source cannot serve the binlog after GTID set {committed}" in last
        assert "restart the pipeline from a fresh snapshot" in last
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("server", "grants", "missing"),
    [
        (
            "10.11.19-MariaDB-0+deb12u1-log",
            ["GRANT SELECT ON `d`.* TO `u`@`%`"],
            ["REPLICATION SLAVE", "BINLOG MONITOR"],
        ),
        ("10.4.32-MariaDB", ["GRANT REPLICATION SLAVE ON *.* TO `u`@`%`"], ["REPLICATION CLIENT"]),
        ("5.5.5-10.6.2-MariaDB", [], ["REPLICATION SLAVE", "BINLOG MONITOR"]),
        ("8.0.36", ["GRANT REPLICATION CLIENT ON *.* TO `u`@`%`"], ["REPLICATION SLAVE"]),
        ("8.0.36", ["GRANT SELECT, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO `u`@`%`"], []),
        ("10.11.19-MariaDB", ["GRANT ALL PRIVILEGES ON *.* TO `u`@`%`"], []),
        # MariaDB lists the default role's privileges among the user's grants.
        ("10.11.19-MariaDB", ["GRANT `r` TO `u`@`%`", "GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO `r`"], []),
    ],
)
def test_the_privileges_binlog_reading_needs_depend_on_the_server(server, grants, missing):
    assert missing_privileges(grants, ServerFlavour.parse(server).binlog_privileges) == missing


def _user(mariadb, name: str, *grants: str) -> None:
    mariadb.execute(
        f"CREATE USER '{name}'@'%' IDENTIFIED BY 'pw-{name}'", *(g.format(user=f"'{name}'@'%'") for g in grants)
    )


def _run_as(tmp_path, mariadb, postgresql, tables: str, user: str, password: str):
    definition = pipeline_yaml(mariadb, tables, postgres_sink(postgresql), **{"connect.max-retries": 2})
    definition["source"]["username"] = user
    pipeline = write_pipeline(tmp_path / f"{user}.yaml", definition)
    env = {**sluice_env(mariadb, postgresql), "SOURCE_PASSWORD": password}
    return run_sluice(pipeline, tmp_path / f"state-{user}", env, timeout=120)


def _one_clear_line(result) -> str:
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr and "Exception" not in result.stderr, result.stderr
    assert "retrying" not in result.stderr, "a configuration error is not retried"
    assert "snapshot:" not in result.stderr, "refused before Spark starts"
    return exit_message(result.stderr)


def test_a_user_without_replication_privileges_is_told_the_grant_to_run(tmp_path, mariadb, postgresql, source_db):
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY)", database=source_db)
    _user(mariadb, "reader", f"GRANT SELECT ON {source_db}.* TO {{user}}")

    last = _one_clear_line(_run_as(tmp_path, mariadb, postgresql, f"{source_db}.t", "reader", "pw-reader"))

    assert last == (
        "sluice: error: source user 'reader'@'%' lacks REPLICATION SLAVE, BINLOG MONITOR, which reading the binlog "
        "needs; on the source run: GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO 'reader'@'%'"
    )


def test_privileges_through_a_default_role_are_enough(mariadb, source_db):
    mariadb.execute("CREATE ROLE IF NOT EXISTS cdc_role", "GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO cdc_role")
    _user(mariadb, "role_user", "GRANT cdc_role TO {user}", "SET DEFAULT ROLE cdc_role FOR {user}")
    conn = pymysql.connect(host=mariadb.host, port=mariadb.port, user="role_user", password="pw-role_user")
    try:
        check_privileges(conn)
    finally:
        conn.close()


def test_a_table_the_user_cannot_select_is_named_with_its_grant(tmp_path, mariadb, postgresql, source_db):
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY)", database=source_db)
    _user(
        mariadb,
        "writer",
        "GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO {user}",
        f"GRANT INSERT ON {source_db}.t TO {{user}}",
    )

    last = _one_clear_line(_run_as(tmp_path, mariadb, postgresql, f"{source_db}.t", "writer", "pw-writer"))

    assert last == (
        f"sluice: error: source user 'writer'@'%' cannot SELECT from {source_db}.t; on the source run: "
        f"GRANT SELECT ON `{source_db}`.`t` TO 'writer'@'%'"
    )


def test_a_wrong_password_is_said_at_once_not_retried(tmp_path, mariadb, postgresql, source_db):
    last = _one_clear_line(_run_as(tmp_path, mariadb, postgresql, f"{source_db}.t", mariadb.user, "not-the-password"))

    assert last.startswith(f"sluice: error: source {mariadb.host}:{mariadb.port} refused the connection: Access denied")
    assert "; check source.username and source.password (a user created REQUIRE SSL" in last
    assert "not-the-password" not in last
