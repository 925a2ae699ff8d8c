"""Verification's binlog windows on one replication connection (ForwardWindows): each window
holds exactly the table's changes in [start, stop), however far the windows before it read,
and whatever the stream read between them."""

from __future__ import annotations

from sluice.source.connection import current_offset
from sluice.source.schema import read_table_schema
from sluice.verify.forward_windows import ForwardWindows


def test_a_window_that_starts_past_what_the_stream_read_holds_none_of_the_changes_before_it(mariadb, source_db):
    """The target's position moves on between two ranges: the changes between the first
    window's end and the next one's start are in the target already. Counted in the next
    window, verification took them back out of the source's rows: the target's newest rows
    looked like rows the source never had (and a repair would have deleted them)."""
    mariadb.execute("CREATE TABLE moving (id INT PRIMARY KEY)", database=source_db)
    with mariadb.connect(source_db) as conn, conn.cursor() as cur:
        schema = read_table_schema(conn, source_db, "moving", None)
        positions = [current_offset(conn)]
        for row_id in range(1, 9):
            cur.execute("INSERT INTO moving VALUES (%s)", (row_id,))
            positions.append(current_offset(conn))
    windows = ForwardWindows(mariadb.endpoint(), 6850, {schema.table_id: schema}, mariadb=True)
    try:
        first = windows.window(positions[0], positions[2], schema.table_id)
        later = windows.window(positions[5], positions[8], schema.table_id)
        again = windows.window(positions[6], positions[7], schema.table_id)
    finally:
        windows.close()
    assert [change.after[0] for change in first] == [1, 2]
    assert [change.after[0] for change in later] == [6, 7, 8]
    assert [change.after[0] for change in again] == [7]
