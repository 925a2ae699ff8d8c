"""Maps source column types to the types of columnar targets: Spark's (the parquet
changelog) and Arrow's (Iceberg and Delta Lake)."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import types as T

from sluice.source.schema import SPATIAL_TYPES, Column

_SPARK_FIXED: dict[str, T.DataType] = {
    "boolean": T.BooleanType(),
    "tinyint": T.IntegerType(),
    "smallint": T.IntegerType(),
    "mediumint": T.IntegerType(),
    "float": T.FloatType(),
    "double": T.DoubleType(),
    "bit": T.LongType(),
    "year": T.IntegerType(),
    "date": T.DateType(),
    "time": T.DayTimeIntervalType(),
    # A DATETIME is wall-clock text; a TIMESTAMP is an instant (read in UTC).
    "datetime": T.TimestampNTZType(),
    "timestamp": T.TimestampType(),
    **{t: T.BinaryType() for t in ("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob")},
    **{t: T.BinaryType() for t in SPATIAL_TYPES},
}

MAX_DECIMAL_PRECISION = 38  # the widest decimal of Spark, Iceberg and Delta Lake


def spark_type(column: Column) -> T.DataType:
    """Types for the parquet changelog. Values too wide for a Spark type (unsigned BIGINT and
    BIT(64), DECIMAL wider than 38 digits) become decimal(20,0) and text: see spark_values."""
    t = column.data_type
    if column.beyond_signed_64_bits:
        return T.DecimalType(20, 0)
    if t in _SPARK_FIXED:
        return _SPARK_FIXED[t]
    if t == "int":
        return T.LongType() if column.unsigned else T.IntegerType()
    if t == "bigint":
        return T.LongType()
    if t == "decimal" and (digits := _decimal_digits(column)):
        return T.DecimalType(*digits)
    return T.StringType()


def _decimal_digits(column: Column) -> tuple[int, int] | None:
    """A DECIMAL's precision and scale; None where it is wider than the columnar types
    take (its text then)."""
    precision = column.numeric_precision or 10
    return None if precision > MAX_DECIMAL_PRECISION else (precision, column.numeric_scale or 0)


def arrow_type(column: Column) -> pa.DataType:
    """Types of the lakehouse tables (Iceberg and Delta Lake take these Arrow types as their
    own). Neither format has unsigned integers, a time of day beyond 24 hours, or decimals
    wider than 38 digits: unsigned types widen, unsigned BIGINT and BIT(64) are
    decimal(20,0), TIME is microseconds (int64, as Debezium's MicroTime), a wider DECIMAL
    is its text. A TIMESTAMP is an instant (UTC-adjusted), a DATETIME wall-clock time."""
    t = column.data_type
    if column.beyond_signed_64_bits:
        return pa.decimal128(20, 0)
    if t == "boolean":
        return pa.bool_()
    if t in ("tinyint", "smallint", "mediumint", "year"):
        return pa.int32()
    if t == "int":
        return pa.int64() if column.unsigned else pa.int32()
    if t in ("bigint", "bit", "time"):
        return pa.int64()
    if t == "float":
        return pa.float32()
    if t == "double":
        return pa.float64()
    if t == "decimal":
        digits = _decimal_digits(column)
        return pa.decimal128(*digits) if digits else pa.string()
    if t == "date":
        return pa.date32()
    if t == "datetime":
        return pa.timestamp("us")
    if t == "timestamp":
        return pa.timestamp("us", tz="UTC")
    if t in ("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", *SPATIAL_TYPES):
        return pa.binary()
    return pa.string()
