"""Iceberg and Delta Lake targets, read back with the formats' own libraries (pyiceberg,
deltalake), partitioned as partition.key says: the snapshot (its chunks written as data
files per partition by Spark's executors), then
inserts, updates (a key changed too) and deletes, each table equal to the source row for
row; after a SIGKILL the next run commits no change twice, and a run that lost its state
adopts the one the target keeps; a writer of an older run is
fenced off."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import signal
import subprocess
import threading
import time
from datetime import date, datetime, timedelta
from decimal import Decimal

import pytest

from sluice.event.row_change import ChangeBatch, ChangeRow, RowKind
from sluice.event.schema_change import DropColumn, RenameColumn, RenameTable, SchemaEvolution
from sluice.event.snapshot_split import SnapshotSplit
from sluice.sink.arrow_rows import ArrowRows, source_rows
from sluice.sink.lakehouse.commit_records import held_already
from sluice.sink.lakehouse.iceberg import IcebergTables, with_secret
from sluice.sink.lakehouse.sink import LakehouseSink
from sluice.sink.lakehouse.table_format import END, EPOCH, PIPELINE, Fenced, TableCommit
from sluice.source.offset import BinlogOffset
from sluice.source.schema import Column, TableSchema, read_table_schema
from tests.harness import compare
from tests.harness.lakehouse import (
    assert_no_change_committed_twice,
    delta_sink,
    iceberg_sink,
    lakehouse_rows,
    lakehouse_sink,
    partitioned_by,
)
from tests.harness.pipelines import (
    SLUICE,
    kill_pipeline,
    pipeline_yaml,
    sluice_env,
    start_sluice,
    wait_until_in_binlog_phase,
    write_pipeline,
)

pytestmark = pytest.mark.slow

FORMATS = {"iceberg": iceberg_sink, "delta": delta_sink}
# How the kill test partitions `items` (partition.key): Iceberg by transforms, Delta by a column.
PARTITIONED = {"iceberg": "{db}.items:month(bought),bucket[2](id)", "delta": "{db}.items:kind"}


def _source(mariadb, source_db):
    mariadb.execute(
        "CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(20), price DECIMAL(10,2), bought DATETIME(3), "
        "seen TIMESTAMP(6) NULL, took TIME, big BIGINT UNSIGNED, body TEXT, kind VARCHAR(10))",
        "INSERT INTO items WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 2500) "
        "SELECT n, CONCAT('item ', n), n / 7, '2024-02-29 10:11:12.345' + INTERVAL n HOUR, "
        "'2001-01-01 00:00:00.000001' + INTERVAL n SECOND, SEC_TO_TIME(n * 97 - 80000), 18446744073709551615 - n, "
        "IF(n % 5 = 0, NULL, CONCAT('nul\\0', n)), ELT(n % 4 + 1, 'book', 'tool', 'a b/c', NULL) FROM s",
        database=source_db,
    )
    conn = mariadb.connect(source_db)
    schema = read_table_schema(conn, source_db, "items", None)
    conn.close()
    return schema


def sluice_command(command: str, pipeline, env, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*SLUICE, command, str(pipeline), *args], env=env, capture_output=True, text=True, timeout=300
    )


def sluice_sink_end(pipeline, env, table_id: str):
    return lakehouse_sink(pipeline.read_text(), env).table_end(table_id)


def pipeline_yaml_for(sink: dict) -> dict:
    """A definition around a sink, for a sink made without a running pipeline."""
    source = {"type": "mysql", "hostname": "localhost", "username": "cdc", "tables": "db.t"}
    return {"source": source, "sink": sink, "pipeline": {"name": "direct"}}


def _wait_equal(mariadb, source_db, sink, schema, process, deadline) -> None:
    while True:
        expected = compare.typed_rows(compare.selected_rows(mariadb, source_db, "items"), schema)
        actual = lakehouse_rows(sink, schema)
        if actual is not None and compare.typed_rows(actual, schema) == expected:
            return
        assert process.poll() is None, process.communicate()[1]
        assert time.monotonic() < deadline, compare.diff(expected, compare.typed_rows(actual or [], schema))
        time.sleep(0.3)


@pytest.mark.parametrize("target", FORMATS)
def test_a_partitioned_lakehouse_table_follows_the_source_exactly_once_through_kills(
    tmp_path, mariadb, source_db, target
):
    schema = _source(mariadb, source_db)
    sink = {**FORMATS[target](tmp_path / "lake"), "partition.key": PARTITIONED[target].format(db=source_db)}
    definition = pipeline_yaml(
        mariadb,
        f"{source_db}.items",
        {**sink, "sink.commit.interval": "200ms"},
        name=f"lake-{target}",
        **{
            "scan.incremental.snapshot.chunk.size": 300,
            "scan.snapshot.read-on-driver": False,
            "server-id": "6970-6975",
        },
    )
    pipeline = write_pipeline(tmp_path / "pipeline.yaml", definition)
    env = sluice_env(mariadb)
    deadline = time.monotonic() + 300
    process = start_sluice(pipeline, tmp_path / "state", env)
    wait_until_in_binlog_phase(process, tmp_path / "state", deadline)
    _wait_equal(mariadb, source_db, sink, schema, process, deadline)

    mariadb.execute(
        "UPDATE items SET name = CONCAT(name, ' v2'), seen = NULL WHERE id % 3 = 0",
        "UPDATE items SET kind = 'moved', bought = NULL WHERE id % 7 = 0",  # into another partition
        "UPDATE items SET id = id + 10000 WHERE id % 11 = 0",  # a key changes: a delete and an insert
        "DELETE FROM items WHERE id % 13 = 0",
        "INSERT INTO items (id, name, took, big) VALUES (20001, 'new', '-838:59:59', 0), (20002, NULL, '838:59:59', 1)",
        database=source_db,
    )
    _wait_equal(mariadb, source_db, sink, schema, process, deadline)

    kill_pipeline(process)  # changes made while no pipeline runs, and the batch cut short at the kill replayed
    mariadb.execute(
        "UPDATE items SET price = price + 1 WHERE id < 400",
        "DELETE FROM items WHERE id BETWEEN 1000 AND 1100",
        database=source_db,
    )
    process = start_sluice(pipeline, tmp_path / "state", env)
    _wait_equal(mariadb, source_db, sink, schema, process, deadline)

    kill_pipeline(process)  # and the state is lost with it: the target's records are adopted
    shutil.rmtree(tmp_path / "state")
    mariadb.execute("UPDATE items SET name = 'after the loss' WHERE id < 50", database=source_db)
    process = start_sluice(pipeline, tmp_path / "state", env)
    _wait_equal(mariadb, source_db, sink, schema, process, deadline)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert "adopting the records of pipeline" in err and "splits done" not in err, err

    assert_no_change_committed_twice(pipeline, env, schema.table_id)
    assert sluice_sink_end(pipeline, env, schema.table_id) is not None
    assert partitioned_by(sink, schema.table_id) == PARTITIONED[target].split(":")[1].split(",")


@pytest.mark.parametrize("target", FORMATS)
def test_verify_names_the_ranges_changed_behind_the_pipeline_and_repair_as_a_run_mends_them(
    tmp_path, mariadb, source_db, target
):
    """`sluice verify` reads each key range of the table as of its newest commit with an
    end, beside the running pipeline, and names the ranges another writer changed; `--repair`
    commits as a run of the pipeline (the next run of it fences this one off in turn)."""
    schema = _source(mariadb, source_db)
    sink = FORMATS[target](tmp_path / "lake")
    definition = pipeline_yaml(
        mariadb,
        f"{source_db}.items",
        {**sink, "sink.commit.interval": "200ms"},
        name=f"verify-{target}",
        **{"scan.incremental.snapshot.chunk.size": 300, "server-id": "6980-6985"},
    )
    pipeline = write_pipeline(tmp_path / "pipeline.yaml", definition)
    env = sluice_env(mariadb)
    deadline = time.monotonic() + 300
    process = start_sluice(pipeline, tmp_path / "state", env)
    wait_until_in_binlog_phase(process, tmp_path / "state", deadline)
    mariadb.execute("UPDATE items SET name = 'streamed' WHERE id = 2000", database=source_db)
    _wait_equal(mariadb, source_db, sink, schema, process, deadline)

    other = lakehouse_sink(pipeline.read_text(), env)  # another writer: no record of the pipeline's
    (row,) = [r for r in source_rows(schema, other.tables.scan(schema)) if r[0] == 150]
    changed = ArrowRows(schema, other.values).table([(150, "changed", *row[2:])])
    other.tables.commit(schema, TableCommit({}, ("id",), [(150,), (650,)], rows=changed), lambda _: None)
    mariadb.execute("UPDATE items SET name = 'more' WHERE id BETWEEN 2100 AND 2110", database=source_db)
    found = sluice_command("verify", pipeline, env)
    assert found.returncode == 3, found.stderr
    ranges = re.findall(r"^mismatch: \S+ \[(\S+), (\S+)\)", found.stdout, re.M)
    bounds = [(float(start), float(end)) for start, end in ranges]
    assert len(bounds) == 2 and bounds[0][0] <= 150 < bounds[0][1] and bounds[1][0] <= 650 < bounds[1][1], ranges
    assert "150 differs in name" in found.stdout and "id=650 not in the target" in found.stdout, found.stdout

    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == 0
    repaired = sluice_command("verify", pipeline, env, "--repair")
    assert repaired.returncode == 0, repaired.stderr
    assert "committing as run" in repaired.stderr and "2 repaired" in repaired.stdout, repaired.stdout
    assert "0 differ" in sluice_command("verify", pipeline, env).stdout

    process = start_sluice(pipeline, tmp_path / "state", env)  # the next run goes on from the repair
    mariadb.execute("DELETE FROM items WHERE id = 151", database=source_db)
    _wait_equal(mariadb, source_db, sink, schema, process, deadline)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == 0


@pytest.mark.parametrize("target", FORMATS)
def test_a_writer_of_an_older_run_is_fenced_off(tmp_path, mariadb, source_db, target):
    schema = _source(mariadb, source_db)
    sink = FORMATS[target](tmp_path / "lake")
    text = json.dumps(pipeline_yaml(mariadb, f"{source_db}.items", sink, name=f"fence-{target}"))
    env = sluice_env(mariadb)
    older, newer = lakehouse_sink(text, env), lakehouse_sink(text, env)
    older.prepare([schema])
    newer.prepare([schema])  # a new run: a pod that came back while the old one still runs
    assert newer.epoch == older.epoch + 1
    with pytest.raises(Fenced, match=f"runs as epoch {newer.epoch} .* epoch {older.epoch} was fenced off"):
        older.delete_chunk_keys(schema, [1])
    newest = newer.tables.records(schema.table_id)[0]
    assert newest[PIPELINE] == f"fence-{target}" and newest[EPOCH] == str(newer.epoch)


def test_the_catalogs_secret_goes_where_the_catalog_takes_it():
    """`password` (from a Secret or the environment): a sql catalog's database password in
    its uri, escaped; a rest catalog's credential. It never shows in the sink's repr."""
    sql = with_secret({"type": "sql", "uri": "postgresql+psycopg://loader@db:5432/catalog"}, "p@ss:w/rd")
    assert sql["uri"] == "postgresql+psycopg://loader:p%40ss%3Aw%2Frd@db:5432/catalog"
    assert with_secret({"type": "rest", "uri": "https://cat"}, "id:secret")["credential"] == "id:secret"
    assert "p@ss" not in repr(IcebergTables("iceberg", sql, {}))


KEY_VALUES = {  # a chunkable key type and five ascending values of it
    "int": [-2, -1, 0, 1, 2],
    "decimal(10,2)": [Decimal("-1.5"), Decimal("0.25"), Decimal("0.5"), Decimal("7"), Decimal("99.99")],
    "date": [date(1970, 1, 1), date(2020, 1, 2), date(2020, 1, 3), date(2024, 2, 29), date(9999, 12, 31)],
    "datetime(6)": [datetime(2020, 1, i, 1, 2, 3, 456789) for i in range(1, 6)],
    "timestamp(6)": [datetime(2020, 1, i, 1, 2, 3, 456789) for i in range(1, 6)],
    "time": [timedelta(hours=h) for h in (-800, -1, 0, 1, 838)],
    "varbinary(10)": [b"\x00", b"\x01'", b"a", b"b\xff", b"\xff"],
    "varchar(10)": ["", "a'b", "b", "c%", "\u00e9"],
}


@pytest.mark.parametrize("target", FORMATS)
@pytest.mark.parametrize("column_type", KEY_VALUES)
def test_a_chunk_replaces_exactly_its_key_range(tmp_path, target, column_type):
    """The rows of [start, end) and no other go before the chunk's rows come, whatever the
    chunk key's type (the format's row filters take each as its own type)."""
    data_type = column_type.split("(")[0]
    key = Column("k", data_type, column_type, False, "utf8mb4_bin" if data_type == "varchar" else None)
    key = dataclasses.replace(key, numeric_precision=10, numeric_scale=2) if data_type == "decimal" else key
    schema = TableSchema("db", "t", (key, Column("v", "int", "int", True)), ("k",), "k")
    definition = pipeline_yaml_for(FORMATS[target](tmp_path / "lake"))
    sink = lakehouse_sink(json.dumps(definition), {})
    sink.prepare([schema])
    values = KEY_VALUES[column_type]
    sink.writer().write_changes(
        ChangeBatch(
            [ChangeRow(schema, RowKind.INSERT, (v, i), 0, BinlogOffset("b.1", 4 + i)) for i, v in enumerate(values)]
        ),
        BinlogOffset("b.1", 100),
        False,
    )
    sink.commit(schema, TableCommit({}, cleared_ranges=[SnapshotSplit("db.t", 1, values[1], values[3])]))
    left = sorted(v for _, v in source_rows(schema, sink.tables.scan(schema)))
    assert left == [0, 3, 4]
    sink.commit(schema, TableCommit({}, cleared_ranges=[SnapshotSplit("db.t", 0, None, values[3])]))
    assert sorted(v for _, v in source_rows(schema, sink.tables.scan(schema))) == [3, 4]


@pytest.mark.parametrize("target", FORMATS)
def test_a_partition_column_renamed_or_dropped_and_a_changed_partition_key_are_followed(tmp_path, target):
    """The rows stay as they were while the table's partitioning follows: a renamed partition
    column keeps partitioning it, a dropped one no longer does, partition.key changed between
    runs repartitions the table (Iceberg's spec evolves, Delta's rows are rewritten), and a
    table renamed onto a name the option gives is partitioned as it says."""
    schema = TableSchema(
        "db",
        "t",
        (
            Column("id", "int", "int", False),
            Column("kind", "varchar", "varchar(9)", True),
            Column("v", "int", "int", True),
        ),
        ("id",),
        "id",
    )
    lake = FORMATS[target](tmp_path / "lake")
    sink = lakehouse_sink(json.dumps(pipeline_yaml_for({**lake, "partition.key": "db.t:kind,v"})), {})
    sink.prepare([schema])
    rows = [(i, ("a", "b", None)[i % 3], i % 2) for i in range(30)]
    sink.commit(schema, TableCommit({}, rows=ArrowRows(schema, sink.values).table(rows)))
    assert partitioned_by(lake, "db.t") == ["kind", "v"]

    renamed = RenameColumn("db.t", "kind", "sort")
    sink.tables.apply(renamed, {"db.t": schema})
    schema = SchemaEvolution({"db.t": schema}, [renamed]).after["db.t"]
    sink.tables.apply(DropColumn("db.t", "v"), {"db.t": schema})
    schema = SchemaEvolution({"db.t": schema}, [DropColumn("db.t", "v")]).after["db.t"]
    assert partitioned_by(lake, "db.t") == ["sort"]
    assert sorted(source_rows(schema, sink.tables.scan(schema))) == [(i, k) for i, k, _ in rows]

    sink = lakehouse_sink(json.dumps(pipeline_yaml_for({**lake, "partition.key": "db.t:id"})), {})
    sink.prepare([schema])  # the next run, with the option changed
    assert partitioned_by(lake, "db.t") == ["id"]
    assert sorted(source_rows(schema, sink.tables.scan(schema))) == [(i, k) for i, k, _ in rows]

    # A swap's cut-over renames a table the option does not name onto one it does.
    sink = lakehouse_sink(json.dumps(pipeline_yaml_for({**lake, "partition.key": "db.u:sort"})), {})
    sink.tables.apply(RenameTable("db.t", "db.u"), {"db.t": schema})
    assert partitioned_by(lake, "db.u") == ["sort"]


@pytest.mark.parametrize("target", FORMATS)
def test_a_table_renamed_onto_a_name_the_target_still_holds_replaces_that_table(tmp_path, target):
    """A swap's RENAME TABLE t TO t_old succeeded at the source, so no t_old was there: the
    target's t_old is one an earlier swap renamed out of the capture, dropped at the source
    since (as pt-osc and gh-ost drop it). It gives way, as in a JDBC target, or the table's
    second swap would stop the pipeline."""
    schema = TableSchema("db", "t", (Column("id", "int", "int", False), Column("v", "int", "int", True)), ("id",), "id")
    old = dataclasses.replace(schema, table="t_old")
    sink = lakehouse_sink(json.dumps(pipeline_yaml_for(FORMATS[target](tmp_path / "lake"))), {})
    sink.prepare([schema, old])
    sink.commit(schema, TableCommit({}, rows=ArrowRows(schema, sink.values).table([(1, 10), (2, 20)])))
    sink.commit(old, TableCommit({}, rows=ArrowRows(old, sink.values).table([(9, 90)])))

    sink.tables.apply(RenameTable("db.t", "db.t_old"), {"db.t": schema})

    assert sorted(source_rows(old, sink.tables.scan(old))) == [(1, 10), (2, 20)]
    assert not sink.tables.exists("db.t")


@pytest.mark.parametrize("target", FORMATS)
def test_a_range_replaced_beside_the_binlog_writer_is_as_of_the_position_no_batch_passed_meanwhile(tmp_path, target):
    """Verification's repair in the driver runs beside the batches: the table is held from
    the position its rows are read as of to their commit, so a batch committed meanwhile is
    never undone by rows older than it (the source read takes its time here)."""
    schema = TableSchema("db", "t", (Column("id", "int", "int", False), Column("v", "int", "int", True)), ("id",), "id")
    sink = lakehouse_sink(json.dumps(pipeline_yaml_for(FORMATS[target](tmp_path / "lake"))), {})
    sink.prepare([schema])
    writer, keys, batches = sink.writer(), range(20), 12
    ends: list[tuple[BinlogOffset, int]] = []  # each batch's end, and the value it gave every key

    def rows_as_of(position: BinlogOffset) -> list[tuple]:
        time.sleep(0.05)  # the source's rows take a while to read
        value = max((v for end, v in ends if not position.is_before(end)), default=None)
        return [(k, value) for k in keys]

    def write() -> None:
        for n in range(batches):
            end = BinlogOffset("b.1", 100 * (n + 1))
            changes = [ChangeRow(schema, RowKind.INSERT, (k, n), 0, BinlogOffset("b.1", 100 * n + k)) for k in keys]
            writer.write_changes(ChangeBatch(changes), end, drop_split_records=True)
            ends.append((end, n))
            time.sleep(0.02)

    write_changes = threading.Thread(target=write)
    write_changes.start()
    while not ends:
        time.sleep(0.001)
    while write_changes.is_alive():
        sink.replace_range(schema, SnapshotSplit("db.t", 0, None, None), rows_as_of)
    write_changes.join()
    assert sorted(source_rows(schema, sink.tables.scan(schema))) == [(k, batches - 1) for k in keys]


@pytest.mark.parametrize("target", FORMATS)
def test_a_range_replaced_right_after_a_batchs_commit_into_the_table_is_as_of_that_batch(tmp_path, target):
    """A batch commits table by table, and only then is the run's position its end: a
    replacement that took the table's lock in between read the rows as of the batch before,
    and undid the batch in that table (seen once in a loaded test run)."""
    schema = TableSchema("db", "t", (Column("id", "int", "int", False), Column("v", "int", "int", True)), ("id",), "id")
    sink = lakehouse_sink(json.dumps(pipeline_yaml_for(FORMATS[target](tmp_path / "lake"))), {})
    sink.prepare([schema])
    writer = sink.writer()
    first, second = BinlogOffset("b.1", 100), BinlogOffset("b.1", 200)
    writer.write_changes(ChangeBatch([ChangeRow(schema, RowKind.INSERT, (1, 1), 0, first)]), first, False)
    rows = ArrowRows(schema, sink.values).table([(1, 2)])
    sink.commit(schema, TableCommit({END: json.dumps(second.to_json())}, schema.row_key, [(1,)], rows=rows))
    read_as_of: list[BinlogOffset] = []

    def rows_as_of(position: BinlogOffset) -> list[tuple]:
        read_as_of.append(position)
        return [(1, 2 if not position.is_before(second) else 1)]

    sink.replace_range(schema, SnapshotSplit("db.t", 0, None, None), rows_as_of)

    assert read_as_of == [second]
    assert sorted(source_rows(schema, sink.tables.scan(schema))) == [(1, 2)]


def _data_files(sink: LakehouseSink, schema: TableSchema) -> int:
    """How many data files the table's current snapshot or version reads."""
    if isinstance(sink.tables, IcebergTables):
        return len(sink.tables.catalog.load_table(schema.table_id).inspect.files())
    return len(sink.tables._table(schema.table_id).get_add_actions())


