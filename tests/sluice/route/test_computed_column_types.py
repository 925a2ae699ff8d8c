"""A computed column lands in its target with Flink CDC's type and value: a BOOLEAN
expression is a boolean column (not 0/1), whichever process reads the snapshot."""

from __future__ import annotations

from datetime import date, datetime

import psycopg
import pytest

from tests.harness import compare
from tests.harness.lakehouse import iceberg_sink, lakehouse_column_rows, lakehouse_table
from tests.harness.pipelines import (
    mysql_sink,
    pipeline_yaml,
    postgres_sink,
    sluice_env,
    stream_until_equal,
    write_pipeline,
)

PROJECTION = "id, d, active OR id > 100 AS b, id > 2 AS big"
SERVER_IDS = {"postgresql-executors": "7380-7383", "postgresql-driver": "7384-7387", "iceberg": "7388-7391"}


def _postgres_types(postgresql, schema: str) -> dict[str, str]:
    with postgresql.connect() as conn:
        rows = conn.execute(
            "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = %s "
            "AND table_name = 'flags'",
            (schema,),
        ).fetchall()
    return dict(rows)


@pytest.mark.parametrize("target", [*SERVER_IDS, "mariadb"])
def test_a_boolean_expression_is_a_boolean_column(tmp_path, mariadb, mariadb_target, postgresql, source_db, target):
    """Flink CDC types `flag OR id > 100` BOOLEAN: PostgreSQL and Iceberg get a boolean
    column, a MySQL target BOOLEAN (its TINYINT(1)). Read by Spark's executors too, beside
    a DOUBLE column (which once stopped the snapshot: 'invalid input syntax for type
    smallint: "f"')."""
    mariadb.execute(
        "CREATE TABLE flags (id INT PRIMARY KEY, d DOUBLE, active BOOLEAN)",
        "INSERT INTO flags SELECT seq, seq / 2, seq % 2 FROM seq_1_to_20",
        database=source_db,
    )
    sinks = {"iceberg": iceberg_sink(tmp_path / "lake"), "mariadb": mysql_sink(mariadb_target)}
    sink = sinks.get(target) or postgres_sink(postgresql)
    options = {
        "server-id": SERVER_IDS.get(target, "7392-7395"),
        "scan.incremental.snapshot.chunk.size": 4,
        "scan.snapshot.read-on-driver": target != "postgresql-executors",
    }
    definition = pipeline_yaml(mariadb, f"{source_db}.flags", sink, **options)
    definition["transform"] = [{"source-table": f"{source_db}.flags", "projection": PROJECTION}]
    path = write_pipeline(tmp_path / "pipeline.yaml", definition)

    def write() -> None:
        mariadb.execute(
            "INSERT INTO flags VALUES (101, 0.5, 0)", "UPDATE flags SET active = 1 WHERE id = 2", database=source_db
        )

    def expected() -> list[tuple]:
        rows = compare.query_rows(mariadb, f"SELECT id, d, active FROM {source_db}.flags")
        as_stored = int if target == "mariadb" else bool
        return sorted((i, d, as_stored(bool(active) or i > 100), as_stored(i > 2)) for i, d, active in rows)

    def actual() -> list[tuple] | None:
        if target == "iceberg":
            return lakehouse_column_rows(sink, f"{source_db}.flags", ["id", "d", "b", "big"])
        if target == "mariadb":
            return sorted(compare.query_rows(mariadb_target, f"SELECT id, d, b, big FROM {source_db}.flags"))
        found = compare.postgres_rows_once_created(postgresql, source_db, "flags")
        return None if found is None else sorted(found)

    stream_until_equal(
        {target: (path, tmp_path / "state")},
        sluice_env(mariadb, postgresql, mariadb_target),
        write,
        expected,
        {target: actual},
    )
    if target.startswith("postgresql"):
        types = _postgres_types(postgresql, source_db)
        assert (types["b"], types["big"]) == ("boolean", "boolean"), types
    if target == "iceberg":
        lake = lakehouse_table(sink, f"{source_db}.flags")
        assert str(lake.schema.field("b").type) == "bool"


@pytest.mark.parametrize("target", ["postgresql", "iceberg"])
def test_date_arithmetic_past_year_9999_lands_where_the_target_holds_it(
    tmp_path, mariadb, postgresql, source_db, target
):
    """Flink CDC gives 10000-01-01 for `day_ + INTERVAL '1' DAY` of 9999-12-31. PostgreSQL's
    DATE and TIMESTAMP hold it, so they get it (it was NULL), in the snapshot and in the
    binlog phase. pyiceberg cannot write it (its file statistics are Python dates, which end
    at 9999): an Iceberg target takes it as a date no calendar has, by sink.zero-date."""
    mariadb.execute(
        "CREATE TABLE days (id INT PRIMARY KEY, day_ DATE, at_ DATETIME)",
        "INSERT INTO days VALUES (1, '9999-12-31', '9999-12-31 23:30:00'), (2, '2024-02-28', '2024-02-28 23:30:00')",
        database=source_db,
    )
    sink = iceberg_sink(tmp_path / "lake") if target == "iceberg" else postgres_sink(postgresql)
    ids = "7396-7397" if target == "iceberg" else "7398-7399"
    definition = pipeline_yaml(mariadb, f"{source_db}.days", sink, **{"server-id": ids})
    definition["transform"] = [
        {
            "source-table": f"{source_db}.days",
            "projection": "id, day_ + INTERVAL '1' DAY AS next_day, at_ + INTERVAL '1' HOUR AS next_hour",
        }
    ]
    path = write_pipeline(tmp_path / "pipeline.yaml", definition)

    def write() -> None:
        mariadb.execute("INSERT INTO days VALUES (3, '9999-12-31', '9999-12-31 23:00:00')", database=source_db)

    if target == "postgresql":
        expected = [
            (1, "10000-01-01", "10000-01-01 00:30:00"),
            (2, "2024-02-29", "2024-02-29 00:30:00"),
            (3, "10000-01-01", "10000-01-01 00:00:00"),
        ]
    else:
        expected = [(1, None, None), (2, date(2024, 2, 29), datetime(2024, 2, 29, 0, 30)), (3, None, None)]

    def actual() -> list[tuple] | None:
        if target == "iceberg":
            return lakehouse_column_rows(sink, f"{source_db}.days", ["id", "next_day", "next_hour"])
        with postgresql.connect() as conn:
            try:
                rows = conn.execute(f'SELECT id, next_day::text, next_hour::text FROM "{source_db}".days').fetchall()
            except psycopg.errors.UndefinedTable:
                return None
        return sorted(rows)

    stream_until_equal(
        {target: (path, tmp_path / "state")}, sluice_env(mariadb, postgresql), write, lambda: expected, {target: actual}
    )
