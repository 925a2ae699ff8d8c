"""Sharded tables routed into one target table through a transform: the target equals the
query the route and transform describe, computed by MariaDB itself over the source."""

from __future__ import annotations

import time

import yaml

from sluice.sink.parquet import read_changelog
from tests.harness import compare
from tests.harness.lakehouse import delta_sink, iceberg_sink, lakehouse_table, partitioned_by, table_properties
from tests.harness.pipelines import (
    every_sink,
    kill_pipeline,
    mysql_sink,
    pipeline_per_sink,
    pipeline_yaml,
    postgres_sink,
    run_sluice,
    sluice_env,
    start_sluice,
    stream_until_equal,
    wait_until_in_binlog_phase,
    write_pipeline,
)

SHARDS = ("orders_0", "orders_1", "orders_2", "orders_3")


def _create_shards(mariadb, databases: dict[str, str]) -> None:
    for shard, database in databases.items():
        qty = "BIGINT" if shard == "orders_3" else "INT"  # widened in the merged table
        note = ", note VARCHAR(40)" if shard == "orders_1" else ""  # a column one shard has
        mariadb.execute(
            f"CREATE TABLE {shard} (id INT PRIMARY KEY, tenant VARCHAR(10), amount DECIMAL(10,2), qty {qty}{note})",
            f"INSERT INTO {shard} (id, tenant, amount, qty) SELECT seq, IF(seq % 3, 'acme', 'globex'), seq * 1.25, "
            f"seq % 7 FROM seq_1_to_60",
            database=database,
        )


def _query(mariadb, databases: dict[str, str]) -> list[tuple]:
    """What the target must hold, as MariaDB computes it."""
    return compare.query_rows(
        mariadb,
        " UNION ALL ".join(
            f"SELECT id, tenant, amount * qty, UPPER(tenant), '{shard}', '{database}' FROM `{database}`.{shard} "
            "WHERE qty > 2 AND tenant <> 'initech'"
            for shard, database in databases.items()
        ),
    )


def _merged(definition: dict, selected: str, database: str) -> dict:
    """The four shards as one table through the transform _query describes."""
    definition["route"] = [
        {"source-table": selected, "sink-table": f"{database}.orders", "description": "the four shards as one"}
    ]
    definition["transform"] = [
        {
            "source-table": selected,
            "projection": "id, tenant, amount * qty AS total, UPPER(tenant) AS tenant_code, "
            "__table_name__ AS shard, __schema_name__ AS db",
            "filter": "qty > 2 AND tenant <> 'initech'",
            "primary-keys": "id, shard, db",
        }
    ]
    return definition


def _lakehouse_rows(sink: dict, table_id: str) -> list[tuple]:
    table = lakehouse_table(sink, table_id)
    return [] if table is None else compare._rows(tuple(row.values()) for row in table.to_pylist())


