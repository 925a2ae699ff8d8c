"""A MySQL 8.4 source, through the stand-in (tests/harness/mysql84): what Sluice sends it
and what `sluice check` says of it. The stand-in answers as 8.4 does at the protocol
level; its binlog in MySQL's format is not served yet."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness import compare
from tests.harness.mysql84 import events
from tests.harness.mysql84.front import Mysql84Front, mysql84_front
from tests.harness.mysql84.statements import Mysql84Settings
from tests.harness.pipelines import (
    pipeline_yaml,
    postgres_sink,
    read_state,
    sluice_env,
    stream_until_equal,
    write_pipeline,
)
from tests.harness.services import MariaDB, PostgreSQL, start_mariadb
from tests.sluice.runtime.test_preflight import findings, sluice_check


def test_sluice_check_reads_a_mysql_8_4_source_whose_user_is_not_cached_yet(
    tmp_path, mysql84: Mysql84Front, postgresql, source_db
):
    """8.4 removed SHOW SLAVE HOSTS (a syntax error there, which PyMySQL raises as a
    ProgrammingError); its default authentication, caching_sha2_password, takes a first
    login over plaintext by the server's RSA key."""
    source = mysql84.server()
    source.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)", database=source_db)
    mysql84.flush_privileges()
    definition = pipeline_yaml(source, f"{source_db}.t", postgres_sink(postgresql), **{"server-id": "7392-7393"})
    pipeline = write_pipeline(tmp_path / "p.yaml", definition)

    checked = sluice_check(pipeline, sluice_env(source, postgresql))

    assert "internal error" not in checked.stderr, checked.stderr
    said = findings(checked.stdout)
    assert ("ok", "source.server-id") in [(level, subject) for level, subject, _ in said], (
        checked.stdout + checked.stderr
    )
    assert "SHOW REPLICAS" in mysql84.statements_seen
    assert not [s for s in mysql84.statements_seen if "SLAVE" in s.upper() or "MASTER STATUS" in s.upper()]
    assert ("root", "full") in mysql84.authentications
    subjects = {subject: (level, text) for level, subject, text in said}
    assert said[0] == ("ok", "source", f"reached {source.host}:{source.port} (MySQL 8.4.3)")
    assert subjects["source.authentication"][1].startswith("caching_sha2_password (MySQL 8's default)")
    assert subjects["source.gtid"] == (
        "ok",
        "gtid_mode=ON: the pipeline resumes by the GTID set it committed; tagged GTIDs (8.3+) are read too",
    )
    # 8.4's default: the table map carries no column names
    assert (
        "error",
        "source.binlog",
        "source server has binlog_row_metadata=MINIMAL; Sluice needs "
        "binlog_row_metadata=FULL (set it in the server configuration and restart, or SET GLOBAL "
        "binlog_row_metadata='FULL')",
    ) in said


def test_sluice_check_says_what_mysqls_own_settings_mean_for_the_pipeline(tmp_path, mariadb, postgresql, source_db):
    settings = Mysql84Settings(
        variables={
            "binlog_row_metadata": "FULL",
            "binlog_transaction_compression": "ON",
            "sql_generate_invisible_primary_key": "ON",
            "show_gipk_in_create_table_and_information_schema": "OFF",
            "gtid_mode": "OFF_PERMISSIVE",
            "mysql_native_password": "ON",
            "binlog_row_value_options": "PARTIAL_JSON",
        },
        native_users={mariadb.user},
    )
    with mysql84_front(mariadb, settings) as front:
        source = front.server()
        source.execute("CREATE TABLE t (id INT PRIMARY KEY)", database=source_db)
        definition = pipeline_yaml(source, f"{source_db}.t", postgres_sink(postgresql), **{"server-id": "7394-7395"})
        checked = sluice_check(write_pipeline(tmp_path / "p.yaml", definition), sluice_env(source, postgresql))
    said = findings(checked.stdout)
    assert (
        "error",
        "source.binlog",
        "source server has binlog_row_value_options=PARTIAL_JSON; Sluice needs it without PARTIAL_JSON "
        "(SET GLOBAL binlog_row_value_options='')",
    ) in said
    assert (
        "ok",
        "source.binlog",
        "binlog_transaction_compression=ON: each transaction comes as one zstd payload, inflated as it is read",
    ) in said
    (gtid,) = [(level, text) for level, subject, text in said if subject == "source.gtid"]
    assert gtid[0] == "warning" and gtid[1].startswith("gtid_mode=OFF_PERMISSIVE: the pipeline resumes by binlog file")
    (plugin,) = [(level, text) for level, subject, text in said if subject == "source.authentication"]
    assert plugin[0] == "warning" and plugin[1].startswith("mysql_native_password: MySQL 8.4 loads it only with")
    assert ("root", "native") in front.authentications
    (keys,) = [(level, text) for level, subject, text in said if subject == "source.tables"]
    assert keys[0] == "error" and "SET GLOBAL show_gipk_in_create_table_and_information_schema=ON" in keys[1]
    assert checked.returncode == 1