@pytest.mark.parametrize("target", FORMATS)
def test_maintenance_compacts_small_files_and_deletes_what_no_kept_version_reads(tmp_path, target):
    """A commit a batch adds files; maintenance (here: at every batch, nothing retained)
    keeps their number bounded, the rows as they were, and the table's record where it was."""
    schema = TableSchema("db", "t", (Column("id", "int", "int", False), Column("v", "int", "int", True)), ("id",), "id")
    maintenance = {"sink.maintenance.interval": "1ms", "sink.maintenance.retention": "0s"}
    definition = pipeline_yaml_for(
        {**FORMATS[target](tmp_path / "lake"), **maintenance, "sink.maintenance.min-small-files": 5}
    )
    sink = lakehouse_sink(json.dumps(definition), {})
    sink.prepare([schema])
    writer = sink.writer()
    batches, held = 40, {}
    for n in range(batches):  # each batch updates a tenth of the keys and adds one
        keys = range(n % 10, 100 + n, 10)
        changes = [
            ChangeRow(schema, RowKind.INSERT, (k, n), 0, BinlogOffset("b.1", 10 * n + i)) for i, k in enumerate(keys)
        ]
        writer.write_changes(ChangeBatch(changes), BinlogOffset("b.1", 10 * n + 9), drop_split_records=True)
        held |= dict.fromkeys(keys, n)
        time.sleep(0.002)
    expected = sorted(held.items())
    assert sorted(source_rows(schema, sink.tables.scan(schema))) == expected
    assert _data_files(sink, schema) < 10, "small files were not compacted"
    assert sink.table_end(schema.table_id) == BinlogOffset("b.1", 10 * (batches - 1) + 9)
    stored = list((tmp_path / "lake").rglob("*.parquet"))
    assert len(stored) < 3 * 10, f"{len(stored)} data files kept: what no kept version reads was not deleted"


