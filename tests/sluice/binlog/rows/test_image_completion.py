"""A session's binlog_row_image MINIMAL or NOBLOB (the server's setting stays FULL, so
`sluice check` passes) leaves columns out of its rows events: an INSERT's DEFAULTs, an
UPDATE's unchanged columns and LOBs. A keyed table's changes are made whole from the
source by key, never with a NULL for a column the image did not carry; where they cannot
be, the pipeline stops at the event, naming it."""

from __future__ import annotations

import threading
import time
from datetime import datetime
from decimal import Decimal

import pytest

from sluice.binlog.rows.event_reader import RowsEvent, read_window
from sluice.binlog.rows.image_completion import ImageCompletion, TargetNeeds
from sluice.binlog.transaction_reader import Transaction
from sluice.errors import SourceError
from sluice.event.row_change import RowKind
from sluice.source.schema import read_table_schema
from tests.harness.binlog_reading import position, read_between

TABLE = "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(10) DEFAULT 'dflt', n INT DEFAULT 7, note TEXT, data BLOB)"


def _events(server, db: str, table: str, image: str, *statements: str) -> list[RowsEvent]:
    """The rows events of `statements`, written by a session with binlog_row_image `image`."""
    with server.connect(db) as conn, conn.cursor() as cur:
        schema = read_table_schema(conn, db, table)
        start = position(cur)
        cur.execute(f"SET SESSION binlog_row_image = {image}")
        for statement in statements:
            cur.execute(statement)
        conn.commit()
        end = position(cur)
    read = read_between(server, db, start, end, {schema.table_id: schema})
    return [event for item in read if isinstance(item, Transaction) for event in item.events]


KEYED = TargetNeeds()  # a target that holds rows by key, no transform


def _completed(server, events: list[RowsEvent], needs: TargetNeeds = KEYED) -> list[tuple]:
    completion = ImageCompletion(server.endpoint(), needs)
    try:
        return [
            (change.kind, change.before, change.after)
            for event in events
            for change in (completion.complete(event) if event.is_partial else event.changes())
        ]
    finally:
        completion.close()


@pytest.fixture
def table(mariadb, source_db) -> str:
    mariadb.execute(TABLE, "INSERT INTO t VALUES (1, 'one', 1, 'text-1', 'blob-1')", database=source_db)
    return "t"


def test_a_noblob_update_keeps_the_lobs_it_did_not_change(mariadb, source_db, table):
    events = _events(mariadb, source_db, table, "NOBLOB", "UPDATE t SET n = 2 WHERE id = 1")
    assert [e.is_partial for e in events] == [True]
    (kind, before, after) = _completed(mariadb, events)[0]
    assert kind is RowKind.UPDATE_AFTER
    assert before[:3] == (1, "one", 1)  # a before image needs no more than its key: NOBLOB gives all but LOBs
    assert after == (1, "one", 2, "text-1", b"blob-1")  # before: NULL, NULL


def test_a_minimal_insert_takes_the_defaults_the_statement_left_to_the_server(mariadb, source_db, table):
    events = _events(mariadb, source_db, table, "MINIMAL", "INSERT INTO t (id) VALUES (2)")
    assert _completed(mariadb, events) == [(RowKind.INSERT, None, (2, "dflt", 7, None, None))]  # before: NULLs


def test_a_minimal_update_is_found_by_the_key_of_its_before_image(mariadb, source_db, table):
    """MINIMAL logs the key before and the changed columns after: the after image has no key."""
    events = _events(mariadb, source_db, table, "MINIMAL", "UPDATE t SET n = 3 WHERE id = 1")
    assert [(kind, before[0], after) for kind, before, after in _completed(mariadb, events)] == [
        (RowKind.UPDATE_AFTER, 1, (1, "one", 3, "text-1", b"blob-1"))
    ]


def test_a_minimal_key_change_moves_the_whole_row(mariadb, source_db, table):
    events = _events(mariadb, source_db, table, "MINIMAL", "UPDATE t SET id = 5 WHERE id = 1")
    assert [(kind, before[0], after) for kind, before, after in _completed(mariadb, events)] == [
        (RowKind.UPDATE_AFTER, 1, (5, "one", 1, "text-1", b"blob-1"))  # the old key goes, the new one holds it
    ]