def test_shards_in_two_databases_merge_into_one_transformed_table_in_every_sink(
    tmp_path, mariadb, mariadb_target, postgresql, source_db, shards
):
    _create_shards(mariadb, shards)
    selected = f"{source_db}(_b)?.orders_[0-9]"
    lake = tmp_path / "lake"
    lakehouses = {"iceberg": iceberg_sink(tmp_path / "iceberg"), "delta": delta_sink(tmp_path / "delta")}
    sinks = every_sink(postgresql, mariadb_target, lake, 7300, ids_each=4)
    sinks |= {name: (sink, f"{7340 + 4 * i}-{7343 + 4 * i}") for i, (name, sink) in enumerate(lakehouses.items())}
    pipelines = pipeline_per_sink(
        tmp_path, mariadb, selected, sinks, "merged", **{"scan.incremental.snapshot.chunk.size": 16}
    )
    for path, _ in pipelines.values():
        definition = yaml.safe_load(path.read_text())
        write_pipeline(path, _merged(definition, selected, source_db))

    def write() -> None:
        for shard, database in shards.items():
            mariadb.execute(
                f"UPDATE {shard} SET qty = 1 WHERE id IN (3, 4, 5)",  # out of the filter: deleted
                f"UPDATE {shard} SET qty = 6 WHERE id IN (7, 8, 14)",  # into it: inserted
                f"UPDATE {shard} SET amount = amount + 1 WHERE id BETWEEN 20 AND 30",  # stays in: updated
                f"UPDATE {shard} SET id = id + 1000 WHERE id IN (40, 41)",  # the key changes
                f"UPDATE {shard} SET tenant = 'initech' WHERE id = 50",  # out by another column
                f"DELETE FROM {shard} WHERE id IN (51, 52)",  # in the filter and not
                f"INSERT INTO {shard} (id, tenant, amount, qty) VALUES (500, 'acme', 2.50, 9), (501, 'acme', 1.00, 1)",
                database=database,
            )

    stream_until_equal(
        pipelines,
        sluice_env(mariadb, postgresql, mariadb_target),
        write,
        lambda: _query(mariadb, shards),
        {
            "postgres": lambda: compare.postgres_rows(postgresql, source_db, "orders"),
            "mariadb": lambda: compare.source_rows(mariadb_target, source_db, "orders"),
            "parquet": lambda: compare.replay_changelog(read_changelog(lake, f"{source_db}.orders"), key=None),
            **{
                name: (lambda sink=sink: _lakehouse_rows(sink, f"{source_db}.orders"))
                for name, sink in lakehouses.items()
            },
        },
    )
    columns = compare.postgres_columns(postgresql, source_db, "orders")
    assert columns == ["id", "tenant", "total", "tenant_code", "shard", "db"]
    assert compare.postgres_primary_key(postgresql, source_db, "orders") == ["id", "shard", "db"]


def test_a_merged_key_the_shards_share_is_refused_at_start_naming_them(tmp_path, mariadb, postgresql, source_db):
    mariadb.execute(
        "CREATE TABLE part_a (id INT PRIMARY KEY, v INT)",
        "CREATE TABLE part_b (id INT PRIMARY KEY, v INT)",
        "CREATE TABLE part_c (id INT PRIMARY KEY, v INT)",
        "INSERT INTO part_a SELECT seq, 1 FROM seq_1_to_10",
        "INSERT INTO part_b SELECT seq, 2 FROM seq_11_to_20",
        "INSERT INTO part_c SELECT seq, 3 FROM seq_20_to_25",  # 20 is part_b's too
        database=source_db,
    )
    options = {"server-id": "7311", "scan.startup.mode": "snapshot"}
    definition = pipeline_yaml(mariadb, f"{source_db}.part_[a-c]", postgres_sink(postgresql), **options)
    definition["route"] = [{"source-table": f"{source_db}.part_[a-c]", "sink-table": f"{source_db}.parts"}]
    definition["pipeline"]["parallelism"] = 1
    ran = run_sluice(
        write_pipeline(tmp_path / "p.yaml", definition), tmp_path / "state", sluice_env(mariadb, postgresql)
    )
    assert ran.returncode != 0
    assert f"{source_db}.part_b and {source_db}.part_c both hold id=20" in ran.stderr, ran.stderr
    assert "__table_name__" in ran.stderr
    with postgresql.connect() as conn:
        assert conn.execute("SELECT to_regclass(%s)", (f'"{source_db}"."parts"',)).fetchone() == (None,)

    # Keys the shards do not share are accepted: the same run, again, merges the rows.
    mariadb.execute("DELETE FROM part_c WHERE id = 20", database=source_db)
    ran = run_sluice(tmp_path / "p.yaml", tmp_path / "state", sluice_env(mariadb, postgresql))
    assert ran.returncode == 0, ran.stderr
    assert len(compare.postgres_rows(postgresql, source_db, "parts")) == 25


