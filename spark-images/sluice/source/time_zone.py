"""Zone ids (`source.server-time-zone`, `pipeline.local-time-zone`) in every form Java's
ZoneId.of accepts, read on the client.

Flink CDC users write Asia/Shanghai, UTC, Z, UTC+8, GMT+08:00, +08:00 or -5. The server is
never asked to understand them: most servers have no time-zone tables, and Sluice reads
TIMESTAMPs as instants in a UTC session anyway (see source/connection.py).
"""

from __future__ import annotations

import re
from datetime import timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

# ZoneOffset.of: +h, +hh, +hh:mm, +hhmm, +hh:mm:ss, +hhmmss (and the same with -).
_OFFSET = re.compile(r"([+-])(\d{1,2})(?::?(\d{2})(?::?(\d{2}))?)?")
_PREFIXES = ("UTC", "GMT", "UT")


def parse_zone_id(text: str) -> tzinfo:
    """The zone a Java ZoneId names; ValueError for anything ZoneId.of would refuse."""
    name = text.strip()
    if name in ("Z", *_PREFIXES):
        return timezone.utc
    for prefix in _PREFIXES:  # UTC+8, GMT+08:00, UT-5: a prefix and an offset
        if name.startswith(prefix) and name[len(prefix) : len(prefix) + 1] in ("+", "-"):
            return _offset(name[len(prefix) :], text)
    if name[:1] in ("+", "-"):
        return _offset(name, text)
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"'{text}' is not a time zone: use a region such as Asia/Shanghai, UTC, or an offset such as "
            "UTC+8, GMT+08:00, +08:00 or -5"
        ) from None


def _offset(text: str, original: str) -> tzinfo:
    match = _OFFSET.fullmatch(text)
    if not match:
        raise ValueError(f"'{original}' has an offset Java does not accept: use +8, +08, +08:00 or +0800")
    sign, hours, minutes, seconds = match.groups()
    if len(hours) == 1 and minutes:
        raise ValueError(f"'{original}': an offset with minutes needs two-digit hours, as in +08:00")
    delta = timedelta(hours=int(hours), minutes=int(minutes or 0), seconds=int(seconds or 0))
    if delta > timedelta(hours=18) or int(minutes or 0) > 59 or int(seconds or 0) > 59:
        raise ValueError(f"'{original}': offsets go from -18:00 to +18:00")
    return timezone(-delta if sign == "-" else delta)
