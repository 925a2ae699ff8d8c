"""The binlog reader run over what a test just wrote: for tests of the reader itself."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from sluice.binlog.ddl.ddl_reader import DdlFollowing
from sluice.binlog.rows.event_reader import Replica
from sluice.binlog.transaction_reader import BinlogSource, Heartbeat, Transaction, read_transactions
from sluice.event.schema_change import SchemaChange
from sluice.source.offset import BinlogOffset
from sluice.source.schema import TableSchema
from tests.harness.services import MariaDB


def position(cur) -> BinlogOffset:  # noqa: ANN001 - a pymysql cursor
    cur.execute("SHOW MASTER STATUS")
    return BinlogOffset(*cur.fetchone()[:2])


def read_between(
    mariadb: MariaDB,
    database: str,
    start: BinlogOffset,
    end: BinlogOffset,
    schemas: Mapping[str, TableSchema],
    unread: Collection[str] = (),
    read_at: Mapping[str, BinlogOffset] | None = None,
    migrations: Mapping[str, Any] | None = None,
) -> list[Transaction | SchemaChange | Heartbeat]:
    """What the reader gives from `start` to `end`, capturing every table of `database`."""
    return list(
        read_transactions(
            BinlogSource(Replica(mariadb.endpoint(), 6200, True), stop_at=end),
            start,
            schemas,
            ddl_following=DdlFollowing(lambda db, table: db == database, migrations, unread, read_at or {}),
        )
    )
