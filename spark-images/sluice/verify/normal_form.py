"""One form for a row's values, whichever side read them: the source's decoded rows (the
form the pipeline writes from) and a target driver's rows (jsonb as a dict, inet as an
address, numeric for an unsigned BIGINT, bytea as a memoryview, timestamptz as an aware
time) digest alike when they hold the same values."""

from __future__ import annotations

import hashlib
import ipaddress
import json
import struct
from collections.abc import Callable
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any

from sluice.source.row_decoding import Row
from sluice.source.schema import TableSchema

_NUMBERS = ("tinyint", "smallint", "mediumint", "int", "bigint", "decimal", "bit", "year")


def normal_value(data_type: str, value: Any) -> Any:
    """A value of a column of the source's `data_type`, in the form both sides agree on."""
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray, memoryview)):
        if data_type != "bit":
            return bytes(value)
        value = int.from_bytes(value, "big")  # a MySQL-dialect target's driver gives BIT as big-endian bytes
    if data_type == "json":
        return json.dumps(json.loads(value) if isinstance(value, str) else value, sort_keys=True)
    if data_type in ("inet4", "inet6"):
        return str(ipaddress.ip_address(str(value)))
    if data_type == "uuid":
        return str(value)
    if data_type == "float":  # float32: PostgreSQL's real prints the shortest text of it
        return struct.unpack("<f", struct.pack("<f", float(value)))[0] + 0.0  # -0.0 is 0.0
    if data_type == "double":
        return float(value) + 0.0
    if data_type in _NUMBERS:
        number = Decimal(str(value))
        return number.normalize() if number else Decimal(0)  # -0 and 0E+2 are 0
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(timezone.utc).replace(tzinfo=None)
    return value


def row_digest(schema: TableSchema) -> Callable[[Row], bytes]:
    """A row's 16-byte digest over its values' normal forms, for a table of this schema."""
    types = [c.data_type for c in schema.columns]

    def digest(row: Row) -> bytes:
        values = tuple(normal_value(t, v) for t, v in zip(types, row, strict=True))
        return hashlib.blake2b(repr(values).encode(), digest_size=16).digest()

    return digest
