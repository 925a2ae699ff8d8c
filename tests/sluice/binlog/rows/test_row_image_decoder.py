"""The row image decoder against a real MariaDB: random values of every column type, written
by inserts, updates and deletes, decode from the binlog to exactly the rows the chunk
SELECT gives (the watermark fold and the emit rule compare the two). Every test runs with
both row loops: the compiled one (C) and the Python one it is held to."""

from __future__ import annotations

import gc
import random
import uuid
from datetime import datetime
from decimal import Decimal

import pytest

from sluice.binlog.rows import row_image_decoder
from sluice.binlog.rows.column_readers import mysql_json_text
from sluice.binlog.rows.event_reader import read_window
from sluice.binlog.rows.row_image_decoder import changelog_rows
from sluice.binlog.transaction_reader import Transaction
from sluice.event.row_change import ChangeRow, RowKind
from sluice.source.connection import current_offset
from sluice.source.offset import BinlogOffset
from sluice.source.schema import read_table_schema
from tests.harness import compare
from tests.harness.binlog_reading import position, read_between
from tests.harness.column_types import COLUMNS, create_every_type_table, placeholder, random_decimal, random_value

SERVER_IDS = iter(range(6800, 6860))


@pytest.fixture(autouse=True, params=["compiled", "python"])
def row_loop(request, monkeypatch):
    """Which row loop decodes: the C one, or the Python reference."""
    monkeypatch.setattr(row_image_decoder, "COMPILED", request.param == "compiled")
    return request.param


def test_the_compiled_row_loop_is_built():
    """`make install` builds it: a test run that fell back to Python would hide its defects."""
    assert row_image_decoder._row_images is not None


def binlog_changes(mariadb, schema, start, end) -> list:
    """The row changes the binlog reader decodes for the table in [start, end)."""
    return list(read_window(mariadb.endpoint(), next(SERVER_IDS), start, end, {schema.table_id: schema}, True))


def differences(decoded: list[tuple], selected: list[tuple], schema) -> list[tuple]:
    """(row id, column, from the binlog, from SELECT) for every value that differs."""

    assert len(decoded) == len(selected)
    return [
        (a[0], column.name, x, y)
        for a, b in zip(decoded, selected, strict=True)
        for column, x, y in zip(schema.columns, a, b, strict=True)
        if x != y or type(x) is not type(y)
    ]


def test_every_column_type_decodes_from_the_binlog_as_the_select_gives_it(mariadb, source_db):
    rng = random.Random(20261121)
    names = list(COLUMNS)
    insert, update = create_every_type_table(mariadb, source_db)
    conn = mariadb.connect(source_db)
    rows = 150

    start = current_offset(conn)
    with conn.cursor() as cur:
        cur.execute("SET time_zone = '+00:00'")
        for row_id in range(rows):
            cur.execute(insert, [row_id, *(random_value(rng, n) for n in names)])
    inserted_end = current_offset(conn)
    schema = read_table_schema(conn, source_db, "every_type", None)
    inserted = compare.selected_rows(mariadb, source_db, "every_type")
    with conn.cursor() as cur:
        cur.execute("SET time_zone = '+00:00'")
        for row_id in range(rows):
            cur.execute(update, [*(random_value(rng, n) for n in names), row_id])
    updated_end = current_offset(conn)
    updated = compare.selected_rows(mariadb, source_db, "every_type")
    mariadb.execute("DELETE FROM every_type", database=source_db)
    end = current_offset(conn)
    conn.close()

    changes = binlog_changes(mariadb, schema, start, end)
    inserts = [c for c in changes if c.offset.is_before(inserted_end)]
    updates = [c for c in changes if not c.offset.is_before(inserted_end) and c.offset.is_before(updated_end)]
    deletes = [c for c in changes if not c.offset.is_before(updated_end)]

    assert [c.kind for c in changes] == [RowKind.INSERT] * rows + [RowKind.UPDATE_AFTER] * rows + [
        RowKind.DELETE
    ] * rows
    assert differences([c.after for c in inserts], inserted, schema) == []
    assert differences([c.before for c in updates], inserted, schema) == []
    assert differences([c.after for c in updates], updated, schema) == []
    assert differences(sorted((c.before for c in deletes), key=lambda row: row[0]), updated, schema) == []


