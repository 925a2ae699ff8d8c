"""The conformance suite of the transform functions: Flink CDC's function specifications as
data, one row a case (an expression, a row's values, the value Flink CDC gives), from its
documentation (transform.md) and its runtime's functions, written here, not copied. Every
function Sluice's signature table has must have cases, with boundary values of its
argument types (NULL, negatives, the least SMALLINT, text beyond ASCII, dates from
1000-01-01 to 9999-12-31): a function without one fails the suite."""

from __future__ import annotations

import hashlib
import hmac
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
import yaml
from sqlglot import exp

from sluice.source.schema import Column, TableSchema
from sluice.transform import functions
from sluice.transform.expression_parser import parse_projection
from sluice.transform.table_transform import TableTransform
from sluice.transform.transform_rule import parse_transforms, rule_for

ARGUMENTS = TableSchema(
    "db",
    "arguments",
    (
        Column("id", "int", "int(11)", False),
        Column("smallint_", "smallint", "smallint(6)", True),
        Column("int_", "int", "int(11)", True),
        Column("bigint_", "bigint", "bigint(20)", True),
        Column("decimal_", "decimal", "decimal(10,2)", True, numeric_precision=10, numeric_scale=2),
        Column("double_", "double", "double", True),
        Column("char_", "varchar", "varchar(64)", True, char_length=64),
        Column("binary_", "varbinary", "varbinary(16)", True),
        Column("date_", "date", "date", True),
        Column("time_", "time", "time", True),
        Column("timestamp_", "datetime", "datetime(3)", True),
    ),
    ("id",),
    "id",
)
D, T = date, datetime
KEY = "conformance-key"  # HMAC_SHA256's, from the environment as a Secret gives it


def _hmac(raw: bytes) -> str:
    return hmac.new(KEY.encode(), raw, hashlib.sha256).hexdigest()


