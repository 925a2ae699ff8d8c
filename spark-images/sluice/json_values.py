"""A JSON form for the values that appear in keys and boundaries (state must be text)."""

from __future__ import annotations

import base64
import datetime as dt
from decimal import Decimal
from typing import Any


def encode(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return {"f": repr(value)}
    if isinstance(value, Decimal):
        return {"d": str(value)}
    if isinstance(value, dt.datetime):
        return {"dt": value.isoformat()}
    if isinstance(value, dt.date):
        return {"date": value.isoformat()}
    if isinstance(value, dt.timedelta):
        return {"td": value.total_seconds()}
    if isinstance(value, (bytes, bytearray)):
        return {"b": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    raise TypeError(f"cannot store a {type(value).__name__} in state")


def decode(value: Any) -> Any:
    if isinstance(value, list):
        return [decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    ((tag, text),) = value.items()
    return {
        "f": float,
        "d": Decimal,
        "dt": dt.datetime.fromisoformat,
        "date": dt.date.fromisoformat,
        "td": lambda s: dt.timedelta(seconds=s),
        "b": base64.b64decode,
    }[tag](text)
