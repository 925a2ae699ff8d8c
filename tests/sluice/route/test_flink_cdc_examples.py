"""Flink CDC users' YAML runs unchanged: the route and transform pipelines of Flink CDC's own
end-to-end tests (TransformE2eITCase, over its transform_test.sql tables), into the values
sink, give the rows Flink CDC's tests expect of them."""

from __future__ import annotations

import hashlib
import hmac
import signal
import textwrap
import time
import zipfile
from collections.abc import Callable

import psycopg
import pytest

from tests.harness import compare
from tests.harness.lakehouse import iceberg_sink, lakehouse_column_rows
from tests.harness.pipelines import (
    run_sluice,
    sluice_env,
    start_sluice,
    stream_until_equal,
    wait_until_in_binlog_phase,
)

TABLES = (
    "CREATE TABLE TABLEALPHA (ID INT NOT NULL, VERSION VARCHAR(17), PRICEALPHA INT, AGEALPHA INT, "
    "NAMEALPHA VARCHAR(128), PRIMARY KEY (ID))",
    "INSERT INTO TABLEALPHA VALUES (1008, '8', 199, 17, 'Alice'), (1009, '8.1', 0, 18, 'Bob'), "
    "(1010, '10', 99, 19, 'Carol'), (1011, '11', 59, 20, 'Dave')",
    "CREATE TABLE TABLEBETA (ID INT NOT NULL, VERSION VARCHAR(17), CODENAMESBETA VARCHAR(17), AGEBETA INT, "
    "NAMEBETA VARCHAR(128), PRIMARY KEY (ID))",
    "INSERT INTO TABLEBETA VALUES (2011, '11', 'Big Sur', 21, 'Eva'), (2012, '12', 'Monterey', 22, 'Fred'), "
    "(2013, '13', 'Ventura', 23, 'Gus'), (2014, '14', 'Sonoma', 24, 'Henry')",
)


def source_block(mariadb, tables: str, server_ids: str, **options: str) -> str:
    """A Flink CDC YAML's `source:` block as users write it, its password from the environment."""
    lines = [
        "source:",
        "  type: mysql",
        f"  hostname: {mariadb.host}",
        f"  port: {mariadb.port}",
        f"  username: {mariadb.user}",
        "  password: ${SOURCE_PASSWORD}",
        f"  tables: {tables}",
        f"  server-id: {server_ids}",
        *(f"  {key}: {value}" for key, value in options.items()),
    ]
    return "\n".join(lines) + "\n"


def hetero_schema_transform(mariadb, db: str, startup: str, runtime: str) -> str:
    """testHeteroSchemaTransform's pipeline, as Flink CDC's test writes it (its values filled in)."""
    options = {"scan.startup.mode": startup, "server-time-zone": "UTC", "metadata.list": "op_ts"}
    return (
        source_block(mariadb, f"{db}.\\.*", "5400-5404", **options) + "sink:\n"
        "  type: values\n"
        "route:\n"
        f"  - source-table: {db}.\\.*\n"
        f"    sink-table: {db}.terminus\n"
        "transform:\n"
        f"  - source-table: {db}.TABLEALPHA\n"
        "    projection: ID, VERSION\n"
        "    filter: ID > 1008\n"
        f"  - source-table: {db}.TABLEBETA\n"
        "    projection: ID, VERSION\n"
        "pipeline:\n"
        f"  execution.runtime-mode: {runtime}\n"
        "  parallelism: 1"
    )


def printed_rows(out: str, db: str) -> list[str]:
    return sorted(line.split("> ", 1)[1] for line in out.splitlines() if line.startswith(f"{db}.terminus> "))


