"""The built-in functions of transform expressions, as Flink CDC names them: each a
signature (argument families, result type) and its Python implementation over decoded
values. NULL in gives NULL out except where SQL says otherwise (CONCAT_WS)."""

from __future__ import annotations

import base64
import math
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_UP, Decimal
from typing import Any

from sqlglot import exp

from sluice.source.row_decoding import InvalidDate
from sluice.transform.casts import to_date, to_datetime, to_string
from sluice.transform.operators import (
    UNIT_DAYS,
    UNIT_MONTHS,
    UNIT_SECONDS,
    add_months,
    strict,
    temporal,
    truncated,
)
from sluice.transform.sql_types import (
    BIGINT,
    DATE,
    DATETIME,
    NUMERIC,
    TEMPORAL,
    TEXT,
    SqlType,
    string_length,
    varchar,
)

Evaluate = Callable[[tuple[Any, ...], tuple[Any, ...]], Any]
STRING, ANY = ("string",), (*NUMERIC, "string", *TEMPORAL)


@dataclass(frozen=True)
class Signature:
    name: str
    args: tuple[str, ...]  # the sqlglot node's argument names, in order
    families: tuple[tuple[str, ...], ...]  # per argument; the last repeats for a variadic function
    result: Callable[[list[SqlType]], SqlType]
    implementation: Callable[..., Any] | None = None  # of the values, NULL-strict
    builder: Callable[[exp.Expression, list[Evaluate], list[SqlType]], Evaluate] | None = None
    variadic: bool = False
    deterministic: bool = True
    labels: tuple[str, ...] = field(default=())

    def checks(self, count: int) -> list[tuple[str, tuple[str, ...]]]:
        families = list(self.families) + [self.families[-1]] * max(count - len(self.families), 0)
        labels = list(self.labels) or [f"argument {i + 1}" for i in range(count)]
        labels += [f"argument {i + 1}" for i in range(len(labels), count)]
        return list(zip(labels, families[:count], strict=True))

    def build(self, node: exp.Expression, args: list[Evaluate], kinds: list[SqlType]) -> Evaluate:
        if self.builder is not None:
            return self.builder(node, args, kinds)
        assert self.implementation is not None
        return strict(self.implementation, args)


def _same(kinds: list[SqlType]) -> SqlType:
    return SqlType(kinds[0].family, kinds[0].column_type)


def _text(kinds: list[SqlType]) -> SqlType:
    lengths = [string_length(k) for k in kinds]
    return varchar(sum(lengths)) if all(n is not None for n in lengths) else TEXT  # type: ignore[arg-type]


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else to_string(value)


def _concat(node: exp.Expression, args: list[Evaluate], kinds: list[SqlType]) -> Evaluate:
    return strict(lambda *values: "".join(map(_as_text, values)), args)


def _concat_ws(node: exp.Expression, args: list[Evaluate], kinds: list[SqlType]) -> Evaluate:
    separator, *parts = args

    def evaluate(row: tuple[Any, ...], meta: tuple[Any, ...]) -> str | None:
        glue = separator(row, meta)
        if glue is None:
            return None
        return glue.join(_as_text(v) for part in parts if (v := part(row, meta)) is not None)

    return evaluate


def _trim(node: exp.Expression, args: list[Evaluate], kinds: list[SqlType]) -> Evaluate:
    position = (node.args.get("position") or "BOTH").upper()
    strip = {"LEADING": str.lstrip, "TRAILING": str.rstrip}.get(position, str.strip)
    if len(args) == 1:
        return strict(lambda s: strip(s, " "), args)
    return strict(lambda s, chars: strip(s, chars), args)


def _substring(value: str, start: int, length: int | None = None) -> str:
    """SQL's 1-based SUBSTRING; a start of 0 counts as 1, a negative one from the end."""
    begin = start - 1 if start > 0 else len(value) + start if start < 0 else 0
    if begin < 0:
        return ""
    return value[begin:] if length is None else value[begin : begin + max(length, 0)]


