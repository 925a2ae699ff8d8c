"""The roundest key values up to a key, coarsest first: where a verification range may end.

A boundary chosen as the roundest value in a span of keys (1000 rather than 1017, the
first of a month rather than a timestamp, the shortest prefix of a string) is the same
whichever key in the span the table holds there today, so ranges stay put while rows come
and go around them, and read well when printed.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from decimal import ROUND_FLOOR, Decimal
from typing import Any


def rounder_keys(key: Any) -> list[Any]:
    """Values at or before `key` from the coarsest to `key` itself, ascending in every
    order the server may use for its type (a prefix never sorts after its string)."""
    if isinstance(key, bool) or key is None:
        return [key]
    if isinstance(key, int):
        return _distinct([(key // 10**j) * 10**j for j in range(len(str(abs(key))), -1, -1)])
    if isinstance(key, Decimal) and key.is_finite():
        return _distinct([*_decimal_floors(key), key])
    if isinstance(key, datetime):
        return _distinct([*_time_floors(key), key])
    if isinstance(key, date):
        return _distinct([*_date_floors(key), key])
    if isinstance(key, timedelta):
        seconds = key.total_seconds()
        whole = [timedelta(seconds=(seconds // step) * step) for step in (36000, 3600, 600, 60, 10, 1)]
        return _distinct([*whole, key])
    if isinstance(key, (str, bytes)):
        return [key[:n] for n in range(1, len(key) + 1)] or [key]
    return [key]


def _decimal_floors(key: Decimal) -> list[Decimal]:
    exponent = key.as_tuple().exponent
    digits = key.adjusted() + 1
    floors = []
    for j in range(max(digits, 1), int(exponent) - 1, -1):
        step = Decimal(1).scaleb(j)
        floors.append(Decimal(format((key / step).to_integral_value(rounding=ROUND_FLOOR) * step, "f")))
    return floors


def _date_floors(day: date) -> list[date]:
    years = [max(1, day.year // step * step) for step in (1000, 100, 10, 1)]
    return [*(date(year, 1, 1) for year in years), day.replace(day=1), day]


def _time_floors(moment: datetime) -> list[datetime]:
    """The day's, hour's, minute's and second's start (a date's floors as times of it)."""
    floors = [datetime.combine(day, datetime.min.time(), moment.tzinfo) for day in _date_floors(moment.date())]
    return [
        *floors,
        moment.replace(minute=0, second=0, microsecond=0),
        moment.replace(second=0, microsecond=0),
        moment.replace(microsecond=0),
    ]


def _distinct(values: list[Any]) -> list[Any]:
    kept: list[Any] = []
    for value in values:
        if not kept or value != kept[-1]:
            kept.append(value)
    return kept
