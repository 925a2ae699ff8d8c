"""Decimals into PostgreSQL's binary numeric, compiled.

psycopg dumps a Decimal through its as_tuple(): 0.6 µs a value, three quarters of the time
it takes to make a binlog row of the catch-up bench COPY data. _pg_numeric.c (built by
`make install` and into the image) gives the same bytes from the Decimal's text in a
fraction of that. psycopg's dumper is the reference the tests hold it to, and dumps what the
C one leaves: NaN, the infinities, values past the binary form's limits, ints.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from psycopg.adapt import AdaptersMap
from psycopg.types.numeric import NumericBinaryDumper as PsycopgNumericBinaryDumper

try:
    from sluice.sink.jdbc import _pg_numeric
except ImportError:  # a source tree nobody built: psycopg's own dumper
    _pg_numeric = None  # type: ignore[assignment]


class NumericBinaryDumper(PsycopgNumericBinaryDumper):
    """numeric's binary dumper (the one COPY's column types pick): Decimals in C."""

    def dump(self, obj: Any) -> Any:
        if obj.__class__ is Decimal:
            data = _pg_numeric.numeric_binary(obj)
            if data is not None:
                return data
        return super().dump(obj)


def register_numeric_dumper(adapters: AdaptersMap) -> None:
    """Dumps numeric columns' values with the compiled dumper on a connection's adapters."""
    if _pg_numeric is not None:
        adapters.register_dumper(None, NumericBinaryDumper)
