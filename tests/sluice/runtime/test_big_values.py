"""Values as big as the source's max_allowed_packet lets an application write (a LONGTEXT of
short lines, a LONGBLOB) reach the target exactly, in the snapshot and while streaming, in
time linear in their size; a SIGTERM ends the run, and no query of the run's is left at
the source."""

from __future__ import annotations

import hashlib

import pytest

from sluice.errors import SinkError
from sluice.pipeline.jdbc_url import parse_jdbc_url
from sluice.sink.jdbc.mysql import MySqlDialect
from sluice.source.schema import read_table_schema
from tests.harness import compare
from tests.harness.pipelines import every_sink, pipeline_per_sink, sluice_env, stream_until_equal

MB = 1024 * 1024
LINES = "CONCAT(REPEAT(CONCAT(REPEAT('a', 69), '\\n'), {n}), 'tab\\there \\\\ back')"


def _digests(rows: list[tuple]) -> list[tuple]:
    """Rows with each big value as its length and digest (a diff of 6 MB values says nothing)."""

    def short(value):
        if isinstance(value, (str, bytes, bytearray, memoryview)) and len(value) > 1000:
            raw = value.encode() if isinstance(value, str) else bytes(value)
            return (len(raw), hashlib.sha256(raw).hexdigest()[:16])
        return value

    return [tuple(short(v) for v in row) for row in rows]


def test_big_values_reach_the_target_exactly_and_a_sigterm_leaves_no_query(
    mariadb, source_db, postgresql, mariadb_target, tmp_path
):
    lines = 6 * MB // 70
    mariadb.execute(
        "CREATE TABLE docs (id INT PRIMARY KEY, body LONGTEXT, data LONGBLOB, note VARCHAR(10))",
        f"INSERT INTO docs VALUES (1, {LINES.format(n=lines)}, REPEAT(x'5c0a09ff', {6 * MB // 4}), 'big')",
        "INSERT INTO docs VALUES (2, 'small\\nvalue', x'00', 'small')",
        database=source_db,
    )
    sinks = every_sink(postgresql, mariadb_target, tmp_path / "lake", 7480)
    del sinks["parquet"]
    pipelines = pipeline_per_sink(tmp_path, mariadb, f"{source_db}.docs", sinks, source_db)

    def write() -> None:
        mariadb.execute(
            f"INSERT INTO docs VALUES (3, {LINES.format(n=lines // 2)}, REPEAT(x'0d0a', {2 * MB}), 'streamed')",
            "UPDATE docs SET note = 'changed' WHERE id = 1",
            database=source_db,
        )

    def expected() -> list[tuple]:
        return _digests(compare.source_rows(mariadb, source_db, "docs"))

    stream_until_equal(
        pipelines,
        sluice_env(mariadb, postgresql, mariadb_target),
        write,
        expected,
        {
            "postgres": lambda: _digests(compare.postgres_rows_once_created(postgresql, source_db, "docs") or []),
            "mariadb": lambda: _digests(compare.source_rows(mariadb_target, source_db, "docs")),
        },
    )
    with mariadb.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT id, info FROM information_schema.PROCESSLIST WHERE info LIKE %s", (f"%{source_db}%docs%",))
        left = [row for row in cur.fetchall() if "PROCESSLIST" not in (row[1] or "")]
    assert left == [], f"queries of the run left at the source: {left}"


def test_a_value_bigger_than_the_mysql_target_holds_is_refused_naming_it(mariadb_target, source_db):
    """A target whose max_allowed_packet is smaller than the source's cannot hold the value
    (CONCAT gives NULL past it): the error names the table, column, key and the setting."""
    mariadb_target.execute(f"CREATE DATABASE {source_db}")
    mariadb_target.execute(f"CREATE TABLE {source_db}.docs (id INT PRIMARY KEY, body LONGTEXT)")
    with mariadb_target.connect(source_db) as conn:
        schema = read_table_schema(conn, source_db, "docs")
    dialect = MySqlDialect()
    with mariadb_target.global_setting("max_allowed_packet", 1024 * 1024):
        conn = dialect.connect(
            parse_jdbc_url(f"mysql://{mariadb_target.host}:{mariadb_target.port}/mysql"),
            mariadb_target.user,
            mariadb_target.password,
        )
        try:
            dialect.upsert(conn, schema, [(1, "x" * 300_000), (2, "y" * 900_000)])  # the second: written in pieces
            conn.commit()
            held = compare.source_rows(mariadb_target, source_db, "docs")
            assert [(i, len(body)) for i, body in held] == [(1, 300_000), (2, 900_000)]
            said = f"{source_db}.docs.body of the row {{'id': 3}} holds 2,000,000 bytes, more than the target's"
            with pytest.raises(SinkError, match=said):
                dialect.upsert(conn, schema, [(3, "z" * 2_000_000)])
        finally:
            conn.close()