def test_the_hetero_schema_transform_in_batch_mode(tmp_path, mariadb, source_db):
    mariadb.execute(*TABLES, database=source_db)
    path = tmp_path / "pipeline.yaml"
    path.write_text(hetero_schema_transform(mariadb, source_db, "snapshot", "BATCH"))
    ran = run_sluice(path, tmp_path / "state", sluice_env(mariadb))
    assert ran.returncode == 0, ran.stderr
    # Flink CDC's expected DataChangeEvents: [1009, 8.1], [1010, 10], [1011, 11], [2011, 11], [2012, 12], [2014, 14]
    # (its list leaves out [2013, 13], which its TABLEBETA rule, without a filter, keeps: so does Sluice).
    assert printed_rows(ran.stdout, source_db) == sorted(
        f"+I[{i}, '{v}']"
        for i, v in [(1009, "8.1"), (1010, "10"), (1011, "11"), (2011, "11"), (2012, "12"), (2013, "13"), (2014, "14")]
    )


def test_the_hetero_schema_transform_streaming(tmp_path, mariadb, source_db):
    mariadb.execute(*TABLES, database=source_db)
    path = tmp_path / "pipeline.yaml"
    path.write_text(hetero_schema_transform(mariadb, source_db, "initial", "STREAMING"))
    state = tmp_path / "state"
    process = start_sluice(path, state, sluice_env(mariadb))
    try:
        wait_until_in_binlog_phase(process, state, time.monotonic() + 120)
        mariadb.execute(
            "UPDATE TABLEALPHA SET VERSION='100' WHERE id=1009",
            "INSERT INTO TABLEALPHA VALUES (3007, '7', 79, 16, 'IINA')",
            "DELETE FROM TABLEBETA WHERE id=2011",
            database=source_db,
        )
        time.sleep(3)
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    lines = [line.split("> ", 1)[1] for line in out.splitlines() if line.startswith(f"{source_db}.terminus> ")]
    # Flink CDC's expected changes: -U [1009, 8.1] +U [1009, 100]; +I [3007, 7]; -D [2011, 11].
    assert lines[-4:] == ["-U[1009, '8.1']", "+U[1009, '100']", "+I[3007, '7']", "-D[2011, '11']"], lines


def test_batch_mode_needs_a_snapshot_startup(tmp_path, mariadb, source_db):
    path = tmp_path / "pipeline.yaml"
    path.write_text(hetero_schema_transform(mariadb, source_db, "initial", "BATCH"))
    ran = run_sluice(path, tmp_path / "state", sluice_env(mariadb))
    assert ran.returncode != 0 and "pipeline.execution.runtime-mode: BATCH reads a snapshot and stops" in ran.stderr


UDF_MODULE = """
import os


class AddOne:
    def open(self, context) -> None:
        self.step = int(context.configuration().get("step", "1"))
        self.log = context.configuration()["lifecycle-log"]
        self._say("open")

    def eval(self, value: int) -> int:
        return value + self.step

    def close(self) -> None:
        self._say("close")

    def _say(self, what: str) -> None:
        with open(self.log, "a") as log:
            log.write(f"{what} {os.getpid()}\\n")


class Format:
    def eval(self, pattern: str, *values) -> str:
        return pattern % values
"""
LABEL_CODE = """
import text_helpers
import number_helpers


def eval(note: str, qty: int) -> str:
    return text_helpers.shout(note) + "/" + number_helpers.doubled(qty)
"""


def _python_files(directory) -> list[str]:
    """transform.md's python-files: a directory and a .zip archive of modules."""
    (directory / "deps").mkdir()
    (directory / "deps" / "text_helpers.py").write_text("def shout(s):\n    return s.upper()\n")
    with zipfile.ZipFile(directory / "deps.zip", "w") as archive:
        archive.writestr("number_helpers.py", "def doubled(n):\n    return str(n * 2)\n")
    return [str(directory / "deps"), str(directory / "deps.zip")]


