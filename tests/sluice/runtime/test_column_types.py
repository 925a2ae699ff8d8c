"""Every column type, through the snapshot and then the binlog, arrives in PostgreSQL, in a
MariaDB target, in the parquet changelog and in Iceberg and Delta Lake tables (read back by
their own libraries) as the source holds it; also after an ALTER
that moves every column one place (rows are decoded with the schema of their event).

Each of the write paths a table's types choose is taken: a table with every type (row by
row, text COPY); one with the types the source renders as COPY text (snapshot chunks as
that text, LOAD DATA into MariaDB); one with the types that go to PostgreSQL in binary COPY."""

from __future__ import annotations

import random
import signal
import subprocess
import time
from collections.abc import Callable

import pytest

from sluice.sink.jdbc.postgres import binary_copy_type
from sluice.sink.parquet import read_changelog
from sluice.sink.target_values import TargetValues
from sluice.source.copy_text import copy_text_select
from sluice.source.schema import Column, TableSchema, read_table_schema
from tests.harness import compare
from tests.harness.column_types import COLUMNS, placeholder, random_value
from tests.harness.lakehouse import delta_sink, iceberg_sink, lakehouse_rows
from tests.harness.pipelines import (
    SLUICE,
    every_sink,
    pipeline_per_sink,
    sluice_env,
    start_sluice,
    wait_until_in_binlog_phase,
)

ROWS = 60


def _as_copy_text(column: Column) -> bool:
    return copy_text_select(TableSchema("d", "t", (column,), (), column.name)) is not None


PATHS: dict[str, Callable[[Column], bool]] = {
    "every type": lambda column: True,
    "COPY text": _as_copy_text,
    # the columns binary COPY and COPY text both take (MEDIUMTEXT, LONGTEXT and JSON keep the row path)
    "binary COPY": lambda column: binary_copy_type(column) is not None and _as_copy_text(column),
}


