"""The operators of transform expressions over decoded values (arithmetic, comparison,
BETWEEN, IN, LIKE, AND/OR, CASE, COALESCE, intervals), as SQL defines them: NULL in gives
NULL out except where SQL says otherwise (COALESCE, CASE, IS, AND/OR); a division by
zero is NULL."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from datetime import date, datetime, timedelta, timezone, tzinfo
from decimal import ROUND_DOWN, Decimal
from typing import Any

from sqlglot import exp

from sluice.source.row_decoding import InvalidDate
from sluice.transform.far_dates import FarDatetime, changed
from sluice.transform.sql_types import (
    BIGINT,
    DATE,
    DATETIME,
    INSTANT,
    NUMERIC,
    TEMPORAL,
    TIME,
    SqlType,
)

Evaluate = Callable[[tuple[Any, ...], tuple[Any, ...]], Any]
STRING, ANY = ("string",), (*NUMERIC, "string", *TEMPORAL)


def strict(function: Callable[..., Any], args: Sequence[Evaluate]) -> Evaluate:
    """An evaluator that is NULL where any argument is, else function(values)."""
    if len(args) == 1:
        (a,) = args
        return lambda row, meta: None if (v := a(row, meta)) is None else function(v)
    if len(args) == 2:
        a, b = args

        def two(row: tuple[Any, ...], meta: tuple[Any, ...]) -> Any:
            x, y = a(row, meta), b(row, meta)
            return None if x is None or y is None else function(x, y)

        return two

    def many(row: tuple[Any, ...], meta: tuple[Any, ...]) -> Any:
        values = [arg(row, meta) for arg in args]
        return None if any(v is None for v in values) else function(*values)

    return many


def _divide(x: Any, y: Any, family: str) -> Any:
    if y == 0:
        return None  # SQL's (and MariaDB's) answer; Flink CDC's Java code throws
    if family == "integer":
        return int(x / y) if abs(x) < 2**52 and abs(y) < 2**52 else truncated(x, y)
    if family == "decimal":
        x, y = Decimal(x), Decimal(y)
        scale = max(-x.as_tuple().exponent, 0)  # type: ignore[operator]
        return (x / y).quantize(Decimal(1).scaleb(-scale), rounding=ROUND_DOWN)  # Flink: lhs.divide(rhs, DOWN)
    return float(x) / float(y)


def truncated(x: int, y: int) -> int:
    quotient = abs(x) // abs(y)
    return quotient if (x < 0) == (y < 0) else -quotient


def _modulo(x: Any, y: Any, family: str) -> Any:
    if y == 0:
        return None
    if family == "float":
        return math.fmod(float(x), float(y))
    if family == "decimal":
        return Decimal(x) % Decimal(y)  # Decimal's % keeps the dividend's sign, as SQL's does
    return int(math.copysign(abs(x) % abs(y), x)) if x else 0


def _number(family: str) -> Callable[[Any], Any]:
    if family == "float":
        return float
    if family == "decimal":
        return lambda v: v if isinstance(v, Decimal) else Decimal(v) if not isinstance(v, float) else Decimal(repr(v))
    return lambda v: v


def arithmetic(operator: str, left: Evaluate, right: Evaluate, family: str) -> Evaluate:
    number = _number(family)
    operations: dict[str, Callable[[Any, Any], Any]] = {
        "Add": lambda x, y: number(x) + number(y),
        "Sub": lambda x, y: number(x) - number(y),
        "Mul": lambda x, y: number(x) * number(y),
        "Div": lambda x, y: _divide(number(x), number(y), family),
        "IntDiv": lambda x, y: None if y == 0 else truncated(int(x), int(y)),
        "Mod": lambda x, y: _modulo(number(x), number(y), family),
    }
    return strict(operations[operator], [left, right])


UNIT_DAYS = {"DAY": 1, "WEEK": 7}
UNIT_SECONDS = {"SECOND": 1, "MINUTE": 60, "HOUR": 3600}
UNIT_MONTHS = {"MONTH": 1, "QUARTER": 3, "YEAR": 12}


def add_months(value: date, months: int) -> date:
    total = value.year * 12 + value.month - 1 + months
    year, month = divmod(total, 12)
    last = (date(year + (month == 11), (month + 1) % 12 + 1, 1) - timedelta(days=1)).day
    return value.replace(year=year, month=month + 1, day=min(value.day, last))


_DAY = timedelta(days=1)


_SPAN_FIELDS = ("YEAR", "MONTH", "DAY", "HOUR", "MINUTE", "SECOND")
_SPAN_SEPARATORS = {"MONTH": "-", "HOUR": " ", "MINUTE": ":", "SECOND": ":"}  # before each field


def interval_amount(text: str, unit: exp.Expression | None) -> tuple[str, int]:
    """An INTERVAL literal's unit and whole amount: INTERVAL '3' DAY, or a span such as
    INTERVAL '1 02:03:04' DAY TO SECOND (as seconds) or INTERVAL '1-2' YEAR TO MONTH (as months)."""
    if not isinstance(unit, exp.IntervalSpan):
        name = unit.name.upper() if unit is not None else "DAY"
        if not text.strip().lstrip("-").isdigit():
            raise ValueError("an INTERVAL's amount must be a whole number literal, such as INTERVAL '1' DAY")
        return name, int(text)
    first, last = unit.this.name.upper(), unit.expression.name.upper()
    if first not in _SPAN_FIELDS or last not in _SPAN_FIELDS or _SPAN_FIELDS.index(first) >= _SPAN_FIELDS.index(last):
        raise ValueError(f"INTERVAL ... {first} TO {last} is not a span of fields")
    fields = _SPAN_FIELDS[_SPAN_FIELDS.index(first) : _SPAN_FIELDS.index(last) + 1]
    if (first in ("YEAR", "MONTH")) != (last in ("YEAR", "MONTH")):
        raise ValueError(f"INTERVAL ... {first} TO {last} mixes months with days")
    body = text.strip()
    negative = body.startswith("-")
    pattern = r"(\d+)" + "".join(re.escape(_SPAN_SEPARATORS[f]) + r"(\d+)" for f in fields[1:])
    match = re.fullmatch(pattern, body.lstrip("+-"))
    if match is None:
        example = {"MONTH": "1-2", "HOUR": "1 02", "MINUTE": "1 02:03", "SECOND": "1 02:03:04"}
        raise ValueError(f"'{text}' is not an INTERVAL {first} TO {last} (such as '{example[last]}')")
    weights = {"YEAR": 12, "MONTH": 1, "DAY": 86400, "HOUR": 3600, "MINUTE": 60, "SECOND": 1}
    amount = sum(int(n) * weights[f] for f, n in zip(fields, match.groups(), strict=True))
    return ("MONTH" if last == "MONTH" else "SECOND"), -amount if negative else amount


def plus_interval(value: Evaluate, unit: str, amount: int, error: Exception) -> Evaluate:
    """A date or timestamp plus an interval; a TIME (a timedelta) is a time of day, as
    Flink's TIME is: it wraps around midnight, and months and days leave it as it is."""
    forward = amount >= 0
    if unit in UNIT_MONTHS:
        months = amount * UNIT_MONTHS[unit]
        return strict(
            lambda v: v if isinstance(v, timedelta) else moved(v, lambda d: add_months(d, months), forward), [value]
        )
    if unit in UNIT_DAYS or unit in UNIT_SECONDS:
        step = timedelta(days=amount * UNIT_DAYS.get(unit, 0), seconds=amount * UNIT_SECONDS.get(unit, 0))
        return strict(
            lambda v: (v + step) % _DAY if isinstance(v, timedelta) else moved(v, lambda d: d + step, forward), [value]
        )
    raise type(error)(
        f"{error} INTERVAL unit {unit} is not one of YEAR, QUARTER, MONTH, WEEK, DAY, HOUR, MINUTE, SECOND"
    )


