"""`sluice check PIPELINE.yaml`: what a run would refuse, and what a careful operator looks
at first, found without starting anything, one line each naming the thing to fix; an exit
code CI can use, and JSON for tools."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.pipelines import SLUICE, pipeline_yaml, postgres_sink, sluice_env, write_pipeline
from tests.harness.services import MariaDB, free_port, replicate, start_mariadb, wait_replicated

REPLICA_ID = 7331


@pytest.fixture
def replica(services_dir: Path, mariadb: MariaDB) -> Iterator[MariaDB]:
    """A replica of the test's source, connected to it with server_id REPLICA_ID."""
    server = start_mariadb(services_dir / "check-replica", server_id=REPLICA_ID)
    replicate(server, mariadb)
    wait_replicated(server, mariadb)
    yield server
    server.execute("STOP SLAVE")
    server.stop()


def sluice_check(pipeline: Path, env: dict[str, str], *options: str) -> subprocess.CompletedProcess:
    return subprocess.run([*SLUICE, "check", str(pipeline), *options], env=env, capture_output=True, text=True)


def findings(stdout: str) -> list[tuple[str, str, str]]:
    """(level, subject, message) of each line."""
    found = []
    for line in stdout.splitlines():
        level, rest = line.split(None, 1)
        subject, message = rest.split(": ", 1)
        found.append((level, subject, message))
    return found


def test_check_finds_each_problem_in_a_line_naming_what_to_fix(tmp_path, mariadb, postgresql, source_db, replica):
    mariadb.execute(
        "CREATE TABLE orders (id INT PRIMARY KEY, note VARCHAR(20))",
        "CREATE TABLE log (msg TEXT)",  # no key, no indexed column
        "SET SESSION sql_mode = ''",
        "CREATE TABLE legacy (id INT PRIMARY KEY, d DATE NOT NULL, seen DATETIME NULL)",
        "INSERT INTO legacy VALUES (1, '2024-01-01', NULL), (2, '0000-00-00', '2020-00-15 10:00:00')",
        database=source_db,
    )
    unreachable = {**postgres_sink(postgresql), "url": f"postgresql://127.0.0.1:{free_port()}/target"}
    definition = pipeline_yaml(
        mariadb, f"{source_db}.orders,{source_db}.log,{source_db}.legacy", unreachable, **{"server-id": "7330-7331"}
    )
    pipeline = write_pipeline(tmp_path / "p.yaml", definition)
    with mariadb.global_setting("binlog_format", "STATEMENT"):
        checked = sluice_check(pipeline, sluice_env(mariadb, postgresql))

    assert checked.returncode == 1, checked.stderr
    assert checked.stderr.strip() == "sluice check: 3 findings to fix"
    found = {(level, subject): message for level, subject, message in findings(checked.stdout)}
    assert found[("error", "source.binlog")].startswith("source server has binlog_format=STATEMENT; Sluice needs ")
    assert f"takes ids the source's connected replicas use: {REPLICA_ID} (" in found[("error", "source.server-id")]
    assert found[("warning", f"{source_db}.log")].startswith("no primary key, no unique NOT NULL key and no indexed")
    assert "scan.incremental.snapshot.chunk.key-column" in found[("warning", f"{source_db}.log")]
    assert found[("warning", f"{source_db}.legacy.d")] == (
        "holds 0000-00-00, a date no calendar has, in its first 100,000 rows: it will be written as 1970-01-01 "
        "(NOT NULL column; sink.zero-date decides)"
    )
    seen = found[("warning", f"{source_db}.legacy.seen")]
    assert seen.endswith("it will be written as NULL (NULL column; sink.zero-date decides)")
    assert "cannot connect" in found[("error", "sink")]
    assert found[("ok", f"{source_db}.orders")].startswith("key (id); about ")
    assert found[("ok", "source.privileges")] == "the user may read the binlog"
    # A zero date the target would refuse is an error, as the run's stop there would be.
    definition["sink"]["sink.zero-date"] = "fail"
    refused = sluice_check(write_pipeline(tmp_path / "p.yaml", definition), sluice_env(mariadb, postgresql))
    assert (
        "sink.zero-date is 'fail'"
        in dict(((lv, s), m) for lv, s, m in findings(refused.stdout))[("error", f"{source_db}.legacy.d")]
    )


