"""A table's partition.key fields against its columns, refused at start naming the option,
the table and the column."""

from __future__ import annotations

import re

import pytest

from sluice.errors import SinkError
from sluice.pipeline.partition_key import PartitionField, parse_partition_keys
from sluice.sink.lakehouse.partitioning import partition_fields
from sluice.source.schema import Column, TableSchema

ORDERS = TableSchema(
    "shop",
    "orders",
    (
        Column("Id", "int", "int", False),
        Column("created", "datetime", "datetime", True),
        Column("day", "date", "date", True),
        Column("price", "double", "double", True),
        Column("photo", "blob", "blob", True),
    ),
    ("Id",),
    "Id",
)


def test_columns_are_matched_as_mysql_matches_them_and_spelled_as_the_table_does():
    keys = parse_partition_keys("shop.orders:bucket[8](id),hour(CREATED),month(day)")
    assert partition_fields(keys, ORDERS, "iceberg") == (
        PartitionField("Id", "bucket", 8),
        PartitionField("created", "hour"),
        PartitionField("day", "month"),
    )
    assert partition_fields(keys, ORDERS.__class__("shop", "users", ORDERS.columns, ("Id",), "Id"), "iceberg") == ()


@pytest.mark.parametrize(
    ("fields", "format_name", "message"),
    [
        ("missing", "iceberg", "table shop.orders has no column 'missing'"),
        ("hour(day)", "iceberg", "shop.orders hour(day): hour takes a DATETIME or TIMESTAMP column, not date"),
        (
            "year(price)",
            "iceberg",
            "shop.orders year(price): year takes a DATE, DATETIME or TIMESTAMP column, not double",
        ),
        (
            "truncate[2](created)",
            "iceberg",
            "truncate[2](created): truncate takes an integer, DECIMAL, string or binary",
        ),
        ("bucket[2](price)", "iceberg", "shop.orders bucket[2](price): bucket does not take a double column"),
        ("day(created)", "delta", "shop.orders day(created): Delta Lake partitions by columns only (no transforms)"),
        ("photo", "delta", "shop.orders photo: Delta Lake does not partition by a blob column"),
    ],
)
def test_a_field_the_table_cannot_take_is_refused(fields, format_name, message):
    with pytest.raises(SinkError, match=re.escape(message)) as refused:
        partition_fields(parse_partition_keys(f"shop.orders:{fields}"), ORDERS, format_name)
    assert str(refused.value).startswith("sink option partition.key: ")
