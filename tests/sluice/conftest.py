"""Fixtures of the data plane's tests against a target: each runs against PostgreSQL and against MariaDB."""

from __future__ import annotations

import pytest

from sluice.source.schema import TableSchema, read_table_schema
from tests.harness import compare


@pytest.fixture(params=["postgresql", "mariadb"])
def target(request, postgresql, mariadb_target):
    """The sink options of a target, and how to read table DB.t back from it."""
    if request.param == "postgresql":
        options = {"url": postgresql.url, "username": postgresql.user, "password": postgresql.password}
        return options, lambda db: compare.postgres_rows(postgresql, db, "t")
    url = f"mysql://{mariadb_target.host}:{mariadb_target.port}/mysql"
    options = {"url": url, "username": mariadb_target.user, "password": mariadb_target.password}
    return options, lambda db: compare.source_rows(mariadb_target, db, "t")


@pytest.fixture
def table_t(mariadb, source_db) -> TableSchema:
    """Source table t (id INT PRIMARY KEY, v VARCHAR(10)), empty: its schema."""
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))", database=source_db)
    conn = mariadb.connect(source_db)
    schema = read_table_schema(conn, source_db, "t", None)
    conn.close()
    return schema
