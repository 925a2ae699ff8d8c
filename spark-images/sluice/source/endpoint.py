"""Where the source is and how to reach it: plain values, without the database drivers (a
Spark task carries one, and the definition makes it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sluice.source.tls import TlsSettings

# Every session reads TIMESTAMPs in UTC: they are instants, and UTC text of them is
# unambiguous (a zone with DST repeats an hour) and needs no time-zone tables on the server.
# The binlog holds TIMESTAMPs as epoch seconds, which the row image decoder shows in UTC too.
SESSION_TIME_ZONE = "+00:00"


@dataclass(frozen=True)
class SourceEndpoint:
    """What a Spark task needs to reach the source; picklable, password kept out of repr."""

    hostname: str
    port: int
    username: str
    password: str
    connect_timeout: float = 30.0
    max_retries: int = 3
    reconnect_timeout: float = 300.0  # a streaming binlog reader's budget for a lost connection
    tls: TlsSettings = field(default_factory=TlsSettings)

    def __repr__(self) -> str:
        return f"SourceEndpoint({self.username}@{self.hostname}:{self.port})"

    def settings(self) -> dict[str, Any]:
        """PyMySQL's (and python-mysql-replication's) keyword arguments."""
        return {**self._common(), **self.tls.pymysql_settings()}

    def scan_settings(self) -> dict[str, Any]:
        """mysqlclient's, for the snapshot's chunk readers."""
        return {**self._common(), **self.tls.mysqlclient_settings()}

    def _common(self) -> dict[str, Any]:
        return {
            "host": self.hostname,
            "port": self.port,
            "user": self.username,
            "password": self.password,
            "charset": "utf8mb4",
            "connect_timeout": max(1, int(self.connect_timeout)),
            "init_command": f"SET time_zone = '{SESSION_TIME_ZONE}'",
        }
