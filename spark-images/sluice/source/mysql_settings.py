"""What a MySQL source's own settings mean for a pipeline, as `sluice check` says it: the
user's authentication plugin (8.4 disables mysql_native_password by default; 9.0 removed
it), GTIDs and their tags (8.3+), compressed transactions, and generated invisible primary
keys (8.0.30+). MariaDB has none of these."""

from __future__ import annotations

import re
from collections.abc import Mapping

import pymysql

from sluice.source.gtid_state import MysqlGtidSet

SETTINGS = (
    "gtid_mode",
    "gtid_executed",
    "binlog_transaction_compression",
    "sql_generate_invisible_primary_key",
    "show_gipk_in_create_table_and_information_schema",
)

Said = tuple[str, str, str]  # (level, subject, sentence)


def mysql_settings_said(conn: pymysql.connections.Connection, settings: Mapping[str, str]) -> list[Said]:
    """`settings`: the server's (SETTINGS among them, upper-cased)."""
    return [_authentication(conn), _gtids(settings), *_compression(settings), *_invisible_keys(settings)]


def _authentication(conn: pymysql.connections.Connection) -> Said:
    with conn.cursor() as cur:
        cur.execute("SHOW CREATE USER CURRENT_USER()")  # a user may see its own
        created = str(cur.fetchone()[0])
    found = re.search(r"IDENTIFIED WITH '([^']+)'", created)
    plugin = found.group(1) if found else "an unknown plugin"
    subject = "source.authentication"
    if plugin == "caching_sha2_password":
        return (
            "ok",
            subject,
            "caching_sha2_password (MySQL 8's default): a login the server has not cached (its first after the "
            "server starts or flushes privileges) sends the password over TLS, or in plaintext encrypted with the "
            "server's RSA public key, which Sluice asks the server for; a key fetched in plaintext is taken as it "
            "comes, so use ssl-mode verify_identity where the network is not trusted",
        )
    if plugin == "mysql_native_password":
        return (
            "warning",
            subject,
            "mysql_native_password: MySQL 8.4 loads it only with mysql_native_password=ON and 9.0 removed it; move "
            "the user to caching_sha2_password (ALTER USER ... IDENTIFIED WITH caching_sha2_password BY ...)",
        )
    return ("ok", subject, f"{plugin}")


def _gtids(settings: Mapping[str, str]) -> Said:
    if settings.get("gtid_mode") != "ON":
        return (
            "warning",
            "source.gtid",
            f"gtid_mode={settings.get('gtid_mode', 'OFF')}: the pipeline resumes by binlog file and position, which a "
            "replica promoted after a failover does not share; with gtid_mode=ON (and enforce_gtid_consistency=ON) "
            "it resumes by the GTID set it committed, on whichever server has it",
        )
    tags = MysqlGtidSet(settings.get("gtid_executed", "")).tags
    tagged = (
        f"; its tagged transactions ({', '.join(tags)}) are read and resumed from like the others"
        if tags
        else "; tagged GTIDs (8.3+) are read too"
    )
    return ("ok", "source.gtid", "gtid_mode=ON: the pipeline resumes by the GTID set it committed" + tagged)


def _compression(settings: Mapping[str, str]) -> list[Said]:
    if settings.get("binlog_transaction_compression") != "ON":
        return []
    return [
        (
            "ok",
            "source.binlog",
            "binlog_transaction_compression=ON: each transaction comes as one zstd payload, inflated as it is read",
        )
    ]


def _invisible_keys(settings: Mapping[str, str]) -> list[Said]:
    if settings.get("sql_generate_invisible_primary_key") != "ON":
        return []
    if settings.get("show_gipk_in_create_table_and_information_schema") == "OFF":
        return [
            (
                "error",
                "source.tables",
                "sql_generate_invisible_primary_key=ON with show_gipk_in_create_table_and_information_schema=OFF: "
                "a table created without a primary key gets an invisible my_row_id that the binlog carries and "
                "information_schema hides; SET GLOBAL show_gipk_in_create_table_and_information_schema=ON",
            )
        ]
    return [
        (
            "ok",
            "source.tables",
            "sql_generate_invisible_primary_key=ON: a table created without a primary key has an invisible "
            "my_row_id key, which information_schema shows Sluice (keep show_gipk_in_create_table_and_"
            "information_schema=ON): the target keeps it as a column",
        )
    ]