@pytest.mark.parametrize("target", FORMATS)
def test_an_added_columns_default_and_a_retyped_columns_values_reach_the_rows_the_table_held(
    tmp_path, mariadb, source_db, target
):
    """A lakehouse table's old files hold no value for a column added after them, nor one
    the format could take for a column it cannot widen: the table is read again after such
    an ALTER, so its rows hold the DEFAULT and the converted values as the source's do."""
    mariadb.execute(
        "CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(20))",
        "INSERT INTO items VALUES (1, 'a'), (2, 'b'), (3, 'c')",
        database=source_db,
    )
    sink = FORMATS[target](tmp_path / "lake")
    definition = pipeline_yaml(
        mariadb,
        f"{source_db}.items",
        {**sink, "sink.commit.interval": "200ms"},
        name=f"default-{target}",
        **{"server-id": "6980-6985"},
    )
    definition["pipeline"]["schema.change.behavior"] = "evolve"
    pipeline = write_pipeline(tmp_path / "pipeline.yaml", definition)
    deadline = time.monotonic() + 180
    process = start_sluice(pipeline, tmp_path / "state", sluice_env(mariadb))
    wait_until_in_binlog_phase(process, tmp_path / "state", deadline)
    mariadb.execute(
        "ALTER TABLE items ADD COLUMN qty INT NOT NULL DEFAULT 7, ADD COLUMN note VARCHAR(10) DEFAULT 'none'",
        "INSERT INTO items VALUES (4, 'd', 1, NULL)",
        "ALTER TABLE items MODIFY qty DECIMAL(20,0) NOT NULL",  # a type Iceberg cannot widen int to
        "INSERT INTO items VALUES (5, 'e', 12345678901234567890, 'big')",
        database=source_db,
    )
    conn = mariadb.connect(source_db)
    schema = read_table_schema(conn, source_db, "items", None)
    conn.close()
    _wait_equal(mariadb, source_db, sink, schema, process, deadline)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == 0