@pytest.mark.parametrize("target", ["postgresql", "iceberg"])
def test_a_flink_cdc_yaml_with_python_functions_local_time_soft_deletes_and_key_changes(
    tmp_path, mariadb, postgresql, source_db, target
):
    """A Flink CDC YAML runs unchanged through snapshot (on Spark's executors), streaming, ADD
    COLUMN and a restart: a Python class UDF beside it with `options` (read in
    open(context)) and `close`, Flink CDC's inline Python UDF form (`python-code`,
    `python-executable`, `python-files` with a directory and a .zip), a TIMESTAMP column
    formatted on `pipeline.local-time-zone`'s clock, SOFT_DELETE with a key-changing update
    (Flink's -D and +I), a hashed column (its key from the environment), and two ALL_MATCH
    routes of the table (into its own name and into a copy)."""
    mariadb.execute(
        "SET time_zone = '+00:00'",
        "CREATE TABLE orders (id INT PRIMARY KEY, qty INT, note VARCHAR(16), ts TIMESTAMP NULL)",
        "INSERT INTO orders SELECT seq, seq * 10, CONCAT('n', seq), '2024-01-15 20:30:00' FROM seq_1_to_30",
        database=source_db,
    )
    (tmp_path / "shop_udfs.py").write_text(UDF_MODULE)
    lifecycle = tmp_path / "lifecycle.log"
    files = "".join(f"        - {f}\n" for f in _python_files(tmp_path))
    sink = (
        f"  type: jdbc\n  url: {postgresql.url}\n  username: {postgresql.user}\n  password: ${{TARGET_PASSWORD}}\n"
        if target == "postgresql"
        else f"  type: iceberg\n  catalog.properties.type: sql\n"
        f"  catalog.properties.uri: sqlite:///{tmp_path}/catalog.db\n"
        f"  catalog.properties.warehouse: file://{tmp_path}/warehouse\n"
    )
    path = tmp_path / "pipeline.yaml"
    options = {
        "scan.snapshot.read-on-driver": "false",
        "scan.incremental.snapshot.chunk.size": "8",
        "server-time-zone": "UTC",
    }
    path.write_text(
        source_block(mariadb, f"{source_db}.orders", "6960-6963", **options) + f"sink:\n{sink}"
        "route:\n"  # ALL_MATCH, Flink CDC's default: the table goes into both
        f"  - source-table: {source_db}.orders\n"
        f"    sink-table: {source_db}.orders\n"
        f"  - source-table: {source_db}.orders\n"
        f"    sink-table: {source_db}.orders_copy\n"
        "transform:\n"
        f"  - source-table: {source_db}.orders\n"
        "    projection: \\*, addone(qty) AS qty_plus, format('%s/%s', note, qty) AS label, py_label(note, qty) AS "
        "shouted, __data_event_type__ AS op, DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm:ss') AS local_ts, "
        "HMAC_SHA256(note, 'NOTE_KEY') AS note_hash\n"
        "    converter-after-transform: SOFT_DELETE\n"
        "pipeline:\n"
        f"  name: udf-{target}-{source_db}\n"
        "  parallelism: 2\n"
        "  local-time-zone: Asia/Shanghai\n"
        "  schema.change.behavior: evolve\n"
        "  user-defined-function:\n"
        "    - name: addone\n"
        "      classpath: shop_udfs.AddOne\n"
        "      options:\n"
        "        step: 100\n"
        f"        lifecycle-log: {lifecycle}\n"
        "    - name: format\n"
        "      classpath: shop_udfs.Format\n"
        "    - name: py_label\n"
        "      python-code: |\n"
        + textwrap.indent(LABEL_CODE, "        ")
        + "      python-executable: /usr/bin/python3\n"
        "      python-files:\n" + files
    )

    def hashed(note: str) -> str:
        return hmac.new(b"note-key", note.encode(), hashlib.sha256).hexdigest()

    local = "2024-01-16 04:30:00"  # 20:30 UTC on Shanghai's clock

    def row(i: int, qty: int, note: str, op: str, extra: int | None = None) -> tuple:
        return (i, qty + 100, f"{note}/{qty}", f"{note.upper()}/{qty * 2}", op, local, hashed(note), extra)

    first = {i: row(i, i * 10, f"n{i}", "+I") for i in range(1, 31)}
    first |= {1: row(1, 1, "n1", "+U"), 2: row(2, 20, "n2", "-D"), 31: row(31, 5, "late", "+I")}
    first |= {3: row(3, 30, "n3", "-D"), 103: row(103, 30, "n3", "+I")}  # a key change: a delete and an insert
    second = first | {4: row(4, 40, "n4", "+U", 7), 32: row(32, 6, "new", "+I", 5)}
    columns = ("id", "qty_plus", "label", "shouted", "op", "local_ts", "note_hash", "extra")

    def rows(wanted: tuple[str, ...]) -> Callable[[], tuple[list[tuple] | None, ...]]:
        """Both targets' rows (each the same)."""

        def read(table_name: str) -> list[tuple] | None:
            if target == "postgresql":
                try:
                    found = compare.postgres_rows(postgresql, source_db, table_name, ", ".join(wanted))
                except psycopg.errors.Error:  # not created yet, or not altered yet
                    return None
                return sorted(found)
            return lakehouse_column_rows(iceberg_sink(tmp_path), f"{source_db}.{table_name}", wanted)

        return lambda: (read("orders"), read("orders_copy"))

    def write_first() -> None:
        mariadb.execute(
            "SET time_zone = '+00:00'",
            "UPDATE orders SET qty = 1 WHERE id = 1",
            "DELETE FROM orders WHERE id = 2",
            "INSERT INTO orders VALUES (31, 5, 'late', '2024-01-15 20:30:00')",
            "UPDATE orders SET id = 103 WHERE id = 3",
            database=source_db,
        )

    def write_second() -> None:
        mariadb.execute(
            "SET time_zone = '+00:00'",
            "ALTER TABLE orders ADD COLUMN extra INT",
            "INSERT INTO orders VALUES (32, 6, 'new', '2024-01-15 20:30:00', 5)",
            "UPDATE orders SET extra = 7 WHERE id = 4",
            database=source_db,
        )

    env = {**sluice_env(mariadb, postgresql), "NOTE_KEY": "note-key"}  # on Kubernetes: spec.secretEnv
    pipelines = {target: (path, tmp_path / "state")}
    without_extra = sorted(r[:-1] for r in first.values())
    stream_until_equal(pipelines, env, write_first, lambda: (without_extra,) * 2, {target: rows(columns[:-1])})
    said = [line.split()[0] for line in lifecycle.read_text().splitlines()]
    assert said.count("open") >= 2 and said.count("open") == said.count("close"), said  # driver and executors
    stream_until_equal(pipelines, env, write_second, lambda: (sorted(second.values()),) * 2, {target: rows(columns)})


