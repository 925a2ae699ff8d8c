"""What the binlog's DDL statements are read against, and what reading one may say back:
shared by the statement parser (binlog/ddl_parser, which loads sqlglot) and the DDL reader,
which loads the parser at the first statement it reads, not at every start."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from sluice.source.schema import TableSchema

Captured = Callable[[str, str], bool]  # (database, table) -> whether the pipeline captures it
RENAMING = "#sluice-renaming"  # the suffix of the name a column takes on its way in a swap or chain


class RowsReplaced(Exception):
    """A statement that changes captured tables' rows without row events in the binlog
    (EXCHANGE or TRUNCATE PARTITION, and DML the server logged as a statement): the target
    follows by reading them again."""

    def __init__(self, statement: str, tables: tuple[str, ...]) -> None:
        super().__init__(f"{statement.strip()[:200]!r} changes the rows of {', '.join(tables)} without row events")
        self.statement = statement
        self.tables = tables


class KnownTables(Protocol):
    """The captured tables as the binlog reader knows them at the statement."""

    def schema(self, table_id: str) -> TableSchema | None: ...

    def table_ids(self) -> Collection[str]: ...


@dataclass(frozen=True)
class TableSchemas:
    """KnownTables from a mapping of table id to schema."""

    schemas: Mapping[str, TableSchema] = field(default_factory=dict)

    def schema(self, table_id: str) -> TableSchema | None:
        return self.schemas.get(table_id)

    def table_ids(self) -> Collection[str]:
        return self.schemas.keys()

    def columns(self, database: str, table: str) -> tuple[str, ...]:
        schema = self.schemas.get(f"{database}.{table}")
        return schema.column_names if schema else ()
