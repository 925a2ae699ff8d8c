"""One reader per column type: a value's binary form in a row image (MySQL's and MariaDB's
log_event.cc, field.cc) read into the form the split reader's SELECT gives it.

Each reader comes in the two forms the two row loops take: for the Python loop (the
reference) the common types' Inline statements, written into the loop, and calls for the
others; for the compiled loop (_row_images.c) an instruction, which for the rarer types is
a call of the Python reader."""

from __future__ import annotations

import codecs
import json
import struct
import uuid
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Context, Decimal
from typing import Any

from pymysqlreplication.constants import FIELD_TYPE
from pymysqlreplication.json_binary import parse_json

from sluice.errors import SourceError
from sluice.source.charsets import errors_of, python_codec
from sluice.source.row_decoding import InvalidDate


@dataclass(frozen=True)
class Inline:
    """A column's decoding as Python statements that the compiled row loop runs in place,
    for the common types, where a call per value would cost more than the work. `{value}` in
    `statement` is the variable it sets and `{name}` each of `names`, bound in the loop's
    namespace; it reads `body` at `pos` and moves `pos` past the value."""

    statement: str
    names: dict[str, Any]


# A function of the event body and the value's offset that returns the value and the
# offset just past it.
Called = Callable[[bytes, int], tuple[Any, int]]


@dataclass(frozen=True)
class ColumnReader:
    """A column's reading for the Python row loop (`python`) and for the compiled one
    (`instruction`: a tuple that starts with its name, as _row_images.c reads it)."""

    python: Inline | Called
    instruction: tuple


def _called(read: Called) -> ColumnReader:
    return ColumnReader(read, ("call", read))


_DECIMAL_GROUP_BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)  # bytes for 0..9 leftover digits
_DECIMAL_CONTEXT = Context(prec=65)  # DECIMAL's most digits: scaling never rounds


def _fixed(fmt: str, instruction: tuple) -> ColumnReader:
    names = {"unpack": struct.Struct(fmt).unpack_from}
    return ColumnReader(
        Inline(f"{{value}} = {{unpack}}(body, pos)[0]; pos += {struct.calcsize(fmt)}", names), instruction
    )


def _little_endian(size: int, signed: bool) -> Called:
    def read(data: bytes, pos: int) -> tuple[int, int]:
        return int.from_bytes(data[pos : pos + size], "little", signed=signed), pos + size

    return read


def _length_prefixed(prefix: int, finish: Callable[[bytes], Any]) -> ColumnReader:
    """VARCHAR, CHAR, BLOB, TEXT, GEOMETRY, JSON: a little-endian length, then the bytes."""
    if not 1 <= prefix <= 4:
        raise ValueError(f"a length of {prefix} bytes; MySQL writes 1 to 4")
    length = "body[pos]" if prefix == 1 else f"int.from_bytes(body[pos:pos + {prefix}], 'little')"
    raw = f"body[pos + {prefix}:end]"
    codec = getattr(finish, "codec", None)  # text is decoded in place, not through a call
    value = f"str({raw}, {{codec}}, {{errors}})" if codec else f"{{finish}}({raw})"
    names = {"codec": codec[0], "errors": codec[1]} if codec else {"finish": finish}
    if codec:
        instruction: tuple = ("text", prefix, *codec)
    else:
        instruction = ("bytes", prefix) if finish is bytes else ("prefixed", prefix, finish)
    return ColumnReader(Inline(f"end = pos + {prefix} + {length}; {{value}} = {value}; pos = end", names), instruction)


def _undefined_cp1252_bytes(error: UnicodeError) -> tuple[str, int]:
    """MySQL's latin1 is cp1252 with its five undefined bytes mapped to U+0081 and so on;
    Python's cp1252 refuses them."""
    assert isinstance(error, UnicodeDecodeError)
    return "".join(map(chr, error.object[error.start : error.end])), error.end


codecs.register_error("sluice-mysql-latin1", _undefined_cp1252_bytes)


