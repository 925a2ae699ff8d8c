"""One row form for both paths: a SELECT row and a binlog row image become the same tuple.

The drivers and python-mysql-replication disagree on a few types (FLOAT precision, SET,
BIT, MySQL JSON, BINARY padding, empty binary strings, negative fractional TIME); if they
did not agree, the watermark fold would see the same row twice.
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

from pymysqlreplication.constants.NONE_SOURCE import EMPTY_SET

from sluice.source.schema import Column, TableSchema

Row = tuple[Any, ...]
Convert = Callable[[Any], Any]


def _shortest_float32(value: float) -> float:
    """The shortest decimal that reads back as the same float32: what SELECT prints."""
    packed = struct.pack("<f", value)
    for digits in range(6, 10):
        candidate = float(f"{value:.{digits}g}")
        if struct.pack("<f", candidate) == packed:
            return candidate
    return value


def _bits(value: Any) -> int:
    if isinstance(value, (bytes, bytearray)):
        return int.from_bytes(value, "big")
    if isinstance(value, str):
        return int(value, 2) if value else 0
    return int(value)


def _set_members(column: Column) -> Convert:
    members = re.findall(r"'((?:[^']|'')*)'", column.column_type)

    def convert(value: Any) -> Any:
        if isinstance(value, (set, frozenset)):
            return ",".join(m for m in members if m in value)
        return value

    return convert


def _json_text(value: Any) -> Any:
    if value is None or isinstance(value, str):
        return value

    def plain(v: Any) -> Any:
        if isinstance(v, bytes):
            return v.decode("utf-8", "replace")
        if isinstance(v, dict):
            return {plain(k): plain(x) for k, x in v.items()}
        if isinstance(v, list):
            return [plain(x) for x in v]
        return v

    return json.dumps(plain(value))


def _negative_time(value: Any) -> Any:
    """python-mysql-replication reverses the fraction of a negative TIME: -1.25s reads as
    -1.75s (same floor, fraction 1 - f)."""
    if isinstance(value, timedelta) and value < timedelta(0) and value.microseconds:
        return timedelta(value.days, value.seconds, 1_000_000 - value.microseconds)
    return value


def _binary(column: Column) -> Convert:
    """The binlog strips BINARY(n)'s zero padding and gives an empty value as ''."""
    width = int(m.group(1)) if (m := re.fullmatch(r"binary\((\d+)\)", column.column_type)) else 0

    def convert(value: Any) -> Any:
        raw = value.encode("utf-8") if isinstance(value, str) else bytes(value)
        return raw.ljust(width, b"\0")

    return convert


BINARY_TYPES = ("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob")


def _converter(column: Column, from_binlog: bool) -> Convert | None:
    if column.data_type == "bit":
        return _bits
    if from_binlog:
        if column.data_type == "float":
            return _shortest_float32
        if column.data_type == "set":
            return _set_members(column)
        if column.data_type == "json":
            return _json_text
        if column.data_type in BINARY_TYPES:
            return _binary(column)
        if column.data_type == "time":
            return _negative_time
    return None


class RowDecoder:
    """Turns source rows of one table (either path) into tuples in column order."""

    def __init__(self, schema: TableSchema) -> None:
        self.schema = schema
        self._names = schema.column_names
        self._select = [(i, f) for i, c in enumerate(schema.columns) if (f := _converter(c, False))]
        self._binlog = [(i, f) for i, c in enumerate(schema.columns) if (f := _converter(c, True))]
        self._sets = [i for i, c in enumerate(schema.columns) if c.data_type == "set"]
        key_positions = [schema.position(name) for name in schema.row_key]
        self._chunk_position = schema.position(schema.chunk_key)
        if len(key_positions) == 1:
            (only,) = key_positions
            self.row_key: Callable[[Row], Any] = lambda row: row[only]
        else:
            self.row_key = lambda row: tuple(row[p] for p in key_positions)

    def chunk_key(self, row: Row) -> Any:
        return row[self._chunk_position]

    def from_select(self, row: Row) -> Row:
        if not self._select:
            return row
        values = list(row)
        for i, convert in self._select:
            if values[i] is not None:
                values[i] = convert(values[i])
        return tuple(values)

    def from_binlog(self, image: Mapping[str, Any], none_sources: Mapping[str, str] | None = None) -> Row:
        """`none_sources`: why the library gave None; it gives None for an empty SET too."""
        values = [image.get(name) for name in self._names]
        for i in self._sets:
            if values[i] is None and none_sources and none_sources.get(self._names[i]) == EMPTY_SET:
                values[i] = ""
        for i, convert in self._binlog:
            if values[i] is not None:
                values[i] = convert(values[i])
        return tuple(values)