# (expression, the row's values (NULL elsewhere), Flink CDC's value)
CASES: list[tuple[str, dict[str, Any], Any]] = [
    # arithmetic
    ("ABS(int_)", {"int_": -5}, 5),
    ("ABS(smallint_)", {"smallint_": -32768}, -32768),
    ("ABS(decimal_)", {"decimal_": Decimal("-1.50")}, Decimal("1.50")),
    ("ABS(double_)", {"double_": -0.5}, 0.5),
    ("ABS(int_)", {}, None),
    ("CEIL(decimal_)", {"decimal_": Decimal("-1.50")}, Decimal("-1")),
    ("CEIL(double_)", {"double_": 1.2}, 2.0),
    ("CEILING(decimal_)", {"decimal_": Decimal("1.01")}, Decimal("2")),
    ("FLOOR(decimal_)", {"decimal_": Decimal("-1.50")}, Decimal("-2")),
    ("FLOOR(double_)", {"double_": 1.8}, 1.0),
    ("FLOOR(int_)", {"int_": -3}, -3),
    ("ROUND(decimal_, 1)", {"decimal_": Decimal("2.45")}, Decimal("2.5")),
    ("ROUND(decimal_, 0)", {"decimal_": Decimal("-2.50")}, Decimal("-3")),
    ("ROUND(double_, 2)", {"double_": 1.005}, 1.01),
    ("ROUND(int_, -1)", {"int_": 15}, 20),
    ("ROUND(decimal_, 1)", {}, None),
    # strings
    ("char_ || '!'", {"char_": "héllo"}, "héllo!"),
    ("char_ || '!'", {}, None),
    ("CONCAT(char_, '-', char_)", {"char_": "日本"}, "日本-日本"),
    ("CONCAT('AA', 'BB', 'CC')", {}, "AABBCC"),
    ("CONCAT_WS('-', char_, 'b', char_)", {}, "b"),
    ("CONCAT_WS('-', char_, 'b')", {"char_": "a"}, "a-b"),
    ("UPPER(char_)", {"char_": "straße"}, "STRASSE"),
    ("LOWER(char_)", {"char_": "ÀB"}, "àb"),
    ("BTRIM(char_)", {"char_": "  日本 "}, "日本"),
    ("BTRIM(char_, 'xy')", {"char_": "xyaxbyx"}, "axb"),
    ("BTRIM(char_, '')", {"char_": " a "}, " a "),
    ("BTRIM(char_)", {}, None),
    ("OVERLAY(char_ PLACING 'SQL' FROM 7)", {"char_": "Hello World"}, "Hello SQLld"),
    ("OVERLAY(char_ PLACING 'SQL' FROM 7 FOR 5)", {"char_": "Hello World"}, "Hello SQL"),
    ("OVERLAY(char_ PLACING 'X' FROM 2 FOR 0)", {"char_": "abc"}, "aX"),  # Flink CDC's: no suffix at 0
    ("OVERLAY(char_ PLACING 'X' FROM 0)", {"char_": "abc"}, "abc"),
    ("OVERLAY(char_ PLACING 'X' FROM 4)", {"char_": "abc"}, "abc"),
    ("OVERLAY(char_ PLACING 'X' FROM 1)", {}, None),
    ("STARTSWITH(char_, 'Straß')", {"char_": "Straße"}, True),
    ("STARTSWITH(char_, '')", {"char_": "a"}, True),
    ("STARTSWITH(char_, 'b')", {"char_": "a"}, False),
    ("STARTSWITH(char_, 'a')", {}, None),
    ("ENDSWITH(char_, '本')", {"char_": "日本"}, True),
    ("ENDSWITH(char_, 'x')", {"char_": "日本"}, False),
    ("ENDSWITH(char_, 'x')", {}, None),
    ("char_ SIMILAR TO '(ab|cd)%'", {"char_": "cdef"}, True),
    ("char_ SIMILAR TO '[a-c]+'", {"char_": "abcd"}, False),
    ("char_ SIMILAR TO 'a{2,3}_'", {"char_": "aaax"}, True),
    ("char_ NOT SIMILAR TO 'a.c'", {"char_": "abc"}, True),  # a dot is a dot
    ("char_ SIMILAR TO 'a%'", {}, None),
    ("'A%' NOT LIKE 'A$%' ESCAPE '$'", {}, False),
    ("'AB' NOT LIKE 'A$%' ESCAPE '$'", {}, True),
    ("TRIM(char_)", {"char_": " \t mixed \n "}, "mixed"),
    ("TRIM(BOTH 'x' FROM char_)", {"char_": "xxCDCxx"}, "CDC"),
    ("TRIM(LEADING 'x' FROM char_)", {"char_": "xxCDCxx"}, "CDCxx"),
    ("LTRIM(char_)", {"char_": "  CDC "}, "CDC "),
    ("LTRIM(char_, 'x')", {"char_": "xxCDC"}, "CDC"),
    ("RTRIM(char_)", {"char_": " CDC  "}, " CDC"),
    ("RTRIM(char_, 'xy')", {"char_": "CDCxyx"}, "CDC"),
    ("CHAR_LENGTH(char_)", {"char_": "日本語"}, 3),
    ("CHAR_LENGTH(char_)", {"char_": ""}, 0),
    ("SUBSTR(char_, 2, 3)", {"char_": "abcdef"}, "bcd"),
    ("SUBSTR(char_, 2)", {"char_": "abcdef"}, "bcdef"),
    ("SUBSTRING(char_ FROM 3 FOR 2)", {"char_": "abcdef"}, "cd"),
    ("SUBSTR(char_, -2)", {"char_": "abcdef"}, "ef"),
    ("REPLACE(char_, 'a', 'xy')", {"char_": "banana"}, "bxynxynxy"),
    ("LEFT(char_, 2)", {"char_": "日本語"}, "日本"),
    ("LEFT(char_, -1)", {"char_": "abc"}, ""),
    ("RIGHT(char_, 2)", {"char_": "abc"}, "bc"),
    ("RIGHT(char_, 0)", {"char_": "abc"}, ""),
    ("LPAD(char_, 5, '*')", {"char_": "ab"}, "***ab"),
    ("LPAD(char_, 1, '*')", {"char_": "ab"}, "a"),
    ("RPAD(char_, 5, 'xy')", {"char_": "ab"}, "abxyx"),
    ("REPEAT(char_, 3)", {"char_": "ab"}, "ababab"),
    ("REPEAT(char_, -1)", {"char_": "ab"}, ""),
    ("REGEXP_REPLACE(char_, '[0-9]+', '#')", {"char_": "a1b22c"}, "a#b#c"),
    ("REGEXP_REPLACE(char_, '(a)(b)', '$2$1')", {"char_": "abab"}, "baba"),
    ("LOCATE('i', char_)", {"char_": "From A to Z is Lie"}, 13),
    ("LOCATE('i', char_, 16)", {"char_": "From A to Z is Lie"}, 17),
    ("POSITION('i' IN char_ FROM 15)", {"char_": "From A to Z is Lie"}, 17),
    ("INSTR(char_, 'ö')", {"char_": "Köln"}, 2),
    ("TO_BASE64(char_)", {"char_": "hello"}, "aGVsbG8="),
    ("TO_BASE64(binary_)", {"binary_": b"\x00\xff"}, "AP8="),
    # time
    ("YEAR(date_)", {"date_": D(1000, 1, 1)}, 1000),
    ("YEAR(timestamp_)", {"timestamp_": T(9999, 12, 31, 23, 59, 59)}, 9999),
    ("QUARTER(date_)", {"date_": D(2024, 8, 1)}, 3),
    ("MONTH(date_)", {"date_": D(2024, 12, 31)}, 12),
    ("WEEK(date_)", {"date_": D(2021, 1, 3)}, 53),  # ISO week
    ("DAYOFMONTH(date_)", {"date_": D(2024, 2, 29)}, 29),
    ("DAY(timestamp_)", {"timestamp_": T(2024, 2, 29, 23)}, 29),
    ("DAYOFYEAR(date_)", {"date_": D(2024, 12, 31)}, 366),
    ("DAYOFWEEK(date_)", {"date_": D(2024, 6, 2)}, 1),  # a Sunday
    ("DAYOFWEEK(date_)", {"date_": D(2024, 6, 8)}, 7),  # a Saturday
    ("HOUR(timestamp_)", {"timestamp_": T(2024, 1, 1, 23, 5, 7)}, 23),
    ("HOUR(time_)", {"time_": timedelta(hours=7, minutes=8)}, 7),
    ("MINUTE(timestamp_)", {"timestamp_": T(2024, 1, 1, 23, 5, 7)}, 5),
    ("SECOND(timestamp_)", {"timestamp_": T(2024, 1, 1, 23, 5, 7)}, 7),
    ("EXTRACT(YEAR FROM date_)", {"date_": D(2024, 5, 6)}, 2024),
    ("EXTRACT(MONTH FROM timestamp_)", {"timestamp_": T(2024, 5, 6)}, 5),
    ("YEAR(date_)", {}, None),
    ("DATE_FORMAT(timestamp_, 'yyyy-MM-dd HH:mm:ss')", {"timestamp_": T(2024, 5, 6, 7, 8, 9)}, "2024-05-06 07:08:09"),
    ("DATE_FORMAT(timestamp_, 'yyyyMMdd')", {"timestamp_": T(1000, 1, 1)}, "10000101"),
    ("DATE_FORMAT(date_, 'dd/MM/yyyy')", {"date_": D(9999, 12, 31)}, "31/12/9999"),
    ("DATE_FORMAT(time_, 'HH:mm')", {"time_": timedelta(hours=13, minutes=4)}, "13:04"),
    ("TO_DATE(char_)", {"char_": "2024-02-29"}, D(2024, 2, 29)),
    ("TO_DATE(char_, 'yyyyMMdd')", {"char_": "20240229"}, D(2024, 2, 29)),
    ("TO_DATE(char_)", {"char_": "not a date"}, None),
    ("TO_TIMESTAMP(char_)", {"char_": "2024-05-06 07:08:09"}, T(2024, 5, 6, 7, 8, 9)),
    ("TO_TIMESTAMP(char_, 'yyyy/MM/dd HH:mm')", {"char_": "2024/05/06 07:08"}, T(2024, 5, 6, 7, 8)),
    ("TIMESTAMPDIFF(DAY, date_, DATE '2024-03-01')", {"date_": D(2024, 2, 1)}, 29),
    ("TIMESTAMPDIFF(HOUR, timestamp_, TIMESTAMP '2024-01-02 00:00:00')", {"timestamp_": T(2024, 1, 1, 1)}, 23),
    ("TIMESTAMPDIFF(SECOND, timestamp_, TIMESTAMP '2024-01-01 00:00:00')", {"timestamp_": T(2024, 1, 1, 0, 1)}, -60),
    ("TIMESTAMPADD(DAY, 1, date_)", {"date_": D(2024, 2, 28)}, D(2024, 2, 29)),
    ("TIMESTAMPADD(MONTH, 1, timestamp_)", {"timestamp_": T(2024, 1, 31, 12)}, T(2024, 2, 29, 12)),
    ("TIMESTAMPADD(HOUR, -2, timestamp_)", {"timestamp_": T(2024, 1, 1, 1)}, T(2023, 12, 31, 23)),
    ("DATE_ADD(date_, 17)", {"date_": D(2015, 7, 23)}, "2015-08-09"),
    ("DATE_ADD('2015-07-23', 17)", {}, "2015-08-09"),
    ("DATE_ADD(date_, 17)", {"date_": D(9999, 12, 31)}, "+10000-01-17"),
    ("FROM_UNIXTIME(int_)", {"int_": 0}, "1970-01-01 00:00:00"),
    ("FROM_UNIXTIME(bigint_, 'yyyy-MM-dd')", {"bigint_": 1717200000}, "2024-06-01"),
    ("TIMESTAMP '2024-05-06 07:08:09'", {}, T(2024, 5, 6, 7, 8, 9)),
    ("DATE '1000-01-01'", {}, D(1000, 1, 1)),
    ("DATE(char_)", {"char_": "2024-02-29"}, D(2024, 2, 29)),
    ("DATE(timestamp_)", {"timestamp_": T(9999, 12, 31, 23, 59, 59)}, D(9999, 12, 31)),
    ("date_ + INTERVAL '1' MONTH", {"date_": D(2024, 1, 31)}, D(2024, 2, 29)),
    ("timestamp_ - INTERVAL '1' DAY", {"timestamp_": T(1000, 1, 2)}, T(1000, 1, 1)),
    ("time_ + INTERVAL '6' HOUR", {"time_": timedelta(hours=20)}, timedelta(hours=2)),
    ("timestamp_ + INTERVAL '1 02:03:04' DAY TO SECOND", {"timestamp_": T(2024, 2, 28, 22)}, T(2024, 3, 1, 0, 3, 4)),
    ("timestamp_ - INTERVAL '02:30' HOUR TO MINUTE", {"timestamp_": T(2024, 1, 1)}, T(2023, 12, 31, 21, 30)),
    ("date_ + INTERVAL '1-2' YEAR TO MONTH", {"date_": D(2024, 1, 31)}, D(2025, 3, 31)),
    ("UNIX_TIMESTAMP(char_)", {"char_": "1970-01-01 00:00:01"}, 1),
    ("UNIX_TIMESTAMP(char_)", {"char_": "1969-12-31 23:59:59"}, -1),
    ("UNIX_TIMESTAMP(char_, 'yyyy/MM/dd')", {"char_": "2024/02/29"}, 1709164800),
    ("UNIX_TIMESTAMP(char_)", {"char_": "not a time"}, -(2**63)),  # Java's Long.MIN_VALUE, as Flink CDC's
    ("UNIX_TIMESTAMP(char_)", {}, None),
    ("UNIX_TIMESTAMP() > 1700000000", {}, True),
    ("TO_TIMESTAMP_LTZ(bigint_, 0)", {"bigint_": 1700000000}, T(2023, 11, 14, 22, 13, 20)),
    ("TO_TIMESTAMP_LTZ(bigint_, 3)", {"bigint_": -1}, T(1969, 12, 31, 23, 59, 59, 999000)),
    ("TO_TIMESTAMP_LTZ(bigint_)", {"bigint_": 1700000000123}, T(2023, 11, 14, 22, 13, 20, 123000)),
    ("TO_TIMESTAMP_LTZ(char_, 'yyyy-MM-dd HH:mm:ss')", {"char_": "2024-01-01 00:00:00"}, T(2024, 1, 1)),
    (
        "TO_TIMESTAMP_LTZ(char_, 'yyyy-MM-dd HH:mm:ss', 'Asia/Shanghai')",
        {"char_": "2024-01-01 00:00:00"},
        T(2023, 12, 31, 16),
    ),
    ("TO_TIMESTAMP_LTZ(bigint_, 0)", {}, None),
    # masking (Sluice's, as Debezium's column.mask.hash and column.mask.with)
    ("HMAC_SHA256(char_, 'CONFORMANCE_KEY')", {"char_": "alice@example.com"}, _hmac(b"alice@example.com")),
    ("HMAC_SHA256(char_, 'CONFORMANCE_KEY')", {"char_": "日本"}, _hmac("日本".encode())),
    ("HMAC_SHA256(int_, 'CONFORMANCE_KEY')", {"int_": -5}, _hmac(b"-5")),
    ("HMAC_SHA256(binary_, 'CONFORMANCE_KEY')", {"binary_": b"\x00\xff"}, _hmac(b"\x00\xff")),
    ("HMAC_SHA256(char_, 'CONFORMANCE_KEY')", {}, None),
    ("MASK(char_)", {"char_": "日本語"}, "***"),
    ("MASK(char_, 4)", {"char_": "ab"}, "****"),
    ("MASK(char_, -1)", {"char_": "ab"}, ""),
    ("MASK(char_)", {}, None),
    # UUID: a new RFC 4122 version 4 value each time
    ("CHAR_LENGTH(UUID())", {}, 36),
    ("SUBSTR(UUID(), 15, 1)", {}, "4"),
]