def test_decimals_keep_their_scale_and_sign_at_every_width(mariadb, source_db):
    rng = random.Random(7)
    widths = [(p, s) for p in (1, 2, 9, 10, 18, 19, 27, 65) for s in {0, p // 3, p - 1, min(p, 30)} if s <= 30]
    columns = {f"d{p}_{s}": (p, s) for p, s in widths}
    definitions = ", ".join(f"{n} DECIMAL({p},{s})" for n, (p, s) in columns.items())
    mariadb.execute(f"CREATE TABLE decimals (id INT PRIMARY KEY, {definitions})", database=source_db)
    conn = mariadb.connect(source_db)
    start = current_offset(conn)
    with conn.cursor() as cur:
        for row_id in range(200):
            values = [random_decimal(rng, p, s) for p, s in columns.values()]
            cur.execute(f"INSERT INTO decimals VALUES (%s, {', '.join(['%s'] * len(values))})", [row_id, *values])
    end = current_offset(conn)
    schema = read_table_schema(conn, source_db, "decimals", None)
    conn.close()
    decoded = [c.after for c in binlog_changes(mariadb, schema, start, end)]

    selected = compare.selected_rows(mariadb, source_db, "decimals")
    assert differences(decoded, selected, schema) == []
    assert all(isinstance(v, Decimal) for row in decoded for v in row[1:])
    assert [str(v) for row in decoded for v in row] == [str(v) for row in selected for v in row]


def test_timestamps_decode_as_utc_whatever_zone_they_were_written_in(mariadb, source_db):
    """TIMESTAMPs are instants: the binlog's epoch seconds and the scan's UTC session agree."""
    mariadb.execute(
        "CREATE TABLE stamps (id INT PRIMARY KEY, ts TIMESTAMP(6) NULL, dtm DATETIME)",
        database=source_db,
    )
    conn = mariadb.connect(source_db)
    start = current_offset(conn)
    mariadb.execute(
        "SET time_zone = '+05:30'",
        "INSERT INTO stamps VALUES (1, '2024-07-01 04:15:00.25', '2024-06-30 22:45:00'), (2, NULL, NULL)",
        database=source_db,
    )
    end = current_offset(conn)
    schema = read_table_schema(conn, source_db, "stamps", None)
    conn.close()

    decoded = [c.after for c in binlog_changes(mariadb, schema, start, end)]

    assert decoded == compare.selected_rows(mariadb, source_db, "stamps")
    assert decoded[0][1:] == (datetime(2024, 6, 30, 22, 45, 0, 250000), datetime(2024, 6, 30, 22, 45, 0))


def test_rows_on_either_side_of_an_alter_decode_by_their_own_table_map(mariadb, source_db):
    """Each table map is parsed once per table id; every ALTER gives the table a new id, so
    the rows after it are read with the new columns (one the schema lacks is read past)."""
    mariadb.execute("CREATE TABLE grows (id INT PRIMARY KEY, a VARCHAR(10), z INT)", database=source_db)
    conn = mariadb.connect(source_db)
    schema = read_table_schema(conn, source_db, "grows", None)
    start = current_offset(conn)
    mariadb.execute(
        "INSERT INTO grows VALUES (1, 'before', 6)",
        "ALTER TABLE grows ADD COLUMN extra DECIMAL(30,4) AFTER a, ALGORITHM=INSTANT",
        "INSERT INTO grows VALUES (2, 'x', 12.5, 7)",
        "ALTER TABLE grows MODIFY z BIGINT",
        "INSERT INTO grows VALUES (3, 'y', -1, 9000000000)",
        "ALTER TABLE grows ALTER COLUMN a SET DEFAULT 'd'",
        "INSERT INTO grows VALUES (4, 'z', 0, 8)",
        database=source_db,
    )
    end = current_offset(conn)
    conn.close()

    decoded = binlog_changes(mariadb, schema, start, end)

    assert [c.after for c in decoded] == [(1, "before", 6), (2, "x", 7), (3, "y", 9000000000), (4, "z", 8)]


def test_mariadbs_own_types_decode_to_the_text_the_select_gives(mariadb, source_db):
    rng = random.Random(11)
    edges = [
        ("::", "00000000-0000-0000-0000-000000000000", "0.0.0.0"),
        ("::1", "ffffffff-ffff-ffff-ffff-ffffffffffff", "255.255.255.255"),
        ("::ffff:1.2.3.4", "6ccd780c-baba-1026-9564-5b8c656024db", "10.0.0.0"),
        ("::ffff:0.0.0.0", "123e4567-e89b-42d3-a456-426614174000", "0.0.0.1"),
        ("::1.2.3.4", "00000000-0000-0000-0000-000000000001", "1.0.0.0"),
        ("1::", "10000000-0000-0000-0000-000000000000", "127.0.0.1"),
        ("1:0:0:1:0:0:0:1", "01234567-89ab-1def-8123-456789abcdef", "192.168.0.0"),
        ("1:0:1:0:1:0:1:0", "00000000-0000-1000-8000-000000000000", "0.0.1.0"),
        ("2001:db8::ff00:42:8329", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "8.8.8.8"),
        ("0:0:1::", "0000000a-0000-0000-0000-000000000000", "1.1.1.1"),
    ]
    words = [0, 0, 0, 1, 0xFFFF, 0x2001]
    randoms = [
        (
            ":".join(f"{rng.choice(words + [rng.randrange(65536)]):x}" for _ in range(8)),
            str(uuid.UUID(int=rng.getrandbits(128), version=rng.choice([1, 4]))),  # MariaDB checks the variant
            ".".join(str(rng.choice([0, 255, rng.randrange(256)])) for _ in range(4)),
        )
        for _ in range(300)
    ]
    mariadb.execute("CREATE TABLE own (id INT PRIMARY KEY, a INET6, u UUID, b INET4)", database=source_db)
    conn = mariadb.connect(source_db)
    start = current_offset(conn)
    with conn.cursor() as cur:
        for row_id, values in enumerate(edges + randoms):
            cur.execute("INSERT INTO own VALUES (%s, %s, %s, %s)", (row_id, *values))
    end = current_offset(conn)
    schema = read_table_schema(conn, source_db, "own", None)
    conn.close()
    decoded = [c.after for c in binlog_changes(mariadb, schema, start, end)]

    assert differences(decoded, compare.selected_rows(mariadb, source_db, "own"), schema) == []


def test_mysqls_binary_json_becomes_the_text_mysql_prints():
    """MySQL only (this machine has MariaDB, whose JSON is text): {"k": "é"} in MySQL's binary
    JSON, laid out by hand: a small object of one key, its string value stored after it."""
    header = bytes([0x00, 1, 0, 15, 0, 11, 0, 1, 0, 0x0C, 12, 0])  # type, count, size, key entry, value entry
    raw = header + b"k" + bytes([2]) + "é".encode()

    assert mysql_json_text(raw) == '{"k": "é"}'


def test_an_events_images_become_its_changelog_rows_from_the_first_uncommitted_row():
    schema = object()  # carried as it is
    images = [(1, "a"), (1, "b"), (2, "c"), (2, "d"), (3, "e"), (3, "f")]
    before, after = RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER
    start = BinlogOffset("mysql-bin.000003", 4711)

    updates = changelog_rows(images, 1, schema, (before, after), 1700000000, start)
    inserts = changelog_rows(images, 4, schema, (RowKind.INSERT,), 1700000000, start)

    def offset(row: int) -> BinlogOffset:
        return BinlogOffset("mysql-bin.000003", 4711, row)

    assert updates == [
        ChangeRow(schema, before, (2, "c"), 1700000000, offset(1)),
        ChangeRow(schema, after, (2, "d"), 1700000000, offset(1)),
        ChangeRow(schema, before, (3, "e"), 1700000000, offset(2)),
        ChangeRow(schema, after, (3, "f"), 1700000000, offset(2)),
    ]
    assert inserts == [
        ChangeRow(schema, RowKind.INSERT, (3, "e"), 1700000000, offset(4)),
        ChangeRow(schema, RowKind.INSERT, (3, "f"), 1700000000, offset(5)),
    ]
    assert all(type(row) is ChangeRow and type(row.offset) is BinlogOffset for row in updates + inserts)


def test_rows_of_values_are_left_to_reference_counting_not_to_the_cyclic_collector():
    """Rows come by the hundred thousand a second and make no cycles: the compiled loop
    untracks them as the collector would on its first walk, unless a value could be part
    of a cycle (a container the collector tracks)."""
    body = bytes([0]) + (7).to_bytes(4, "little") + bytes([2]) + b"ab"
    program = row_image_decoder._row_images.Program
    plain = program([[(("int", 4, 1), 0, "id"), (("text", 1, "utf-8", "strict"), 1, "name")]], 2)
    holding = program([[(("int", 4, 1), 0, "id"), (("prefixed", 1, lambda raw: [raw]), 1, "name")]], 2)

    (row,) = plain.decode(body)
    (container_row,) = holding.decode(body)
    before, after = row_image_decoder._row_images.changelog(
        [row, row], 0, True, object(), (RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER), 1, "f", 4, ChangeRow, BinlogOffset
    )

    assert row == (7, "ab") and not gc.is_tracked(row)
    assert container_row == (7, [b"ab"]) and gc.is_tracked(container_row)
    assert not gc.is_tracked(before) and not gc.is_tracked(after)
    assert before.offset is after.offset and not gc.is_tracked(before.offset)


def test_an_updates_before_images_hold_only_the_slots_a_keyed_target_needs(mariadb, source_db):
    """A target that writes rows by key needs an update's before image for its key alone:
    the rest is read past, not made (half of what an update decodes). After images and the
    other kinds' images stay whole; a key that moved is in the before image as it was."""
    rng = random.Random(11)
    names = list(COLUMNS)
    mariadb.execute(
        f"CREATE TABLE keyed_images (id INT, region VARCHAR(8), {', '.join(f'{n} {t}' for n, t in COLUMNS.items())}, "
        "PRIMARY KEY (region, id))",
        database=source_db,
    )
    columns = f"id, region, {', '.join(names)}"
    values = f"%s, %s, {', '.join(placeholder(n) for n in names)}"
    with mariadb.connect(source_db) as conn, conn.cursor() as cur:
        schema = read_table_schema(conn, source_db, "keyed_images", None)
        start = position(cur)
        for row_id in range(40):
            cur.execute(
                f"INSERT INTO keyed_images ({columns}) VALUES ({values})",
                [row_id, "eu", *(random_value(rng, n) for n in names)],
            )
        cur.execute("UPDATE keyed_images SET id = id + 100, region = 'us' WHERE id < 20")  # keys move
        for row_id in range(20, 40):
            cur.execute(
                f"UPDATE keyed_images SET {', '.join(f'{n} = {placeholder(n)}' for n in names)} WHERE id = %s",
                [*(random_value(rng, n) for n in names), row_id],
            )
        cur.execute("DELETE FROM keyed_images WHERE id >= 30")
        conn.commit()
        end = position(cur)
    read = read_between(mariadb, source_db, start, end, {schema.table_id: schema})
    events = [event for item in read if isinstance(item, Transaction) for event in item.events]
    key = frozenset(schema.position(k) for k in schema.row_key)
    whole = [row for event in events for row in event.changelog(schema)]
    keyed = [row for event in events for row in event.changelog(schema, key)]
    assert [r.kind for r in keyed] == [r.kind for r in whole]
    updates = 0
    for full, kept in zip(whole, keyed, strict=True):
        if full.kind is RowKind.UPDATE_BEFORE:
            updates += 1
            assert kept.row == tuple(v if i in key else None for i, v in enumerate(full.row))
        else:
            assert kept.row == full.row and kept.offset == full.offset
    assert updates == 40