def _text(encoding: str, where: str) -> Callable[[bytes], Any]:
    if encoding == "binary":
        return bytes
    try:
        name = python_codec(encoding)
    except LookupError:
        raise SourceError(f"{where}: character set {encoding!r} has no Python codec; Sluice cannot decode it") from None
    errors = "sluice-mysql-latin1" if name == "cp1252" else errors_of(name)
    decode = lambda raw: str(raw, name, errors)  # noqa: E731
    decode.codec = (name, errors)  # type: ignore[attr-defined]  # for _length_prefixed to inline
    return decode


def _inflated(raw: bytes) -> bytes:
    """A compressed column's value as MariaDB stores it (sql/field.cc): empty, or a header
    byte then the value; a header with its high bit set says zlib, its low three bits how
    many big-endian bytes of original length follow, bit 8 a raw deflate stream."""
    if not raw:
        return b""
    header = raw[0]
    if not header & 0x80:
        return bytes(raw[1:])
    return zlib.decompress(bytes(raw[1 + (header & 7) :]), -15 if header & 8 else 15)


def _decimal(precision: int, scale: int) -> ColumnReader:
    """DECIMAL's binary form: big-endian groups of nine digits in four bytes, leftover digits
    in fewer, the integer part's leftover first and the fraction's last; the sign bit is
    flipped, and every bit inverted for negative values. The digits become one integer,
    then a Decimal with the scale as its exponent (a third of the cost of parsing text)."""
    whole_groups, whole_left = divmod(precision - scale, 9)
    frac_groups, frac_left = divmod(scale, 9)
    digits = [whole_left] + [9] * (whole_groups + frac_groups) + [frac_left]
    if not 1 <= precision <= 65 or not 0 <= scale <= min(precision, 38):
        raise ValueError(f"DECIMAL({precision},{scale}), which MySQL cannot hold")
    groups = [(8 * _DECIMAL_GROUP_BYTES[d], d) for d in digits if d]  # (bits, digits), most significant first
    size = sum(bits for bits, _ in groups) // 8
    sign_bit = 1 << (8 * size - 1)
    negative_mask = (1 << (8 * size)) - 1 ^ sign_bit
    unscaled, shift, read = "0", 8 * size, []
    for g, (bits, digits_held) in enumerate(groups):
        shift -= bits
        read.append(f"g{g} = packed >> {shift} & {(1 << bits) - 1}")
        unscaled = f"({unscaled}) * {10**digits_held} + g{g}"
    oversized = " or ".join(f"g{g} >= {10**digits_held}" for g, (_, digits_held) in enumerate(groups))
    held = tuple(digits_held for _, digits_held in groups)
    inline = Inline(
        f"packed = int.from_bytes(body[pos:pos + {size}], 'big'); pos += {size}\n"
        f"negative = not packed & {sign_bit}\n"
        f"packed ^= {negative_mask} if negative else {sign_bit}\n"
        + "\n".join(read)
        + f"\nif {oversized}: {{oversized}}(({', '.join(f'g{g}' for g in range(len(groups)))},), {held})\n"
        f"unscaled = {unscaled}\n"
        f"{{value}} = {{decimal}}(-unscaled if negative else unscaled).scaleb({-scale}, {{context}})",
        {"decimal": Decimal, "context": _DECIMAL_CONTEXT, "oversized": _oversized_group},
    )
    return ColumnReader(inline, ("decimal", precision, scale, Decimal))


def _oversized_group(values: tuple[int, ...], held: tuple[int, ...]) -> None:
    """Refuses a DECIMAL digit group holding more digits than it can (MySQL refuses it too)."""
    for value, digits in zip(values, held, strict=True):
        if value >= 10**digits:
            raise ValueError(f"a DECIMAL digit group of {value} holds at most {digits} digits")


def _fraction(fsp: int) -> tuple[int, int]:
    """Bytes of a temporal value's fraction, and microseconds per stored unit."""
    if not 0 <= fsp <= 6:
        raise ValueError(f"fractional seconds precision {fsp}; MySQL writes at most 6")
    size = (fsp + 1) // 2
    return size, 10 ** (6 - 2 * size)


