"""Connections to the source, with the retry-then-fail behaviour users expect of CDC tools."""

from __future__ import annotations

import contextlib
import logging
import ssl
import time
from collections.abc import Callable, Iterator
from datetime import date, datetime
from typing import Any, ClassVar

import MySQLdb
import MySQLdb.converters
import MySQLdb.times
import pymysql
import pymysql.cursors
from MySQLdb.constants import FIELD_TYPE, FLAG

from sluice.errors import SourceError, SourceUnavailable
from sluice.source.charsets import MYSQL_UTF8, SURROGATES
from sluice.source.endpoint import SourceEndpoint
from sluice.source.offset import BinlogOffset
from sluice.source.row_decoding import InvalidDate
from sluice.source.server_flavour import is_mariadb, server_flavour

log = logging.getLogger(__name__)


class SharedTlsConnection(pymysql.connections.Connection):
    """PyMySQL's connection, whose TLS-if-offered ("preferred") connections share one client
    context: PyMySQL builds one per connection, loading the system's CA store each time,
    which cost a verification range's binlog read more than its rows."""

    _preferred: ClassVar[ssl.SSLContext | None] = None

    def _create_ssl_ctx(self, sslp: Any) -> ssl.SSLContext:
        if sslp:  # options of the caller's own
            return super()._create_ssl_ctx(sslp)
        if SharedTlsConnection._preferred is None:
            SharedTlsConnection._preferred = super()._create_ssl_ctx({})
        return SharedTlsConnection._preferred


def connect(endpoint: SourceEndpoint, streaming: bool = False) -> pymysql.connections.Connection:
    """Opens a pymysql connection (metadata, watermarks, binlog), retrying while unreachable."""
    settings = endpoint.settings()
    if streaming:
        settings["cursorclass"] = pymysql.cursors.SSCursor
    return _with_retry(endpoint, lambda: with_surrogates(SharedTlsConnection(autocommit=True, **settings)))


def with_surrogates(conn: pymysql.connections.Connection) -> pymysql.connections.Connection:
    """Strings read and written as the server keeps them, surrogates included (charsets)."""
    conn.encoding = MYSQL_UTF8
    return conn


def connect_scan(endpoint: SourceEndpoint) -> MySQLdb.connections.Connection:
    """Opens a mysqlclient connection for the split reader: libmariadb connects in a tenth of
    pymysql's time and decodes rows in C, about 3.5x faster, with the same Python types
    (JSON as text, as pymysql gives it). Encrypted as every connection of the run is
    (source/tls.py): libmariadb falls back to plaintext where a server offers no TLS, which
    is refused here where TLS is required."""
    settings = endpoint.scan_settings()
    conn = _with_retry(endpoint, lambda: MySQLdb.connect(autocommit=True, conv=_SCAN_CONVERSIONS, **settings))
    # Only REQUIRED falls back to plaintext: libmariadb refuses it under VERIFY_* itself, so
    # the question costs a round trip where it can be answered only so.
    if endpoint.tls.mode == "required" and not tls_cipher(conn):
        conn.close()
        raise SourceError(
            f"source {endpoint.hostname}:{endpoint.port} offers no TLS, and source.ssl-mode {endpoint.tls.mode} "
            "refuses a plaintext connection: turn TLS on at the server (ssl_cert, ssl_key), or set source.ssl-mode "
            "preferred"
        )
    return conn


