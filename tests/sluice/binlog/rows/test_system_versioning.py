"""A system-versioned table's rows events, as changes of its current rows: the rows a
SELECT of the table shows, which is what a target holds."""

from __future__ import annotations

from datetime import datetime

from sluice.binlog.rows.system_versioning import current_changes
from sluice.event.row_change import RowKind

FOREVER = datetime(2038, 1, 19, 3, 14, 7, 999999)  # a current row's row end
ENDED = datetime(2026, 11, 25, 12, 0, 0)


def changes(kind: RowKind, *images: tuple) -> list[tuple]:
    return list(current_changes(kind, list(images), row_end=2, width=2))


def test_an_update_is_an_update_and_the_history_row_it_writes_is_nothing():
    assert changes(RowKind.UPDATE_AFTER, (1, "a", FOREVER), (1, "b", FOREVER)) == [
        (0, RowKind.UPDATE_AFTER, (1, "a"), (1, "b"))
    ]
    assert changes(RowKind.INSERT, (1, "a", ENDED)) == []


def test_a_delete_ends_a_rows_system_time_and_delete_history_changes_no_current_row():
    assert changes(RowKind.UPDATE_AFTER, (7, "x", FOREVER), (7, "x", ENDED)) == [(0, RowKind.DELETE, (7, "x"), None)]
    assert changes(RowKind.DELETE, (7, "x", ENDED), (8, "y", FOREVER)) == [(1, RowKind.DELETE, (8, "y"), None)]


def test_rows_keep_their_index_in_the_event_for_a_resume_inside_it():
    inserted = changes(RowKind.INSERT, (1, "a", ENDED), (2, "b", FOREVER), (3, "c", 2**64 - 1))
    assert [(i, row) for i, _, _, row in inserted] == [(1, (2, "b")), (2, (3, "c"))]