def moved(value: Any, change: Callable[[Any], Any], forward: bool) -> Any:
    """A date or timestamp after date arithmetic that moves it `forward` (or back), past year
    9999 as Flink CDC's Java dates go (far_dates); an invalid (zero) date stays NULL."""
    if isinstance(value, InvalidDate):
        return None
    try:
        return changed(value, change, forward)
    except OverflowError:  # past Java's dates too
        return None


def temporal(value: Any, change: Callable[[Any], Any]) -> Any:
    """An invalid (zero) date stays NULL through date arithmetic, as MariaDB gives it."""
    if isinstance(value, InvalidDate):
        return None
    try:
        return change(value)
    except (OverflowError, ValueError):
        return None


def comparable(value: Any) -> Any:
    """Values of one comparison class in one Python order: a DATE against a DATETIME as the
    start of its day, an invalid (zero) date before every date, booleans as numbers."""
    if isinstance(value, InvalidDate):
        return datetime.min
    if isinstance(value, FarDatetime):  # compares with dates and timestamps itself
        return value
    if isinstance(value, datetime):
        return value.replace(tzinfo=None)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day)
    if isinstance(value, float) and not isinstance(value, bool):
        return Decimal(repr(value)) if math.isfinite(value) else value
    return value


_COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "EQ": lambda x, y: x == y,
    "NEQ": lambda x, y: x != y,
    "GT": lambda x, y: x > y,
    "GTE": lambda x, y: x >= y,
    "LT": lambda x, y: x < y,
    "LTE": lambda x, y: x <= y,
}


def comparison(operator: str, left: Evaluate, right: Evaluate) -> Evaluate:
    compare = _COMPARISONS[operator]
    return strict(lambda x, y: compare(comparable(x), comparable(y)), [left, right])


def same(x: Any, y: Any) -> bool:
    """IS NOT DISTINCT FROM: NULL is the same as NULL."""
    if x is None or y is None:
        return x is None and y is None
    return comparable(x) == comparable(y)


def between(value: Evaluate, low: Evaluate, high: Evaluate) -> Evaluate:
    return strict(lambda v, lo, hi: comparable(lo) <= comparable(v) <= comparable(hi), [value, low, high])