def tls_cipher(conn: Any) -> str:
    """The session's TLS cipher, as the server sees it; '' for a plaintext connection."""
    cur = conn.cursor()
    cur.execute("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
    row = cur.fetchone()
    cur.close()
    return str(row[1]) if row and row[1] else ""


def _datetime(raw: bytes | str) -> datetime | InvalidDate:
    """datetime.fromisoformat is C, ten times MySQLdb's parser. A date no calendar has
    (zero, partial, year 0) keeps its text (the binlog path gives the same)."""
    text = raw.decode() if isinstance(raw, bytes) else raw
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return InvalidDate(text)


def _date(raw: bytes | str) -> date | InvalidDate:
    text = raw.decode() if isinstance(raw, bytes) else raw
    try:
        return date.fromisoformat(text)
    except ValueError:
        return InvalidDate(text)


def _with_surrogates(raw: bytes) -> str:
    return raw.decode("utf-8", SURROGATES)


_STRING_TYPES = (FIELD_TYPE.STRING, FIELD_TYPE.VAR_STRING, FIELD_TYPE.VARCHAR)
_STRING_TYPES += (FIELD_TYPE.TINY_BLOB, FIELD_TYPE.MEDIUM_BLOB, FIELD_TYPE.LONG_BLOB, FIELD_TYPE.BLOB)


@contextlib.contextmanager
def decoding_surrogates(conn: MySQLdb.connections.Connection) -> Iterator[None]:
    """Results made inside decode strings in Python, surrogates kept (charsets): libmariadb's
    C decoding refuses them, and is kept for every other result, being the faster."""
    saved = {t: conn.converter[t] for t in _STRING_TYPES}
    conn.converter.update(dict.fromkeys(_STRING_TYPES, ((FLAG.BINARY, bytes), (None, _with_surrogates))))
    try:
        yield
    finally:
        conn.converter.update(saved)


_SCAN_CONVERSIONS = {
    **MySQLdb.converters.conversions,
    FIELD_TYPE.JSON: lambda raw: raw.decode("utf-8"),
    FIELD_TYPE.DATE: _date,
    FIELD_TYPE.DATETIME: _datetime,
    FIELD_TYPE.TIMESTAMP: _datetime,
}


# Client errors that mean the server could not be reached or went away, and the server's
# "too many connections" and "shutting down": the ones waiting can heal. Every other error
# (access denied, unknown database, missing privilege) is the configuration's, and is said
# at once.
TRANSIENT_ERRORS = {2002, 2003, 2005, 2006, 2013, 1040, 1053}


def _with_retry(endpoint: SourceEndpoint, open_connection: Callable[[], Any]) -> Any:
    """Both drivers raise OperationalError(code, message); only transient ones are retried."""
    delay = 0.5
    for attempt in range(endpoint.max_retries + 1):
        try:
            return open_connection()
        except (pymysql.err.OperationalError, MySQLdb.OperationalError) as exc:
            code, message = (tuple(exc.args) + (0, ""))[:2]
            if isinstance(exc.__cause__ or exc.__context__, ssl.SSLError):
                code = 2026  # PyMySQL's TLS failure comes as "can't connect": no retry makes it pass
            if code not in TRANSIENT_ERRORS:
                raise SourceError(
                    f"source {endpoint.hostname}:{endpoint.port} refused the connection: {message}{_hint(code)}"
                ) from exc
            if attempt == endpoint.max_retries:
                raise SourceUnavailable(
                    f"source {endpoint.hostname}:{endpoint.port} unreachable after "
                    f"{attempt + 1} attempts: {message}; check source.hostname and "
                    "source.port, or raise source.connect.max-retries"
                ) from exc
            log.warning("source unreachable (%s), retrying in %.1fs", message, delay)
            time.sleep(delay)
            delay = min(delay * 2, 30)
    raise AssertionError("unreachable")


def _hint(code: int) -> str:
    if code == 1045:
        return (
            "; check source.username and source.password (a user created REQUIRE SSL also needs an encrypted "
            "connection, source.ssl-mode, and one created REQUIRE X509 or SUBJECT a client certificate, "
            "source.ssl-cert and source.ssl-key)"
        )
    if code == 2026:
        return (
            "; the server offers no TLS, or its certificate failed verification: check source.ssl-mode and "
            "source.ssl-ca (a verify_identity certificate must name source.hostname)"
        )
    if code in (1044, 1049):
        return "; check source.tables and the user's grants"
    return ""


def current_offset(conn: Any) -> BinlogOffset:
    """The server's current binlog end: every committed transaction lies before it. (Either
    driver's connection.)"""
    with conn.cursor() as cur:
        cur.execute(server_flavour(conn).binary_log_status)
        row = cur.fetchone()
        if not row:
            raise SourceError(
                "source: binary logging is off; start the server with log-bin "
                "(and binlog_format=ROW, binlog_row_image=FULL, binlog_row_metadata=FULL)"
            )
        # MySQL gives the executed GTID set in the same row, exactly as of this position;
        # MariaDB has no such column (executed_gtids() asks it for a given position).
        gtid = (row[4] or "").replace("\n", "") if len(row) >= 5 else ""
    return BinlogOffset(row[0], int(row[1]), 0, gtid)


def executed_gtids(conn: Any, offset: BinlogOffset) -> BinlogOffset:
    """`offset` with the GTID set executed before it, where the server can tell: MariaDB for
    any position (BINLOG_GTID_POS); MySQL only as current_offset gives it."""
    if offset.gtid or not is_mariadb(conn):
        return offset
    with conn.cursor() as cur:
        cur.execute("SELECT BINLOG_GTID_POS(%s, %s), @@gtid_binlog_pos", (offset.file, offset.pos))
        gtid, state = cur.fetchone()
    # BINLOG_GTID_POS can answer nothing for the binlog's very end (seen under load, on a
    # server with GTIDs). There the server's binlog state is the set before it, as long as
    # the end has not moved since: nothing was logged between the two reads.
    if not gtid and state and current_offset(conn)[:2] == offset[:2]:
        gtid = state
    return BinlogOffset(offset.file, offset.pos, offset.row, gtid or "")
