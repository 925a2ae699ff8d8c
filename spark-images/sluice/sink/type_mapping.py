"""Maps source column types to target column types."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import types as T

from sluice.source.schema import Column

# Spatial values travel in the server's own form (SRID, then WKB), as both paths read them.
SPATIAL_TYPES = (
    "geometry",
    "point",
    "linestring",
    "polygon",
    "multipoint",
    "multilinestring",
    "multipolygon",
    "geometrycollection",
)

_POSTGRES_FIXED = {
    "float": "real",
    "double": "double precision",
    "bit": "bigint",
    "date": "date",
    "time": "interval",
    "year": "smallint",
    "json": "jsonb",
    "enum": "text",
    "set": "text",
    "tinytext": "text",
    "text": "text",
    "mediumtext": "text",
    "longtext": "text",
    "binary": "bytea",
    "varbinary": "bytea",
    "tinyblob": "bytea",
    "blob": "bytea",
    "mediumblob": "bytea",
    "longblob": "bytea",
    "uuid": "uuid",
    "inet4": "inet",
    "inet6": "inet",
    **dict.fromkeys(SPATIAL_TYPES, "bytea"),
}


def postgres_type(column: Column) -> str:
    t = column.data_type
    if column.beyond_signed_64_bits:
        return "numeric(20)"
    if t in _POSTGRES_FIXED:
        return _POSTGRES_FIXED[t]
    if t in ("tinyint", "smallint"):
        return "integer" if column.unsigned and t == "smallint" else "smallint"
    if t == "mediumint":
        return "integer"
    if t == "int":
        return "bigint" if column.unsigned else "integer"
    if t == "bigint":
        return "bigint"
    if t == "decimal":
        return f"numeric({column.numeric_precision},{column.numeric_scale})"
    if t in ("datetime", "timestamp"):
        precision = _fractional_digits(column)
        base = "timestamptz" if t == "timestamp" else "timestamp"
        return f"{base}({precision})" if precision else base
    if t in ("char", "varchar"):
        return f"varchar({column.char_length})" if column.char_length else "text"
    return "text"


def mysql_type(column: Column) -> str:
    """Same dialect: the source's own column type."""
    return column.column_type


_SPARK_FIXED: dict[str, T.DataType] = {
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
    if t == "decimal":
        precision = column.numeric_precision or 10
        if precision > MAX_DECIMAL_PRECISION:
            return T.StringType()
        return T.DecimalType(precision, column.numeric_scale or 0)
    return T.StringType()


def _fractional_digits(column: Column) -> int:
    inside = column.column_type.partition("(")[2].partition(")")[0]
    return int(inside) if inside.isdigit() else 0


def arrow_type(column: Column) -> pa.DataType:
    """Types of the lakehouse tables (Iceberg and Delta Lake take these Arrow types as their
    own). Neither format has unsigned integers, a time of day beyond 24 hours, or decimals
    wider than 38 digits: unsigned types widen, unsigned BIGINT and BIT(64) are
    decimal(20,0), TIME is microseconds (int64, as Debezium's MicroTime), a wider DECIMAL
    is its text. A TIMESTAMP is an instant (UTC-adjusted), a DATETIME wall-clock time."""
    t = column.data_type
    if column.beyond_signed_64_bits:
        return pa.decimal128(20, 0)
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
        precision = column.numeric_precision or 10
        if precision > MAX_DECIMAL_PRECISION:
            return pa.string()
        return pa.decimal128(precision, column.numeric_scale or 0)
    if t == "date":
        return pa.date32()
    if t == "datetime":
        return pa.timestamp("us")
    if t == "timestamp":
        return pa.timestamp("us", tz="UTC")
    if t in ("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", *SPATIAL_TYPES):
        return pa.binary()
    return pa.string()
