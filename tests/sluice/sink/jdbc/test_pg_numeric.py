"""Decimals reach PostgreSQL's binary numeric through the compiled dumper as psycopg's own
dumper sends them, byte for byte: every DECIMAL(p,s) MySQL has, random and at its edges,
exponents, negative zero, and what the C one leaves to psycopg (NaN, infinities, values past
the binary form's limits); and they read back from a real PostgreSQL as they were."""

from __future__ import annotations

import io
import random
from decimal import Decimal, localcontext

import psycopg
import pytest
from psycopg.copy import FileWriter
from psycopg.types.numeric import dump_decimal_to_numeric_binary

from sluice.sink.jdbc import pg_numeric
from sluice.sink.jdbc.pg_numeric import NumericBinaryDumper, register_numeric_dumper


def test_the_compiled_dumper_is_built():
    """`make install` builds it: a test run that fell back to psycopg would hide its defects."""
    assert pg_numeric._pg_numeric is not None


def mysql_decimals(rng: random.Random) -> list[Decimal]:
    """Values of every DECIMAL(p,s) MySQL allows (p up to 65, s up to 30), random and at the
    column's edges, as the binlog decoder gives them (a fixed scale)."""
    values = []
    for precision in range(1, 66):
        for scale in {0, 1, 2, min(precision, 4), min(precision, 30), min(precision - 1, 30)}:
            if scale > precision or scale > 30:
                continue
            whole = precision - scale
            for _ in range(6):
                digits = "".join(rng.choice("0123456789") for _ in range(precision))
                sign = rng.choice(("", "-"))
                values.append(Decimal(f"{sign}{digits[:whole] or '0'}.{digits[whole:]}" if scale else sign + digits))
            largest = "9" * whole or "0"
            values += [Decimal(f"{largest}.{'9' * scale}" if scale else largest), Decimal(f"0.{'0' * scale}")]
            values.append(-values[-2])
    return values


EDGES = [
    "0", "-0", "0.00", "-0.000", "1", "-1", "10000", "9999", "0.0001", "0.00001", "12345.6789",
    "1E+3", "1.5E+7", "123E-9", "0E-7", "0E+5", "-4.2E+10", "1E+131071", "1E-16383", "1E-16384",
    "3.14159265358979323846264338327950288419716939937510", "1" + "0" * 200, "0." + "0" * 100 + "1",
]  # fmt: skip


def test_every_mysql_decimal_dumps_as_psycopgs_reference_does():
    rng = random.Random(20261127)
    values = mysql_decimals(rng) + [Decimal(text) for text in EDGES]
    for value in values:
        made = pg_numeric._pg_numeric.numeric_binary(value)
        reference = bytes(dump_decimal_to_numeric_binary(value)) if made is not None else None
        assert made == reference, value
    assert sum(pg_numeric._pg_numeric.numeric_binary(v) is not None for v in values) > 0.99 * len(values)


def test_what_the_compiled_dumper_leaves_goes_to_psycopg():
    dumper = NumericBinaryDumper(Decimal)
    for value in (Decimal("NaN"), Decimal("-Infinity"), Decimal("Infinity"), Decimal("sNaN")):
        assert pg_numeric._pg_numeric.numeric_binary(value) is None
        assert bytes(dumper.dump(value)) == bytes(dump_decimal_to_numeric_binary(value))
    assert bytes(dumper.dump(12345678901234567890)) == bytes(
        psycopg.types.numeric.NumericBinaryDumper(int).dump(12345678901234567890)
    )
    with localcontext() as context:
        context.Emax = 999999
        with pytest.raises(psycopg.DataError):
            dumper.dump(Decimal("1E+200000"))  # past numeric's binary weight: psycopg names the limit


def test_decimals_copied_in_binary_read_back_equal(postgresql):
    rng = random.Random(7)
    values = mysql_decimals(rng)[::7] + [Decimal(text) for text in EDGES if abs(Decimal(text).adjusted()) < 1000]
    with postgresql.connect() as conn:
        register_numeric_dumper(conn.adapters)
        conn.execute("CREATE TEMP TABLE numbers (i int, n numeric)")
        data = io.BytesIO()
        with conn.cursor() as cur, psycopg.Copy(cur, binary=True, writer=FileWriter(data)) as copy:
            copy.set_types(["int4", "numeric"])
            for i, value in enumerate(values):
                copy.write_row((i, value))
        with conn.cursor() as cur, cur.copy("COPY numbers FROM STDIN (FORMAT BINARY)") as copy:
            copy.write(data.getvalue())
        back = dict(conn.execute("SELECT i, n FROM numbers").fetchall())
    for i, value in enumerate(values):
        assert back[i] == value, value
        if "E" not in str(value):  # the scale is kept: 1.50 stays 1.50
            assert back[i].as_tuple().exponent == value.as_tuple().exponent, value