def test_a_table_skips_what_it_committed_by_gtid_and_never_a_promoted_servers_changes():
    """After a crash between two tables' commits, a table skips the batch its end holds;
    after a failover, positions on the promoted server say nothing of the old one's, and
    GTID sets decide."""
    done = BinlogOffset("mysql-bin.000009", 5000, 0, "0-1-100")
    replayed = BinlogOffset("mysql-bin.000009", 4000, 0, "0-1-90")
    promoted = BinlogOffset("mysql-bin.000001", 400, 0, "0-2-101")  # a lower position, a later set
    assert held_already(replayed, done)(BinlogOffset("mysql-bin.000009", 3000))
    assert not held_already(promoted, done)(BinlogOffset("mysql-bin.000001", 300))
    assert not held_already(promoted, None)(BinlogOffset("mysql-bin.000001", 300))
    inside = BinlogOffset("mysql-bin.000009", 4800, 0, "0-1-100", transaction=4500)  # a huge one, in pieces
    assert held_already(inside, done)(BinlogOffset("mysql-bin.000009", 4600))
    assert not held_already(BinlogOffset("mysql-bin.000009", 5200), done)(BinlogOffset("mysql-bin.000009", 5100))


@pytest.mark.parametrize("target", FORMATS)
def test_a_range_of_a_key_under_a_collation_is_read_and_replaced_by_its_chunk_keys(tmp_path, target):
    """Verification's ranges of a key the target cannot order as the source does: the rows
    of the chunk keys given for the position read (every row of a key several rows share),
    and a repair clears the rows' keys and the ones given besides, no other."""
    email = Column("email", "varchar", "varchar(20)", False, "utf8mb4_unicode_ci")
    schema = TableSchema("db", "t", (email, Column("v", "int", "int", False)), ("email", "v"), "email")
    sink = lakehouse_sink(json.dumps(pipeline_yaml_for(FORMATS[target](tmp_path / "lake"))), {})
    sink.prepare([schema])
    rows = [("a@x", 1), ("B@x", 2), ("B@x", 5), ("c@x", 3)]
    end = BinlogOffset("b.1", 100)
    inserts = [ChangeRow(schema, RowKind.INSERT, row, 0, BinlogOffset("b.1", 4 + i)) for i, row in enumerate(rows)]
    sink.writer().write_changes(ChangeBatch(inserts), end, False)
    whole = SnapshotSplit("db.t", 0, None, None)
    asked: list[BinlogOffset] = []

    def keys_as_of(position: BinlogOffset) -> list:
        asked.append(position)
        return ["B@x", None]

    found, position = sink.read_range(schema, whole, keys_as_of)
    assert sorted(found) == [("B@x", 2), ("B@x", 5)] and asked == [position] and position == end

    sink.replace_range(schema, whole, lambda _: [("B@x", 20)], keys_also=["a@x", None])
    assert sorted(source_rows(schema, sink.tables.scan(schema))) == [("B@x", 20), ("c@x", 3)]
