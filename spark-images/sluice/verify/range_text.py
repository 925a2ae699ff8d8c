"""A verification range as verify prints it and `verify --range` takes it back:
`db.table [1000, 2000)`, `db.people ['m', 'mo')`, `db.t [-inf, X'0a')`.

Bounds are SQL literals (numbers bare; strings, dates and times quoted; binary strings as
X'hex'), so a range a run named can be checked again exactly as printed.
"""

from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

from sluice.errors import SluiceError
from sluice.event.snapshot_split import SnapshotSplit
from sluice.source.schema import BINARY_STRING_TYPES, Column

_ZERO_DATE = re.compile(r"^\d{4}-00-|^\d{4}-\d\d-00|^0000-")
_RANGE = re.compile(r"^\s*(?P<table>\S+)\s+\[\s*(?P<start>.+?)\s*,\s*(?P<end>-inf|\+inf|'(?:[^']|'')*'|\S+?)\s*\)\s*$")


def range_text(split: SnapshotSplit) -> str:
    """The range as printed: the whole table, or its bounds."""
    if split.start is None and split.end is None:
        return "(whole table)"
    start = "-inf" if split.start is None else bound_text(split.start)
    end = "+inf" if split.end is None else bound_text(split.end)
    return f"[{start}, {end})"


def bound_text(value: Any) -> str:
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, (int, Decimal, float)):
        return format(value, "f") if isinstance(value, Decimal) else repr(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"X'{bytes(value).hex()}'"
    if isinstance(value, datetime):
        return f"'{value.isoformat(sep=' ')}'"
    if isinstance(value, (date, time)):
        return f"'{value.isoformat()}'"
    if isinstance(value, timedelta):
        return f"'{_time_text(value)}'"
    return "'" + str(value).replace("'", "''") + "'"


def _time_text(value: timedelta) -> str:
    sign, seconds = ("-", -value) if value < timedelta(0) else ("", value)
    hours, rest = divmod(seconds.days * 86400 + seconds.seconds, 3600)
    minutes, whole = divmod(rest, 60)
    micro = f".{seconds.microseconds:06d}" if seconds.microseconds else ""
    return f"{sign}{hours:02d}:{minutes:02d}:{whole:02d}{micro}"


def parse_range(text: str) -> tuple[str, str, str]:
    """`db.table [start, end)` → (table, start text, end text); bounds still to type."""
    found = _RANGE.match(text)
    if found is None:
        raise SluiceError(f"--range '{text}': expected DB.TABLE [START, END), as verify prints a range")
    return found["table"], found["start"], found["end"]


def bound_value(text: str, column: Column, where: str) -> Any:
    """A bound as the chunk key's values are (None for -inf and +inf); `where` names it in errors."""
    if text in ("-inf", "+inf"):
        return None
    try:
        if text[:2].upper() == "X'" and text.endswith("'"):
            if column.data_type not in BINARY_STRING_TYPES:
                raise ValueError("a binary string for a column that is not one")
            return bytes.fromhex(text[2:-1])
        quoted = len(text) >= 2 and text[0] == text[-1] == "'"
        inner = text[1:-1].replace("''", "'") if quoted else text
        return _typed(inner, column)
    except (ValueError, InvalidOperation) as exc:
        typed = f"{column.name} ({column.column_type})"
        raise SluiceError(f"--range: {where} {text} is not a value of {typed}: {exc}") from exc


def _typed(text: str, column: Column) -> Any:
    if column.is_integer or column.keyed_by_number or column.data_type == "year":
        return int(text)
    if column.data_type == "decimal":
        return Decimal(text)
    if column.data_type in ("float", "double"):
        return float(text)
    if column.data_type in ("date", "datetime", "timestamp") and _ZERO_DATE.match(text):
        return text  # a date no calendar has, as the server gives it back
    if column.data_type == "date":
        return date.fromisoformat(text)
    if column.data_type in ("datetime", "timestamp"):
        return datetime.fromisoformat(text)
    if column.data_type == "time":
        return _time_value(text)
    if column.data_type in BINARY_STRING_TYPES:
        return text.encode()
    return text


def _time_value(text: str) -> timedelta:
    sign = -1 if text.startswith("-") else 1
    hours, minutes, seconds = text.lstrip("-").split(":")
    return sign * timedelta(hours=int(hours), minutes=int(minutes), seconds=float(seconds))
