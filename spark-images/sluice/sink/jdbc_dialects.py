"""The dialect of each JDBC URL's scheme."""

from __future__ import annotations

from sluice.sink.jdbc_dialect import JdbcDialect
from sluice.sink.mysql_dialect import MySqlDialect
from sluice.sink.postgres_dialect import PostgresDialect

DIALECTS: dict[str, JdbcDialect] = {"postgresql": PostgresDialect(), "mysql": MySqlDialect()}
