"""Flink CDC's function examples give Flink CDC's results: the cases of its documentation
(transform.md) and of its runtime's function code where the documentation is silent, each
a defect a Flink CDC user met, reproduced here first."""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta, timezone
from typing import Any

import pytest
import yaml

from sluice.errors import DefinitionError
from sluice.source.schema import Column, TableSchema
from sluice.transform.table_transform import TableTransform
from sluice.transform.transform_rule import parse_transforms, rule_for

TYPES = TableSchema(
    "db",
    "types",
    (
        Column("id", "int", "int(11)", False),
        Column("smallint_", "smallint", "smallint(6)", True),
        Column("char_", "varchar", "varchar(64)", True, char_length=64),
        Column("date_", "date", "date", True),
        Column("time_", "time", "time", True),
        Column("timestamp_0_", "datetime", "datetime", True),
    ),
    ("id",),
    "id",
)


def projected(expression: str, **values: Any) -> Any:
    """`expression`'s value for a row of TYPES holding `values` (NULL elsewhere)."""
    rules = parse_transforms(yaml.safe_load(f'- {{source-table: db.types, projection: "id, {expression} AS v"}}'))
    transform = TableTransform(rule_for(rules, "db", "types"), TYPES)
    row = tuple(values.get(c.name, 1 if c.name == "id" else None) for c in TYPES.columns)
    return transform.project(row, transform.row_meta())[1]


@pytest.mark.parametrize(
    ("expression", "values", "expected"),
    [
        # 3. TRIM removes whitespace, as Java's String.trim does (every character up to U+0020)
        ("TRIM(char_)", {"char_": " \t mixed \n "}, "mixed"),
        ("TRIM(BOTH ' ' FROM char_)", {"char_": "  x  "}, "x"),
        # LTRIM and RTRIM with one argument remove spaces only
        ("LTRIM(char_)", {"char_": " \t x "}, "\t x "),
        ("RTRIM(char_)", {"char_": " x \t "}, " x \t"),
        # 5. two-argument LTRIM/RTRIM remove the characters given
        ("LTRIM(char_, 'x')", {"char_": "xxCDC"}, "CDC"),
        ("RTRIM(char_, 'xy')", {"char_": "CDCyxy"}, "CDC"),
        ("LTRIM(char_, '')", {"char_": "xxCDC"}, "xxCDC"),
        # 4. LOCATE's third argument is where the search starts
        ("LOCATE('i', char_, 16)", {"char_": "From A to Z is Lie"}, 17),
        ("LOCATE('i', char_)", {"char_": "From A to Z is Lie"}, 13),
        ("LOCATE('i', char_, 100)", {"char_": "From A to Z is Lie"}, 0),
        ("LOCATE('', char_, 5)", {"char_": "abc"}, 1),
        # 6. POSITION ... IN ... FROM
        ("POSITION('i' IN char_ FROM 15)", {"char_": "From A to Z is Lie"}, 17),
        ("POSITION('i' IN char_)", {"char_": "From A to Z is Lie"}, 13),
        # 9. LIKE ... ESCAPE
        ("char_ LIKE 'A$%' ESCAPE '$'", {"char_": "A%"}, True),
        ("char_ LIKE 'A$%' ESCAPE '$'", {"char_": "AB"}, False),
        ("char_ NOT LIKE 'A$_%' ESCAPE '$'", {"char_": "A_x"}, False),
        # 2. ABS keeps its argument's type: -32768 wraps in SMALLINT, as Java's (short) cast does
        ("ABS(smallint_)", {"smallint_": -32768}, -32768),
        ("ABS(smallint_)", {"smallint_": -7}, 7),
        # 8. DATE_ADD takes a string date and gives the date as text, as Flink CDC's does
        ("DATE_ADD('2015-07-23', 17)", {}, "2015-08-09"),
        ("DATE_ADD('2015-07-23 10:00:00', 17)", {}, "2015-08-09"),
        ("DATE_ADD(date_, 17)", {"date_": date(2024, 2, 20)}, "2024-03-08"),
        ("DATE_ADD(timestamp_0_, -1)", {"timestamp_0_": datetime(2024, 3, 1, 5)}, "2024-02-29"),
        # 1. (part) past year 9999 as Java's yyyy prints it, not NULL
        ("DATE_ADD(date_, 17)", {"date_": date(9999, 12, 31)}, "+10000-01-17"),
        ("DATE_ADD(date_, -1)", {"date_": date(1, 1, 1)}, "0001-12-31"),  # 1 BC, its era's year
        ("DATE_ADD(date_, 146097 * 3)", {"date_": date(9999, 12, 31)}, "+11199-12-31"),
        ("DATE_ADD('2015-13-45', 1)", {}, None),
        # 7. TIME arguments
        ("DATE_FORMAT(time_, 'HH:mm:ss')", {"time_": timedelta(hours=7, minutes=5, seconds=9)}, "07:05:09"),
        ("HOUR(time_)", {"time_": timedelta(hours=13, minutes=5)}, 13),
        ("MINUTE(time_)", {"time_": timedelta(hours=13, minutes=5)}, 5),
        ("time_ + INTERVAL '6' HOUR", {"time_": timedelta(hours=20)}, timedelta(hours=2)),
        ("time_ - INTERVAL '30' MINUTE", {"time_": timedelta(minutes=10)}, timedelta(hours=23, minutes=40)),
    ],
)
def test_a_flink_cdc_function_example_gives_flink_cdcs_result(expression, values, expected):
    value = projected(expression, **values)
    assert value == expected and type(value) is type(expected)