def test_a_transforms_partition_keys_and_table_options_shape_a_lakehouse_target(tmp_path, mariadb, source_db):
    mariadb.execute(
        "CREATE TABLE events (id INT PRIMARY KEY, kind VARCHAR(10), v INT)",
        "INSERT INTO events SELECT seq, IF(seq % 2, 'click', 'view'), seq FROM seq_1_to_20",
        database=source_db,
    )
    sink = iceberg_sink(tmp_path / "iceberg")
    options = {"server-id": "7312", "scan.startup.mode": "snapshot"}
    definition = pipeline_yaml(mariadb, f"{source_db}.events", sink, **options)
    definition["pipeline"]["parallelism"] = 1
    definition["route"] = [{"source-table": f"{source_db}.events", "sink-table": f"{source_db}.clicks"}]
    definition["transform"] = [
        {
            "source-table": f"{source_db}.events",
            "projection": "id, kind, v * 10 AS score",
            "filter": "kind = 'click'",
            "partition-keys": "kind",
            "table-options": "owner=data-team;comment=clicks, only",
            "table-options.delimiter": ";",
        }
    ]
    ran = run_sluice(write_pipeline(tmp_path / "p.yaml", definition), tmp_path / "state", sluice_env(mariadb))
    assert ran.returncode == 0, ran.stderr
    assert partitioned_by(sink, f"{source_db}.clicks") == ["kind"]
    properties = table_properties(sink, f"{source_db}.clicks")
    assert properties["owner"] == "data-team" and properties["comment"] == "clicks, only"
    rows = lakehouse_table(sink, f"{source_db}.clicks").to_pylist()
    assert sorted((r["id"], r["kind"], r["score"]) for r in rows) == [(i, "click", i * 10) for i in range(1, 21, 2)]


def test_a_table_only_renamed_keeps_its_rows_and_types_under_the_new_name(tmp_path, mariadb, postgresql, source_db):
    mariadb.execute(
        "CREATE TABLE users (id INT PRIMARY KEY, name VARCHAR(20), joined DATETIME(3), score DECIMAL(6,2))",
        "INSERT INTO users SELECT seq, CONCAT('u', seq), '2024-01-02 03:04:05.678', seq / 4 FROM seq_1_to_300",
        database=source_db,
    )
    options = {"server-id": "7313", "scan.startup.mode": "snapshot", "scan.incremental.snapshot.chunk.size": 64}
    definition = pipeline_yaml(mariadb, f"{source_db}.users", postgres_sink(postgresql), **options)
    definition["pipeline"]["parallelism"] = 1
    definition["route"] = [
        {"source-table": f"{source_db}.\\.*", "sink-table": f"{source_db}.app_<>", "replace-symbol": "<>"}
    ]
    ran = run_sluice(
        write_pipeline(tmp_path / "p.yaml", definition), tmp_path / "state", sluice_env(mariadb, postgresql)
    )
    assert ran.returncode == 0, ran.stderr
    assert compare.postgres_rows(postgresql, source_db, "app_users") == compare.source_rows(mariadb, source_db, "users")
    assert compare.postgres_primary_key(postgresql, source_db, "app_users") == ["id"]


def test_spark_executors_read_routed_and_transformed_splits(tmp_path, mariadb, postgresql, source_db, shards):
    """The routing travels to the executors with each job (its rules, compiled there)."""
    _create_shards(mariadb, shards)
    selected = f"{source_db}(_b)?.orders_[0-9]"
    options = {
        "server-id": "7314-7317",
        "scan.startup.mode": "snapshot",
        "scan.snapshot.read-on-driver": False,
        "scan.incremental.snapshot.chunk.size": 8,
    }
    definition = pipeline_yaml(mariadb, selected, postgres_sink(postgresql), **options)
    ran = run_sluice(
        write_pipeline(tmp_path / "p.yaml", _merged(definition, selected, source_db)),
        tmp_path / "state",
        sluice_env(mariadb, postgresql),
    )
    assert ran.returncode == 0, ran.stderr
    assert compare.postgres_rows(postgresql, source_db, "orders") == _query(mariadb, shards)


