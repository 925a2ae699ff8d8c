"""A routed table read again (a schema change gave its rows values without row events)
reaches its target through the routing, and only where its rows can be found there."""

from __future__ import annotations

import pytest

from sluice.errors import SinkError
from sluice.event.snapshot_split import SnapshotSplit
from sluice.route.route_rule import parse_routes
from sluice.route.routing import Routing
from sluice.sink.parquet import ParquetSink
from sluice.sink.routed import RoutedSink
from sluice.source.schema import Column, TableSchema
from sluice.transform.transform_rule import parse_transforms

USERS = TableSchema(
    "app",
    "users",
    (Column("id", "int", "int(11)", False), Column("name", "varchar", "varchar(20)", True, char_length=20)),
    ("id",),
    "id",
)


def test_a_table_whose_target_has_neither_its_ranges_nor_a_key_is_not_read_again(tmp_path):
    """Its rows can be found neither by range nor by key: replacing them would replace others'."""
    names_only = Routing(
        parse_routes(None, "ALL_MATCH"), parse_transforms([{"source-table": "app.users", "projection": "name"}])
    )
    sink = RoutedSink(ParquetSink({"path": str(tmp_path)}), names_only)
    sink.route([USERS])
    with pytest.raises(
        SinkError, match=r"app\.users: read again into app\.users, which has no key to replace its rows by"
    ):
        sink.replace_range(USERS, SnapshotSplit("app.users", 0, None, None), lambda position: [])


def test_a_merged_members_target_keys_are_not_its_own_to_clear(tmp_path):
    """Two shards into one table: a shard read again is replaced by its rows' keys, so the
    target's chunk keys (the other shard's too) are not listed for it (a verification's
    key pass would place every other shard's key into its ranges for nothing)."""
    shard = TableSchema("app", "users_2", USERS.columns, USERS.primary_key, USERS.chunk_key)
    merged = Routing(
        parse_routes([{"source-table": r"app.users_\.*", "sink-table": "app.users"}], "ALL_MATCH"),
        parse_transforms([{"source-table": r"app.users_\.*", "projection": "*", "primary-keys": "id"}]),
    )
    sink = RoutedSink(ParquetSink({"path": str(tmp_path)}), merged)
    sink.route([TableSchema("app", "users_1", USERS.columns, USERS.primary_key, USERS.chunk_key), shard])
    assert list(sink.chunk_keys(shard)) == []
