"""Checks the source server is set up for CDC before anything is read."""

from __future__ import annotations

import pymysql

from sluice.errors import SourceError

REQUIRED = {
    "log_bin": "ON",
    "binlog_format": "ROW",
    "binlog_row_image": "FULL",
    "binlog_row_metadata": "FULL",
}


def check_binlog_settings(conn: pymysql.connections.Connection) -> None:
    with conn.cursor() as cur:
        cur.execute(
            f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({', '.join(['%s'] * len(REQUIRED))})",
            tuple(REQUIRED),
        )
        actual = {name: str(value).upper() for name, value in cur.fetchall()}
    for name, wanted in REQUIRED.items():
        have = actual.get(name)
        if have is None:
            raise SourceError(f"source server has no {name} setting: Sluice needs MySQL 8.0.14+ or MariaDB 10.5+")
        if have != wanted:
            raise SourceError(
                f"source server has {name}={have}; Sluice needs {name}={wanted} "
                f"(set it in the server configuration and restart, or SET GLOBAL {name}='{wanted}')"
            )
