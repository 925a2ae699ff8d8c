"""A CdcPipeline's first run checks everything `sluice check` does before it reads a row,
in the driver pod (where the pipeline's network, identity and Secrets are), and every error
reaches the CdcPipeline at once as a PreflightFailed condition; a failure a user must fix
is not retried."""

from __future__ import annotations

import time

import pytest

from tests.harness.cluster import Cluster, apply, manifest

pytestmark = pytest.mark.slow


def condition(status: dict, kind: str) -> dict:
    return next((c for c in status.get("conditions", []) if c["type"] == kind), {})


def test_each_preflight_error_is_in_the_conditions_and_nothing_is_read(
    cluster: Cluster, mariadb, postgresql, source_db
):
    mariadb.execute(
        f"CREATE TABLE {source_db}.orders (id INT PRIMARY KEY, placed DATE NOT NULL)",
        "SET SESSION sql_mode = ''",
        f"INSERT INTO {source_db}.orders VALUES (1, '2024-01-01'), (2, '0000-00-00')",
        "CREATE USER 'preflighted'@'%' IDENTIFIED BY 'pw-preflighted'",
        f"GRANT SELECT ON `{source_db}`.* TO 'preflighted'@'%'",
    )
    with postgresql.connect() as conn:  # a leftover the pipeline did not create
        conn.execute(f'CREATE SCHEMA "{source_db}"')
        conn.execute(f'CREATE TABLE "{source_db}".orders (id INT PRIMARY KEY)')
    try:
        cluster.secret("mariadb", "pw-preflighted")
        cluster.secret("postgresql", postgresql.password)
        document = manifest("checked", mariadb, postgresql, f"{source_db}.orders")
        document["spec"]["source"]["username"] = "preflighted"
        document["spec"]["sink"]["sink.zero-date"] = "fail"
        document["spec"]["spark"] = {"restartPolicy": {"onFailureRetries": 1, "onFailureRetryInterval": 1}}
        apply(cluster, document)
        status = cluster.wait("checked", "Failed", lambda s: s.get("phase") == "Failed", timeout=180)
    finally:
        mariadb.execute("DROP USER 'preflighted'@'%'")

    degraded, ready = condition(status, "Degraded"), condition(status, "Ready")
    assert degraded["reason"] == ready["reason"] == "PreflightFailed" and ready["status"] == "False"
    lines = degraded["message"].splitlines()
    assert lines[0] == (
        "error   source.privileges: source user 'preflighted'@'%' lacks REPLICATION SLAVE, BINLOG MONITOR, which "
        "reading the binlog needs; on the source run: GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO "
        "'preflighted'@'%'"
    )
    assert lines[1].startswith(f"error   {source_db}.orders.placed: holds 0000-00-00, a date no calendar has")
    assert "sink.zero-date is 'fail'" in lines[1]
    assert lines[2] == (
        f'error   sink: target table "{source_db}"."orders" lacks the column placed, which the pipeline writes: '
        "add it, or drop the table for the pipeline to create it"
    )
    assert len(lines) == 3, lines
    assert status["driver"]["retriable"] is False and "state" not in status  # nothing was read
    time.sleep(4)  # retry intervals: none comes
    assert "Retry" not in [reason for reason, _ in cluster.events("checked")]
    assert "pw-preflighted" not in str(cluster.cdc_pipeline("checked"))
