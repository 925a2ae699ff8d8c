"""Reads a table from source and target in one comparable form, row for row."""

from __future__ import annotations

import collections
from datetime import date
from decimal import Context, Decimal
from typing import Any

import psycopg

from sluice.event.snapshot_split import SnapshotSplit
from sluice.snapshot.chunk_scan import ChunkScan, chunk_query
from sluice.source.connection import connect_scan
from sluice.source.row_decoding import RowDecoder
from sluice.source.schema import TableSchema, read_table_schema
from sluice.verify.normal_form import normal_value
from tests.harness.services import MariaDB, PostgreSQL


def _normal(value: Any) -> Any:
    if isinstance(value, Decimal):  # every digit kept (a DECIMAL(65,30) has 65; the context's default is 28)
        return value.normalize(Context(prec=max(28, len(value.as_tuple().digits))))
    if hasattr(value, "tzinfo") and getattr(value, "tzinfo", None) is not None:
        return value.replace(tzinfo=None)
    if isinstance(value, memoryview):
        return bytes(value)
    return value


def _rows(cursor_rows) -> list[tuple]:
    """Sorted with NULLs first in each column, so rows with NULLs and duplicates compare
    (a zero date is a string among datetimes: values sort by type first)."""
    rows = [tuple(_normal(v) for v in row) for row in cursor_rows]
    return sorted(rows, key=lambda row: tuple((v is not None, type(v).__name__, v) for v in row))


def as_stored(rows: list[tuple], nul_removed: bool) -> list[tuple]:
    """Source rows as a target with the default value rules holds them: a zero or partial
    date (pymysql gives it as text) NULL in a nullable column, NUL characters removed where
    the target cannot hold them (PostgreSQL), UTF-16 surrogates as Unicode text (a pair the
    character it spells, a lone one U+FFFD)."""

    def stored(value: Any) -> Any:
        if not isinstance(value, str):
            return value
        if value[:4].isdigit() and value[4:5] == "-" and _invalid_date(value):
            return None
        text = value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        return text.replace("\0", "") if nul_removed else text

    return _rows([tuple(stored(v) for v in row) for row in rows])


def _invalid_date(text: str) -> bool:
    try:
        date.fromisoformat(text[:10])
    except ValueError:
        return True
    return False


def source_rows(mariadb: MariaDB, db: str, table: str, columns: str = "*") -> list[tuple]:
    """Rows of a MariaDB table: the source, or a MySQL-dialect target."""
    conn = mariadb.connect(db)
    with conn.cursor() as cur:
        cur.execute("SET time_zone = '+00:00'")
        cur.execute(f"SELECT {columns} FROM `{table}`")
        rows = _rows(cur.fetchall())
    conn.close()
    return rows


def query_rows(mariadb: MariaDB, sql: str) -> list[tuple]:
    """What a query gives on a MariaDB server (a route and transform's expected rows)."""
    conn = mariadb.connect()
    with conn.cursor() as cur:
        cur.execute(sql)
        rows = _rows(cur.fetchall())
    conn.close()
    return rows


def postgres_rows(postgresql: PostgreSQL, schema: str, table: str, columns: str = "*") -> list[tuple]:
    with postgresql.connect() as conn:
        conn.execute("SET TIME ZONE 'UTC'")
        return _rows(conn.execute(f'SELECT {columns} FROM "{schema}"."{table}"').fetchall())


def postgres_rows_once_created(postgresql: PostgreSQL, schema: str, table: str) -> list[tuple] | None:
    """postgres_rows, or None while the pipeline has not created the table yet."""
    try:
        return postgres_rows(postgresql, schema, table)
    except psycopg.errors.UndefinedTable:
        return None


def postgres_primary_key(postgresql: PostgreSQL, schema: str, table: str) -> list[str]:
    """The columns of the target table's primary key."""
    with postgresql.connect() as conn:
        rows = conn.execute(
            "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
            "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = %s::regclass AND i.indisprimary",
            (f'"{schema}"."{table}"',),
        ).fetchall()
    return [name for (name,) in rows]


def postgres_columns(postgresql: PostgreSQL, schema: str, table: str) -> list[str]:
    with postgresql.connect() as conn:
        rows = conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = %s AND table_name = %s "
            "ORDER BY ordinal_position",
            (schema, table),
        ).fetchall()
    return [name for (name,) in rows]


def diff(expected: list[tuple], actual: list[tuple], limit: int = 5) -> str:
    """A short description of how two row lists differ (for assertion messages)."""
    missing = sorted(set(expected) - set(actual))
    extra = sorted(set(actual) - set(expected))
    return (
        f"{len(expected)} source rows, {len(actual)} target rows; "
        f"missing in target: {missing[:limit]}; unexpected in target: {extra[:limit]}"
    )


def replay_changelog(changelog: list[dict[str, Any]], key: str | None) -> list[tuple]:
    """Applies changelog rows in order and returns the table they describe, checking that
    the log is exactly once: +I/+U only for an absent key, -U/-D only with the before-image
    equal to the row held. A duplicated or a stale change breaks that and fails here.
    `key` None: a bag, where -U/-D must find an equal row and remove just one."""
    table: dict[Any, tuple] = {}
    bag: collections.Counter[tuple] = collections.Counter()
    for change in changelog:
        columns = tuple(v for k, v in change.items() if not k.startswith("_"))
        held_as = columns if key is None else change[key]
        where = f"{change['_op']} {change['_table']} {held_as} at {change['_position']}"
        removes = change["_op"] in ("-D", "-U")
        if key is None:
            assert not removes or bag[columns] > 0, f"{where}: no equal row to remove"
            bag[columns] += -1 if removes else 1
        elif removes:
            held = table.pop(change[key], None)
            assert held == columns, f"{where}: before-image {columns} but the replayed row is {held}"
        else:
            assert change[key] not in table, f"{where}: the key is already there ({table[change[key]]})"
            table[change[key]] = columns
    return _rows(bag.elements() if key is None else table.values())


def selected_rows(server: MariaDB, db: str, table: str) -> list[tuple]:
    """Rows as Sluice's split reader selects them: the source's values in the form both the
    snapshot and the binlog path give (a MariaDB target read the same way), by id."""
    meta = server.connect(db)
    schema = read_table_schema(meta, db, table, None)
    meta.close()
    conn = connect_scan(server.endpoint())
    try:
        sql, params = chunk_query(schema, SnapshotSplit(schema.table_id, 0, None, None))
        by_id = schema.position("id")
        return sorted(ChunkScan(conn, sql, params, RowDecoder(schema), 1000), key=lambda row: row[by_id])
    finally:
        conn.close()


def typed_rows(rows: list[tuple], schema: TableSchema) -> list[tuple]:
    """Rows from any target in one form per column type, so a target's own types (jsonb,
    inet, numeric for unsigned BIGINT, bytea, text for a too-wide decimal) compare with the
    source's values: the form `sluice verify` compares in."""
    types = [c.data_type for c in schema.columns]
    by_id = schema.position("id")
    typed = (tuple(normal_value(t, v) for v, t in zip(row, types, strict=True)) for row in rows)
    return sorted(typed, key=lambda r: r[by_id])
