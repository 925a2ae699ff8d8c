"""Where the binlog reader starts for each scan.startup.mode that skips the snapshot (a GTID
set is turned into a position by asking the server for a binlog dump after it)."""

from __future__ import annotations

import pymysql
from pymysqlreplication.event import GtidEvent, MariadbGtidEvent

from sluice.binlog.rows.event_reader import Replica, WatchedTables, event_start, open_stream
from sluice.errors import PositionPurged, SourceError
from sluice.source.config import StartupOptions
from sluice.source.connection import current_offset
from sluice.source.endpoint import SourceEndpoint
from sluice.source.offset import BinlogOffset
from sluice.source.server_flavour import is_mariadb


def binlog_files(conn: pymysql.connections.Connection) -> list[str]:
    with conn.cursor() as cur:
        cur.execute("SHOW BINARY LOGS")
        return [row[0] for row in cur.fetchall()]


def startup_offset(
    conn: pymysql.connections.Connection, startup: StartupOptions, endpoint: SourceEndpoint, server_id: int
) -> BinlogOffset:
    if startup.mode == "latest-offset":
        return current_offset(conn)
    if startup.mode in ("earliest-offset", "timestamp"):
        # timestamp: read from the oldest binlog and skip transactions older than the time.
        return BinlogOffset(binlog_files(conn)[0], 4)
    if startup.mode == "specific-offset":
        if startup.specific_gtid_set and not startup.specific_file:
            return gtid_offset(conn, endpoint, server_id, startup.specific_gtid_set)
        return BinlogOffset(startup.specific_file, startup.specific_pos)
    raise AssertionError(f"{startup.mode} takes a snapshot first")


def gtid_offset(
    conn: pymysql.connections.Connection, endpoint: SourceEndpoint, server_id: int, gtid_set: str
) -> BinlogOffset:
    """The file/position of the first transaction after `gtid_set` (MariaDB 0-1-42 or MySQL
    uuid:1-42 form), asked of the server through a GTID dump; the server's end if none is."""
    mariadb = is_mariadb(conn)
    gtid_event = MariadbGtidEvent if mariadb else GtidEvent
    try:
        replica = Replica(endpoint, server_id, mariadb)
        start = BinlogOffset("", 4, 0, gtid_set)
        stream = open_stream(replica, start, WatchedTables({}), extra_events=(gtid_event,), by_gtid=True)
        try:
            for event in stream:
                if isinstance(event, gtid_event):
                    start = event_start(stream, event)
                    return BinlogOffset(start.file, start.pos, 0, gtid_set)
        finally:
            stream.close()
    except pymysql.err.OperationalError as exc:
        raise SourceError(
            f"source.scan.startup.specific-offset.gtid-set {gtid_set}: the server refused it: {exc.args[-1]}"
        ) from exc
    end = current_offset(conn)
    return BinlogOffset(end.file, end.pos, 0, gtid_set)


def check_offset_available(conn: pymysql.connections.Connection, offset: BinlogOffset) -> None:
    """A position the server no longer has is a clear failure, never a silent restart from now."""
    files = binlog_files(conn)
    if offset.file not in files:
        oldest = files[0] if files else "none"
        raise PositionPurged(
            f"binlog position {offset} is no longer on the source (purged?); the oldest binlog "
            f"the server has is {oldest}:4. Restart the pipeline from a fresh snapshot (a new "
            "pipeline.name into an empty target: the target's records of this one point to the purged "
            "position), or raise the server's binlog retention"
        )
