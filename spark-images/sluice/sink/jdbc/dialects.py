"""The dialect of each JDBC URL's scheme."""

from __future__ import annotations

from sluice.sink.jdbc.dialect import JdbcDialect
from sluice.sink.jdbc.mysql import MySqlDialect
from sluice.sink.jdbc.postgres import PostgresDialect

DIALECTS: dict[str, JdbcDialect] = {"postgresql": PostgresDialect(), "mysql": MySqlDialect()}