@pytest.mark.parametrize("on_executors", [True, False])
def test_a_python_function_that_raises_stops_the_pipeline_naming_it_the_table_and_the_row(
    tmp_path, mariadb, postgresql, source_db, on_executors
):
    mariadb.execute(
        "CREATE TABLE orders (id INT PRIMARY KEY, qty INT)",
        "INSERT INTO orders SELECT seq, seq FROM seq_1_to_20",
        database=source_db,
    )
    (tmp_path / "picky_udfs.py").write_text(
        "class Picky:\n"
        "    def eval(self, qty: int) -> int:\n"
        "        if qty == 13:\n"
        "            raise ValueError('unlucky')\n"
        "        return qty\n"
    )
    path = tmp_path / "pipeline.yaml"
    options = {
        "scan.startup.mode": "snapshot",
        "scan.snapshot.read-on-driver": str(not on_executors).lower(),
        "scan.incremental.snapshot.chunk.size": "5",
    }
    path.write_text(
        source_block(mariadb, f"{source_db}.orders", "6966-6969", **options) + "sink:\n"
        "  type: jdbc\n"
        f"  url: {postgresql.url}\n"
        f"  username: {postgresql.user}\n"
        "  password: ${TARGET_PASSWORD}\n"
        "transform:\n"
        f"  - source-table: {source_db}.orders\n"
        "    projection: id, picky(qty) AS q\n"
        "pipeline:\n"
        f"  name: picky-{on_executors}-{source_db}\n"
        "  user-defined-function:\n"
        "    - name: picky\n"
        "      classpath: picky_udfs.Picky\n"
    )
    ran = run_sluice(path, tmp_path / "state", sluice_env(mariadb, postgresql))
    assert ran.returncode != 0
    said = ran.stderr.strip().splitlines()[-1]  # the exit line, and nothing after it
    assert f"transform[0].projection ({source_db}.orders, id=13): user-defined function picky failed: " in said
    assert "ValueError: unlucky" in said