@pytest.mark.parametrize("compression", ["OFF", "ON"], ids=["plain", "compressed-transactions"])
def test_a_pipeline_snapshots_and_streams_a_mysql_8_4_source_through_a_schema_change(
    tmp_path, mariadb, postgresql, source_db, compression
):
    """Check, snapshot and streaming by GTID from the stand-in's binlog in MySQL 8.4's
    format (binlog_row_metadata=FULL, as a CDC source is set up), through an ADD COLUMN,
    then a restart that resumes by the GTID set it committed; with each transaction one
    zstd Transaction_payload too (binlog_transaction_compression=ON)."""
    settings = Mysql84Settings(variables={"binlog_row_metadata": "FULL", "binlog_transaction_compression": compression})
    with mysql84_front(mariadb, settings) as front:
        source = front.server()
        source.execute(
            "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20), n DECIMAL(10,2))",
            "INSERT INTO t VALUES (1, 'one', 1.50), (2, 'two', 2.25), (3, 'three', NULL)",
            database=source_db,
        )
        pipeline, state, env = into_postgresql(
            tmp_path, source, postgresql, f"{source_db}.t", "7396-7399", {"schema.change.behavior": "evolve"}
        )
        checked = sluice_check(pipeline, env)
        assert checked.returncode == 0, checked.stdout + checked.stderr

        def write() -> None:
            source.execute(
                "INSERT INTO t VALUES (4, 'four', 4.00)",
                "UPDATE t SET v = 'uno' WHERE id = 1",
                "UPDATE t SET id = 20 WHERE id = 2",
                "DELETE FROM t WHERE id = 3",
                "ALTER TABLE t ADD COLUMN note VARCHAR(10) DEFAULT 'x'",
                "INSERT INTO t VALUES (5, 'five', 5.00, 'y')",
                database=source_db,
            )

        def source_rows() -> list[tuple]:
            return compare.source_rows(mariadb, source_db, "t")

        def target_rows() -> list[tuple] | None:
            return compare.postgres_rows_once_created(postgresql, source_db, "t")

        stream_until_equal({"p": (pipeline, state)}, env, write, source_rows, {"p": target_rows})
        committed = read_state(state)["binlog"]["offset"]["gtid"]
        assert committed.startswith(f"{front.settings.server_uuid}:1-")

        # a restart resumes by the GTID set it committed
        source.execute("UPDATE t SET note = 'z' WHERE id = 4", database=source_db)
        stream_until_equal({"p": (pipeline, state)}, env, lambda: None, source_rows, {"p": target_rows})
    assert front.dumps, "the pipeline read no binlog from the stand-in"
    kinds = {f.data[start + 4] for f in front.binlog.files for start in f.starts}
    assert (events.TRANSACTION_PAYLOAD in kinds) == (compression == "ON"), kinds
    assert front.dumps[-1].gtids == {(front.settings.server_uuid, ""): [(1, int(committed.rsplit("-", 1)[1]))]}
    assert any(s.startswith("SET @source_binlog_checksum") for s in front.statements_seen)
    assert any(s.startswith("SET @source_heartbeat_period") for s in front.statements_seen)


def test_a_table_with_a_generated_invisible_primary_key_is_keyed_by_it(tmp_path, mariadb, postgresql, source_db):
    """sql_generate_invisible_primary_key=ON (8.0.30+) gives a table created without a key
    an invisible my_row_id: SELECT * leaves it out, the binlog carries it. The MariaDB
    behind stands for it with the same column, INVISIBLE and AUTO_INCREMENT."""
    settings = Mysql84Settings(variables={"binlog_row_metadata": "FULL", "sql_generate_invisible_primary_key": "ON"})
    with mysql84_front(mariadb, settings) as front:
        source = front.server()
        source.execute(
            "CREATE TABLE g (my_row_id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT INVISIBLE PRIMARY KEY, v INT)",
            "INSERT INTO g (v) VALUES (10), (10), (20)",
            database=source_db,
        )
        pipeline, state, env = into_postgresql(tmp_path, source, postgresql, f"{source_db}.g", "7400-7403")

        def write() -> None:
            source.execute(
                "INSERT INTO g (v) VALUES (30)",
                "UPDATE g SET v = 11 WHERE my_row_id = 2",
                "DELETE FROM g WHERE v = 20",
                database=source_db,
            )

        def source_rows() -> list[tuple]:
            return compare.source_rows(mariadb, source_db, "g", "my_row_id, v")

        def target_rows() -> list[tuple] | None:
            return compare.postgres_rows_once_created(postgresql, source_db, "g")

        stream_until_equal({"p": (pipeline, state)}, env, write, source_rows, {"p": target_rows})
    assert compare.postgres_primary_key(postgresql, source_db, "g") == ["my_row_id"]