def test_a_minimal_delete_needs_only_its_key(mariadb, source_db, table):
    events = _events(mariadb, source_db, table, "MINIMAL", "DELETE FROM t WHERE id = 1")
    assert [(kind, before[0], after) for kind, before, after in _completed(mariadb, events)] == [
        (RowKind.DELETE, 1, None)
    ]


def test_a_row_changed_again_since_takes_the_columns_the_event_did_not_carry_as_they_are_now(mariadb, source_db, table):
    """The event's own columns keep its values; the later change comes later in the binlog
    and puts the rest right in its turn."""
    events = _events(mariadb, source_db, table, "MINIMAL", "UPDATE t SET n = 4 WHERE id = 1")
    mariadb.execute("UPDATE t SET n = 40, name = 'later' WHERE id = 1", database=source_db)
    assert _completed(mariadb, events)[0][2] == (1, "later", 4, "text-1", b"blob-1")


def test_a_row_gone_since_is_a_delete_of_its_key(mariadb, source_db, table):
    events = _events(
        mariadb,
        source_db,
        table,
        "MINIMAL",
        "INSERT INTO t (id) VALUES (2)",
        "UPDATE t SET n = 5 WHERE id = 1",
    )
    mariadb.execute("DELETE FROM t", database=source_db)
    completed = _completed(mariadb, events)
    # the insert is left out (the delete after it finds nothing); the update deletes its key
    assert [(kind, before[0] if before else None, after) for kind, before, after in completed] == [
        (RowKind.DELETE, 1, None)
    ]


def test_rows_of_a_compound_key_and_of_many_types_are_found(mariadb, source_db):
    mariadb.execute(
        "CREATE TABLE c (region CHAR(3), at DATETIME(3), amount DECIMAL(12,2), label VARCHAR(20) DEFAULT 'x', "
        "f FLOAT DEFAULT 1.1, bits BIT(3) DEFAULT b'101', PRIMARY KEY (region, at, amount))",
        database=source_db,
    )
    statements = [
        f"INSERT INTO c (region, at, amount) VALUES ('r{i % 3}', '2024-01-0{1 + i % 9} 10:00:00.{i:03d}', {i}.25)"
        for i in range(1200)  # more keys than one SELECT reads
    ]
    events = _events(mariadb, source_db, "c", "MINIMAL", *statements, "UPDATE c SET label = 'y' WHERE amount > 1197.5")
    completed = _completed(mariadb, events)
    assert len(completed) == 1202
    assert completed[0][2] == (
        "r0",
        datetime(2024, 1, 1, 10, 0),
        Decimal("0.25"),
        "x",
        pytest.approx(1.1, rel=1e-6),
        5,
    )
    assert {after[3] for _, _, after in completed[-2:]} == {"y"}
    assert all(None not in after for _, _, after in completed)


def test_the_read_waits_for_a_writer_that_holds_the_row(mariadb, source_db, table):
    """The binlog holds a transaction before InnoDB shows it: a plain read then sees the row
    before it. The locking read waits for the writer's commit."""
    events = _events(mariadb, source_db, table, "MINIMAL", "UPDATE t SET n = 6 WHERE id = 1")
    writer = mariadb.connect(source_db)
    with writer.cursor() as cur:
        cur.execute("BEGIN")
        cur.execute("UPDATE t SET name = 'held' WHERE id = 1")
    result: list = []
    reading = threading.Thread(target=lambda: result.append(_completed(mariadb, events)))
    reading.start()
    time.sleep(1)
    assert not result, "the read did not wait for the writer"
    writer.commit()
    reading.join(30)
    writer.close()
    assert result[0][0][2] == (1, "held", 6, "text-1", b"blob-1")


def test_a_column_gone_from_the_source_since_stops_the_pipeline_at_the_event(mariadb, source_db, table):
    events = _events(mariadb, source_db, table, "MINIMAL", "INSERT INTO t (id) VALUES (2)")
    mariadb.execute("ALTER TABLE t DROP COLUMN note", database=source_db)
    with pytest.raises(
        SourceError, match=f"insert rows event of {source_db}.t at binlog position .* leaves out name, n, note, data"
    ) as stopped:
        _completed(mariadb, events)
    assert "Unknown column 'note'" in str(stopped.value)


