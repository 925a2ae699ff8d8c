"""A row's normal form: equal on both sides when the values are, whatever each driver gives
them as, and different when any digit differs."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from decimal import Decimal

from sluice.source.schema import Column, TableSchema
from sluice.verify.normal_form import normal_row


def _schema(*types: str) -> TableSchema:
    columns = tuple(Column(f"c{i}", t, t, True) for i, t in enumerate(types))
    return TableSchema("db", "t", columns, ("c0",), "c0")


def test_a_value_each_driver_gives_otherwise_is_equal():
    normal = normal_row(_schema("bigint", "decimal", "double", "json", "inet6", "varbinary", "datetime", "bit"))
    source = (2**64 - 1, Decimal("1.50"), -0.0, '{"b": 1, "a": [1]}', "::1", b"\x00", datetime(2024, 1, 1, 5), 5)
    aware = datetime(2024, 1, 1, 6, tzinfo=timezone(timedelta(hours=1)))
    document = {"a": [1], "b": 1}
    target = (Decimal(2**64 - 1), Decimal("1.5"), 0.0, document, "0:0::1", memoryview(b"\x00"), aware, b"\x05")
    assert normal(source) == normal(target)
    assert hash(normal(source)) == hash(normal(target))


def test_a_decimal_differing_past_the_28th_digit_differs():
    """DECIMAL(65,30) holds 65 digits: a form rounded to Python's default 28 saw none of these."""
    normal = normal_row(_schema("decimal"))
    assert normal((Decimal("1.000000000000000000000000000001"),)) != normal((Decimal("1"),))
    wide = Decimal("12345678901234567890123456789.5")
    assert normal((wide,)) != normal((wide - Decimal("0.1"),))


def test_not_a_number_equals_itself_and_a_float_is_compared_as_float32():
    normal = normal_row(_schema("double", "float"))
    assert normal((float("nan"), 0.1)) == normal((float("nan"), 0.10000000149011612))
