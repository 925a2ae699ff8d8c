"""Numeric functions: ABS, CEIL, FLOOR, ROUND (half up, as SQL rounds)."""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_UP, Decimal
from typing import Any

from sqlglot import exp

from sluice.transform.functions.signature import (
    INT,
    NUM,
    Signature,
    same_type,
)


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
    exp.Abs: Signature("ABS", ("this",), (NUM,), same_type, abs),
    exp.Ceil: Signature("CEIL", ("this",), (NUM,), same_type, _rounding(ROUND_CEILING)),
    exp.Floor: Signature("FLOOR", ("this",), (NUM,), same_type, _rounding(ROUND_FLOOR)),
    exp.Round: Signature("ROUND", ("this", "decimals"), (NUM, INT), same_type, _round),
}
