"""A chunk as PostgreSQL COPY text, made by the source server: no Python per value.

The server renders each row as one line of COPY's text format: every column cast to text,
escaped (backslash, tab, newline, carriage return) and NULL written as \\N, all in SQL, and
the split reader hands the lines to COPY in blocks. It is the same SELECT over the same
key range in the same read view as the row path, so the watermark contract is unchanged;
it is used where the rows need no fold (MariaDB's consistent snapshot), and only for
tables whose every column type has a text form PostgreSQL reads back as the row path
writes it. Other tables take the row path.

Per type, what the row path writes and the text that means the same:
- integers, DECIMAL, YEAR: the server's decimal text; BIT: its number (`c + 0`);
- DATE, DATETIME: the server's text; invalid dates (zero month or day) as NULL, as the
  row path reads them;
- TIMESTAMP: the instant as the scan session prints it, in UTC (SESSION_TIME_ZONE), with `+00`;
- CHAR, VARCHAR, TEXT, ENUM, SET, JSON: the text in utf8mb4, escaped;
- BINARY, VARBINARY, BLOB: bytea's hex form.
FLOAT, DOUBLE, TIME, UUID, INET and spatial types keep the row path.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol, runtime_checkable

from sluice.source.schema import Column, TableSchema
from sluice.source.sql import quote


@runtime_checkable
class RendersCopyText(Protocol):
    """Rows that can also come as COPY text blocks (the split reader's chunk scan)."""

    @property
    def has_copy_text(self) -> bool: ...

    def copy_text(self) -> Iterator[str]: ...


_BACKSLASH = "CHAR(92 USING utf8mb4)"
_NULL = f"CONCAT({_BACKSLASH}, 'N')"  # COPY text's NULL
_ESCAPES = ((92, "\\\\"), (9, "\\t"), (10, "\\n"), (13, "\\r"))  # backslash first
_TEXT = {"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set", "json"}
_BINARY = {"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"}
_NUMBER = {"tinyint", "smallint", "mediumint", "int", "bigint", "decimal", "year"}
_DATE = {"date", "datetime", "timestamp"}


def _escaped(expression: str) -> str:
    for code, replacement in _ESCAPES:
        escaped = ", ".join(f"CHAR({ord(c)} USING utf8mb4)" for c in replacement)
        expression = f"REPLACE({expression}, CHAR({code} USING utf8mb4), CONCAT({escaped}))"
    return expression


def _field(column: Column) -> str | None:
    """The column's COPY text field, never NULL; None for a type this path does not take."""
    name, kind = quote(column.name), column.data_type
    if kind in _TEXT:
        value = _escaped(f"CONVERT({name} USING utf8mb4)")
    elif kind in _BINARY:
        value = f"CONCAT({_BACKSLASH}, {_BACKSLASH}, 'x', HEX({name}))"
    elif kind in _NUMBER:
        value = f"CAST({name} AS CHAR)"
    elif kind == "bit":
        value = f"CAST({name} + 0 AS CHAR)"
    elif kind in _DATE:
        text = f"CAST({name} AS CHAR)"
        if kind == "timestamp":
            text = f"CONCAT({text}, '+00')"  # the scan session's zone: connection.SESSION_TIME_ZONE
        return f"IF(DAYNAME({name}) IS NULL, {_NULL}, {text})"
    else:
        return None
    return f"COALESCE({value}, {_NULL})"


def copy_text_select(schema: TableSchema) -> str | None:
    """The select list making one COPY text line per row (tab-separated fields), or None
    when a column's type takes the row path."""
    fields = []
    for column in schema.columns:
        field = _field(column)
        if field is None:
            return None
        fields.append(field)
    return f"CONCAT_WS(CHAR(9 USING utf8mb4), {', '.join(fields)})"
