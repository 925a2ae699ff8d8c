"""One form for a row's values, whichever side read them: the source's decoded rows (the
form the pipeline writes from) and a target driver's rows (jsonb as a dict, inet as an
address, numeric for an unsigned BIGINT, bytea as a memoryview, timestamptz as an aware
time) compare equal when they hold the same values.

A row's normal form is a tuple Python compares and hashes by value (1 == Decimal('1.00'),
-0.0 == 0.0), so a range's rows are counted as they are, without digests: a range holds a
chunk of rows at most. Each column's normalizer is chosen once per table: verification
spends most of its time here.
"""

from __future__ import annotations

import ipaddress
import json
import math
import struct
from collections.abc import Callable
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any

from sluice.source.row_decoding import Row
from sluice.source.schema import TableSchema

_INTEGERS = ("tinyint", "smallint", "mediumint", "int", "bigint", "year")
_BYTES = (bytes, bytearray, memoryview)


def normalizer(data_type: str) -> Callable[[Any], Any]:
    """How a value (not NULL) of a column of the source's `data_type` takes the form both sides agree on."""
    if data_type == "bit":
        return lambda v: int.from_bytes(v, "big") if isinstance(v, _BYTES) else int(v)  # a MySQL driver's bytes
    if data_type in _INTEGERS:
        return lambda v: v if type(v) is int else bytes(v) if isinstance(v, _BYTES) else Decimal(str(v))
    if data_type == "decimal":
        return lambda v: v if type(v) is Decimal else bytes(v) if isinstance(v, _BYTES) else Decimal(str(v))
    if data_type == "float":  # float32: PostgreSQL's real prints the shortest text of it
        return lambda v: bytes(v) if isinstance(v, _BYTES) else _number(struct.unpack("<f", struct.pack("<f", v))[0])
    if data_type == "double":
        return lambda v: bytes(v) if isinstance(v, _BYTES) else _number(float(v))
    if data_type == "json":
        return _json
    if data_type in ("inet4", "inet6"):
        return lambda v: bytes(v) if isinstance(v, _BYTES) else str(ipaddress.ip_address(str(v)))
    if data_type == "uuid":
        return lambda v: bytes(v) if isinstance(v, _BYTES) else str(v)
    return _plain


def _number(value: float) -> Any:
    return "NaN" if math.isnan(value) else value  # NaN equals nothing, not even itself


def _json(value: Any) -> Any:
    if isinstance(value, _BYTES):
        return bytes(value)
    return json.dumps(json.loads(value) if isinstance(value, str) else value, sort_keys=True)


def _plain(value: Any) -> Any:
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(timezone.utc).replace(tzinfo=None)
    return value


def normal_value(data_type: str, value: Any) -> Any:
    return None if value is None else normalizer(data_type)(value)


def normal_row(schema: TableSchema) -> Callable[[Row], tuple[Any, ...]]:
    """A row's normal form, for a table of this schema."""
    normalizers = [normalizer(c.data_type) for c in schema.columns]

    def normal(row: Row) -> tuple[Any, ...]:
        return tuple(None if v is None else f(v) for f, v in zip(normalizers, row, strict=True))

    return normal
