"""Checks the source server is set up for CDC before anything is read."""

from __future__ import annotations

from collections.abc import Mapping

import pymysql

from sluice.errors import SourceError

REQUIRED = {
    "log_bin": "ON",
    "binlog_format": "ROW",
    "binlog_row_image": "FULL",
    "binlog_row_metadata": "FULL",
}
# MySQL only: PARTIAL_JSON logs JSON updates as diffs (PARTIAL_UPDATE_ROWS events), with no
# full after image to write.
REFUSED = {"binlog_row_value_options": "PARTIAL_JSON"}


def check_binlog_settings(conn: pymysql.connections.Connection) -> None:
    names = (*REQUIRED, *REFUSED)
    with conn.cursor() as cur:
        cur.execute(f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({', '.join(['%s'] * len(names))})", names)
        settings = {name: str(value).upper() for name, value in cur.fetchall()}
    problem = binlog_settings_problem(settings)
    if problem:
        raise SourceError(problem)


def binlog_settings_problem(settings: Mapping[str, str]) -> str | None:
    """What is wrong with the server's settings (upper-cased values), if anything."""
    for name, wanted in REQUIRED.items():
        have = settings.get(name)
        if have is None:
            return f"source server has no {name} setting: Sluice needs MySQL 8.0.14+ or MariaDB 10.5+"
        if have != wanted:
            return (
                f"source server has {name}={have}; Sluice needs {name}={wanted} "
                f"(set it in the server configuration and restart, or SET GLOBAL {name}='{wanted}')"
            )
    for name, refused in REFUSED.items():
        if refused in settings.get(name, "").split(","):
            return (
                f"source server has {name}={settings[name]}; Sluice needs it without {refused} (SET GLOBAL {name}='')"
            )
    return None
