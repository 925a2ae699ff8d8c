"""A range prints as `verify --range` takes it back, whatever the key's type."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from decimal import Decimal

import pytest

from sluice.errors import SluiceError
from sluice.event.snapshot_split import SnapshotSplit
from sluice.source.schema import Column
from sluice.verify.range_text import bound_value, parse_range, range_text


@pytest.mark.parametrize(
    ("column", "start", "end"),
    [
        (Column("id", "bigint", "bigint(20)", False), -5, 1000),
        (Column("amount", "decimal", "decimal(12,2)", False), Decimal("10.50"), Decimal("2000")),
        (Column("day", "date", "date", False), date(2024, 1, 1), date(2024, 2, 1)),
        (Column("at", "datetime", "datetime(6)", False), datetime(2024, 1, 1), datetime(2024, 1, 1, 5, 0, 0, 7)),
        (Column("t", "time", "time", False), timedelta(hours=-3), timedelta(hours=101, seconds=1.5)),
        (Column("email", "varchar", "varchar(100)", False, "utf8mb4_unicode_ci"), "o'brien", "p, [x)"),
        (Column("hash", "varbinary", "varbinary(16)", False), b"\x00\x0a", b"\xff"),
        (Column("state", "enum", "enum('a','b')", False), 1, 2),
    ],
)
def test_a_printed_range_reads_back_as_the_same_bounds(column, start, end):
    printed = f"db.t {range_text(SnapshotSplit('db.t', 0, start, end))}"
    table, start_text, end_text = parse_range(printed)
    assert table == "db.t"
    assert bound_value(start_text, column, "start") == start
    assert bound_value(end_text, column, "end") == end


def test_open_ends_read_back_as_none():
    column = Column("id", "int", "int(11)", False)
    table, start, end = parse_range("db.t [-inf, +inf)")
    assert (bound_value(start, column, "start"), bound_value(end, column, "end")) == (None, None)


def test_a_bound_that_is_no_value_of_the_key_names_the_column():
    with pytest.raises(SluiceError, match=r"--range: start 'abc' is not a value of id \(int\(11\)\)"):
        bound_value("'abc'", Column("id", "int", "int(11)", False), "start")
    with pytest.raises(SluiceError, match=r"expected DB.TABLE \[START, END\)"):
        parse_range("db.t 1 to 2")