@pytest.mark.parametrize("path", PATHS)
def test_every_column_type_reaches_every_target_as_in_the_source(
    tmp_path, mariadb, mariadb_target, postgresql, source_db, path
):
    rng = random.Random(2026)
    names = _columns_taking(mariadb, source_db, PATHS[path])
    columns = ", ".join(f"{n} {COLUMNS[n]}" for n in names)
    mariadb.execute(f"CREATE TABLE every_type (id INT PRIMARY KEY, {columns})", database=source_db)
    insert = f"INSERT INTO every_type (id, {', '.join(names)}) VALUES (%s, {', '.join(placeholder(n) for n in names)})"
    update = f"UPDATE every_type SET {', '.join(f'{n} = {placeholder(n)}' for n in names)} WHERE id = %s"
    conn = mariadb.connect(source_db)
    with conn.cursor() as cur:
        cur.execute("SET time_zone = '+00:00'")
        for row_id in range(ROWS):
            cur.execute(insert, [row_id, *(random_value(rng, n) for n in names)])
    schema = read_table_schema(conn, source_db, "every_type", None)
    if path != "every type":  # the table takes the path it is here for
        assert copy_text_select(schema) is not None
    if path == "binary COPY":
        assert all(binary_copy_type(column) for column in schema.columns)
    lake = tmp_path / "lake"
    sinks = every_sink(postgresql, mariadb_target, lake, 6950)
    lakehouses = {"iceberg": iceberg_sink(tmp_path / "iceberg"), "delta": delta_sink(tmp_path / "delta")}
    if path == "every type":  # the lakehouse sinks have one write path
        sinks |= {name: (sink, f"{6956 + 2 * i}-{6957 + 2 * i}") for i, (name, sink) in enumerate(lakehouses.items())}
    pipelines = pipeline_per_sink(
        tmp_path, mariadb, f"{source_db}.every_type", sinks, "types", {"schema.change.behavior": "evolve"}
    )
    processes = {
        name: start_sluice(path, state, sluice_env(mariadb, postgresql, mariadb_target))
        for name, (path, state) in pipelines.items()
    }
    deadline = time.monotonic() + 240
    for name, (_, state) in pipelines.items():
        wait_until_in_binlog_phase(processes[name], state, deadline)

    with conn.cursor() as cur:  # the binlog path: updates, inserts, deletes of every type
        cur.execute("SET time_zone = '+00:00'")
        updated = rng.sample(range(ROWS), ROWS // 2)
        for row_id in updated[: ROWS // 4]:
            cur.execute(update, [*(random_value(rng, n) for n in names), row_id])
        for row_id in range(ROWS, ROWS + ROWS // 6):
            cur.execute(insert, [row_id, *(random_value(rng, n) for n in names)])
        # Every column moves one place: the rows after it decode only with the new schema.
        cur.execute("ALTER TABLE every_type ADD COLUMN c0 INT FIRST")
        cur.execute("UPDATE every_type SET c0 = id WHERE id % 3 = 0")
        for row_id in updated[ROWS // 4 :]:
            cur.execute(update, [*(random_value(rng, n) for n in names), row_id])
        for row_id in range(ROWS + ROWS // 6, ROWS + ROWS // 3):
            cur.execute(insert, [row_id, *(random_value(rng, n) for n in names)])
        cur.execute("DELETE FROM every_type WHERE id % 7 = 0")
    schema = read_table_schema(conn, source_db, "every_type", None)
    conn.close()
    in_source_order = ", ".join(f'"{name}"' for name in schema.column_names)  # PostgreSQL adds c0 last

    # Each target by its rules for what it cannot hold (sink/target_values): zero dates, NULs.
    source = compare.selected_rows(mariadb, source_db, "every_type")
    rules = {"postgres": TargetValues("", ""), "mariadb": TargetValues(None, None), "parquet": TargetValues(None, "")}
    rules |= {name: TargetValues(None, "") for name in lakehouses if name in sinks}
    expected = {name: compare.typed_rows(list(rule.rows(schema, source)), schema) for name, rule in rules.items()}
    targets = {
        "postgres": lambda: compare.postgres_rows(postgresql, source_db, "every_type", in_source_order),
        "mariadb": lambda: compare.selected_rows(mariadb_target, source_db, "every_type"),
        "parquet": lambda: compare.replay_changelog(read_changelog(lake, schema.table_id), key="id"),
        **{
            name: (lambda sink=sink: lakehouse_rows(sink, schema)) for name, sink in lakehouses.items() if name in sinks
        },
    }

    def in_source_form(rows) -> list[tuple] | Exception:
        """The target's rows, or why they cannot be read in the source's shape (yet: before
        the target has the new column, its rows have the old one)."""
        try:
            return compare.typed_rows(rows(), schema)
        except Exception as exc:  # noqa: BLE001 - shown if it lasts
            return exc

    for name, rows in targets.items():
        while (actual := in_source_form(rows)) != expected[name]:
            assert processes[name].poll() is None, processes[name].communicate()[1]
            assert time.monotonic() < deadline, f"{name}: " + (
                repr(actual)
                if isinstance(actual, Exception)
                else "; ".join(
                    f"id {a[1]} column {c.name}: {x!r} != source {y!r}"
                    for a, b in zip(actual, expected[name], strict=False)
                    for c, x, y in zip(schema.columns, a, b, strict=True)
                    if x != y
                )[:2000]
            )
            time.sleep(0.2)
    for name in ("postgres", "mariadb"):  # verify's normal form agrees with the target on every value
        checked = subprocess.run(
            [*SLUICE, "verify", str(pipelines[name][0])],
            env=sluice_env(mariadb, postgresql, mariadb_target),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert checked.returncode == 0, f"{name}: {checked.stdout}{checked.stderr}"
    for name, process in processes.items():
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
        assert process.returncode == 0, f"{name}: {err}"


def _columns_taking(mariadb, database: str, path: Callable[[Column], bool]) -> list[str]:
    """The COLUMNS whose type takes `path`, asked of a scratch table holding them all."""
    mariadb.execute(
        f"CREATE TABLE all_types (id INT PRIMARY KEY, {', '.join(f'{n} {t}' for n, t in COLUMNS.items())})",
        database=database,
    )
    conn = mariadb.connect(database)
    schema = read_table_schema(conn, database, "all_types", None)
    conn.close()
    mariadb.execute("DROP TABLE all_types", database=database)
    return [column.name for column in schema.columns if column.name in COLUMNS and path(column)]
