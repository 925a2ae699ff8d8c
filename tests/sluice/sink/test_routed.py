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