def _datetime2(fsp: int) -> ColumnReader:
    """Year*13+month, day, hour, minute, second in 40 bits, big-endian, then the fraction."""
    frac_size, unit = _fraction(fsp)
    size, bits = 5 + frac_size, 8 * frac_size
    inline = Inline(
        f"packed = int.from_bytes(body[pos:pos + {size}], 'big'); pos += {size}\n"
        f"year_month = packed >> {22 + bits} & 0x1FFFF\n"
        "try:\n"
        f"    {{value}} = {{datetime}}(year_month // 13, year_month % 13, packed >> {17 + bits} & 0x1F, "
        f"packed >> {12 + bits} & 0x1F, packed >> {6 + bits} & 0x3F, packed >> {bits} & 0x3F, "
        f"(packed & {(1 << bits) - 1}) * {unit})\n"
        "except ValueError:  # zero or partial dates, year 0: their text, as the SELECT path gives it\n"
        f"    {{value}} = {{invalid}}((year_month // 13, year_month % 13, packed >> {17 + bits} & 0x1F, "
        f"packed >> {12 + bits} & 0x1F, packed >> {6 + bits} & 0x3F, packed >> {bits} & 0x3F, "
        f"(packed & {(1 << bits) - 1}) * {unit}), {fsp})",
        {"datetime": datetime, "invalid": _invalid_datetime},
    )
    return ColumnReader(inline, ("datetime2", fsp, _invalid_datetime))


def _invalid_datetime(parts: tuple[int, int, int, int, int, int, int], fsp: int) -> InvalidDate:
    """The server's text of a DATETIME(fsp) no calendar has, from its year, month, day, hour,
    minute, second and microseconds."""
    year, month, day, hour, minute, second, micros = parts
    fraction = f".{micros:06d}"[: fsp + 1] if fsp else ""
    return InvalidDate.of(year, month, day, f"{hour:02d}:{minute:02d}:{second:02d}{fraction}")


def _timestamp2(fsp: int) -> ColumnReader:
    """Seconds since the epoch, big-endian, shown in UTC as the scan's session shows them."""
    frac_size, unit = _fraction(fsp)
    size = 4 + frac_size

    zero = InvalidDate.of(0, 0, 0, "00:00:00" + ("." + "0" * fsp if fsp else ""))  # as the SELECT path prints it

    def read(data: bytes, pos: int) -> tuple[datetime | InvalidDate, int]:
        seconds = int.from_bytes(data[pos : pos + 4], "big")
        micros = int.from_bytes(data[pos + 4 : pos + size], "big") * unit
        return (_EPOCH + timedelta(seconds=seconds, microseconds=micros) if seconds or micros else zero), pos + size

    return ColumnReader(read, ("timestamp2", fsp, zero))


_EPOCH = datetime(1970, 1, 1)


def _time2(fsp: int) -> Called:
    """hh:mm:ss packed in bits as a signed fixed-point number with the fraction's bytes,
    offset to sort as unsigned. Negative values keep a negative fraction."""
    frac_size, unit = _fraction(fsp)
    size = 3 + frac_size
    frac_bits = 8 * frac_size
    offset = 0x800000 << frac_bits

    def read(data: bytes, pos: int) -> tuple[timedelta, int]:
        packed = int.from_bytes(data[pos : pos + size], "big") - offset
        magnitude = -packed if packed < 0 else packed
        whole, frac = magnitude >> frac_bits, magnitude & ((1 << frac_bits) - 1)
        value = timedelta(
            hours=(whole >> 12) & 0x3FF, minutes=(whole >> 6) & 0x3F, seconds=whole & 0x3F, microseconds=frac * unit
        )
        return (-value if packed < 0 else value), pos + size

    return read


def _date(data: bytes, pos: int) -> tuple[date | InvalidDate, int]:
    packed = int.from_bytes(data[pos : pos + 3], "little")
    year, month, day = packed >> 9, (packed >> 5) & 0xF, packed & 0x1F
    try:
        return date(year, month, day), pos + 3
    except ValueError:
        return InvalidDate.of(year, month, day), pos + 3