def test_missing_privileges_come_with_the_grant_to_run_on_each_side(tmp_path, mariadb, postgresql, source_db):
    mariadb.execute(
        "CREATE TABLE t (id INT PRIMARY KEY)",
        "CREATE USER 'checked'@'%' IDENTIFIED BY 'pw-checked'",
        f"GRANT SELECT ON `{source_db}`.* TO 'checked'@'%'",
        database=source_db,
    )
    with postgresql.connect() as conn:
        conn.execute("CREATE ROLE writer LOGIN PASSWORD 'pw-writer'")  # no CREATE on the database
    definition = pipeline_yaml(mariadb, f"{source_db}.t", postgres_sink(postgresql), **{"server-id": "7332-7333"})
    definition["source"]["username"] = "checked"
    definition["sink"]["username"] = "writer"
    env = {**sluice_env(mariadb, postgresql), "SOURCE_PASSWORD": "pw-checked", "TARGET_PASSWORD": "pw-writer"}
    try:
        checked = sluice_check(write_pipeline(tmp_path / "p.yaml", definition), env)
    finally:
        with postgresql.connect() as conn:
            conn.execute("DROP ROLE writer")
        mariadb.execute("DROP USER 'checked'@'%'")

    assert checked.returncode == 1
    found = {(level, subject): message for level, subject, message in findings(checked.stdout)}
    assert found[("error", "source.privileges")] == (
        "source user 'checked'@'%' lacks REPLICATION SLAVE, BINLOG MONITOR, which reading the binlog needs; on the "
        "source run: GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO 'checked'@'%'"
    )
    assert found[("warning", "source.server-id")].startswith("the source's replicas cannot be listed")
    sink = [message for level, subject, message in findings(checked.stdout) if (level, subject) == ("error", "sink")]
    database = postgresql.database
    assert (
        f'sink user "writer" cannot create schema "{source_db}" in database "{database}"; on the target run: '
        f'GRANT CREATE ON DATABASE "{database}" TO "writer"'
    ) in sink
    assert any('"sluice_meta"' in message for message in sink), sink  # made by earlier tests, or not yet
    assert "pw-" not in checked.stdout + checked.stderr


