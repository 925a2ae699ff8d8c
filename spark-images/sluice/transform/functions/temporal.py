"""Date and time functions: EXTRACT and the part functions (YEAR ... SECOND), DATE_FORMAT,
TO_DATE, TO_TIMESTAMP (Java's date patterns, as Flink CDC takes them), TIMESTAMPDIFF,
TIMESTAMPADD, DATE_ADD, FROM_UNIXTIME, and TIMESTAMP '...' where a function takes one. A TIME is a
time of day, as Flink's TIME is (casts.to_datetime)."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, datetime, timedelta, timezone, tzinfo
from typing import Any

from sqlglot import exp

from sluice.source.row_decoding import InvalidDate
from sluice.source.time_zone import parse_zone_id
from sluice.transform.casts import to_date, to_datetime
from sluice.transform.far_dates import FarDatetime, Shifted, span
from sluice.transform.functions.signature import (
    INT,
    NUM,
    STRING,
    Evaluate,
    Signature,
    integer_type,
)
from sluice.transform.operators import (
    UNIT_DAYS,
    UNIT_MONTHS,
    UNIT_SECONDS,
    add_months,
    moved,
    strict,
    truncated,
)
from sluice.transform.sql_types import (
    DATE,
    DATETIME,
    INSTANT,
    TEMPORAL,
    TEXT,
    SqlType,
    is_instant,
    varchar,
)

_TIME_OF_DAY = (*TEMPORAL, "time")  # what the time-of-day functions take


def _temporal_part(part: Callable[[datetime], int]) -> Callable[[Any], int | None]:
    def of(value: Any) -> int | None:
        if isinstance(value, InvalidDate):
            return None
        return part(Shifted(value) if isinstance(value, FarDatetime) else to_datetime(value))  # type: ignore[arg-type]

    return of


_PARTS: dict[str, Callable[[datetime], int]] = {
    "YEAR": lambda d: d.year,
    "QUARTER": lambda d: (d.month - 1) // 3 + 1,
    "MONTH": lambda d: d.month,
    "WEEK": lambda d: d.isocalendar()[1],
    "DAY": lambda d: d.day,
    "DOY": lambda d: d.timetuple().tm_yday,
    "DOW": lambda d: d.isoweekday() % 7 + 1,  # Sunday is 1, as Flink CDC's DAYOFWEEK
    "HOUR": lambda d: d.hour,
    "MINUTE": lambda d: d.minute,
    "SECOND": lambda d: d.second,
}


def _extract(node: exp.Expression, args: list[Evaluate], kinds: list[SqlType]) -> Evaluate:
    unit = node.this.name.upper() if isinstance(node, exp.Extract) else ""
    unit = {"DAYOFMONTH": "DAY", "DAYOFYEAR": "DOY", "DAYOFWEEK": "DOW"}.get(unit, unit)
    if unit not in _PARTS:
        raise ValueError(f"EXTRACT unit {unit}")
    return strict(_temporal_part(_PARTS[unit]), args)


_JAVA_PATTERN = re.compile(r"'[^']*'|y+|M+|d+|H+|h+|m+|s+|S+|a|E+|D+")


_JAVA_FIELDS: dict[str, Callable[[datetime, int], str]] = {
    "y": lambda d, n: f"{d.year % 100:02d}" if n == 2 else f"{d.year:0{n}d}",
    "M": lambda d, n: d.strftime("%B") if n >= 4 else d.strftime("%b") if n == 3 else f"{d.month:0{n}d}",
    "d": lambda d, n: f"{d.day:0{n}d}",
    "H": lambda d, n: f"{d.hour:0{n}d}",
    "h": lambda d, n: f"{(d.hour % 12) or 12:0{n}d}",
    "m": lambda d, n: f"{d.minute:0{n}d}",
    "s": lambda d, n: f"{d.second:0{n}d}",
    "S": lambda d, n: f"{d.microsecond:06d}"[:n].ljust(n, "0"),
    "a": lambda d, n: "AM" if d.hour < 12 else "PM",
    "E": lambda d, n: d.strftime("%A") if n >= 4 else d.strftime("%a"),
    "D": lambda d, n: f"{d.timetuple().tm_yday:0{n}d}",
}


def java_format(value: datetime, pattern: str) -> str:
    """Java's SimpleDateFormat pattern letters (what Flink CDC's DATE_FORMAT takes)."""

    def field_of(match: re.Match[str]) -> str:
        token = match.group(0)
        if token.startswith("'"):
            return token[1:-1] or "'"
        return _JAVA_FIELDS[token[0]](value, len(token))

    return _JAVA_PATTERN.sub(field_of, pattern)


def _java_parse(text: str, pattern: str) -> datetime:
    """The reverse, for TO_DATE and TO_TIMESTAMP with a pattern."""
    regex, fields = "", []
    for piece in re.split(r"('[^']*'|y+|M+|d+|H+|m+|s+|S+)", pattern):
        if not piece:
            continue
        if piece.startswith("'"):
            regex += re.escape(piece[1:-1])
        elif piece[0] in "yMdHmsS" and re.fullmatch(rf"{piece[0]}+", piece):
            regex += (
                rf"(\d{{{1 if len(piece) == 1 else len(piece)},{max(len(piece), 9)}}})"
                if piece[0] == "S"
                else (rf"(\d{{{len(piece)}}})" if len(piece) > 1 else r"(\d{1,4})")
            )
            fields.append(piece[0])
        else:
            regex += re.escape(piece)
    match = re.fullmatch(regex, text.strip())
    if match is None:
        raise ValueError(f"'{text}' does not match '{pattern}'")
    parts = {"y": 1970, "M": 1, "d": 1, "H": 0, "m": 0, "s": 0, "S": 0}
    for letter, digits in zip(fields, match.groups(), strict=True):
        parts[letter] = int(digits.ljust(6, "0")[:6]) if letter == "S" else int(digits)
    return datetime(parts["y"], parts["M"], parts["d"], parts["H"], parts["m"], parts["s"], parts["S"])


def _to_timestamp_builder(node: exp.Expression, args: list[Evaluate], kinds: list[SqlType]) -> Evaluate:
    pattern = node.args.get("format")
    text = pattern.this if isinstance(pattern, exp.Literal) else "yyyy-MM-dd HH:mm:ss"

    def parsed(value: str) -> datetime | None:
        try:
            return _java_parse(value, text)
        except ValueError:
            return None

    return strict(parsed, args[:1])


def _date_format(value: Any, pattern: str) -> str | None:
    if isinstance(value, InvalidDate):
        return None
    return java_format(Shifted(value) if isinstance(value, FarDatetime) else to_datetime(value), pattern)  # type: ignore[arg-type]


def _to_date_of(value: Any, pattern: str | None = None) -> date | FarDatetime | None:
    if isinstance(value, InvalidDate):
        return None
    if isinstance(value, FarDatetime):
        return FarDatetime(to_date(value.base), value.cycles)
    if isinstance(value, date):
        return to_date(value)
    try:
        return _java_parse(value, pattern).date() if pattern else date.fromisoformat(value.strip())
    except ValueError:
        return None  # Flink CDC gives NULL for a string it cannot read


def _to_date_builder(node: exp.Expression, args: list[Evaluate], kinds: list[SqlType]) -> Evaluate:
    pattern = node.args.get("format")
    text = pattern.this if isinstance(pattern, exp.Literal) else None
    return strict(lambda v: _to_date_of(v, text), args[:1])


def _timestamp_of(value: Any) -> datetime | FarDatetime:
    """sqlglot's TIMESTAMP(...) around a function's argument: a far value stays far."""
    return FarDatetime(to_datetime(value.base), value.cycles) if isinstance(value, FarDatetime) else to_datetime(value)


def _unshifted(value: Any) -> Any:
    return value.far if isinstance(value, Shifted) else value


_DIFF_SECONDS = {"SECOND": 1, "MINUTE": 60, "HOUR": 3600, "DAY": 86400, "WEEK": 604800}


_GREGORIAN_CYCLE = timedelta(days=146097)  # 400 years: the calendar repeats


def _date_add(value: Any, days: int) -> str | None:
    """Flink CDC's DATE_ADD: the date of a date, a timestamp or their text (yyyy-MM-dd[
    HH:mm:ss]) plus days, as yyyy-MM-dd text, past year 9999 as Java prints it (+10000-01-17).
    Text it cannot read is NULL (Flink CDC fails the job)."""
    if isinstance(value, InvalidDate):
        return None
    if isinstance(value, str):
        text = value.strip()
        try:
            value = date.fromisoformat(text) if len(text) == 10 else datetime.fromisoformat(text)
        except ValueError:
            return None
    start, cycles = to_date(value), 0
    while True:
        try:
            result = start + timedelta(days=int(days))
            break
        except OverflowError:  # beyond 1..9999: move by whole 400-year cycles, which change no date
            shift = 1 if days > 0 else -1
            start, cycles = start - shift * _GREGORIAN_CYCLE, cycles + shift
            if abs(cycles) > 25_000_000:
                return None
    year = result.year + 400 * cycles  # proleptic: year 0 is 1 BC, which yyyy (the year of its era) prints as 0001
    shown = f"+{year}" if year > 9999 else f"{year:04d}" if year > 0 else f"{1 - year:04d}"
    return f"{shown}-{result.month:02d}-{result.day:02d}"


def _months_between(a: datetime, b: datetime) -> int:
    months = (b.year - a.year) * 12 + b.month - a.month
    if months > 0 and (b.day, b.time()) < (a.day, a.time()):
        months -= 1
    elif months < 0 and (b.day, b.time()) > (a.day, a.time()):
        months += 1
    return months


def _timestamp_diff(node: exp.Expression, args: list[Evaluate], kinds: list[SqlType]) -> Evaluate:
    unit = (node.args.get("unit").name if node.args.get("unit") is not None else "DAY").upper()
    start, end = args[1], args[0]  # sqlglot keeps TIMESTAMPDIFF(unit, a, b) as this=b, expression=a

    def diff(a: Any, b: Any) -> int | None:
        if isinstance(a, InvalidDate) or isinstance(b, InvalidDate):
            return None
        a, b = (Shifted(v) if isinstance(v, FarDatetime) else to_datetime(v) for v in (a, b))
        if unit in _DIFF_SECONDS:
            microseconds = int(span(_unshifted(a), _unshifted(b)).total_seconds() * 1_000_000)
            return truncated(microseconds, _DIFF_SECONDS[unit] * 1_000_000)
        months = _months_between(a, b)  # type: ignore[arg-type]
        return truncated(months, {"MONTH": 1, "QUARTER": 3, "YEAR": 12}[unit])

    return strict(diff, [start, end])


def _timestamp_add(node: exp.Expression, args: list[Evaluate], kinds: list[SqlType]) -> Evaluate:
    unit = (node.args.get("unit").name if node.args.get("unit") is not None else "DAY").upper()
    value, amount = args[0], args[1]

    def add(v: Any, n: int) -> Any:
        if unit in UNIT_MONTHS:
            return moved(v, lambda d: add_months(d, int(n) * UNIT_MONTHS[unit]), n >= 0)
        step = timedelta(days=int(n) * UNIT_DAYS.get(unit, 0), seconds=int(n) * UNIT_SECONDS.get(unit, 0))
        return moved(v, lambda d: d + step, n >= 0)

    return strict(add, [value, amount])


def _from_unixtime(node: exp.Expression, args: list[Evaluate], kinds: list[SqlType], zone: tzinfo) -> Evaluate:
    """Seconds since the epoch as the clock of pipeline.local-time-zone shows them."""
    pattern = node.args.get("format")
    text = pattern.this if isinstance(pattern, exp.Literal) else "yyyy-MM-dd HH:mm:ss"
    epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
    return strict(lambda n: java_format((epoch + timedelta(seconds=int(n))).astimezone(zone), text), args[:1])


_EPOCH = datetime(1970, 1, 1)
_LONG_MIN = -(2**63)  # Java's Long.MIN_VALUE: Flink CDC's UNIX_TIMESTAMP of text its pattern cannot read


def _unix_timestamp(node: exp.Expression, args: list[Evaluate], kinds: list[SqlType], zone: tzinfo) -> Evaluate:
    """UNIX_TIMESTAMP(text[, pattern]): the text read on the clock of pipeline.local-time-zone,
    as whole seconds since the epoch (toward zero, as Java divides)."""
    pattern = node.args.get("format")
    text = pattern.this if isinstance(pattern, exp.Literal) else "yyyy-MM-dd HH:mm:ss"

    def seconds(value: str) -> int:
        try:
            local = _java_parse(value, text)
        except ValueError:
            return _LONG_MIN
        instant = local.replace(tzinfo=zone).astimezone(timezone.utc).replace(tzinfo=None)
        millis = (instant - _EPOCH) // timedelta(milliseconds=1)
        return int(millis / 1000) if millis < 0 else millis // 1000

    return strict(seconds, args[:1])


def _to_timestamp_ltz(node: exp.Expression, args: list[Evaluate], kinds: list[SqlType]) -> Evaluate:
    """TO_TIMESTAMP_LTZ(number[, precision 0 or 3]) and TO_TIMESTAMP_LTZ(text[, pattern[,
    zone]]): an instant. Text is read in UTC unless a zone is given, as Flink CDC's code does."""
    if kinds[0].family in NUM:
        precision = node.expressions[1] if len(node.expressions) > 1 else exp.Literal.number(3)
        if not isinstance(precision, exp.Literal) or precision.this not in ("0", "3"):
            raise ValueError(f"TO_TIMESTAMP_LTZ's precision must be 0 or 3, not {precision.sql()}")
        unit = timedelta(seconds=1) if precision.this == "0" else timedelta(milliseconds=1)
        return strict(lambda n: _EPOCH + int(n) * unit, args[:1])
    literals = [e.this if isinstance(e, exp.Literal) else None for e in node.expressions[1:]]
    if None in literals:
        raise ValueError("TO_TIMESTAMP_LTZ's pattern and zone must be literals")
    text = literals[0] if literals else "yyyy-MM-dd HH:mm:ss.SSS"
    clock = parse_zone_id(literals[1]) if len(literals) > 1 else timezone.utc

    def instant(value: str) -> datetime:
        return _java_parse(value, text).replace(tzinfo=clock).astimezone(timezone.utc).replace(tzinfo=None)

    return strict(instant, args[:1])