def test_a_column_one_merged_member_adds_with_a_default_reaches_only_its_rows(
    tmp_path, mariadb, mariadb_target, postgresql, source_db
):
    """MySQL gives a member's rows an added column's DEFAULT without row events; in the
    merged table the column is every member's, and the others' rows hold NULL there ("a
    column a member lacks is NULL"), as a renamed column's old name does for the member
    that renamed it. The member is read again, its rows replacing theirs by key."""
    mariadb.execute(
        "CREATE TABLE part_a (id INT PRIMARY KEY, v INT)",
        "CREATE TABLE part_b (id INT PRIMARY KEY, v INT)",
        "INSERT INTO part_a SELECT seq, seq FROM seq_1_to_40",
        "INSERT INTO part_b SELECT seq, seq FROM seq_101_to_140",
        database=source_db,
    )
    selected = f"{source_db}.part_[ab]"
    sinks = {
        "postgres": (postgres_sink(postgresql), "7350-7351"),
        "mariadb": (mysql_sink(mariadb_target), "7352-7353"),
        "iceberg": (iceberg_sink(tmp_path / "iceberg"), "7354-7355"),
    }
    pipelines = pipeline_per_sink(
        tmp_path, mariadb, selected, sinks, "member-default", {"schema.change.behavior": "evolve"}
    )
    for path, _ in pipelines.values():
        definition = yaml.safe_load(path.read_text())
        definition["route"] = [{"source-table": selected, "sink-table": f"{source_db}.parts"}]
        write_pipeline(path, definition)

    def write() -> None:
        mariadb.execute(
            "ALTER TABLE part_a ADD COLUMN flag INT NOT NULL DEFAULT 7",
            "ALTER TABLE part_a ADD COLUMN code CHAR(2) NOT NULL",  # MySQL's implicit default: ''
            "ALTER TABLE part_b RENAME COLUMN v TO w",  # part_a keeps v: part_b's rows hold NULL there
            "INSERT INTO part_a VALUES (41, 41, 8, 'x')",
            "INSERT INTO part_b VALUES (141, 141)",
            database=source_db,
        )

    def expected() -> list[tuple]:
        return compare.query_rows(
            mariadb,
            f"SELECT id, v, flag, code, NULL FROM `{source_db}`.part_a "
            f"UNION ALL SELECT id, NULL, NULL, NULL, w FROM `{source_db}`.part_b",
        )

    stream_until_equal(
        pipelines,
        sluice_env(mariadb, postgresql, mariadb_target),
        write,
        expected,
        {
            "postgres": lambda: compare.postgres_rows(postgresql, source_db, "parts"),
            "mariadb": lambda: compare.source_rows(mariadb_target, source_db, "parts"),
            "iceberg": lambda: _lakehouse_rows(sinks["iceberg"][0], f"{source_db}.parts"),
        },
    )


def test_a_partition_statement_on_a_merged_member_stops_the_pipeline_naming_it(
    tmp_path, mariadb, postgresql, source_db
):
    """TRUNCATE PARTITION removes rows with no row event; a table alone in its target is
    read again by range, but a merged member's range in the target holds the other members'
    rows too: it stops before the statement, as a merged member's TRUNCATE does."""
    mariadb.execute(
        "CREATE TABLE part_a (id INT PRIMARY KEY, v INT) PARTITION BY RANGE (id) "
        "(PARTITION p0 VALUES LESS THAN (100), PARTITION p1 VALUES LESS THAN MAXVALUE)",
        "CREATE TABLE part_b (id INT PRIMARY KEY, v INT)",
        "INSERT INTO part_a VALUES (1, 1), (150, 150)",
        "INSERT INTO part_b VALUES (2, 2), (151, 151)",
        database=source_db,
    )
    selected = f"{source_db}.part_[ab]"
    definition = pipeline_yaml(mariadb, selected, postgres_sink(postgresql), **{"server-id": "7356-7357"})
    definition["pipeline"]["schema.change.behavior"] = "evolve"
    definition["route"] = [{"source-table": selected, "sink-table": f"{source_db}.parts"}]
    pipeline, state = write_pipeline(tmp_path / "p.yaml", definition), tmp_path / "state"
    process = start_sluice(pipeline, state, sluice_env(mariadb, postgresql))
    try:
        wait_until_in_binlog_phase(process, state, time.monotonic() + 120)
        mariadb.execute("ALTER TABLE part_a TRUNCATE PARTITION p0", database=source_db)
        _, err = process.communicate(timeout=120)
    finally:
        kill_pipeline(process)
    assert process.returncode == 1, err
    assert (
        f"changes the rows of {source_db}.part_a without row events in the binlog, and {source_db}.part_a is merged "
        f"with other tables into {source_db}.parts, whose rows a range there holds too: rows the statement removed "
        "cannot be found by reading it again"
    ) in err, err
    assert len(compare.postgres_rows(postgresql, source_db, "parts")) == 4  # nothing was lost meanwhile
