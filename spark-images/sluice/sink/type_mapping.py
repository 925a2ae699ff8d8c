"""Maps source column types to the column types of SQL targets (PostgreSQL, MySQL).

The columnar targets' types (Spark, Arrow) are in columnar_types: this module stays
free of pyarrow and pyspark, which a JDBC pipeline does not otherwise import."""

from __future__ import annotations

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


def _fractional_digits(column: Column) -> int:
    inside = column.column_type.partition("(")[2].partition(")")[0]
    return int(inside) if inside.isdigit() else 0