def within(value: Evaluate, options: Sequence[Evaluate]) -> Evaluate:
    def evaluate(row: tuple[Any, ...], meta: tuple[Any, ...]) -> bool | None:
        v = value(row, meta)
        if v is None:
            return None
        v, unknown = comparable(v), False
        for option in options:
            o = option(row, meta)
            if o is None:
                unknown = True
            elif comparable(o) == v:
                return True
        return None if unknown else False

    return evaluate


def like_regex(pattern: str, escape: str | None, similar: bool = False) -> re.Pattern[str]:
    """LIKE's pattern as a regular expression; SIMILAR TO's keeps the SQL regular expression
    operators (| * + ? {m,n} ( ) [...]), as Calcite's sqlToRegexSimilar, which Flink CDC calls."""
    out, i = [], 0
    while i < len(pattern):
        char = pattern[i]
        if escape and char == escape and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if char in "%_":
            out.append(".*" if char == "%" else ".")
        elif similar and char == "[":
            end = pattern.find("]", i + 1)
            if end < 0:
                raise ValueError(f"SIMILAR TO pattern '{pattern}' has an unclosed [")
            body = pattern[i + 1 : end]
            out.append(
                "[" + ("^" + re.escape(body[1:]) if body.startswith("^") else re.escape(body)).replace("\\-", "-") + "]"
            )
            i = end + 1
            continue
        else:
            out.append(char if similar and char in "|*+?{},()0123456789" else re.escape(char))
        i += 1
    return re.compile("".join(out), re.DOTALL)


def like(value: Evaluate, pattern: Evaluate, escape: str | None, similar: bool = False) -> Evaluate:
    cache: dict[str, re.Pattern[str]] = {}

    def matches(v: str, p: str) -> bool:
        compiled = cache.get(p)
        if compiled is None:
            compiled = cache.setdefault(p, like_regex(p, escape, similar))
        return compiled.fullmatch(v) is not None

    return strict(matches, [value, pattern])


def logical(conjunction: bool, left: Evaluate, right: Evaluate) -> Evaluate:
    """SQL's three-valued AND and OR, short-circuiting as Flink CDC's do."""
    decisive = not conjunction  # AND stops at FALSE, OR at TRUE

    def evaluate(row: tuple[Any, ...], meta: tuple[Any, ...]) -> bool | None:
        x = left(row, meta)
        if x is not None and bool(x) is decisive:
            return decisive
        y = right(row, meta)
        if y is not None and bool(y) is decisive:
            return decisive
        return None if x is None or y is None else not decisive

    return evaluate


def case(subject: Evaluate | None, branches: Sequence[tuple[Evaluate, Evaluate]], default: Evaluate | None) -> Evaluate:
    def evaluate(row: tuple[Any, ...], meta: tuple[Any, ...]) -> Any:
        if subject is None:
            for condition, result in branches:
                if condition(row, meta):
                    return result(row, meta)
        else:
            value = subject(row, meta)
            for option, result in branches:
                if value is not None and same(value, option(row, meta)):
                    return result(row, meta)
        return default(row, meta) if default is not None else None

    return evaluate


def coalesce(values: Sequence[Evaluate]) -> Evaluate:
    def evaluate(row: tuple[Any, ...], meta: tuple[Any, ...]) -> Any:
        for value in values:
            v = value(row, meta)
            if v is not None:
                return v
        return None

    return evaluate


def now_call(name: str, zone: tzinfo) -> tuple[Evaluate, SqlType]:
    """The time a row is transformed (Flink CDC's processing time): LOCALTIMESTAMP, LOCALTIME
    and CURRENT_DATE on the clock of `zone` (pipeline.local-time-zone); NOW() and
    CURRENT_TIMESTAMP, instants, in UTC as every TIMESTAMP value is."""
    if name in ("CURRENTDATE", "CURRENT_DATE"):
        return (lambda row, meta: datetime.now(zone).date()), DATE
    if name in ("CURRENT_TIME", "LOCALTIME"):
        return (lambda row, meta: datetime.now(zone).replace(tzinfo=None).time()), TIME
    if name == "UNIX_TIMESTAMP":
        return (lambda row, meta: int(datetime.now(timezone.utc).timestamp())), BIGINT
    if name == "LOCALTIMESTAMP":
        return (lambda row, meta: datetime.now(zone).replace(tzinfo=None, microsecond=0)), DATETIME
    return (lambda row, meta: datetime.now(timezone.utc).replace(tzinfo=None, microsecond=0)), INSTANT


def on_clock(value: Evaluate, zone: tzinfo) -> Evaluate:
    """An instant's value (its UTC wall-clock) as the clock of `zone` shows it: what Flink CDC's
    functions read of a TIMESTAMP_LTZ's fields."""

    def shown(row: tuple[Any, ...], meta: tuple[Any, ...]) -> Any:
        v = value(row, meta)
        if type(v) is not datetime:  # NULL, an invalid or far date: as it is
            return v
        return v.replace(tzinfo=timezone.utc).astimezone(zone).replace(tzinfo=None)

    return shown