def test_date_add_is_text_as_in_flink_cdc():
    rules = parse_transforms(yaml.safe_load('- {source-table: db.types, projection: "id, DATE_ADD(date_, 1) AS v"}'))
    target = TableTransform(rule_for(rules, "db", "types"), TYPES).target()
    assert target.column("v").data_type == "varchar"


def test_local_time_functions_compute_in_the_pipelines_local_time_zone():
    """pipeline.local-time-zone: LOCALTIMESTAMP, CURRENT_DATE and FROM_UNIXTIME on its clock;
    NOW() is an instant, kept in UTC as every TIMESTAMP value is."""
    text = (
        '- {source-table: db.types, projection: "id, FROM_UNIXTIME(smallint_) AS f, LOCALTIMESTAMP AS l, '
        'NOW() AS n, CURRENT_DATE AS d"}'
    )
    transform = TableTransform(rule_for(parse_transforms(yaml.safe_load(text), "Asia/Shanghai"), "db", "types"), TYPES)
    before = datetime.now(timezone.utc).replace(tzinfo=None)
    _, unix, local, now, today = transform.project((1, 0, None, None, None, None), transform.row_meta())
    shanghai = before + timedelta(hours=8)
    assert unix == "1970-01-01 08:00:00"
    assert abs(local - shanghai) < timedelta(seconds=5) and abs(now - before) < timedelta(seconds=5)
    assert today in (shanghai.date(), (shanghai + timedelta(seconds=5)).date())