def value_of(expression: str, values: dict[str, Any]) -> Any:
    rule = f'- {{source-table: db.arguments, projection: "id, {expression} AS v"}}'
    transform = TableTransform(rule_for(parse_transforms(yaml.safe_load(rule)), "db", "arguments"), ARGUMENTS)
    row = tuple(values.get(c.name, 1 if c.name == "id" else None) for c in ARGUMENTS.columns)
    return transform.project(row, transform.row_meta())[1]


@pytest.fixture(autouse=True)
def hmac_key(monkeypatch):
    monkeypatch.setenv("CONFORMANCE_KEY", KEY)


@pytest.mark.parametrize(("expression", "values", "expected"), CASES, ids=[c[0] for c in CASES])
def test_a_function_case_gives_flink_cdcs_value(expression, values, expected):
    value = value_of(expression, values)
    assert value == expected and type(value) is type(expected), value


def test_every_function_in_the_signature_table_has_cases():
    nodes = [node for text, _, _ in CASES for node in parse_projection(text, "case")[0].walk()]
    covered = {type(node) for node in nodes} | {str(n.this).upper() for n in nodes if isinstance(n, exp.Anonymous)}
    signatures = {**functions.SIGNATURES, **functions.NAMED_SIGNATURES}
    missing = sorted(s.name for key, s in signatures.items() if key not in covered)
    assert not missing, f"functions without conformance cases: {', '.join(missing)}"


def test_a_function_without_cases_is_found(monkeypatch):
    """The suite's own check fails where a function has no case."""
    monkeypatch.setitem(functions.SIGNATURES, exp.Soundex, functions.SIGNATURES[exp.Upper])
    with pytest.raises(AssertionError, match="without conformance cases: UPPER"):
        test_every_function_in_the_signature_table_has_cases()
