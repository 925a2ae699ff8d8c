"""String functions: CONCAT, CONCAT_WS, UPPER, LOWER, TRIM, BTRIM, CHAR_LENGTH, SUBSTRING, REPLACE, OVERLAY,
LEFT, RIGHT, LPAD/RPAD, REPEAT, REGEXP_REPLACE, LOCATE, STARTSWITH, ENDSWITH, TO_BASE64, and UUID."""

from __future__ import annotations

import base64
import re
import uuid
from typing import Any

from sqlglot import exp

from sluice.transform.casts import to_string
from sluice.transform.functions.signature import (
    ANY,
    INT,
    STRING,
    Evaluate,
    Signature,
    integer_type,
    same_type,
    text_type,
)
from sluice.transform.operators import (
    strict,
)
from sluice.transform.sql_types import (
    BOOLEAN,
    TEXT,
    SqlType,
    varchar,
)


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


# What Java's String.trim removes (Flink CDC's TRIM): every character up to U+0020.
_JAVA_WHITESPACE = "".join(map(chr, range(0x21)))


def _trim(node: exp.Expression, args: list[Evaluate], kinds: list[SqlType]) -> Evaluate:
    """TRIM([BOTH|LEADING|TRAILING] [characters] FROM s) and LTRIM/RTRIM(s[, characters]):
    the characters given, or else whitespace as Java's String.trim counts it."""
    position = (node.args.get("position") or "BOTH").upper()
    strip = {"LEADING": str.lstrip, "TRAILING": str.rstrip}.get(position, str.strip)
    if len(args) == 1:
        return strict(lambda s: strip(s, _JAVA_WHITESPACE), args)
    return strict(lambda s, chars: strip(s, chars) if chars else s, args)


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


def _position(value: str, sub: str, start: int = 1) -> int:
    """LOCATE(sub, s[, start]), POSITION(sub IN s [FROM start]), INSTR(s, sub): sqlglot
    reads each into this=s, substr=sub. An empty `sub` is found at 1, a start past the end
    finds nothing, as Flink CDC's position() does."""
    if not sub:
        return 1
    begin = max(start - 1, 0)
    return 0 if begin > len(value) else value.find(sub, begin) + 1


def _overlay(value: str, replacement: str, start: int, length: int | None = None) -> str:
    """OVERLAY(s PLACING r FROM start [FOR length]): `length` characters from `start` (1-based)
    replaced by r, as many as r has where no length is given; a start outside s changes
    nothing, as Flink CDC's overlay()."""
    count = len(replacement) if length is None else int(length)
    begin = int(start)
    if begin <= 0 or begin > len(value):
        return value
    rest = value[begin - 1 + count :] if count > 0 and begin + count <= len(value) else ""
    return value[: begin - 1] + replacement + rest


def _regexp_replace(value: str, pattern: str, replacement: str) -> str:
    return re.sub(pattern, re.sub(r"\$(\d+)", r"\\\1", replacement), value)


def _base64(value: Any) -> str:
    return base64.b64encode(value if isinstance(value, bytes) else str(value).encode()).decode()


SIGNATURES: dict[type, Signature] = {
    exp.DPipe: Signature("||", ("this", "expression"), (ANY, ANY), text_type, builder=_concat),
    exp.Concat: Signature("CONCAT", ("expressions",), (ANY,), text_type, builder=_concat, variadic=True),
    exp.ConcatWs: Signature(
        "CONCAT_WS", ("expressions",), (STRING, ANY), lambda k: TEXT, builder=_concat_ws, variadic=True
    ),
    exp.Upper: Signature("UPPER", ("this",), (STRING,), same_type, str.upper),
    exp.Lower: Signature("LOWER", ("this",), (STRING,), same_type, str.lower),
    exp.Trim: Signature("TRIM", ("this", "expression"), (STRING, STRING), same_type, builder=_trim),
    exp.Length: Signature("CHAR_LENGTH", ("this",), (STRING,), integer_type, len),
    exp.Substring: Signature("SUBSTRING", ("this", "start", "length"), (STRING, INT, INT), same_type, _substring),
    exp.Replace: Signature(
        "REPLACE", ("this", "expression", "replacement"), (STRING, STRING, STRING), lambda k: TEXT, str.replace
    ),
    exp.Left: Signature("LEFT", ("this", "expression"), (STRING, INT), same_type, lambda s, n: s[: max(n, 0)]),
    exp.Right: Signature(
        "RIGHT", ("this", "expression"), (STRING, INT), same_type, lambda s, n: s[-n:] if n > 0 else ""
    ),
    exp.Pad: Signature(
        "LPAD/RPAD", ("this", "expression", "fill_pattern"), (STRING, INT, STRING), lambda k: TEXT, builder=_pad
    ),
    exp.Repeat: Signature("REPEAT", ("this", "times"), (STRING, INT), lambda k: TEXT, lambda s, n: s * max(n, 0)),
    exp.RegexpReplace: Signature(
        "REGEXP_REPLACE",
        ("this", "expression", "replacement"),
        (STRING, STRING, STRING),
        lambda k: TEXT,
        _regexp_replace,
    ),
    exp.StrPosition: Signature(
        "LOCATE", ("this", "substr", "position"), (STRING, STRING, INT), integer_type, _position
    ),
    exp.ToBase64: Signature("TO_BASE64", ("this",), (("string", "binary"),), lambda k: TEXT, _base64),
    exp.Overlay: Signature(
        "OVERLAY", ("this", "expression", "from_", "for_"), (STRING, STRING, INT, INT), lambda k: TEXT, _overlay
    ),
    exp.StartsWith: Signature(
        "STARTSWITH", ("this", "expression"), (STRING, STRING), lambda k: BOOLEAN, str.startswith
    ),
    exp.EndsWith: Signature("ENDSWITH", ("this", "expression"), (STRING, STRING), lambda k: BOOLEAN, str.endswith),
    exp.Uuid: Signature(
        "UUID",
        (),
        ((),),
        lambda k: varchar(36),
        builder=lambda n, a, k: lambda row, meta: str(uuid.uuid4()),
        deterministic=False,
    ),
}

# By name: sqlglot reads them as calls of functions it does not know (exp.Anonymous).
NAMED_SIGNATURES: dict[str, Signature] = {
    # BTRIM(s[, characters]): TRIM(BOTH ...), a space where no characters are given (Flink CDC's btrim)
    "BTRIM": Signature(
        "BTRIM", ("expressions",), (STRING, STRING), same_type, lambda s, chars=" ": s.strip(chars) if chars else s
    ),
}
