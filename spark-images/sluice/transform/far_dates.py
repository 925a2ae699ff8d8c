"""Dates and timestamps past year 9999 (or before year 1), where date arithmetic takes them.

Flink CDC computes with Java's dates, which reach year 999999999: `ts + INTERVAL '1' DAY` of
9999-12-31 23:59:59 is 10000-01-01 00:00:00, and a filter comparing it with `ts` is true.
Python's stop at 9999; a NULL there would make such a filter drop the row. The Gregorian
calendar repeats every 400 years (146,097 days, a whole number of weeks), so a far value is
a Python one moved by whole 400-year cycles: its month, day, weekday and time are its
base's, its year 400 a cycle away. It compares with Python's dates and timestamps, and a
target column gets its text, as it gets any date value no target type can hold
(sink/target_values' rule for invalid dates).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime, timedelta
from typing import Any

from sluice.source.row_decoding import FarDate, InvalidDate

CYCLE = timedelta(days=146097)  # 400 Gregorian years
_MOST_CYCLES = 2_500_000  # Java's dates end near year 1e9: 400 * 2.5e6


class FarDatetime:
    """`base` (a date or a naive datetime) moved by `cycles` times 400 years."""

    __slots__ = ("base", "cycles")

    def __init__(self, base: date, cycles: int) -> None:
        self.base, self.cycles = base, cycles

    @property
    def year(self) -> int:
        return self.base.year + 400 * self.cycles

    def __str__(self) -> str:
        """ISO 8601's text, a year past 9999 with its sign, as Java's LocalDateTime prints it."""
        year = self.year
        shown = f"+{year}" if year > 9999 else f"{year:04d}" if year >= 0 else f"-{-year:04d}"
        text = self.base.isoformat(sep=" ") if isinstance(self.base, datetime) else self.base.isoformat()
        return shown + text[4:]

    def __repr__(self) -> str:
        return f"FarDatetime('{self}')"

    def _key(self) -> tuple[int, datetime]:
        return self.cycles, _as_datetime(self.base)

    def __hash__(self) -> int:
        return hash(self._key())

    def __eq__(self, other: object) -> bool:
        key = _key_of(other)
        return NotImplemented if key is None else self._key() == key

    def __lt__(self, other: object) -> bool:
        key = _key_of(other)
        return NotImplemented if key is None else self._key() < key

    def __le__(self, other: object) -> bool:
        key = _key_of(other)
        return NotImplemented if key is None else self._key() <= key

    def __gt__(self, other: object) -> bool:
        key = _key_of(other)
        return NotImplemented if key is None else self._key() > key

    def __ge__(self, other: object) -> bool:
        key = _key_of(other)
        return NotImplemented if key is None else self._key() >= key


def _as_datetime(value: date) -> datetime:
    return value.replace(tzinfo=None) if isinstance(value, datetime) else datetime(value.year, value.month, value.day)


def _key_of(value: object) -> tuple[int, datetime] | None:
    if isinstance(value, FarDatetime):
        return value._key()
    if isinstance(value, date):
        return 0, _as_datetime(value)
    return None


def changed(value: date | FarDatetime, change: Callable[[Any], Any], forward: bool) -> date | FarDatetime:
    """`change(value)` (date arithmetic that moves `forward` or back), past Python's range
    where it goes there."""
    base, cycles = (value.base, value.cycles) if isinstance(value, FarDatetime) else (value, 0)
    while True:
        try:
            result = change(base)
            break
        except (OverflowError, ValueError) as exc:  # past year 9999 (or before 1): a cycle back (forth), again
            if "out of range" not in str(exc):
                raise
            base, cycles = (base - CYCLE, cycles + 1) if forward else (base + CYCLE, cycles - 1)
            if abs(cycles) > _MOST_CYCLES:
                raise OverflowError("a date past Java's range") from None
    while cycles:  # back into Python's range where it is in it
        try:
            result = result + CYCLE if cycles > 0 else result - CYCLE
        except OverflowError:
            return FarDatetime(result, cycles)
        cycles += -1 if cycles > 0 else 1
    return result


_EPOCH = datetime(1970, 1, 1)


def target_value(value: FarDatetime, far_dates: bool) -> InvalidDate:
    """A far value as a target column takes it: past year 9999 a FarDate where the target's
    dates reach it (`far_dates`), else (and before year 1) an invalid date's text."""
    if value.year <= 9999 or not far_dates:
        return InvalidDate(str(value))
    base = _as_datetime(value.base)
    days = (base - _EPOCH).days + value.cycles * CYCLE.days
    micros = (
        None
        if not isinstance(value.base, datetime)
        else (base - base.replace(hour=0, minute=0, second=0, microsecond=0)) // timedelta(microseconds=1)
    )
    return FarDate(str(value), days, micros)


class Shifted:
    """A far value's base with its own year, for the formatting of date patterns."""

    def __init__(self, value: FarDatetime) -> None:
        self.far = value
        self._base = _as_datetime(value.base)
        self.year = value.year

    def __getattr__(self, name: str) -> Any:
        return getattr(self._base, name)


def span(start: Any, end: Any) -> timedelta:
    """`end - start` of dates, timestamps or far values."""
    (start_cycles, start_at), (end_cycles, end_at) = _key_of(start) or (0, start), _key_of(end) or (0, end)
    return end_at - start_at + (end_cycles - start_cycles) * CYCLE
