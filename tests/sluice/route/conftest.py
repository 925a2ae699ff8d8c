"""Shards of one table in two databases, as sharded estates hold them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture
def shards(mariadb, source_db) -> Iterator[dict[str, str]]:
    """Shard table name -> its database: orders_0 and orders_1 in source_db, orders_2 and
    orders_3 in a second database, dropped after the test."""
    other = f"{source_db}_b"
    mariadb.execute(f"CREATE DATABASE {other}")
    yield {"orders_0": source_db, "orders_1": source_db, "orders_2": other, "orders_3": other}
    mariadb.execute(f"DROP DATABASE IF EXISTS {other}")