def _old_time(data: bytes, pos: int) -> tuple[timedelta, int]:
    """Pre-5.6 TIME: a signed decimal HHMMSS in three bytes."""
    packed = int.from_bytes(data[pos : pos + 3], "little", signed=True)
    magnitude = abs(packed)
    value = timedelta(hours=magnitude // 10000, minutes=magnitude // 100 % 100, seconds=magnitude % 100)
    return (-value if packed < 0 else value), pos + 3


def _old_datetime(data: bytes, pos: int) -> tuple[datetime | InvalidDate, int]:
    """Pre-5.6 DATETIME: a decimal YYYYMMDDhhmmss in eight bytes."""
    packed = int.from_bytes(data[pos : pos + 8], "little")
    day, time = divmod(packed, 1_000_000)
    parts = (day // 10000, day // 100 % 100, day % 100, time // 10000, time // 100 % 100, time % 100)
    try:
        return datetime(*parts), pos + 8
    except ValueError:
        return _invalid_datetime((*parts, 0), 0), pos + 8


def _json_text(value: Any) -> str:
    """MySQL's binary JSON, parsed by python-mysql-replication, as the text SELECT gives."""

    def plain(v: Any) -> Any:
        if isinstance(v, bytes):
            return v.decode("utf-8", "replace")
        if isinstance(v, dict):
            return {plain(k): plain(x) for k, x in v.items()}
        if isinstance(v, list):
            return [plain(x) for x in v]
        return v

    return json.dumps(plain(value), ensure_ascii=False)  # MySQL prints non-ASCII text as it is


def mysql_json_text(raw: bytes) -> str | None:
    return _json_text(parse_json(raw[0], raw[1:])) if raw else None


def _members(members: Sequence[str] | None, where: str) -> Sequence[str]:
    if members is None:
        raise SourceError(
            f"{where}: the table map carries no ENUM/SET members; the source needs binlog_row_metadata=FULL"
        )
    return members


def _enum(size: int, members: Sequence[str]) -> Called:
    index = _little_endian(size, False)

    def read(data: bytes, pos: int) -> tuple[str, int]:
        i, end = index(data, pos)
        return (members[i] if i < len(members) else ""), end

    return read


def _set(size: int, members: Sequence[str]) -> Called:
    mask = _little_endian(size, False)

    def read(data: bytes, pos: int) -> tuple[str, int]:
        bits, end = mask(data, pos)
        return ",".join(m for i, m in enumerate(members) if bits >> i & 1), end

    return read


def _bit(size: int) -> Called:
    def read(data: bytes, pos: int) -> tuple[int, int]:
        return int.from_bytes(data[pos : pos + size], "big"), pos + size

    return read


def _year(data: bytes, pos: int) -> tuple[int, int]:
    year = data[pos]
    return (year + 1900 if year else 0), pos + 1


def _inet4(raw: bytes) -> str:
    return ".".join(map(str, raw))


def _inet6(raw: bytes) -> str:
    """MariaDB's text for INET6: lowercase hex words, the longest run of zero words (the
    first of equal ones, even a single word) as '::', and IPv4-mapped (::ffff:a.b.c.d) and
    IPv4-compatible (::a.b.c.d) addresses ending in a dotted quad."""
    words = struct.unpack(">8H", raw)
    run_start, run_length, i = 0, 0, 0
    while i < 8:
        end = i
        while end < 8 and words[end] == 0:
            end += 1
        if end - i > run_length:
            run_start, run_length = i, end - i
        i = end + 1
    if run_start == 0 and (run_length == 6 or (run_length == 5 and words[5] == 0xFFFF)):
        return ("::" if run_length == 6 else "::ffff:") + _inet4(raw[12:])
    if not run_length:
        return ":".join(f"{w:x}" for w in words)
    head = ":".join(f"{w:x}" for w in words[:run_start])
    tail = ":".join(f"{w:x}" for w in words[run_start + run_length :])
    return f"{head}::{tail}"


def _uuid(raw: bytes) -> str:
    return str(uuid.UUID(bytes=raw))


# MariaDB's own types travel in the binlog as BINARY(n); SELECT gives them as text.
MARIADB_TEXT_TYPES = {"inet4": _inet4, "inet6": _inet6, "uuid": _uuid}

_INTEGERS = {FIELD_TYPE.TINY: "b", FIELD_TYPE.SHORT: "h", FIELD_TYPE.LONG: "i", FIELD_TYPE.LONGLONG: "q"}
_SIZES = {"b": 1, "h": 2, "i": 4, "q": 8}


def column_reader(column: Any, data_type: str | None, where: str) -> ColumnReader:
    """The reader for one table-map column (python-mysql-replication's Column); `data_type`
    is the schema's for the column, if the schema has it."""
    kind = column.type
    if data_type in MARIADB_TEXT_TYPES and kind == FIELD_TYPE.STRING:
        text, width = MARIADB_TEXT_TYPES[data_type], column.max_length
        return _length_prefixed(1, lambda raw: text(bytes(raw).ljust(width, b"\0")))  # zeros stripped, as BINARY
    if kind in _INTEGERS:
        code = _INTEGERS[kind]
        return _fixed("<" + (code.upper() if column.unsigned else code), ("int", _SIZES[code], not column.unsigned))
    if kind == FIELD_TYPE.INT24:
        return ColumnReader(_little_endian(3, signed=not column.unsigned), ("int", 3, not column.unsigned))
    if kind == FIELD_TYPE.FLOAT:
        return _fixed("<f", ("float",))  # exact, as the split reader selects it
    if kind == FIELD_TYPE.DOUBLE:
        return _fixed("<d", ("double",))
    if kind == FIELD_TYPE.NEWDECIMAL:
        return _decimal(column.precision, column.decimals)
    if getattr(column, "compressed", False):  # MariaDB's VARCHAR or BLOB ... COMPRESSED
        finish = _text(column.character_set_name or "binary", where)
        prefix = column.length_size if kind == FIELD_TYPE.BLOB else (2 if column.max_length > 255 else 1)
        return _length_prefixed(prefix, lambda raw: finish(_inflated(raw)))
    if kind in (FIELD_TYPE.VARCHAR, FIELD_TYPE.VAR_STRING, FIELD_TYPE.STRING):
        finish = _text(column.character_set_name or "utf8", where)
        if kind == FIELD_TYPE.STRING and finish is bytes:  # BINARY(n): SELECT keeps the zero padding
            width = column.max_length
            finish = lambda raw: bytes(raw).ljust(width, b"\0")  # noqa: E731
        return _length_prefixed(2 if column.max_length > 255 else 1, finish)
    if kind == FIELD_TYPE.BLOB:
        return _length_prefixed(column.length_size, _text(column.character_set_name or "binary", where))
    if kind == FIELD_TYPE.GEOMETRY:
        return _length_prefixed(column.length_size, bytes)
    if kind == FIELD_TYPE.JSON:
        return _length_prefixed(column.length_size, mysql_json_text)
    if kind == FIELD_TYPE.ENUM:
        return _called(_enum(column.size, _members(column.enum_values, where)))
    if kind == FIELD_TYPE.SET:
        return _called(_set(column.size, _members(column.set_values, where)))
    if kind == FIELD_TYPE.BIT:
        return _called(_bit(column.bytes))
    if kind == FIELD_TYPE.YEAR:
        return _called(_year)
    if kind == FIELD_TYPE.DATE:
        return ColumnReader(_date, ("date", InvalidDate.of))
    if kind == FIELD_TYPE.DATETIME2:
        return _datetime2(column.fsp)
    if kind == FIELD_TYPE.TIMESTAMP2:
        return _timestamp2(column.fsp)
    if kind == FIELD_TYPE.TIME2:
        return _called(_time2(column.fsp))
    if kind == FIELD_TYPE.TIME:
        return _called(_old_time)
    if kind == FIELD_TYPE.DATETIME:
        return _called(_old_datetime)
    if kind == FIELD_TYPE.TIMESTAMP:
        return _called(_old_timestamp)
    raise SourceError(f"{where}: binlog column type {kind} is not supported by Sluice")


def _old_timestamp(data: bytes, pos: int) -> tuple[datetime | InvalidDate, int]:
    """Pre-5.6 TIMESTAMP: seconds since the epoch, little-endian."""
    seconds = int.from_bytes(data[pos : pos + 4], "little")
    return (_EPOCH + timedelta(seconds=seconds) if seconds else _OLD_ZERO_TIMESTAMP), pos + 4


_OLD_ZERO_TIMESTAMP = InvalidDate.of(0, 0, 0, "00:00:00")
