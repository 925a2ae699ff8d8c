"""Which server a connection reached, MariaDB or MySQL and its version, and the statements
Sluice sends it by that, chosen here and nowhere else: MySQL 8.4 removed the MASTER and
SLAVE spellings (SHOW BINARY LOG STATUS came in 8.2, SHOW REPLICAS in 8.0.22, the
source_binlog_checksum and source_heartbeat_period variables in 8.0.26), MariaDB keeps
them, and MariaDB 10.5 split REPLICATION CLIENT."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ServerFlavour:
    mariadb: bool
    version: tuple[int, int, int]

    @classmethod
    def parse(cls, server_info: str) -> ServerFlavour:
        """From the handshake's version text. Older clients see MariaDB's prefix for MySQL
        5.5 compatibility: 5.5.5-10.11.19-MariaDB."""
        mariadb = "mariadb" in server_info.lower()
        numbers = [int(n) for n in re.findall(r"\d+", server_info.removeprefix("5.5.5-"))[:3]]
        return cls(mariadb, (*numbers, 0, 0, 0)[:3])  # type: ignore[arg-type]

    def __str__(self) -> str:
        return f"{'MariaDB' if self.mariadb else 'MySQL'} {'.'.join(map(str, self.version))}"

    def _mysql_from(self, *version: int) -> bool:
        return not self.mariadb and self.version >= version

    @property
    def binary_log_status(self) -> str:
        """The binlog's current file and position (and, on MySQL, the executed GTID set)."""
        return "SHOW BINARY LOG STATUS" if self._mysql_from(8, 2) else "SHOW MASTER STATUS"

    @property
    def replicas(self) -> str:
        """The replicas connected to the server: server id, host, port first."""
        return "SHOW REPLICAS" if self._mysql_from(8, 0, 22) else "SHOW SLAVE HOSTS"

    @property
    def checksum_variable(self) -> str:
        """The user variable a binlog reader declares the checksums it takes in."""
        return "@source_binlog_checksum" if self._mysql_from(8, 0, 26) else "@master_binlog_checksum"

    @property
    def heartbeat_variable(self) -> str:
        """The user variable a binlog reader asks for heartbeats with (nanoseconds)."""
        return "@source_heartbeat_period" if self._mysql_from(8, 0, 26) else "@master_heartbeat_period"

    @property
    def binlog_privileges(self) -> tuple[str, ...]:
        """What reading the binlog needs (SELECT aside). MariaDB 10.5 split REPLICATION
        CLIENT; its SHOW MASTER STATUS then needs BINLOG MONITOR."""
        if not self.mariadb:
            return ("REPLICATION SLAVE", "REPLICATION CLIENT")
        return ("REPLICATION SLAVE", "BINLOG MONITOR" if self.version >= (10, 5) else "REPLICATION CLIENT")


def server_flavour(conn: Any) -> ServerFlavour:
    """The flavour of a connection of either driver."""
    return ServerFlavour.parse(conn.get_server_info())


def is_mariadb(conn: Any) -> bool:
    return server_flavour(conn).mariadb
