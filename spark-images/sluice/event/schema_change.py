"""Schema change events: what a DDL statement on a captured table does, as typed values.

Named and printed like Flink CDC 3's events (AddColumnEvent{tableId=db.t1, ...}), so the
values sink shows what a Flink CDC user expects; the metadata appliers of the sinks take
them one by one.
"""

from __future__ import annotations

from dataclasses import dataclass

from sluice.source.schema import Column


@dataclass(frozen=True)
class SchemaChangeEvent:
    table_id: str

    def __str__(self) -> str:
        fields = ", ".join(f"{name}={value}" for name, value in self._fields())
        return f"{type(self).__name__}Event{{tableId={self.table_id}{', ' if fields else ''}{fields}}}"

    def _fields(self) -> list[tuple[str, object]]:
        return []


def _column(column: Column) -> str:
    return f"`{column.name}` {column.column_type.upper()}{'' if column.nullable else ' NOT NULL'}"


@dataclass(frozen=True)
class CreateTable(SchemaChangeEvent):
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]

    def _fields(self) -> list[tuple[str, object]]:
        return [("columns", f"[{', '.join(map(_column, self.columns))}]"), ("primaryKeys", list(self.primary_key))]


@dataclass(frozen=True)
class AddColumn(SchemaChangeEvent):
    column: Column
    position: str = "LAST"  # LAST, FIRST, or AFTER
    after: str | None = None  # the column it follows, for AFTER

    def _fields(self) -> list[tuple[str, object]]:
        where = f"AFTER `{self.after}`" if self.position == "AFTER" else self.position
        return [("addedColumns", f"[ColumnWithPosition{{column={_column(self.column)}, position={where}}}]")]


@dataclass(frozen=True)
class DropColumn(SchemaChangeEvent):
    name: str

    def _fields(self) -> list[tuple[str, object]]:
        return [("droppedColumnNames", [self.name])]


@dataclass(frozen=True)
class RenameColumn(SchemaChangeEvent):
    old_name: str
    new_name: str

    def _fields(self) -> list[tuple[str, object]]:
        return [("nameMapping", f"{{{self.old_name}={self.new_name}}}")]


@dataclass(frozen=True)
class AlterColumnType(SchemaChangeEvent):
    column: Column

    def _fields(self) -> list[tuple[str, object]]:
        return [("typeMapping", f"{{{self.column.name}={self.column.column_type.upper()}}}")]


@dataclass(frozen=True)
class TruncateTable(SchemaChangeEvent):
    pass


@dataclass(frozen=True)
class DropTable(SchemaChangeEvent):
    pass


@dataclass(frozen=True)
class RenameTable(SchemaChangeEvent):
    new_table_id: str

    def _fields(self) -> list[tuple[str, object]]:
        return [("newTableId", self.new_table_id)]
