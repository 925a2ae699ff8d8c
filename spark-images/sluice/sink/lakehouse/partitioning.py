"""A table's `partition.key` fields against its columns: which exist, and which columns each
format's transforms take."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pyarrow as pa

from sluice.errors import SinkError
from sluice.pipeline.partition_key import TIMES, PartitionField
from sluice.sink.columnar_types import arrow_type
from sluice.source.schema import Column, TableSchema

OPTION = "partition.key"


def partition_fields(
    keys: Mapping[str, Sequence[PartitionField]], schema: TableSchema, format_name: str
) -> tuple[PartitionField, ...]:
    """A table's fields, their columns spelled as the table spells them (MySQL's column names
    are case-insensitive); a column the table lacks, or one the transform does not take, is a
    SinkError naming the option, the table and the column."""
    fields = keys.get(schema.table_id, ())
    by_name = {c.name.lower(): c for c in schema.columns}
    resolved = []
    for field in fields:
        column = by_name.get(field.column.lower())
        if column is None:
            raise SinkError(f"sink option {OPTION}: table {schema.table_id} has no column {field.column!r}")
        problem = _unsuited(field, column, format_name)
        if problem:
            raise SinkError(f"sink option {OPTION}: {schema.table_id} {field}: {problem}")
        resolved.append(PartitionField(column.name, field.transform, field.width))
    return tuple(resolved)


def _unsuited(field: PartitionField, column: Column, format_name: str) -> str | None:
    kind = arrow_type(column)
    if format_name == "delta":
        if field.transform != "identity":
            return "Delta Lake partitions by columns only (no transforms)"
        if pa.types.is_binary(kind) or pa.types.is_floating(kind):
            return f"Delta Lake does not partition by a {column.column_type} column"
        return None
    if field.transform in TIMES:
        takes = "DATETIME or TIMESTAMP" if field.transform == "hour" else "DATE, DATETIME or TIMESTAMP"
        times = pa.types.is_timestamp(kind) or (pa.types.is_date(kind) and field.transform != "hour")
        return None if times else f"{field.transform} takes a {takes} column, not {column.column_type}"
    if field.transform == "truncate" and not (
        pa.types.is_integer(kind) or pa.types.is_decimal(kind) or pa.types.is_string(kind) or pa.types.is_binary(kind)
    ):
        return f"truncate takes an integer, DECIMAL, string or binary column, not {column.column_type}"
    if field.transform == "bucket" and (pa.types.is_floating(kind) or pa.types.is_boolean(kind)):
        return f"bucket does not take a {column.column_type} column"
    return None
