"""Numeric functions: ABS (in its argument's type, as Java's), CEIL, FLOOR, ROUND (half up,
as SQL rounds)."""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_UP, Decimal
from typing import Any

from sqlglot import exp

from sluice.transform.functions.signature import (
    INT,
    NUM,
    Evaluate,
    Signature,
    same_type,
)
from sluice.transform.operators import strict
from sluice.transform.sql_types import SqlType

# The Java type Flink CDC reads each signed MySQL integer as, by its width in bits.
_JAVA_BITS = {"tinyint": 8, "smallint": 16, "mediumint": 32, "int": 32, "bigint": 64}


def _abs(node: exp.Expression, args: list[Evaluate], kinds: list[SqlType]) -> Evaluate:
    """ABS keeps its argument's type, so the type's least value stays itself, as Java's
    Math.abs and Flink CDC's (short) cast leave it: ABS of SMALLINT -32768 is -32768."""
    kind = kinds[0]
    bits = _JAVA_BITS.get(kind.column_type.split("(")[0].split()[0]) if kind.family == "integer" else None
    if bits is None or "unsigned" in kind.column_type:
        return strict(abs, args)
    least = -(1 << (bits - 1))
    return strict(lambda v: v if v == least else abs(v), args)


def _round(value: Any, places: int = 0) -> Any:
    if isinstance(value, float):
        return float(Decimal(repr(value)).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP))
    if isinstance(value, int):
        return int(Decimal(value).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)) if places < 0 else value
    return Decimal(value).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)


def _rounding(mode: str) -> Callable[[Any], Any]:
    def rounded(value: Any) -> Any:
        if isinstance(value, int):
            return value
        if isinstance(value, float):
            return float(math.ceil(value) if mode == ROUND_CEILING else math.floor(value))
        return Decimal(value).to_integral_value(rounding=mode)

    return rounded


SIGNATURES: dict[type, Signature] = {
    exp.Abs: Signature("ABS", ("this",), (NUM,), same_type, builder=_abs),
    exp.Ceil: Signature("CEIL", ("this",), (NUM,), same_type, _rounding(ROUND_CEILING)),
    exp.Floor: Signature("FLOOR", ("this",), (NUM,), same_type, _rounding(ROUND_FLOOR)),
    exp.Round: Signature("ROUND", ("this", "decimals"), (NUM, INT), same_type, _round),
}