def test_a_clean_pipeline_checks_out_with_exit_0_and_as_json(tmp_path, mariadb, postgresql, source_db):
    mariadb.execute(
        "CREATE TABLE t (id INT PRIMARY KEY, note VARCHAR(10))",
        "INSERT INTO t VALUES (1, CONCAT('a', CHAR(0), 'b'))",  # a NUL PostgreSQL's text cannot hold
        database=source_db,
    )
    definition = pipeline_yaml(mariadb, f"{source_db}.t", postgres_sink(postgresql), **{"server-id": "7334-7335"})
    pipeline, env = write_pipeline(tmp_path / "p.yaml", definition), sluice_env(mariadb, postgresql)

    checked = sluice_check(pipeline, env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    levels = {(level, subject) for level, subject, _ in findings(checked.stdout)}
    assert levels == {
        ("ok", "source"),
        ("warning", "source.ssl-mode"),  # the test's servers offer no TLS (tests/sluice/source/test_tls.py's do)
        ("ok", "source.binlog"),
        ("ok", "source.privileges"),
        ("ok", "source.server-id"),
        ("ok", "source.binlog-retention"),
        ("ok", f"{source_db}.t"),
        ("warning", f"{source_db}.t.note"),
        ("ok", "sink"),
        ("warning", "sink.ssl-mode"),
    }
    (tls,) = [text for _, subject, text in findings(checked.stdout) if subject == "source.ssl-mode"]
    assert tls.startswith("metadata and binlog, snapshot chunk readers in plaintext (preferred: the server offers no")
    said = [text for _, subject, text in findings(checked.stdout) if subject == "source.binlog"]
    assert any(text.startswith("binlog_checksum=CRC32: every event's checksum is verified") for text in said), said
    assert any("set per session" in text for text in said), said
    assert sluice_check(pipeline, env, "--strict").returncode == 1  # the NUL's warning fails it
    document = json.loads(sluice_check(pipeline, env, "--json").stdout)
    assert {"level": "warning", "subject": f"{source_db}.t.note"} in [
        {k: finding[k] for k in ("level", "subject")} for finding in document
    ]


def test_a_target_table_that_cannot_take_the_rows_is_named_with_what_it_lacks(tmp_path, mariadb, postgresql, source_db):
    """A target table the pipeline did not create (a leftover, one made by hand) is adopted
    as it is: one that lacks a column or the key the rows are written by would fail the
    first write, so the check names it first."""
    mariadb.execute(
        "CREATE TABLE orders (id INT PRIMARY KEY, note VARCHAR(20), amount INT)",
        "CREATE TABLE items (id INT PRIMARY KEY, code INT NOT NULL)",
        "CREATE TABLE fine (id INT PRIMARY KEY, note TEXT)",
        "CREATE TABLE part_a (id INT PRIMARY KEY, note TEXT)",
        database=source_db,
    )
    with postgresql.connect() as conn:
        conn.execute(f'CREATE SCHEMA "{source_db}"')
        conn.execute(f'CREATE TABLE "{source_db}".orders (id INT PRIMARY KEY, note TEXT)')
        conn.execute(f'CREATE TABLE "{source_db}".items (id INT, code INT PRIMARY KEY)')
        conn.execute(f'CREATE TABLE "{source_db}".fine (id INT PRIMARY KEY, note TEXT, extra INT)')
        conn.execute(f'CREATE TABLE "{source_db}".parts (id INT PRIMARY KEY)')
    tables = ",".join(f"{source_db}.{t}" for t in ("orders", "items", "fine", "part_a"))
    definition = pipeline_yaml(mariadb, tables, postgres_sink(postgresql), **{"server-id": "7336-7337"})
    definition["route"] = [{"source-table": f"{source_db}.part_[a-c]", "sink-table": f"{source_db}.parts"}]

    checked = sluice_check(write_pipeline(tmp_path / "p.yaml", definition), sluice_env(mariadb, postgresql))
    assert checked.returncode == 1, checked.stdout + checked.stderr
    sink = sorted(
        message for level, subject, message in findings(checked.stdout) if (level, subject) == ("error", "sink")
    )
    assert sink == [
        f'target table "{source_db}"."items" has the primary key (code), and the pipeline writes its rows by (id): '
        "make (id) its primary key, or drop the table for the pipeline to create it",
        f'target table "{source_db}"."orders" lacks the column amount, which the pipeline writes: '
        "add it, or drop the table for the pipeline to create it",
        f'target table "{source_db}"."parts" lacks the column note, which the pipeline writes: '
        "add it, or drop the table for the pipeline to create it",
    ]

    # A route the tables do not fit is named as the route's, as the run's start would.
    definition["route"].append({"source-table": f"{source_db}.\\.*", "sink-table": f"{source_db}.everything"})
    definition["transform"] = [{"source-table": f"{source_db}.part_a", "projection": "id + 0 AS n"}]  # no key left
    definition["pipeline"]["route-mode"] = "ALL_MATCH"
    checked = sluice_check(write_pipeline(tmp_path / "p.yaml", definition), sluice_env(mariadb, postgresql))
    routes = [message for level, subject, message in findings(checked.stdout) if (level, subject) == ("error", "route")]
    assert checked.returncode == 1 and len(routes) == 1, checked.stdout + checked.stderr
    targets = f"({source_db}.parts, {source_db}.everything)"
    assert f"route: {source_db}.part_a goes to 2 target tables {targets}, " in routes[0]


def test_invisible_columns_are_looked_at_as_every_other(tmp_path, mariadb, postgresql, source_db):
    """An INVISIBLE column (MariaDB 10.3+, MySQL 8.0.23+, and MySQL's generated invisible
    primary key) is left out of SELECT *: the check's look at the values named it and
    crashed ("Unknown column")."""
    mariadb.execute(
        "CREATE TABLE t (id INT PRIMARY KEY, born DATE INVISIBLE, note VARCHAR(10) INVISIBLE)",
        "SET SESSION sql_mode = ''",
        "INSERT INTO t (id, born, note) VALUES (1, '2024-05-06', CONCAT('a', CHAR(0)))",
        database=source_db,
    )
    definition = pipeline_yaml(mariadb, f"{source_db}.t", postgres_sink(postgresql), **{"server-id": "7336-7337"})
    pipeline, env = write_pipeline(tmp_path / "p.yaml", definition), sluice_env(mariadb, postgresql)

    checked = sluice_check(pipeline, env)

    assert "internal error" not in checked.stderr, checked.stderr
    assert ("warning", f"{source_db}.t.note") in [(level, subject) for level, subject, _ in findings(checked.stdout)]
