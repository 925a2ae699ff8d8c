"""MariaDB's system-versioned tables keep their history in the table itself, and the binlog
carries it: an UPDATE logs the new row and a write of the old one with its system time
ended, a DELETE logs an update that ends the row's system time, and DELETE HISTORY deletes
rows whose time had ended. A row is current while its row end holds the greatest value of
its type. The target holds the current rows, as a SELECT of the table shows them, so only
changes of current rows are changes of the table; history stays in the source."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from sluice.event.row_change import RowKind
from sluice.source.row_decoding import Row
from sluice.source.schema import IMPLICIT_ROW_END, TableSchema

# TIMESTAMP(6) row ends (up to 11.4, and from 11.5 on 64-bit servers), and transaction ids.
_CURRENT = frozenset({datetime(2038, 1, 19, 3, 14, 7, 999999), datetime(2106, 2, 7, 6, 28, 15, 999999), 2**64 - 1})


def row_end_column(table_map_columns: Sequence[Any], schema: TableSchema) -> int | None:
    """Which column of the table map ends a row's system time, if the table is versioned:
    the schema's declared one, or the implicit one, which no schema has."""
    names = schema.column_names
    for i, column in enumerate(table_map_columns):
        if schema.row_end is not None and column.name == schema.row_end:
            return i
        if schema.row_end is None and column.name == IMPLICIT_ROW_END and column.name not in names:
            return i
    return None


def current_changes(
    kind: RowKind, images: Sequence[Row], row_end: int, width: int
) -> Iterator[tuple[int, RowKind, Row | None, Row | None]]:
    """A versioned table's rows event as changes of its current rows: (the row's index in
    the event, its kind, before, after), rows cut to the schema's `width`; the row end is
    at `row_end` of each image."""
    if kind is RowKind.UPDATE_AFTER:
        for i in range(len(images) // 2):
            before, after = images[2 * i], images[2 * i + 1]
            if before[row_end] not in _CURRENT:
                continue  # history rewritten (a versioning ALTER): no current row changes
            if after[row_end] in _CURRENT:
                yield i, RowKind.UPDATE_AFTER, before[:width], after[:width]
            else:
                yield i, RowKind.DELETE, before[:width], None  # its system time ended
        return
    for i, image in enumerate(images):
        if image[row_end] in _CURRENT:  # not a history row written or deleted
            yield (i, kind, None, image[:width]) if kind is RowKind.INSERT else (i, kind, image[:width], None)