def _pad(node: exp.Expression, args: list[Evaluate], kinds: list[SqlType]) -> Evaluate:
    left = bool(node.args.get("is_left"))

    def pad(value: str, width: int, fill: str = " ") -> str | None:
        if width < 0:
            return None
        if len(value) >= width or not fill:
            return value[:width]
        padding = (fill * width)[: width - len(value)]
        return padding + value if left else value + padding

    return strict(pad, args)


def _position(node: exp.Expression, args: list[Evaluate], kinds: list[SqlType]) -> Evaluate:
    # sqlglot reads LOCATE(sub, s), POSITION(sub IN s) and INSTR(s, sub) into this=s, substr=sub
    return strict(lambda s, sub: s.find(sub) + 1, args)


def _regexp_replace(value: str, pattern: str, replacement: str) -> str:
    return re.sub(pattern, re.sub(r"\$(\d+)", r"\\\1", replacement), value)


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


def _temporal_part(part: Callable[[datetime], int]) -> Callable[[Any], int | None]:
    return lambda v: None if isinstance(v, InvalidDate) else part(to_datetime(v))


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
    return java_format(to_datetime(value), pattern)


def _to_date_of(value: Any, pattern: str | None = None) -> date | None:
    if isinstance(value, InvalidDate):
        return None
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


_DIFF_SECONDS = {"SECOND": 1, "MINUTE": 60, "HOUR": 3600, "DAY": 86400, "WEEK": 604800}


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
        a, b = to_datetime(a), to_datetime(b)
        if unit in _DIFF_SECONDS:
            return truncated(int((b - a).total_seconds() * 1_000_000), _DIFF_SECONDS[unit] * 1_000_000)
        months = _months_between(a, b)
        return truncated(months, {"MONTH": 1, "QUARTER": 3, "YEAR": 12}[unit])

    return strict(diff, [start, end])


def _timestamp_add(node: exp.Expression, args: list[Evaluate], kinds: list[SqlType]) -> Evaluate:
    unit = (node.args.get("unit").name if node.args.get("unit") is not None else "DAY").upper()
    value, amount = args[0], args[1]

    def add(v: Any, n: int) -> Any:
        if unit in UNIT_MONTHS:
            return temporal(v, lambda d: add_months(d, int(n) * UNIT_MONTHS[unit]))
        step = timedelta(days=int(n) * UNIT_DAYS.get(unit, 0), seconds=int(n) * UNIT_SECONDS.get(unit, 0))
        return temporal(v, lambda d: d + step)

    return strict(add, [value, amount])


def _from_unixtime(node: exp.Expression, args: list[Evaluate], kinds: list[SqlType]) -> Evaluate:
    pattern = node.args.get("format")
    text = pattern.this if isinstance(pattern, exp.Literal) else "yyyy-MM-dd HH:mm:ss"
    return strict(lambda n: java_format(datetime(1970, 1, 1) + timedelta(seconds=int(n)), text), args[:1])


def _base64(value: Any) -> str:
    return base64.b64encode(value if isinstance(value, bytes) else str(value).encode()).decode()


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

_INT = ("integer",)
_NUM = NUMERIC


def _integer(kinds: list[SqlType]) -> SqlType:
    return BIGINT


