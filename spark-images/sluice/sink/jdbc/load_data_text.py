"""Rows as the text LOAD DATA reads by default (fields split by tabs, lines by newlines,
backslash escapes, \\N for NULL), in the snapshot's COPY text form (source/copy_text), so
that one LOAD DATA statement (`load_data_columns`) reads both.

Rendered a column at a time: a column with no NULL and no character to escape goes
through C-level `str` and `join` alone, so the Python work per value is left to the
columns that need it. Measured against PyMySQL's escaping of a multi-row INSERT, a fifth
of the client's time."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta
from decimal import Decimal
from typing import Any

from sluice.source.copy_text import LOADED_FROM_HEX
from sluice.source.row_decoding import Row
from sluice.source.schema import TEXT_STRING_TYPES, Column, TableSchema

NULL = "\\N"
_SPECIAL = ("\\", "\t", "\n", "\r")
_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
_INTEGERS = {"tinyint", "smallint", "mediumint", "int", "bigint", "bit"}
_TEXT = TEXT_STRING_TYPES | {"json", "inet4", "inet6", "uuid"}  # MariaDB's are text on both sides
_SAME_TEXT = {"date", "datetime", "float", "double"}  # str() or repr() prints what the server reads


def _decimal(value: Decimal) -> str:
    text = str(value)
    return format(value, "f") if "E" in text else text  # str gives 0E-10 for 0.0000000000


def _time(value: timedelta) -> str:
    """[-]H:MM:SS[.ffffff]; a negative timedelta keeps its sign in `days` alone."""
    sign = "-" if value.days < 0 else ""
    value = abs(value)
    minutes, seconds = divmod(value.seconds, 60)
    hours, minutes = divmod(minutes, 60)
    hours += value.days * 24
    fraction = f".{value.microseconds:06d}" if value.microseconds else ""
    return f"{sign}{hours:02d}:{minutes:02d}:{seconds:02d}{fraction}"


def _year(value: int) -> str:
    return f"{value:04d}"  # YEAR reads the text '0' as 2000, '0000' as 0


def _hex(value: bytes) -> str:
    return "\\\\x" + value.hex()  # bytea's \x, its backslash escaped


def _timestamp(value: Any) -> str:
    return f"{value}+00"  # the zone copy_text writes, which load_data_columns takes off


def _boolean(value: bool) -> str:
    return "1" if value else "0"  # MySQL's BOOLEAN is TINYINT(1)


def _value_renderer(column: Column) -> Callable[[Any], str] | None:
    """How the column's values become their text (without escaping); None for a type this
    text does not carry."""
    kind = column.data_type
    if kind in _INTEGERS or kind in _SAME_TEXT or kind in _TEXT:
        return repr if kind in ("float", "double") else str
    renderer: Callable[[Any], str] | None = {
        "decimal": _decimal,
        "time": _time,
        "year": _year,
        "timestamp": _timestamp,
        "boolean": _boolean,
    }.get(kind)
    if renderer is None and kind in LOADED_FROM_HEX:
        renderer = _hex
    return renderer


def renders(schema: TableSchema) -> bool:
    """Whether every column's type has a text form here."""
    return all(_value_renderer(c) is not None for c in schema.columns)


def load_data_text(schema: TableSchema, rows: Sequence[Row]) -> str:
    """The rows' lines; `renders(schema)` must hold."""
    if not rows:
        return ""
    columns = [_column_text(c, values) for c, values in zip(schema.columns, zip(*rows, strict=True), strict=True)]
    return "\n".join(map("\t".join, zip(*columns, strict=True))) + "\n"


def _column_text(column: Column, values: tuple[Any, ...]) -> list[str]:
    render = _value_renderer(column)
    assert render is not None
    escapes = column.data_type in _TEXT
    if None in values:
        if escapes:
            return [NULL if v is None else _escaped(render(v)) for v in values]
        return [NULL if v is None else render(v) for v in values]
    texts = list(map(render, values))
    if escapes:
        joined = "".join(texts)
        if any(special in joined for special in _SPECIAL):
            return [_escaped(t) for t in texts]
    return texts


def _escaped(text: str) -> str:
    return text.translate(_ESCAPES) if any(special in text for special in _SPECIAL) else text
