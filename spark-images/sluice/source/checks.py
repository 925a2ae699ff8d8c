"""Checks the source server is set up for CDC before anything is read."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import pymysql

from sluice.errors import SourceError
from sluice.source.mysql_settings import SETTINGS as MYSQL_SETTINGS
from sluice.source.server_flavour import server_flavour
from sluice.source.sql import qualified

REQUIRED = {
    "log_bin": "ON",
    "binlog_format": "ROW",
    "binlog_row_image": "FULL",
    "binlog_row_metadata": "FULL",
}
# MySQL only: PARTIAL_JSON logs JSON updates as diffs (PARTIAL_UPDATE_ROWS events), with no
# full after image to write.
REFUSED = {"binlog_row_value_options": "PARTIAL_JSON"}
# Settings the reader follows, whatever their value (binlog/protocol/binlog_format.py).
FOLLOWED = ("log_bin_compress", "binlog_checksum")


def check_binlog_settings(conn: pymysql.connections.Connection) -> None:
    problem = binlog_settings_problem(binlog_settings(conn))
    if problem:
        raise SourceError(problem)


def binlog_settings(conn: pymysql.connections.Connection) -> dict[str, str]:
    """The server's settings that CDC depends on, upper-cased."""
    names = (*REQUIRED, *REFUSED, *FOLLOWED, *MYSQL_SETTINGS)
    with conn.cursor() as cur:
        cur.execute(f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({', '.join(['%s'] * len(names))})", names)
        return {name: str(value).upper() for name, value in cur.fetchall()}


def binlog_settings_problem(settings: Mapping[str, str]) -> str | None:
    """What is wrong with the server's settings (upper-cased values), if anything: the first."""
    return next(iter(binlog_settings_problems(settings)), None)


def binlog_settings_problems(settings: Mapping[str, str]) -> list[str]:
    """Everything wrong with the server's settings, a sentence each saying how to set it."""
    problems = []
    for name, wanted in REQUIRED.items():
        have = settings.get(name)
        if have is None:
            problems.append(f"source server has no {name} setting: Sluice needs MySQL 8.0.14+ or MariaDB 10.5+")
        elif have != wanted:
            problems.append(
                f"source server has {name}={have}; Sluice needs {name}={wanted} "
                f"(set it in the server configuration and restart, or SET GLOBAL {name}='{wanted}')"
            )
    for name, refused in REFUSED.items():
        if refused in settings.get(name, "").split(","):
            problems.append(
                f"source server has {name}={settings[name]}; Sluice needs it without {refused} (SET GLOBAL {name}='')"
            )
    return problems


def binlog_settings_followed(settings: Mapping[str, str]) -> list[str]:
    """What the settings the reader follows, and the ones a session may change, mean for a
    pipeline: a sentence each."""
    said = []
    if settings.get("log_bin_compress") == "ON":
        said.append("log_bin_compress=ON: the binlog's compressed events are inflated as they are read")
    checksum = settings.get("binlog_checksum", "NONE")
    if checksum == "NONE":
        said.append(
            "binlog_checksum=NONE: the binlog's events carry no checksum, so bytes changed on the source's disk or on "
            "the way cannot be found (SET GLOBAL binlog_checksum='CRC32' to have every event verified)"
        )
    else:
        said.append(
            f"binlog_checksum={checksum}: every event's checksum is verified before it is read; an event whose "
            "checksum does not hold stops the pipeline at it (each file says whether its events carry one: a "
            "change of the setting is followed)"
        )
    said.append(
        "binlog_row_image and binlog_format can be set per session: the columns a rows event leaves out are read "
        "from the source by key (a changelog target or a transformed table stops at that event); a change logged "
        "as a statement has its table read again (keep FULL and ROW)"
    )
    return said


_GRANT = re.compile(r"^GRANT (.+?) ON (\*|`(?:[^`]|``)+`)\.\* TO ", re.IGNORECASE)


def missing_privileges(grants: Sequence[str], required: Sequence[str], database: str | None = None) -> list[str]:
    """The required privileges that SHOW GRANTS's lines do not give, on every database (or
    on `database`, where its own grant adds to the global one). MariaDB lists the
    privileges of the user's default role there too."""
    held: set[str] = set()
    for line in grants:
        match = _GRANT.match(line)
        if match is None:
            continue
        on = match.group(2)
        if on == "*" or (database is not None and on[1:-1].replace("``", "`") == database):
            held.update(p.strip().upper() for p in match.group(1).split(","))
    if "ALL PRIVILEGES" in held or "ALL" in held:
        return []
    return [p for p in required if p not in held]


def check_privileges(conn: pymysql.connections.Connection) -> None:
    """Refuses, with the GRANT to run, a user that could not read the binlog: found before
    Spark starts rather than as a failed task."""
    problem = privileges_problem(conn)
    if problem:
        raise SourceError(problem)


def privileges_problem(conn: pymysql.connections.Connection) -> str | None:
    required = server_flavour(conn).binlog_privileges
    with conn.cursor() as cur:
        cur.execute("SHOW GRANTS")
        grants = [row[0] for row in cur.fetchall()]
    missing = missing_privileges(grants, required)
    if not missing:
        return None
    user, host = current_user(conn)
    return (
        f"source user '{user}'@'{host}' lacks {', '.join(missing)}, which reading the binlog needs; "
        f"on the source run: GRANT {', '.join(required)} ON *.* TO '{user}'@'{host}'"
    )


def check_select(conn: pymysql.connections.Connection, table_ids: Sequence[str]) -> None:
    """Each captured table can be read (a column-level or missing grant shows here first)."""
    for table_id in table_ids:
        problem = select_problem(conn, table_id)
        if problem:
            raise SourceError(problem)


def select_problem(conn: pymysql.connections.Connection, table_id: str) -> str | None:
    database, table = table_id.split(".", 1)
    with conn.cursor() as cur:
        try:
            cur.execute(f"SELECT * FROM {qualified(database, table)} LIMIT 0")
        except pymysql.err.OperationalError as exc:
            if exc.args[0] not in (1142, 1143):  # SELECT command denied (to a column)
                raise
            user, host = current_user(conn)
            return (
                f"source user '{user}'@'{host}' cannot SELECT from {table_id}; on the source run: "
                f"GRANT SELECT ON {qualified(database, table)} TO '{user}'@'{host}'"
            )
    return None


def current_user(conn: pymysql.connections.Connection) -> tuple[str, str]:
    """The account the server took the connection as: (user, host)."""
    with conn.cursor() as cur:
        cur.execute("SELECT CURRENT_USER()")
        user, _, host = cur.fetchone()[0].rpartition("@")
    return user, host