def test_tagged_transactions_are_read_and_a_restart_resumes_from_a_tagged_gtid_set(tmp_path, services_dir, postgresql):
    """MySQL 8.3+: `SET gtid_next = 'AUTOMATIC:etl'` tags a transaction, whose GTID event is
    a GTID_TAGGED_LOG_EVENT and whose number counts apart from the untagged ones. The stand-
    in's MariaDB (one of its own: its GTID domains stand for tags) writes them in domain 7."""
    mariadb = start_mariadb(services_dir / "mysql84-tagged", server_id=11)
    settings = Mysql84Settings(tags={0: "", 7: "etl"}, variables={"binlog_row_metadata": "FULL"})
    try:
        mariadb.execute(
            "CREATE DATABASE app",
            "CREATE TABLE app.t (id INT PRIMARY KEY, v VARCHAR(10))",
            "CREATE TABLE app.bag (id INT, v VARCHAR(10))",  # no key: a change applied twice would show
        )
        with mysql84_front(mariadb, settings) as front:
            source = front.server()
            tagged(mariadb, "INSERT INTO app.t VALUES (1, 'etl-1')", "INSERT INTO app.t VALUES (2, 'etl-2')")
            pipeline, state, env = into_postgresql(
                tmp_path,
                source,
                postgresql,
                "app.(t|bag)",
                "7404-7407",
                source_options={"scan.incremental.snapshot.chunk.key-column": "app.bag:id"},
            )
            checked = sluice_check(pipeline, env)
            assert "its tagged transactions (etl) are read" in checked.stdout, checked.stdout

            def write() -> None:
                tagged(mariadb, "UPDATE app.t SET v = 'etl-1b' WHERE id = 1", "INSERT INTO app.t VALUES (3, 'etl-3')")
                tagged(mariadb, "INSERT INTO app.bag VALUES (1, 'x')", "INSERT INTO app.bag VALUES (1, 'x')")
                mariadb.execute("INSERT INTO app.t VALUES (4, 'plain')", "INSERT INTO app.bag VALUES (2, 'y')")

            def source_rows() -> dict[str, list[tuple]]:
                return {table: compare.source_rows(mariadb, "app", table) for table in ("t", "bag")}

            def target_rows() -> dict[str, list[tuple] | None]:
                return {table: compare.postgres_rows_once_created(postgresql, "app", table) for table in ("t", "bag")}

            stream_until_equal({"p": (pipeline, state)}, env, write, source_rows, {"p": target_rows})
            committed = read_state(state)["binlog"]["offset"]["gtid"]
            assert ":etl:1-" in committed, committed

            tagged(mariadb, "DELETE FROM app.t WHERE id = 2", "INSERT INTO app.bag VALUES (3, 'z')")
            mariadb.execute("INSERT INTO app.bag VALUES (4, 'w')")
            stream_until_equal({"p": (pipeline, state)}, env, lambda: None, source_rows, {"p": target_rows})
        resumed = front.dumps[-1].gtids
        assert resumed is not None and (settings.server_uuid, "etl") in resumed, resumed
        assert compare.postgres_rows(postgresql, "app", "t") == [(1, "etl-1b"), (3, "etl-3"), (4, "plain")]
    finally:
        mariadb.stop()


def tagged(mariadb: MariaDB, *statements: str) -> None:
    """Each statement a transaction of its own in GTID domain 7: the stand-in's `etl` tag."""
    with mariadb.connect() as conn, conn.cursor() as cur:
        cur.execute("SET SESSION gtid_domain_id = 7")
        for statement in statements:
            cur.execute(statement)


def into_postgresql(
    tmp_path: Path,
    source: MariaDB,
    postgresql: PostgreSQL,
    tables: str,
    server_ids: str,
    pipeline_options: dict | None = None,
    source_options: dict | None = None,
) -> tuple[Path, Path, dict[str, str]]:
    """A pipeline of `tables` from the stand-in into PostgreSQL: its file, state directory and environment."""
    definition = pipeline_yaml(
        source, tables, postgres_sink(postgresql), **{"server-id": server_ids, **(source_options or {})}
    )
    definition["pipeline"].update(pipeline_options or {})
    return write_pipeline(tmp_path / "p.yaml", definition), tmp_path / "state", sluice_env(source, postgresql)
