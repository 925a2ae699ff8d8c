"""SQL text helpers for the source dialect."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sluice.source.schema import Column


def quote(identifier: str) -> str:
    return "`" + identifier.replace("`", "``") + "`"


def qualified(database: str, table: str) -> str:
    return f"{quote(database)}.{quote(table)}"


def selected(column: Column) -> str:
    """The server prints a FLOAT to six digits, which loses bits; as a DOUBLE it prints the
    exact float32 value, which is also what the binlog holds."""
    name = quote(column.name)
    return f"({name} + 0e0) AS {name}" if column.data_type == "float" else name
