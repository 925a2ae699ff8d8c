"""MariaDB's system-versioned tables are captured like any table, and the target holds their
current rows. The server keeps history in the table itself: an UPDATE logs the new row and a
write of the old one as history, a DELETE logs an update that ends the row's system time, and
DELETE HISTORY deletes history rows. Only what changes the current rows may reach the target;
history stays in the source.

A table versioned by transaction id is the exception the server makes: it logs every change
of such a table as a statement, even under binlog_format=ROW. The rows a statement changed
are then read again, into a target that can replace a table's rows (jdbc); a changelog
keeps the rows it had, and the log says so."""

from __future__ import annotations

import json

from sluice.sink.parquet import read_changelog
from tests.harness import compare
from tests.harness.pipelines import every_sink, pipeline_per_sink, sluice_env, stream_until_equal

TABLES = ("implicit", "explicit", "by_trx", "altered")


def test_system_versioned_tables_replicate_their_current_rows(tmp_path, mariadb, mariadb_target, postgresql, source_db):
    mariadb.execute(
        # Implicit system-time columns (invisible, not in information_schema).
        "CREATE TABLE implicit (id INT PRIMARY KEY, v INT) WITH SYSTEM VERSIONING",
        # Declared ones, visible: captured as columns.
        "CREATE TABLE explicit (id INT PRIMARY KEY, v INT, "
        "since TIMESTAMP(6) GENERATED ALWAYS AS ROW START, until TIMESTAMP(6) GENERATED ALWAYS AS ROW END, "
        "PERIOD FOR SYSTEM_TIME(since, until)) WITH SYSTEM VERSIONING",
        # Transaction-precise history: the system time is a transaction id.
        "CREATE TABLE by_trx (id INT PRIMARY KEY, v INT, "
        "s BIGINT UNSIGNED GENERATED ALWAYS AS ROW START INVISIBLE, "
        "e BIGINT UNSIGNED GENERATED ALWAYS AS ROW END INVISIBLE, "
        "PERIOD FOR SYSTEM_TIME(s, e)) ENGINE=InnoDB WITH SYSTEM VERSIONING",
        "CREATE TABLE altered (id INT PRIMARY KEY, v INT)",  # versioned while streaming
        *(f"INSERT INTO {t} (id, v) SELECT seq, seq FROM seq_1_to_30" for t in TABLES),
        # History before the snapshot: it must not be read as rows.
        *(f"UPDATE {t} SET v = v + 100 WHERE id <= 5" for t in TABLES),
        *(f"DELETE FROM {t} WHERE id BETWEEN 6 AND 8" for t in TABLES),
        database=source_db,
    )
    lake = tmp_path / "lake"
    sinks = every_sink(postgresql, mariadb_target, lake, 7260)
    by_rows = tuple(t for t in TABLES if t != "by_trx")
    pipelines = {
        # A changelog cannot take a table's rows again: by_trx would stop it (see below).
        **pipeline_per_sink(
            tmp_path, mariadb, f"{source_db}.({'|'.join(by_rows)})", {"parquet": sinks.pop("parquet")}, "versioned"
        ),
        **pipeline_per_sink(
            tmp_path,
            mariadb,
            f"{source_db}.({'|'.join(TABLES)})",
            sinks,
            "versioned",
            **{"scan.incremental.snapshot.chunk.size": 7},
        ),
    }

    def write() -> None:
        mariadb.execute("ALTER TABLE altered ADD SYSTEM VERSIONING", database=source_db)
        for table in TABLES:
            mariadb.execute(
                f"UPDATE {table} SET v = -v WHERE id BETWEEN 10 AND 14",
                f"UPDATE {table} SET id = id + 1000 WHERE id = 15",  # the key changes
                f"DELETE FROM {table} WHERE id IN (16, 17)",
                f"INSERT INTO {table} (id, v) VALUES (50, 1), (51, 2)",
                f"UPDATE {table} SET v = 7 WHERE id = 50",
                f"DELETE FROM {table} WHERE id = 51",
                "BEGIN",
                f"UPDATE {table} SET v = v + 1 WHERE id = 20",
                f"UPDATE {table} SET v = v + 1 WHERE id = 20",
                "COMMIT",
                f"DELETE HISTORY FROM {table}",  # history rows go: no current row changes
                f"INSERT INTO {table} (id, v) VALUES (16, 160)",  # a deleted key comes back
                database=source_db,
            )

    def rows(read, tables: tuple[str, ...] = TABLES) -> list[tuple]:
        return sorted((t, *row) for t in tables for row in read(t))

    def current(table: str) -> list[tuple]:
        return _id_v(mariadb, source_db, table)

    stream_until_equal(
        pipelines,
        sluice_env(mariadb, postgresql, mariadb_target),
        write,
        {
            "postgres": lambda: rows(current),
            "mariadb": lambda: rows(current),
            "parquet": lambda: rows(current, by_rows),  # the tables its pipeline captures
        },
        {
            "postgres": lambda: rows(lambda t: compare.postgres_rows(postgresql, source_db, t, "id, v")),
            "mariadb": lambda: rows(lambda t: _id_v(mariadb_target, source_db, t)),
            "parquet": lambda: rows(
                lambda t: compare.replay_changelog(
                    [
                        {k: c[k] for k in ("_op", "_table", "_position", "id", "v")}
                        for c in read_changelog(lake, f"{source_db}.{t}")
                    ],
                    key="id",
                ),
                by_rows,
            ),
        },
    )
    assert len(current("implicit")) == 30 - 3 - 2 + 2 - 1 + 1
    history = json.loads((pipelines["postgres"][1] / "state.json").read_text())["schema_change_history"]
    reread = [change["statement"] for change in history if change.get("reread") == [f"{source_db}.by_trx"]]
    assert "UPDATE by_trx SET v = -v WHERE id BETWEEN 10 AND 14" in reread and "DELETE HISTORY FROM by_trx" in reread
    assert not any("implicit" in statement for statement in reread)  # its rows are in the binlog
    for table in TABLES:  # keyed as their current rows are: MariaDB's keys end with the row end
        assert compare.postgres_primary_key(postgresql, source_db, table) == ["id"], table


def _id_v(server, database: str, table: str) -> list[tuple]:
    """The columns every table has (SELECT * leaves invisible ones out at the source only)."""
    return compare.source_rows(server, database, table, "id, v")