INSTANTS = TableSchema(
    "db",
    "instants",
    (Column("id", "int", "int(11)", False), Column("ts", "timestamp", "timestamp", True)),
    ("id",),
    "id",
)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm:ss')", "2024-01-16 04:30:00"),
        ("HOUR(ts)", 4),
        ("EXTRACT(DAY FROM ts)", 16),
        ("DAYOFMONTH(ts)", 16),
        ("DATE_ADD(ts, 1)", "2024-01-17"),
        ("CAST(ts AS TIMESTAMP)", datetime(2024, 1, 16, 4, 30)),  # TIMESTAMP_LTZ to TIMESTAMP: the clock's
        # where Flink CDC's code reads the instant in UTC, so does Sluice: TO_DATE and CAST to STRING
        ("TO_DATE(ts)", date(2024, 1, 15)),
        ("CAST(ts AS STRING)", "2024-01-15 20:30:00"),
        ("ts", datetime(2024, 1, 15, 20, 30)),  # the instant itself, kept as every TIMESTAMP value is
        ("TIMESTAMPADD(HOUR, 1, ts)", datetime(2024, 1, 15, 21, 30)),
        ("DATE_FORMAT(TO_TIMESTAMP_LTZ(0, 0), 'yyyy-MM-dd HH:mm:ss')", "1970-01-01 08:00:00"),
    ],
)
def test_a_timestamp_column_is_an_instant_its_fields_read_on_the_local_time_zones_clock(expression, expected):
    """MySQL's TIMESTAMP is Flink's TIMESTAMP_LTZ: an instant, whose fields and text are what
    the clock of pipeline.local-time-zone shows (2024-01-15 20:30 UTC is 04:30 the next day
    in Shanghai), as Flink CDC's TemporalFunctions and CastingFunctions read an Instant."""
    text = f'- {{source-table: db.instants, projection: "id, {expression} AS v"}}'
    rules = parse_transforms(yaml.safe_load(text), "Asia/Shanghai")
    transform = TableTransform(rule_for(rules, "db", "instants"), INSTANTS)
    assert transform.project((1, datetime(2024, 1, 15, 20, 30)), transform.row_meta())[1] == expected


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("UNIX_TIMESTAMP(id)", "UNIX_TIMESTAMP's argument 1 must be"),
        ("TO_TIMESTAMP_LTZ(id, 6)", "TO_TIMESTAMP_LTZ's precision must be 0 or 3, not 6"),
        ("ts + INTERVAL '1 02' DAY TO SECOND", "'1 02' is not an INTERVAL DAY TO SECOND"),
    ],
)
def test_a_function_used_wrongly_is_refused_naming_what_the_user_wrote(expression, message):
    text = f'- {{source-table: db.instants, projection: "id, {expression} AS v"}}'
    with pytest.raises(DefinitionError, match=re.escape(message)):
        TableTransform(rule_for(parse_transforms(yaml.safe_load(text)), "db", "instants"), INSTANTS)


FLAGS = TableSchema(
    "db",
    "flags",
    (Column("id", "int", "int(11)", False), Column("active", "tinyint", "tinyint(1)", True)),
    ("id",),
    "id",
)


def flag_rule(projection: str, filter_: str = "", as_boolean: bool = True):
    rule = {"source-table": "db.flags", "projection": projection, **({"filter": filter_} if filter_ else {})}
    return TableTransform(rule_for(parse_transforms([rule], tinyint1_as_boolean=as_boolean), "db", "flags"), FLAGS)


def test_a_tinyint1_column_is_boolean_in_expressions_as_flink_cdcs_source_reads_it():
    """10. treat-tinyint1-as-boolean.enabled (true by default, as Flink CDC's): `active OR
    TRUE` is a condition; any number but 0 is true. The column named as it is reaches its
    target as it is, value and type."""
    transform = flag_rule("id, active, active OR FALSE AS on_, NOT active AS off", filter_="active OR id > 100")
    meta = transform.row_meta()
    assert transform.project((1, 5), meta) == (1, 5, True, False)
    assert transform.project((2, 0), meta) == (2, 0, False, True)
    assert transform.image((1, 5), meta) and not transform.image((2, 0), meta) and transform.image((101, 0), meta)
    target = {c.name: c for c in transform.target().columns}
    assert target["active"].column_type == "tinyint(1)" and target["on_"].data_type == "boolean"  # Flink's BOOLEAN


def test_without_treat_tinyint1_as_boolean_a_tinyint1_column_is_an_integer():
    with pytest.raises(DefinitionError, match=r"each operand of AND and OR must be BOOLEAN, not INTEGER"):
        flag_rule("id, active OR TRUE AS a", as_boolean=False)
    arithmetic = flag_rule("id, active + 1 AS n", as_boolean=False)
    assert arithmetic.project((1, 5), arithmetic.row_meta())[1] == 6


LAST_SECOND = datetime(9999, 12, 31, 23, 59, 59)


