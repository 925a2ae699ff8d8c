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
- DATE, DATETIME: the server's text, zero and partial dates included (the row path keeps
  their text too);
- TIMESTAMP: the instant as the scan session prints it, in UTC (SESSION_TIME_ZONE), with `+00`;
- CHAR, VARCHAR, TINYTEXT, TEXT, ENUM, SET: the text in utf8mb4, escaped;
- BINARY, VARBINARY, BLOB: bytea's hex form.
FLOAT, DOUBLE, TIME, UUID, INET and spatial types keep the row path, and so do MEDIUMTEXT,
LONGTEXT and JSON: the server's REPLACE costs the square of a value's length when it
lengthens it (measured: 1 MB of 70-character lines, 1.9 s for its newlines; 20 MB, about
13 minutes of a source core, with no row sent), so text that can pass TEXT's 64 KB is
rendered by Sluice, in time linear in its length.

A MySQL-dialect target loads the same text with LOAD DATA, whose default format (tab,
newline, backslash escapes, \\N) reads it as COPY does; `load_data_columns` gives the few
conversions back into the source's own types (binary from hex, BIT from its number,
TIMESTAMP without its zone: the target session is in UTC).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol, runtime_checkable

from sluice.source.schema import BINARY_STRING_TYPES, TEXT_STRING_TYPES, Column, TableSchema
from sluice.source.sql import quote


@runtime_checkable
class RendersCopyText(Protocol):
    """Rows that can also come as COPY text blocks (the split reader's chunk scan)."""

    @property
    def has_copy_text(self) -> bool: ...

    def copy_text(self) -> Iterator[str]: ...


def _text(raw: bytes) -> str:
    """A utf8mb4 string literal written in hex: the same whatever the session's sql_mode
    (NO_BACKSLASH_ESCAPES) and character set. Constants cost the server nothing per row;
    measured, CHAR(92 USING utf8mb4) and CAST(... AS CHAR) cost it a third of the scan."""
    return f"_utf8mb4 X'{raw.hex().upper()}'"


_NULL = _text(b"\\N")  # COPY text's NULL
_TAB, _HEX_PREFIX, _UTC = _text(b"\t"), _text(b"\\\\x"), _text(b"+00")  # bytea's hex form: \\x
_ESCAPES = ((b"\\", b"\\\\"), (b"\t", b"\\t"), (b"\n", b"\\n"), (b"\r", b"\\r"))  # backslash first
_LONG_TEXT = {"mediumtext", "longtext", "json"}  # MariaDB's JSON is LONGTEXT; MySQL's is json
_TEXT = TEXT_STRING_TYPES - _LONG_TEXT
_NUMBER = {"tinyint", "smallint", "mediumint", "int", "bigint", "decimal", "year"}
_DATE = {"date", "datetime", "timestamp"}


def _escaped(expression: str) -> str:
    for character, replacement in _ESCAPES:
        expression = f"REPLACE({expression}, {_text(character)}, {_text(replacement)})"
    return expression


def _field(column: Column) -> str | None:
    """The column's COPY text field, never NULL (CONCAT_WS would skip it); None for a type
    this path does not take. Numbers and dates are left to CONCAT_WS's own conversion to
    text, which prints them as CAST(... AS CHAR) does."""
    name, kind = quote(column.name), column.data_type
    if kind in _TEXT:
        value = _escaped(f"CONVERT({name} USING utf8mb4)")
    elif kind in BINARY_STRING_TYPES:
        value = f"CONCAT({_HEX_PREFIX}, HEX({name}))"
    elif kind in _NUMBER:
        value = name
    elif kind == "bit":
        value = f"{name} + 0"
    elif kind in _DATE:  # zero and partial dates as their text too (sink/target_values has the rule)
        value = f"CONCAT({name}, {_UTC})" if kind == "timestamp" else name  # the scan session's zone: UTC
    else:
        return None
    return f"COALESCE({value}, {_NULL})" if column.nullable else value


# Columns whose values the text holds in bytea's hex form: the binary strings, and the
# spatial types (their bytes; sink/jdbc/load_data_text writes those, the server never does).
LOADED_FROM_HEX = BINARY_STRING_TYPES | {
    *("geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon"),
    *("geometrycollection", "geomcollection"),
}
_LOADED = {  # how LOAD DATA reads a field back where the text is not the value itself
    **dict.fromkeys(LOADED_FROM_HEX, "UNHEX(SUBSTRING({field}, 3))"),  # after bytea's \\x
    "bit": "CAST({field} AS UNSIGNED)",
    "timestamp": "LEFT({field}, CHAR_LENGTH({field}) - 3)",  # without +00
}


def load_data_columns(schema: TableSchema) -> str:
    """LOAD DATA's column list and SET clause for the COPY text of copy_text_select."""
    fields, assignments = [], []
    for i, column in enumerate(schema.columns):
        loaded = _LOADED.get(column.data_type)
        if loaded is None:
            fields.append(quote(column.name))
        else:
            fields.append(f"@field{i}")
            assignments.append(f"{quote(column.name)} = {loaded.format(field=f'@field{i}')}")
    return f"({', '.join(fields)})" + (f" SET {', '.join(assignments)}" if assignments else "")


def copy_text_select(schema: TableSchema) -> str | None:
    """The select list making one COPY text line per row (tab-separated fields), or None
    when a column's type takes the row path."""
    fields = []
    for column in schema.columns:
        field = _field(column)
        if field is None:
            return None
        fields.append(field)
    return f"CONCAT_WS({_TAB}, {', '.join(fields)})"
