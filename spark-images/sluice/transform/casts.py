"""CAST in transform expressions: the SQL types a CAST may name, and each conversion of a
decoded value (TRY_CAST's NULL where a value does not convert, CAST's error)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime, timedelta
from decimal import ROUND_DOWN, ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from sqlglot import exp

from sluice.source.row_decoding import InvalidDate
from sluice.transform.operators import strict
from sluice.transform.sql_types import (
    BOOLEAN,
    DATE,
    DATETIME,
    DOUBLE,
    NUMERIC,
    TEMPORAL,
    TEXT,
    SqlType,
    decimal,
    decimal_of,
    string_length,
    varchar,
)

Evaluate = Callable[[tuple[Any, ...], tuple[Any, ...]], Any]
STRING, ANY = ("string",), (*NUMERIC, "string", *TEMPORAL)


def cast_type(to: exp.DataType) -> SqlType | None:
    kind = to.this
    types = exp.DataType.Type
    sizes = [int(e.this.this) if isinstance(e.this, exp.Literal) else None for e in to.expressions]
    if kind in (types.VARCHAR, types.CHAR, types.TEXT, types.NVARCHAR, types.NCHAR):
        return varchar(sizes[0]) if sizes else TEXT
    if kind in (types.TINYINT, types.SMALLINT, types.INT, types.BIGINT, types.MEDIUMINT):
        return SqlType("integer", {types.TINYINT: "tinyint", types.SMALLINT: "smallint"}.get(kind, "bigint"))
    if kind is types.DECIMAL:
        return decimal(sizes[0] if sizes else 10, sizes[1] if len(sizes) > 1 else 0)
    if kind in (types.DOUBLE, types.FLOAT):
        return DOUBLE
    if kind is types.BOOLEAN:
        return BOOLEAN
    if kind is types.DATE:
        return DATE
    if kind in (types.TIMESTAMP, types.DATETIME, types.TIMESTAMPNTZ, types.TIMESTAMPTZ, types.TIMESTAMPLTZ):
        return DATETIME
    return None


def to_string(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, timedelta):
        return str(value)
    return str(value)


def _to_integer(value: Any) -> int:
    if isinstance(value, str):
        return int(Decimal(value.strip()).to_integral_value(rounding=ROUND_DOWN))
    if isinstance(value, float | Decimal):
        return int(value)
    return int(value)


def to_date(value: Any) -> date:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    return date.fromisoformat(str(value).strip()[:10])


def to_datetime(value: Any) -> datetime:
    """A TIME (a timedelta) is its time of day (Flink's TIME is one: 25:00 is 01:00) on 1970-01-01."""
    if isinstance(value, datetime):
        return value.replace(tzinfo=None)
    if isinstance(value, timedelta):
        return datetime(1970, 1, 1) + value % timedelta(days=1)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day)
    return datetime.fromisoformat(str(value).strip().replace("T", " "))


def cast(value: Evaluate, target: SqlType, safe: bool, text: str) -> Evaluate:
    converters: dict[str, Callable[[Any], Any]] = {
        "string": to_string,
        "integer": _to_integer,
        "decimal": lambda v: _to_decimal(v, target),
        "float": lambda v: float(v) if not isinstance(v, str) else float(v.strip()),
        "boolean": lambda v: (v.strip().lower() in ("true", "1")) if isinstance(v, str) else bool(v),
        "date": to_date,
        "datetime": to_datetime,
    }
    convert = converters[target.family]
    length = string_length(target)

    def converted(v: Any) -> Any:
        if isinstance(v, InvalidDate) and target.family in ("date", "datetime"):
            return None
        try:
            result = convert(v)
        except (ValueError, ArithmeticError, InvalidOperation):
            if safe:
                return None
            raise ValueError(f"{text}: cannot cast {v!r}") from None
        return result[:length] if length is not None and isinstance(result, str) else result

    return strict(converted, [value])


def _to_decimal(value: Any, target: SqlType) -> Decimal:
    _, scale = decimal_of(target)
    number = (
        Decimal(value.strip())
        if isinstance(value, str)
        else Decimal(repr(value) if isinstance(value, float) else value)
    )
    return number.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)