def test_a_filter_keeps_a_row_whose_date_arithmetic_passes_year_9999():
    """1. Flink CDC's dates reach year 999999999: `ts + INTERVAL '1' DAY > ts` is true for
    9999-12-31 23:59:59, so the filter keeps the row (it was NULL, and the row dropped)."""
    rule = {
        "source-table": "db.types",
        "projection": "id",
        "filter": "timestamp_0_ + INTERVAL '1' DAY > timestamp_0_ OR timestamp_0_ IS NULL",
    }
    transform = TableTransform(rule_for(parse_transforms([rule]), "db", "types"), TYPES)
    row = tuple(LAST_SECOND if c.name == "timestamp_0_" else 1 if c.name == "id" else None for c in TYPES.columns)
    assert transform.image(row, transform.row_meta()) is not None


@pytest.mark.parametrize(
    ("expression", "values", "expected"),
    [
        ("YEAR(timestamp_0_ + INTERVAL '1' DAY)", {"timestamp_0_": LAST_SECOND}, 10000),
        ("MONTH(date_ + INTERVAL '2' MONTH)", {"date_": date(9999, 12, 31)}, 2),
        ("CAST(date_ + INTERVAL '1' DAY AS STRING)", {"date_": date(9999, 12, 31)}, "+10000-01-01"),
        (
            "DATE_FORMAT(timestamp_0_ + INTERVAL '1' SECOND, 'yyyy-MM-dd HH:mm')",
            {"timestamp_0_": LAST_SECOND},
            "10000-01-01 00:00",
        ),
        ("date_ + INTERVAL '1' DAY - INTERVAL '1' DAY", {"date_": date(9999, 12, 31)}, date(9999, 12, 31)),
        ("TIMESTAMPDIFF(DAY, date_, date_ + INTERVAL '400' YEAR)", {"date_": date(9999, 1, 1)}, 146097),
        ("date_ - INTERVAL '1' DAY < date_", {"date_": date(1, 1, 1)}, True),
    ],
)
def test_date_arithmetic_past_year_9999_computes_as_flink_cdcs_java_dates(expression, values, expected):
    value = projected(expression, **values)
    assert value == expected and type(value) is type(expected)


def test_a_date_past_year_9999_is_an_invalid_dates_text_where_the_targets_dates_end_at_9999():
    from sluice.source.row_decoding import InvalidDate

    value = projected("date_ + INTERVAL '1' DAY", date_=date(9999, 12, 31))
    assert type(value) is InvalidDate and value == "+10000-01-01"


def test_a_date_past_year_9999_is_a_far_date_where_the_targets_dates_reach_it():
    """Its text as Java prints it and its days from the epoch (PostgreSQL's dates reach it)."""
    from sluice.source.row_decoding import FarDate

    projection = "id, date_ + INTERVAL '1' DAY AS d, timestamp_0_ + INTERVAL '1' HOUR AS t"
    text = f'- {{source-table: db.types, projection: "{projection}"}}'
    transform = TableTransform(rule_for(parse_transforms(yaml.safe_load(text)), "db", "types"), TYPES, far_dates=True)
    row = (1, None, None, date(9999, 12, 31), None, datetime(9999, 12, 31, 23, 30))
    _, day, stamp = transform.project(row, transform.row_meta())
    assert type(day) is FarDate and day == "+10000-01-01" and day.iso == "10000-01-01"
    assert day.days == (date(9999, 12, 31) - date(1970, 1, 1)).days + 1 and day.micros is None
    assert stamp == "+10000-01-01 00:30:00" and stamp.micros == 30 * 60 * 1_000_000


@pytest.mark.parametrize("function", ["AI_COMPLETE('completion_model', char_, 'Summarize')", "AI_EMBED('m', char_)"])
def test_flink_cdcs_ai_model_functions_are_refused_saying_why(function):
    """They call a model endpoint (pipeline.model), which no target here can honour."""
    with pytest.raises(DefinitionError, match=r"one of Flink CDC's AI model functions, which call a model endpoint"):
        projected(function, char_="x")
