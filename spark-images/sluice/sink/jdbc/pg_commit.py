"""A PostgreSQL transaction's last statements, COPYs into staging tables included, sent as
one query that ends in COMMIT, and left running.

A COPY's data is sent when the server asks for it, and PostgreSQL parses it before the COPY
returns: waited on, that parse held the binlog phase up for a seventh of its time. In one
simple query the server runs each statement after the COPY before it is done (the protocol
allows COPY FROM STDIN among a query's statements). So the COPYs go first, each fed when the
server asks; once the last is fed the driver goes on, and the COPY's parse, the DELETE and
INSERT ... ON CONFLICT from the staging tables and the COMMIT run while it reads the next
batch. The pending commit's wait() reads their results, and raises the first failure as
psycopg's class for its SQLSTATE.
"""

from __future__ import annotations

import select
from collections.abc import Sequence
from typing import NamedTuple

import psycopg
from psycopg import pq

from sluice.sink.base import PendingCommit

CHUNK = 1 << 16  # COPY data handed to libpq at a time


class CopyIn(NamedTuple):
    """A staging table made if missing (`create`; empty for a COPY into the target table
    itself), then COPY `statement` of `data`."""

    create: str
    statement: str
    data: bytes


def run_now(conn: psycopg.Connection, statements: Sequence[str | CopyIn]) -> None:
    """The statements in the transaction, done when this returns: COPYs first, then the rest."""
    for copy in (s for s in statements if isinstance(s, CopyIn)):
        if copy.create:
            conn.execute(copy.create)
        with conn.cursor() as cur, cur.copy(copy.statement) as into:
            into.write(copy.data)
    rest = [s for s in statements if not isinstance(s, CopyIn)]
    if rest:
        conn.execute(";".join(rest))


def commit_later(conn: psycopg.Connection, statements: Sequence[str | CopyIn]) -> PendingCommit:
    """Sends the statements (COPYs first) and COMMIT as one query, feeds each COPY its data
    when the server asks, and returns once the last one is fed. Until the commit's wait()
    returned nothing else may use the connection."""
    pgconn = conn.pgconn
    # The server asks for a COPY's data once it is done with the statements before: the
    # staging tables' COPYs (cheap, a temporary table's) go before those into target
    # tables, so that the driver waits least before it has fed the last.
    copies = sorted((s for s in statements if isinstance(s, CopyIn)), key=lambda copy: not copy.create)
    texts = [part for copy in copies for part in (copy.create, copy.statement) if part]
    texts += [s for s in statements if not isinstance(s, CopyIn)]
    pgconn.send_query(";".join([*texts, "COMMIT"]).encode(conn.info.encoding))
    _flush(pgconn)
    failures: list[psycopg.Error] = []
    for copy in copies:
        if not _asks_for_data(pgconn, failures):
            break  # a statement before it failed: the server ran none of the rest
        _send_copy(pgconn, copy.data)

    def committed() -> None:
        while (result := pgconn.get_result()) is not None:
            _note_failure(result, failures)
        if failures:
            raise failures[0]

    def ready() -> bool:
        try:
            pgconn.consume_input()  # what arrived, without waiting (libpq's socket never blocks)
        except psycopg.Error:
            return True  # wait() says what failed
        return not pgconn.is_busy()

    return PendingCommit(committed, ready)


def _asks_for_data(pgconn: pq.abc.PGconn, failures: list[psycopg.Error]) -> bool:
    """Reads the results before the next COPY's; False if the query ended first."""
    while (result := pgconn.get_result()) is not None:
        if result.status == pq.ExecStatus.COPY_IN:
            return True
        _note_failure(result, failures)
    return False


def _note_failure(result: pq.abc.PGresult, failures: list[psycopg.Error]) -> None:
    """A failed statement's error, of the class psycopg gives its SQLSTATE (a unique
    violation is psycopg.errors.UniqueViolation, as from a statement run on its own)."""
    if result.status == pq.ExecStatus.FATAL_ERROR:
        message = (result.error_message or b"").decode(errors="replace").strip()
        state = (result.error_field(pq.DiagnosticField.SQLSTATE) or b"").decode()
        try:
            kind = psycopg.errors.lookup(state)
        except KeyError:  # no SQLSTATE, or one psycopg does not know
            kind = psycopg.DatabaseError
        failures.append(kind(message))


def _send_copy(pgconn: pq.abc.PGconn, data: bytes) -> None:
    for start in range(0, len(data), CHUNK):
        chunk = data[start : start + CHUNK]
        while (queued := pgconn.put_copy_data(chunk)) == 0:
            _wait_for_socket(pgconn)
        if queued < 0:
            raise psycopg.OperationalError(pgconn.get_error_message())
    while (ended := pgconn.put_copy_end(None)) == 0:
        _wait_for_socket(pgconn)
    if ended < 0:
        raise psycopg.OperationalError(pgconn.get_error_message())
    _flush(pgconn)


def _flush(pgconn: pq.abc.PGconn) -> None:
    """Sends what libpq holds (its socket never blocks): while the server's answers come in
    meanwhile, they are read, so that neither side waits on the other."""
    while (left := pgconn.flush()) == 1:
        _wait_for_socket(pgconn)
    if left < 0:
        raise psycopg.OperationalError(pgconn.get_error_message())


def _wait_for_socket(pgconn: pq.abc.PGconn) -> None:
    readable, _, _ = select.select([pgconn.socket], [pgconn.socket], [])
    if readable:
        pgconn.consume_input()
