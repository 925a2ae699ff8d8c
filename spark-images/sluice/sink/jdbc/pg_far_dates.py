"""Dates and timestamps past year 9999 (a transform's date arithmetic, source/row_decoding's
FarDate) as PostgreSQL takes them: its dates reach year 5874897 and its timestamps 294276,
where Python's stop at 9999. Binary COPY chooses dumpers by the column's type: these
replace the date and timestamp ones, and dump a FarDate from its days from the epoch."""

from __future__ import annotations

import struct
from typing import Any

from psycopg.adapt import AdaptersMap, Dumper
from psycopg.types.datetime import DateBinaryDumper, DatetimeNoTzBinaryDumper

from sluice.source.row_decoding import FarDate

_PG_EPOCH_DAYS = 10957  # 2000-01-01, PostgreSQL's epoch, in days from 1970-01-01
_DAY_MICROS = 86_400_000_000


class _DateBinaryDumper(DateBinaryDumper):
    def dump(self, obj: Any) -> bytes | None:
        if type(obj) is FarDate:
            return struct.pack("!i", obj.days - _PG_EPOCH_DAYS)
        return super().dump(obj)


class _TimestampBinaryDumper(DatetimeNoTzBinaryDumper):
    def dump(self, obj: Any) -> bytes | None:
        if type(obj) is FarDate:
            return struct.pack("!q", (obj.days - _PG_EPOCH_DAYS) * _DAY_MICROS + (obj.micros or 0))
        return super().dump(obj)


class _FarDateTextDumper(Dumper):
    """Text COPY and parameters: its ISO text, which PostgreSQL reads for either type."""

    def dump(self, obj: Any) -> bytes:
        return obj.iso.encode()


def register_far_date_dumpers(adapters: AdaptersMap) -> None:
    adapters.register_dumper(None, _DateBinaryDumper)
    adapters.register_dumper(None, _TimestampBinaryDumper)
    adapters.register_dumper(FarDate, _FarDateTextDumper)
