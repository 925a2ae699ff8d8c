"""Rows as Arrow tables of the lakehouse types (columnar_types.arrow_type): what the Iceberg
and Delta Lake sinks write, on executors (snapshot chunks) and on the driver (binlog
batches)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import timedelta, timezone
from decimal import Decimal
from typing import Any

import pyarrow as pa

from sluice.sink.columnar_types import MAX_DECIMAL_PRECISION, arrow_type
from sluice.sink.target_values import TargetValues
from sluice.source.row_decoding import Row
from sluice.source.schema import Column, TableSchema

_MICROSECOND = timedelta(microseconds=1)


def arrow_schema(schema: TableSchema) -> pa.Schema:
    """The table's Arrow schema: its row key NOT NULL (the formats' identifier fields), the
    other columns nullable, so that a later change of their nullability needs no rewrite."""
    key = set(schema.row_key)
    return pa.schema([arrow_field(c, keyed=c.name in key) for c in schema.columns])


def arrow_field(column: Column, keyed: bool = False) -> pa.Field:
    """A column's Arrow field (one added or retyped later is nullable: not in the key)."""
    return pa.field(column.name, arrow_type(column), nullable=not keyed)


class ArrowRows:
    """Turns a table's rows into Arrow tables; values the lakehouse types take otherwise
    (TIME as microseconds, wide numbers as decimals or text) converted, and zero dates by
    `rules` (sink.zero-date)."""

    def __init__(self, schema: TableSchema, rules: TargetValues) -> None:
        self.schema = schema
        self.arrow = arrow_schema(schema)
        self._fit = rules.for_table(schema)
        self._conversions = [_conversion(c) for c in schema.columns]

    def table(self, rows: Iterable[Row]) -> pa.Table:
        fitted: Iterable[Row] = map(self._fit, rows) if self._fit is not None else rows
        columns: list[list[Any]] = [[] for _ in self.schema.columns]
        for row in fitted:
            for values, value in zip(columns, row, strict=True):
                values.append(value)
        arrays = [
            pa.array(values if convert is None else [None if v is None else convert(v) for v in values], field.type)
            for values, convert, field in zip(columns, self._conversions, self.arrow, strict=True)
        ]
        return pa.Table.from_arrays(arrays, schema=self.arrow)

    def batches(self, rows: Iterable[Row], size: int) -> Iterable[pa.Table]:
        """The rows as tables of at most `size` rows (a chunk is written without holding it whole)."""
        batch: list[Row] = []
        for row in rows:
            batch.append(row)
            if len(batch) >= size:
                yield self.table(batch)
                batch = []
        if batch:
            yield self.table(batch)


def arrow_value(column: Column, value: Any) -> Any:
    """A source value as the column's lakehouse type holds it (a key in a row filter, where
    a decimal must have the column's scale)."""
    if value is None:
        return None
    if column.data_type == "decimal" and (column.numeric_precision or 10) <= MAX_DECIMAL_PRECISION:
        return Decimal(value).quantize(Decimal(1).scaleb(-(column.numeric_scale or 0)))
    convert = _conversion(column)
    return value if convert is None else convert(value)


def _conversion(column: Column) -> Callable[[Any], Any] | None:
    if column.data_type == "timestamp":  # an instant, read in UTC
        return lambda value: value.replace(tzinfo=timezone.utc)
    if column.data_type == "time":
        return lambda value: value // _MICROSECOND
    if column.beyond_signed_64_bits:
        return Decimal
    if column.data_type == "decimal" and (column.numeric_precision or 10) > MAX_DECIMAL_PRECISION:
        return str
    return None


def source_rows(schema: TableSchema, table: pa.Table) -> list[Row]:
    """A lakehouse table's rows in the source's columns and value forms (TIME a timedelta, a
    TIMESTAMP naive UTC, unsigned BIGINT an int): what verification and tests compare."""
    columns = []
    for column in schema.columns:
        values = table.column(column.name).to_pylist() if column.name in table.column_names else [None] * table.num_rows
        back = _back(column)
        columns.append(values if back is None else [None if v is None else back(v) for v in values])
    return list(zip(*columns, strict=True)) if columns else []


def _back(column: Column) -> Callable[[Any], Any] | None:
    if column.data_type == "timestamp":
        return lambda value: value.astimezone(timezone.utc).replace(tzinfo=None)
    if column.data_type == "time":
        return lambda value: value * _MICROSECOND
    if column.beyond_signed_64_bits:
        return int
    if column.data_type == "decimal" and (column.numeric_precision or 10) > MAX_DECIMAL_PRECISION:
        return Decimal
    return None


def widens(old: pa.DataType, new: pa.DataType) -> bool:
    """Whether a column of type `old` takes `new` keeping its values: the same type (Arrow
    spells a string large or not, a UTC zone by name or offset), int to long, float to
    double, a decimal's precision at the same scale. Iceberg makes these in place."""
    if _same_kind(old, new):
        return True
    if pa.types.is_decimal(old) and pa.types.is_decimal(new):
        return old.scale == new.scale and old.precision <= new.precision
    return (old, new) in ((pa.int32(), pa.int64()), (pa.float32(), pa.float64()))


def _same_kind(a: pa.DataType, b: pa.DataType) -> bool:
    if pa.types.is_string(a) or pa.types.is_large_string(a):
        return pa.types.is_string(b) or pa.types.is_large_string(b)
    if pa.types.is_binary(a) or pa.types.is_large_binary(a):
        return pa.types.is_binary(b) or pa.types.is_large_binary(b)
    if pa.types.is_timestamp(a) and pa.types.is_timestamp(b):
        return bool(a.tz) == bool(b.tz)
    return a == b
