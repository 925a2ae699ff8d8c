"""source.server-time-zone takes every form Java's ZoneId.of takes, with no server tables."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import pytest

from sluice.errors import DefinitionError
from sluice.pipeline.definition import parse_definition
from sluice.source.time_zone import parse_zone_id

HOURS = timedelta(hours=1)


@pytest.mark.parametrize(
    ("text", "offset"),
    [
        ("UTC", timedelta(0)),
        ("Z", timedelta(0)),
        ("GMT", timedelta(0)),
        ("UTC+8", 8 * HOURS),
        ("UTC+08:00", 8 * HOURS),
        ("GMT+08:00", 8 * HOURS),
        ("UT-5", -5 * HOURS),
        ("+08:00", 8 * HOURS),
        ("+0530", timedelta(hours=5, minutes=30)),
        ("-5", -5 * HOURS),
        ("-05", -5 * HOURS),
        ("+18:00", 18 * HOURS),
    ],
)
def test_offset_forms_name_a_fixed_offset(text, offset):
    assert parse_zone_id(text).utcoffset(None) == offset


def test_a_region_id_keeps_its_daylight_saving_rules():
    berlin = parse_zone_id("Europe/Berlin")
    assert datetime(2024, 1, 15, tzinfo=berlin).utcoffset() == HOURS
    assert datetime(2024, 7, 15, tzinfo=berlin).utcoffset() == 2 * HOURS
    assert parse_zone_id("Asia/Shanghai").utcoffset(datetime(2024, 7, 15)) == 8 * HOURS


@pytest.mark.parametrize("text", ["Mars/Olympus", "UTC+19", "+8:00", "+25", "8", "UTC+", "GMT+08:60"])
def test_what_java_refuses_is_refused_before_anything_runs(text):
    document = f"""
source: {{type: mysql, hostname: h, username: u, tables: db.t, server-time-zone: "{text}"}}
sink: {{type: values}}
"""
    with pytest.raises(DefinitionError, match="^source.server-time-zone: " + re.escape(f"'{text}'")):
        parse_definition(document)


def test_utc_offsets_are_fixed_zones():
    assert parse_zone_id("UTC+8") == timezone(8 * HOURS)
