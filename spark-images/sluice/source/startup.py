"""Where the binlog reader starts for each scan.startup.mode that skips the snapshot."""

from __future__ import annotations

import pymysql

from sluice.errors import SourceError
from sluice.pipeline.definition import StartupOptions
from sluice.source.connection import current_offset
from sluice.source.offset import BinlogOffset


def binlog_files(conn: pymysql.connections.Connection) -> list[str]:
    with conn.cursor() as cur:
        cur.execute("SHOW BINARY LOGS")
        return [row[0] for row in cur.fetchall()]


def startup_offset(conn: pymysql.connections.Connection, startup: StartupOptions) -> BinlogOffset:
    if startup.mode == "latest-offset":
        return current_offset(conn)
    if startup.mode in ("earliest-offset", "timestamp"):
        # timestamp: read from the oldest binlog and skip transactions older than the time.
        return BinlogOffset(binlog_files(conn)[0], 4)
    if startup.mode == "specific-offset":
        if startup.specific_gtid_set and not startup.specific_file:
            raise SourceError(
                "source.scan.startup.specific-offset.gtid-set: starting from a GTID set is not "
                "supported yet; give scan.startup.specific-offset.file and .pos"
            )
        return BinlogOffset(startup.specific_file, startup.specific_pos)
    raise AssertionError(f"{startup.mode} takes a snapshot first")


def check_offset_available(conn: pymysql.connections.Connection, offset: BinlogOffset) -> None:
    """A position the server no longer has is a clear failure, never a silent restart from now."""
    files = binlog_files(conn)
    if offset.file not in files:
        oldest = files[0] if files else "none"
        raise SourceError(
            f"binlog position {offset} is no longer on the source (purged?); the oldest binlog "
            f"the server has is {oldest}:4. Restart the pipeline from a fresh snapshot "
            "(new --state-dir and target offsets), or raise the server's binlog retention"
        )