@pytest.mark.parametrize(
    ("image", "statement", "kind", "left_out", "why"),
    [
        ("NOBLOB", "UPDATE t SET n = 2 WHERE id = 1", "update", "note, data", "with its before image"),
        ("MINIMAL", "INSERT INTO t (id) VALUES (2)", "insert", "name, n, note, data", "as it happened"),
        ("MINIMAL", "UPDATE t SET n = 3 WHERE id = 1", "update", "id, name, n, note, data", "with its before image"),
        ("MINIMAL", "DELETE FROM t WHERE id = 1", "delete", "name, n, note, data", "with its before image"),
    ],
)
def test_a_changelog_target_stops_at_the_event(mariadb, source_db, table, image, statement, kind, left_out, why):
    events = _events(mariadb, source_db, table, image, statement)
    with pytest.raises(
        SourceError,
        match=f"the {kind} rows event of {source_db}.t at .* leaves out {left_out}: .*binlog_row_image.*, and the "
        f"target keeps every change {why}",
    ):
        _completed(mariadb, events, TargetNeeds(changelog=True))


def test_a_transformed_table_stops_where_a_before_image_leaves_columns_out(mariadb, source_db, table):
    """A transform's filter or computed key is worked out from the before image too."""
    needs = TargetNeeds(transformed=lambda table_id: True)
    inserted = _events(mariadb, source_db, table, "MINIMAL", "INSERT INTO t (id) VALUES (2)")
    assert _completed(mariadb, inserted, needs) == [(RowKind.INSERT, None, (2, "dflt", 7, None, None))]
    updated = _events(mariadb, source_db, table, "MINIMAL", "UPDATE t SET n = 3 WHERE id = 1")
    with pytest.raises(SourceError, match="the table's transform computes from the row as it was before the change"):
        _completed(mariadb, updated, needs)


def test_a_window_folded_onto_a_range_stops_at_a_partial_event(mariadb, source_db, table):
    with mariadb.connect(source_db) as conn, conn.cursor() as cur:
        schema = read_table_schema(conn, source_db, "t")
        start = position(cur)
        cur.execute("SET SESSION binlog_row_image = MINIMAL")
        cur.execute("INSERT INTO t (id) VALUES (2)")
        conn.commit()
        end = position(cur)
    with pytest.raises(SourceError, match="leaves out name, n, note, data: .*a window of changes folded"):
        list(read_window(mariadb.endpoint(), 6201, start, end, {schema.table_id: schema}, True))


def test_minimal_images_of_a_keyless_table_are_whole(mariadb, source_db):
    """Without a primary key MINIMAL logs every column: nothing is left out."""
    mariadb.execute(
        "CREATE TABLE bag (a INT, b VARCHAR(10) DEFAULT 'dflt')", "INSERT INTO bag VALUES (1, 'x')", database=source_db
    )
    events = _events(
        mariadb, source_db, "bag", "MINIMAL", "INSERT INTO bag (a) VALUES (2)", "UPDATE bag SET a = 3 WHERE a = 1"
    )
    assert not any(e.is_partial for e in events)
    assert _completed(mariadb, events) == [
        (RowKind.INSERT, None, (2, "dflt")),
        (RowKind.UPDATE_AFTER, (1, "x"), (3, "x")),
    ]


def test_a_minimal_insert_of_an_auto_increment_key_carries_the_key_it_was_given(mariadb, source_db):
    """An application's `INSERT (name) VALUES ...`: the server gives the key, and logs it."""
    mariadb.execute(
        "CREATE TABLE a (id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(10), n INT DEFAULT 7)", database=source_db
    )
    events = _events(mariadb, source_db, "a", "MINIMAL", "INSERT INTO a (name) VALUES ('x'), ('y')")
    assert _completed(mariadb, events) == [(RowKind.INSERT, None, (1, "x", 7)), (RowKind.INSERT, None, (2, "y", 7))]
