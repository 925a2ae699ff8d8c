"""Rows in the target's shape: where a schema change reached the target differently
(lenient keeps a dropped column, ignore keeps the old columns, try_evolve keeps what the
target refused), rows decoded with the source's schema are mapped onto the target's
columns by name; a column the source no longer has is NULL."""

from __future__ import annotations

from collections.abc import Callable

from sluice.source.row_decoding import Row
from sluice.source.schema import TableSchema


def projection(source: TableSchema, target: TableSchema) -> Callable[[Row], Row] | None:
    """None when the rows fit the target as they are."""
    if source.column_names == target.column_names:
        return None
    names = source.column_names
    positions = [names.index(c.name) if c.name in names else None for c in target.columns]
    return lambda row: tuple(None if p is None else row[p] for p in positions)
