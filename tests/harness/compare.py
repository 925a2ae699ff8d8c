"""Reads a table from source and target in one comparable form, row for row."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from tests.harness.services import MariaDB, PostgreSQL


def _normal(value: Any) -> Any:
    if isinstance(value, Decimal):
        return value.normalize()
    if hasattr(value, "tzinfo") and getattr(value, "tzinfo", None) is not None:
        return value.replace(tzinfo=None)
    if isinstance(value, memoryview):
        return bytes(value)
    return value


def _rows(cursor_rows) -> list[tuple]:
    return sorted(tuple(_normal(v) for v in row) for row in cursor_rows)


def source_rows(mariadb: MariaDB, db: str, table: str) -> list[tuple]:
    """Rows of a MariaDB table: the source, or a MySQL-dialect target."""
    conn = mariadb.connect(db)
    with conn.cursor() as cur:
        cur.execute("SET time_zone = '+00:00'")
        cur.execute(f"SELECT * FROM `{table}`")
        rows = _rows(cur.fetchall())
    conn.close()
    return rows


def postgres_rows(postgresql: PostgreSQL, schema: str, table: str) -> list[tuple]:
    with postgresql.connect() as conn:
        conn.execute("SET TIME ZONE 'UTC'")
        return _rows(conn.execute(f'SELECT * FROM "{schema}"."{table}"').fetchall())


def diff(expected: list[tuple], actual: list[tuple], limit: int = 5) -> str:
    """A short description of how two row lists differ (for assertion messages)."""
    missing = sorted(set(expected) - set(actual))
    extra = sorted(set(actual) - set(expected))
    return (
        f"{len(expected)} source rows, {len(actual)} target rows; "
        f"missing in target: {missing[:limit]}; unexpected in target: {extra[:limit]}"
    )


def replay_changelog(changelog: list[dict[str, Any]], key: str) -> list[tuple]:
    """Applies changelog rows in order and returns the table they describe, checking that
    the log is exactly once: +I/+U only for an absent key, -U/-D only with the before-image
    equal to the row held. A duplicated or a stale change breaks that and fails here."""
    table: dict[Any, tuple] = {}
    for change in changelog:
        columns = tuple(v for k, v in change.items() if not k.startswith("_"))
        where = f"{change['_op']} {change['_table']} {key}={change[key]} at {change['_position']}"
        if change["_op"] in ("-D", "-U"):
            held = table.pop(change[key], None)
            assert held == columns, f"{where}: before-image {columns} but the replayed row is {held}"
        else:
            assert change[key] not in table, f"{where}: the key is already there ({table[change[key]]})"
            table[change[key]] = columns
    return _rows(table.values())