SIGNATURES: dict[type, Signature] = {
    exp.DPipe: Signature("||", ("this", "expression"), (ANY, ANY), _text, builder=_concat),
    exp.Concat: Signature("CONCAT", ("expressions",), (ANY,), _text, builder=_concat, variadic=True),
    exp.ConcatWs: Signature(
        "CONCAT_WS", ("expressions",), (STRING, ANY), lambda k: TEXT, builder=_concat_ws, variadic=True
    ),
    exp.Upper: Signature("UPPER", ("this",), (STRING,), _same, str.upper),
    exp.Lower: Signature("LOWER", ("this",), (STRING,), _same, str.lower),
    exp.Trim: Signature("TRIM", ("this", "expression"), (STRING, STRING), _same, builder=_trim),
    exp.Length: Signature("CHAR_LENGTH", ("this",), (STRING,), _integer, len),
    exp.Substring: Signature("SUBSTRING", ("this", "start", "length"), (STRING, _INT, _INT), _same, _substring),
    exp.Replace: Signature(
        "REPLACE", ("this", "expression", "replacement"), (STRING, STRING, STRING), lambda k: TEXT, str.replace
    ),
    exp.Left: Signature("LEFT", ("this", "expression"), (STRING, _INT), _same, lambda s, n: s[: max(n, 0)]),
    exp.Right: Signature("RIGHT", ("this", "expression"), (STRING, _INT), _same, lambda s, n: s[-n:] if n > 0 else ""),
    exp.Pad: Signature(
        "LPAD/RPAD", ("this", "expression", "fill_pattern"), (STRING, _INT, STRING), lambda k: TEXT, builder=_pad
    ),
    exp.Repeat: Signature("REPEAT", ("this", "times"), (STRING, _INT), lambda k: TEXT, lambda s, n: s * max(n, 0)),
    exp.RegexpReplace: Signature(
        "REGEXP_REPLACE",
        ("this", "expression", "replacement"),
        (STRING, STRING, STRING),
        lambda k: TEXT,
        _regexp_replace,
    ),
    exp.StrPosition: Signature("LOCATE", ("this", "substr"), (STRING, STRING), _integer, builder=_position),
    exp.ToBase64: Signature("TO_BASE64", ("this",), (("string", "binary"),), lambda k: TEXT, _base64),
    exp.Abs: Signature("ABS", ("this",), (_NUM,), _same, abs),
    exp.Ceil: Signature("CEIL", ("this",), (_NUM,), _same, _rounding(ROUND_CEILING)),
    exp.Floor: Signature("FLOOR", ("this",), (_NUM,), _same, _rounding(ROUND_FLOOR)),
    exp.Round: Signature("ROUND", ("this", "decimals"), (_NUM, _INT), _same, _round),
    exp.Extract: Signature("EXTRACT", ("expression",), (TEMPORAL,), _integer, builder=_extract),
    exp.TimeToStr: Signature("DATE_FORMAT", ("this", "format"), (TEMPORAL, STRING), lambda k: TEXT, _date_format),
    exp.TsOrDsToDate: Signature(
        "TO_DATE", ("this",), (("string", "date", "datetime"),), lambda k: DATE, builder=_to_date_builder
    ),
    exp.TimestampDiff: Signature(
        "TIMESTAMPDIFF", ("this", "expression"), (TEMPORAL, TEMPORAL), _integer, builder=_timestamp_diff
    ),
    exp.TimestampAdd: Signature(
        "TIMESTAMPADD",
        ("this", "expression"),
        (TEMPORAL, _INT),
        lambda k: SqlType(k[0].family, k[0].column_type),
        builder=_timestamp_add,
    ),
    exp.TsOrDsAdd: Signature(
        "DATE_ADD",
        ("this", "expression"),
        (TEMPORAL, _INT),
        lambda k: DATE,
        lambda d, n: temporal(d, lambda v: to_date(v) + timedelta(days=int(n))),
    ),
    exp.UnixToStr: Signature("FROM_UNIXTIME", ("this",), (_NUM,), lambda k: varchar(64), builder=_from_unixtime),
    exp.Uuid: Signature(
        "UUID",
        (),
        ((),),
        lambda k: varchar(36),
        builder=lambda n, a, k: lambda row, meta: str(uuid.uuid4()),
        deterministic=False,
    ),
    exp.StrToTime: Signature("TO_TIMESTAMP", ("this",), (STRING,), lambda k: DATETIME, builder=_to_timestamp_builder),
    # sqlglot's reading of TIMESTAMP '...' and DATE '...' where a function takes them
    exp.TimeStrToTime: Signature(
        "TIMESTAMP", ("this",), (("string", "date", "datetime"),), lambda k: DATETIME, to_datetime
    ),
    exp.DateStrToDate: Signature("DATE", ("this",), (("string", "date", "datetime"),), lambda k: DATE, to_date),
}
for _node, _unit in _TEMPORAL_PART_NODES.items():
    SIGNATURES[_node] = Signature(_unit, ("this",), (TEMPORAL,), _integer, _temporal_part(_PARTS[_unit]))
del _node, _unit
