"""MySQL's single-byte character sets that Python has no codec for decode in the binlog
as the server decodes them in a SELECT, byte for byte."""

from __future__ import annotations

import codecs

import pytest

from sluice.binlog.transaction_reader import Transaction
from sluice.source.charsets import SERVER_TABLES
from sluice.source.schema import read_table_schema
from tests.harness.binlog_reading import position, read_between


@pytest.mark.parametrize("charset", sorted(SERVER_TABLES))
def test_each_table_is_the_servers_own_mapping(mariadb, charset):
    conn = mariadb.connect()
    with conn.cursor() as cur:
        cur.execute("SELECT " + ", ".join(f"CONVERT(_{charset} 0x{b:02x} USING utf8mb4)" for b in range(256)))
        assert "".join(cur.fetchone()) == bytes(range(256)).decode(charset)
    conn.close()
    assert codecs.lookup(charset).name == charset


def test_rows_in_those_character_sets_read_from_the_binlog_as_a_select_gives_them(mariadb, source_db):
    columns = ", ".join(f"c_{c} VARCHAR(300) CHARACTER SET {c}" for c in sorted(SERVER_TABLES))
    mariadb.execute(f"CREATE TABLE legacy (id INT PRIMARY KEY, {columns})", database=source_db)
    conn = mariadb.connect(source_db)
    with conn.cursor() as cur:
        start = position(cur)
        values = ", ".join(f"_{c} 0x{bytes(range(256)).hex()}" for c in sorted(SERVER_TABLES))
        cur.execute(f"INSERT INTO legacy VALUES (1, {values})")
        end = position(cur)
        cur.execute("SELECT * FROM legacy")
        selected = cur.fetchone()
    schema = read_table_schema(conn, source_db, "legacy")
    conn.close()
    items = read_between(mariadb, source_db, start, end, {schema.table_id: schema})
    (row,) = [change.after for item in items if isinstance(item, Transaction) for change in _changes(item)]
    assert row == selected


def _changes(transaction: Transaction) -> list:
    return [change for event in transaction.events for change in event.changes()]