_TEMPORAL_PART_NODES = {
    exp.Year: "YEAR",
    exp.Quarter: "QUARTER",
    exp.Month: "MONTH",
    exp.Week: "WEEK",
    exp.Day: "DAY",
    exp.DayOfMonth: "DAY",
    exp.DayOfYear: "DOY",
    exp.DayOfWeek: "DOW",
    exp.Hour: "HOUR",
    exp.Minute: "MINUTE",
    exp.Second: "SECOND",
}


SIGNATURES: dict[type, Signature] = {
    exp.Extract: Signature("EXTRACT", ("expression",), (TEMPORAL,), integer_type, builder=_extract, wall_clock=True),
    exp.TimeToStr: Signature(
        "DATE_FORMAT", ("this", "format"), (_TIME_OF_DAY, STRING), lambda k: TEXT, _date_format, wall_clock=True
    ),
    exp.TsOrDsToDate: Signature(
        "TO_DATE", ("this",), (("string", "date", "datetime"),), lambda k: DATE, builder=_to_date_builder
    ),
    exp.TimestampDiff: Signature(
        "TIMESTAMPDIFF", ("this", "expression"), (TEMPORAL, TEMPORAL), integer_type, builder=_timestamp_diff
    ),
    exp.TimestampAdd: Signature(
        "TIMESTAMPADD",
        ("this", "expression"),
        (TEMPORAL, INT),
        lambda k: SqlType(k[0].family, k[0].column_type),
        builder=_timestamp_add,
    ),
    exp.TsOrDsAdd: Signature(
        "DATE_ADD",
        ("this", "expression"),
        ((*TEMPORAL, "string"), INT),
        lambda k: varchar(16),
        _date_add,
        wall_clock=True,
    ),
    exp.UnixToStr: Signature(
        "FROM_UNIXTIME", ("this",), (NUM,), lambda k: varchar(64), builder=_from_unixtime, zoned=True
    ),
    exp.StrToUnix: Signature("UNIX_TIMESTAMP", ("this",), (STRING,), integer_type, builder=_unix_timestamp, zoned=True),
    exp.StrToTime: Signature("TO_TIMESTAMP", ("this",), (STRING,), lambda k: DATETIME, builder=_to_timestamp_builder),
    # sqlglot's reading of TIMESTAMP '...' where a function takes one (DATE_FORMAT's argument)
    exp.TimeStrToTime: Signature(
        "TIMESTAMP",
        ("this",),
        (("string", "date", "datetime", "time"),),
        lambda k: k[0] if is_instant(k[0]) else DATETIME,
        _timestamp_of,
    ),
}

for _node, _unit in _TEMPORAL_PART_NODES.items():
    _takes = _TIME_OF_DAY if _unit in ("HOUR", "MINUTE", "SECOND") else TEMPORAL
    SIGNATURES[_node] = Signature(
        _unit, ("this",), (_takes,), integer_type, _temporal_part(_PARTS[_unit]), wall_clock=True
    )
del _node, _unit, _takes

# By name: sqlglot reads them as calls of functions it does not know (exp.Anonymous).
NAMED_SIGNATURES: dict[str, Signature] = {
    "TO_TIMESTAMP_LTZ": Signature(
        "TO_TIMESTAMP_LTZ",
        ("expressions",),
        ((*NUM, "string"), (*NUM, "string"), STRING),
        lambda k: INSTANT,
        builder=_to_timestamp_ltz,
    ),
}
