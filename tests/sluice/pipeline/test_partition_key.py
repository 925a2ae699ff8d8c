"""partition.key in the syntax of Flink CDC's Iceberg connector: tables by ';', fields by ','."""

from __future__ import annotations

import pytest

from sluice.pipeline.partition_key import PartitionField, parse_partition_keys


def test_tables_and_their_fields_with_iceberg_transforms():
    keys = parse_partition_keys("shop.orders: year(created) , bucket[16](id);shop.users:country,truncate[4](name);")
    assert keys == {
        "shop.orders": (PartitionField("created", "year"), PartitionField("id", "bucket", 16)),
        "shop.users": (PartitionField("country"), PartitionField("name", "truncate", 4)),
    }
    assert [str(f) for f in keys["shop.orders"]] == ["year(created)", "bucket[16](id)"]
    assert [f.transform_text for f in keys["shop.users"]] == ["identity", "truncate[4]"]


def test_nothing_set_partitions_nothing():
    assert parse_partition_keys("") == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("orders:id", "'orders:id' must be <database>.<table>:<field>"),
        ("shop.orders", "'shop.orders' must be <database>.<table>:<field>"),
        ("shop.orders:id,", "shop.orders: '' is neither a column nor a transform of one"),
        ("shop.orders:weekday(at)", "shop.orders: 'weekday(at)': the transforms are year, month, day, hour, bucket"),
        ("shop.orders:bucket(id)", "shop.orders: 'bucket(id)': bucket takes a number greater than 0 in brackets"),
        ("shop.orders:truncate[0](id)", "truncate takes a number greater than 0"),
        ("shop.orders:day[3](at)", "shop.orders: 'day[3](at)': day takes no number"),
        ("shop.orders:id;shop.orders:at", "table shop.orders is named twice"),
    ],
)
def test_a_wrong_part_is_named(text, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        parse_partition_keys(text)
