"""Schema change event types as `include.schema.changes` / `exclude.schema.changes` name them.

Flink CDC's names and families: a family (`column`, `table`, `drop`, ...) stands for every
type it prefixes or names, so `exclude.schema.changes: [drop]` keeps both drops away from
the target.
"""

from __future__ import annotations

from collections.abc import Iterable

EVENT_TYPES = (
    "add.column",
    "alter.column.type",
    "alter.primary.key",
    "create.table",
    "drop.column",
    "drop.table",
    "rename.column",
    "rename.table",
    "truncate.table",
)

FAMILIES = {
    "add": ("add.column",),
    "alter": ("alter.column.type", "alter.primary.key"),
    "alter.column": ("alter.column.type",),
    "create": ("create.table",),
    "drop": ("drop.column", "drop.table"),
    "rename": ("rename.column", "rename.table"),
    "truncate": ("truncate.table",),
    "column": ("add.column", "alter.column.type", "drop.column", "rename.column"),
    "table": ("alter.primary.key", "create.table", "drop.table", "rename.table", "truncate.table"),
}


def event_types(names: Iterable[str]) -> set[str]:
    """The event types `names` stand for; ValueError names one that is neither a type nor
    a family."""
    types: set[str] = set()
    for name in names:
        key = name.strip().lower()
        if key in EVENT_TYPES:
            types.add(key)
        elif key in FAMILIES:
            types.update(FAMILIES[key])
        else:
            known = ", ".join([*EVENT_TYPES, *sorted(FAMILIES)])
            raise ValueError(f"'{name}' is no schema change type; known: {known}")
    return types


def accepted_types(include: Iterable[str], exclude: Iterable[str]) -> frozenset[str]:
    """What a sink takes: `include` (every type when empty) less `exclude`. create.table is
    always taken: rows of a table the target lacks could go nowhere (FLINK-37837)."""
    included = event_types(include) or set(EVENT_TYPES)
    return frozenset((included - event_types(exclude)) | {"create.table"})
