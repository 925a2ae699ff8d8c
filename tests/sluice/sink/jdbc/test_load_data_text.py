"""Rows become the text LOAD DATA reads back as the same values: NULL as \\N, the four
characters it escapes escaped (in any column that holds text), and each type in the form
the snapshot's COPY text has, which one LOAD DATA statement reads for both."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from decimal import Decimal

from sluice.sink.jdbc.load_data_text import load_data_text, renders
from sluice.source.row_decoding import InvalidDate
from sluice.source.schema import Column, TableSchema


def _schema(*types: str) -> TableSchema:
    columns = tuple(Column(f"c{i}", kind, kind, nullable=True) for i, kind in enumerate(types))
    return TableSchema("db", "t", columns, ("c0",), "c0")


def test_null_is_backslash_n_and_text_escapes_backslash_tab_newline_and_return():
    schema = _schema("int", "varchar", "text", "json")
    rows = [
        (1, "plain", "a\tb\nc\rd\\e", '{"k": "\\\\N"}'),
        (2, None, "\\N", None),
        (3, "x\x00y", "", "[]"),
    ]
    assert load_data_text(schema, rows) == (
        '1\tplain\ta\\tb\\nc\\rd\\\\e\t{"k": "\\\\\\\\N"}\n2\t\\N\t\\\\N\t\\N\n3\tx\x00y\t\t[]\n'
    )


def test_each_type_has_the_snapshot_texts_form():
    schema = _schema("bigint", "year", "bit", "decimal", "float", "double", "date", "datetime", "timestamp", "time")
    rows = [
        (
            -9,
            0,
            255,
            Decimal("0E-10"),
            0.10000000149011612,
            1e-300,
            date(1000, 1, 1),
            datetime(2024, 2, 29, 23, 59, 59, 120000),
            datetime(2038, 1, 19, 3, 14, 7),
            timedelta(hours=-838, minutes=-59, seconds=-59),
        ),
        (
            18446744073709551615,
            2155,
            0,
            Decimal("-12345678901234.123456"),
            -1.5,
            2.0,
            InvalidDate("0000-00-00"),
            InvalidDate("2024-00-15 10:00:00"),
            InvalidDate("0000-00-00 00:00:00"),
            timedelta(days=1, microseconds=5),
        ),
    ]
    assert load_data_text(schema, rows).split("\n") == [
        "-9\t0000\t255\t0.0000000000\t0.10000000149011612\t1e-300\t1000-01-01\t2024-02-29 23:59:59.120000\t"
        "2038-01-19 03:14:07+00\t-838:59:59",
        "18446744073709551615\t2155\t0\t-12345678901234.123456\t-1.5\t2.0\t0000-00-00\t2024-00-15 10:00:00\t"
        "0000-00-00 00:00:00+00\t24:00:00.000005",
        "",
    ]


def test_binary_and_spatial_values_are_hex_after_an_escaped_backslash_x():
    schema = _schema("int", "varbinary", "blob", "point")
    rows = [(1, b"\x00\t\\", b"", b"\x01\x02"), (2, None, b"\xff", None)]
    assert load_data_text(schema, rows) == "1\t\\\\x00095c\t\\\\x\t\\\\x0102\n2\t\\N\t\\\\xff\t\\N\n"


def test_a_type_without_a_text_form_here_leaves_the_table_to_the_upsert_path():
    assert renders(_schema("int", "varchar", "geometry", "time"))
    assert not renders(_schema("int", "vector"))


def test_no_rows_no_text():
    assert load_data_text(_schema("int"), []) == ""
