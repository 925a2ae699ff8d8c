"""The schema of a table several source tables are routed into (Flink CDC's schema merging):
the union of their columns, in the order they first appear, each widened to a type that
holds every member's values (INT and BIGINT give BIGINT, VARCHAR(10) and VARCHAR(40) give
VARCHAR(40), INT and DECIMAL(10,2) a DECIMAL holding both, a number and a string text)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from sluice.errors import DefinitionError
from sluice.source.schema import Column, TableSchema
from sluice.transform.sql_types import common_type, type_of


def merged_schema(database: str, table: str, members: Sequence[TableSchema]) -> TableSchema:
    """`members` are the routed tables' schemas after their transforms, in a stable order."""
    names: list[str] = []
    by_name: dict[str, list[Column]] = {}
    for schema in members:
        for column in schema.columns:
            if column.name not in by_name:
                names.append(column.name)
            by_name.setdefault(column.name, []).append(column)
    key = _common_key(f"{database}.{table}", members)
    columns = tuple(_widest(name, by_name[name], len(by_name[name]) < len(members), name in key) for name in names)
    first = members[0]
    chunk_key = first.chunk_key if first.chunk_key in names else (key or names)[0]
    return TableSchema(database, table, columns, key, chunk_key, (), not key)


def _common_key(sink: str, members: Sequence[TableSchema]) -> tuple[str, ...]:
    keys = {schema.primary_key for schema in members}
    if len(keys) > 1:
        described = "; ".join(f"{s.table_id} ({', '.join(s.primary_key) or 'no key'})" for s in members)
        raise DefinitionError(
            f"route: the tables routed into {sink} have different keys: {described}; give them one key "
            "(a transform's primary-keys) so that each row of the merged table is one source row"
        )
    return next(iter(keys))


def _widest(name: str, columns: list[Column], missing_somewhere: bool, in_key: bool) -> Column:
    """One member's DEFAULT is not the merged column's: on the target it would give the
    value to every member's rows."""
    nullable = (missing_somewhere or any(c.nullable for c in columns)) and not in_key
    first = columns[0]
    if all(c.column_type == first.column_type for c in columns):
        return dataclasses.replace(first, name=name, nullable=nullable, default=None)
    kind = common_type([type_of(c) for c in columns])
    if kind is None:
        types = ", ".join(sorted({c.column_type for c in columns}))
        raise DefinitionError(f"route: column {name} of the merged tables has types no one type holds ({types})")
    return dataclasses.replace(kind.column(name), nullable=nullable)
