"""`sluice check PIPELINE.yaml`: everything a run checks at start, and what a careful
operator checks before one, without starting anything or changing either side.

The source: reachable, its binlog settings, the user's privileges (with the GRANT to run),
the binlog's retention against the snapshot's estimated time, the server ids the pipeline
would take against the server's own and its replicas', and each captured table: readable,
how its snapshot will be split, and values a type rule of the target will rewrite or refuse
(zero dates, NUL characters), looked for in the first rows. The target: reachable, and what
the pipeline's user may do there.

Each finding is one line naming what to fix. The run itself refuses what is an error here,
with the same message.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any, Literal

import pymysql

from sluice.errors import DefinitionError, SluiceError
from sluice.pipeline.definition import PipelineDefinition
from sluice.sink.base import Sink
from sluice.sink.factory import create_sink
from sluice.sink.target_values import DATES, STRINGS, TargetValues
from sluice.snapshot.chunk_splitter import estimated_rows
from sluice.source.checks import (
    binlog_settings,
    binlog_settings_followed,
    binlog_settings_problems,
    privileges_problem,
    select_problem,
)
from sluice.source.connection import connect, connect_scan, tls_cipher
from sluice.source.mysql_settings import mysql_settings_said
from sluice.source.schema import Column, TableSchema, discover_tables
from sluice.source.server_flavour import server_flavour
from sluice.source.sql import qualified, quote
from sluice.source.tls import TlsSettings

Level = Literal["error", "warning", "ok"]
FIRST_RUN_SCAN_ROWS = 10_000  # rows of each table a first run looks at for values a type rule refuses
ROWS_PER_SECOND_PER_READER = 20_000  # a conservative snapshot pace (wide rows, a remote target)
RETENTION_MARGIN = 3  # the binlog must outlive the snapshot this many times over


@dataclass(frozen=True)
class Finding:
    level: Level
    subject: str  # what to fix: source.binlog, source.server-id, db.table.column, sink ...
    message: str
    transient: bool = False  # an error that may heal by itself (a server not reachable now)

    def line(self) -> str:
        return f"{self.level:<7} {self.subject}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class PreflightFailed(SluiceError):
    """A first run's checks found errors: one line each."""

    troubleshooting = "preflight-failed"

    reason = "PreflightFailed"

    def __init__(self, errors: list[Finding]) -> None:
        super().__init__("\n".join(error.line() for error in errors))
        self.transient = all(error.transient for error in errors)  # only a server not reachable now


def check_first_run(definition: PipelineDefinition) -> None:
    """What a pipeline's first run on Kubernetes checks before it reads anything, where it
    runs, with its network, identity and Secrets (the operator has neither the database
    drivers nor, in most clusters, a way to the databases): every finding to the log, every
    error at once to the CdcPipeline."""
    findings = check_pipeline(definition, FIRST_RUN_SCAN_ROWS)
    for finding in findings:
        print(finding.line(), file=sys.stderr)
    errors = [finding for finding in findings if finding.level == "error"]
    if errors:
        raise PreflightFailed(errors)


def check_pipeline(definition: PipelineDefinition, scan_rows: int) -> list[Finding]:
    """Every finding, source first; `scan_rows` rows of each table are looked at for values
    (0: all of them)."""
    sink = create_sink(definition)
    schemas: list[TableSchema] = []  # the captured tables, as the source has them
    findings = list(_source(definition, sink, scan_rows, schemas))
    return [*findings, *_target(definition, sink, schemas)]


def _source(definition: PipelineDefinition, sink: Sink, scan_rows: int, found: list[TableSchema]) -> Iterator[Finding]:
    source = definition.source
    try:
        conn = connect(definition.source.endpoint())
    except SluiceError as exc:
        yield Finding("error", "source", str(exc), exc.transient)
        return
    try:
        yield Finding("ok", "source", f"reached {source.hostname}:{source.port} ({server_flavour(conn)})")
        yield tls_finding(definition, conn)
        settings = binlog_settings(conn)
        problems = binlog_settings_problems(settings)
        yield from (Finding("error", "source.binlog", problem) for problem in problems)
        if not problems:
            yield Finding("ok", "source.binlog", "log_bin, binlog_format=ROW and full row images and metadata")
        yield from (Finding("ok", "source.binlog", said) for said in binlog_settings_followed(settings))
        if not server_flavour(conn).mariadb:
            yield from (Finding(*said) for said in mysql_settings_said(conn, settings))
        problem = privileges_problem(conn)
        yield (
            Finding("error", "source.privileges", problem)
            if problem
            else Finding("ok", "source.privileges", "the user may read the binlog")
        )
        yield from _server_ids(conn, definition)
        try:
            schemas = discover_tables(conn, source.tables, source.chunk_key_column_for)
        except SluiceError as exc:
            yield Finding("error", "source.tables", str(exc))
            return
        found.extend(schemas)
        rows = {schema.table_id: estimated_rows(conn, schema) for schema in schemas}
        if source.startup.takes_snapshot:
            yield _retention(conn, definition, sum(rows.values()))
        values = sink.values
        for schema in schemas:
            problem = select_problem(conn, schema.table_id)
            if problem:
                yield Finding("error", schema.table_id, problem)
                continue
            yield _how_read(definition, schema, rows[schema.table_id])
            if values is not None:
                yield from _rewritten_values(conn, schema, values, scan_rows)
    finally:
        conn.close()


def tls_finding(definition: PipelineDefinition, conn: pymysql.connections.Connection) -> Finding:
    """Whether the run's source connections are encrypted and the server verified: asked
    of the server, for a metadata connection (the binlog's is made alike) and a chunk
    reader's (another driver)."""
    tls = definition.source.tls
    try:
        scan = connect_scan(definition.source.endpoint())
    except SluiceError as exc:
        return Finding("error", "source.ssl-mode", f"the snapshot's chunk readers cannot connect: {exc}")
    try:
        ciphers = {"metadata and binlog": tls_cipher(conn), "snapshot chunk readers": tls_cipher(scan)}
    finally:
        scan.close()
    return _encryption("source.ssl-mode", ciphers, tls)


def _encryption(subject: str, ciphers: dict[str, str], tls: TlsSettings) -> Finding:
    """Whether connections of these kinds are encrypted (their ciphers) and, by their settings, verified."""
    mode = tls.mode
    if all(ciphers.values()):
        verified = (
            f"the server's certificate verified ({mode})"
            if tls.verifies
            else f"the server's certificate not verified ({mode}: ssl-mode verify_identity does)"
        )
        cipher = next(iter(ciphers.values()))
        return Finding("ok", subject, f"every connection encrypted ({cipher}), {verified}")
    plain = ", ".join(name for name, cipher in ciphers.items() if not cipher)
    return Finding(
        "warning" if mode != "disabled" else "ok",
        subject,
        f"{plain} in plaintext ({mode}"
        + (
            ""
            if mode == "disabled"
            else ": the server offers no TLS; turn it on there and set ssl-mode verify_identity to protect the data "
            "on the way"
        )
        + ")",
    )


def _server_ids(conn: pymysql.connections.Connection, definition: PipelineDefinition) -> Iterator[Finding]:
    """The ids the pipeline's binlog readers take must be no other server's: a replica with
    the same id is disconnected by the source whenever the other connects."""
    ids = definition.source.server_ids
    taken = range(ids.start, ids.end + 1)
    with conn.cursor() as cur:
        cur.execute("SELECT @@server_id")
        own = int(cur.fetchone()[0])
        if own in taken:
            yield Finding(
                "error",
                "source.server-id",
                f"{ids.start}-{ids.end} holds {own}, the source server's own server_id; choose ids no server uses",
            )
            return
        try:
            cur.execute(server_flavour(conn).replicas)
            replicas = [(int(row[0]), str(row[1]), int(row[2])) for row in cur.fetchall()]
        except pymysql.err.OperationalError as exc:
            yield Finding(
                "warning",
                "source.server-id",
                f"the source's replicas cannot be listed ({exc.args[1]}): a clash would show as a reader "
                "disconnected again and again; REPLICATION MASTER ADMIN (MariaDB) or REPLICATION SLAVE (MySQL) "
                "lets sluice check look",
            )
            return
    clashes = [
        f"{server_id} ({host or 'no report_host'}:{port})" for server_id, host, port in replicas if server_id in taken
    ]
    if clashes:
        yield Finding(
            "error",
            "source.server-id",
            f"{ids.start}-{ids.end} takes ids the source's connected replicas use: {', '.join(clashes)}; each binlog "
            "reader needs an id of its own (another Sluice pipeline running, or this one, counts too)",
            transient=True,  # the server may still list a reader that just went: a later try may pass
        )
    else:
        yield Finding("ok", "source.server-id", f"{ids.start}-{ids.end}: no connected replica uses these ids")


def _retention(conn: pymysql.connections.Connection, definition: PipelineDefinition, rows: int) -> Finding:
    """The snapshot reads while the binlog grows; the reader then starts where the snapshot
    began, so the binlog must still hold that position."""
    with conn.cursor() as cur:
        cur.execute("SHOW GLOBAL VARIABLES WHERE Variable_name IN ('binlog_expire_logs_seconds', 'expire_logs_days')")
        settings = {name: float(value or 0) for name, value in cur.fetchall()}
    seconds = settings.get("binlog_expire_logs_seconds", 0) or settings.get("expire_logs_days", 0) * 86400
    estimate = rows / (ROWS_PER_SECOND_PER_READER * definition.parallelism)
    pace = f"{ROWS_PER_SECOND_PER_READER:,} rows/s per reader"
    about = f"the snapshot of about {rows:,} rows takes about {_duration(estimate)} at {pace}"
    if not seconds:
        return Finding("ok", "source.binlog-retention", f"binlogs are kept until purged by hand; {about}")
    if seconds < estimate * RETENTION_MARGIN:
        return Finding(
            "error" if seconds < estimate else "warning",
            "source.binlog-retention",
            f"binlogs are kept {_duration(seconds)}, and {about}: the position it starts from may be purged before "
            f"the reader gets there; keep them longer (SET GLOBAL binlog_expire_logs_seconds = "
            f"{int(estimate * RETENTION_MARGIN * 2)}) or raise pipeline.parallelism",
        )
    return Finding("ok", "source.binlog-retention", f"binlogs are kept {_duration(seconds)}; {about}")


def _how_read(definition: PipelineDefinition, schema: TableSchema, rows: int) -> Finding:
    chunk = definition.source.chunk_size
    splits = max(1, -(-rows // chunk))
    if schema.single_split:
        return Finding(
            "warning",
            schema.table_id,
            f"no primary key, no unique NOT NULL key and no indexed column that splits it: its snapshot is one "
            f"split of about {rows:,} rows, read by one reader at once; set "
            f"source.scan.incremental.snapshot.chunk.key-column for it ({schema.table_id}:<column>) or add a key",
        )
    key = ", ".join(schema.primary_key or schema.unique_key)
    how = f"key ({key})" if key else f"no key: chunked by its indexed column {schema.chunk_key}, rows kept as a bag"
    return Finding("ok", schema.table_id, f"{how}; about {rows:,} rows in about {splits:,} splits of {chunk:,}")


def _rewritten_values(
    conn: pymysql.connections.Connection, schema: TableSchema, values: TargetValues, scan_rows: int
) -> Iterator[Finding]:
    """Per column, a value of the first `scan_rows` rows that the target's rules change or
    refuse: all the table's columns in one pass over those rows."""
    dates = [c for c in schema.columns if c.data_type in DATES] if values.zero_date is not None else []
    texts = [c for c in schema.columns if c.data_type in STRINGS] if values.nul_replacement is not None else []
    if not dates and not texts:
        return
    picks = [
        f"MIN(IF(YEAR({n}) = 0 OR MONTH({n}) = 0 OR DAYOFMONTH({n}) = 0, CAST({n} AS CHAR), NULL))"
        for n in (quote(c.name) for c in dates)
    ] + [f"MAX(INSTR({quote(c.name)}, CHAR(0)) > 0)" for c in texts]
    table = qualified(schema.database, schema.table)
    # Columns by name: SELECT * leaves out INVISIBLE ones (MariaDB's, MySQL's and its generated keys).
    named = ", ".join(quote(c.name) for c in (*dates, *texts))
    rows = f"(SELECT {named} FROM {table} LIMIT {scan_rows}) AS scanned" if scan_rows else table
    with conn.cursor() as cur:
        cur.execute(f"SELECT {', '.join(picks)} FROM {rows}")
        found = cur.fetchone()
    scope = f"in its first {scan_rows:,} rows" if scan_rows else "in its rows"
    for column, invalid in zip(dates, found[: len(dates)], strict=True):
        if invalid is not None:
            yield _invalid_date(schema, column, values, invalid, scope)
    done = f"replaced by {values.nul_replacement!r}" if values.nul_replacement else "removed"
    for column, nul in zip(texts, found[len(dates) :], strict=True):
        if nul:
            yield Finding(
                "warning",
                f"{schema.table_id}.{column.name}",
                f"holds NUL characters {scope}, which the target's text cannot: they will be {done} "
                "(sink.nul-replacement decides)",
            )


def _invalid_date(schema: TableSchema, column: Column, values: TargetValues, found: Any, scope: str) -> Finding:
    subject = f"{schema.table_id}.{column.name}"
    nullability = "NULL" if column.nullable else "NOT NULL"
    if values.zero_date == "fail":
        return Finding(
            "error",
            subject,
            f"holds {found!s}, a date no calendar has, {scope} ({nullability}), and sink.zero-date is 'fail': the "
            "pipeline would stop there; set sink.zero-date to a date, or leave it unset",
        )
    replacement = values.date_replacement(column)
    becomes = "NULL" if replacement is None else str(replacement)
    return Finding(
        "warning",
        subject,
        f"holds {found!s}, a date no calendar has, {scope}: it will be written as {becomes} ({nullability} column; "
        "sink.zero-date decides)",
    )


def _target(definition: PipelineDefinition, sink: Sink, schemas: list[TableSchema]) -> Iterator[Finding]:
    try:
        problems = sink.check_target(schemas)
    except DefinitionError as exc:  # a route or transform these tables do not fit
        yield Finding("error", "route", str(exc))
        return
    if problems is None:
        yield Finding("ok", "sink", f"{definition.sink.type}: no target to reach")
        return
    yield from (Finding("error", "sink", str(problem), problem.transient) for problem in problems)
    if not problems:
        yield Finding("ok", "sink", f"{definition.sink.type} target reached; the pipeline's user may write there")
        encryption = sink.encryption()
        if encryption is not None:
            yield _encryption("sink.ssl-mode", {"the target's connections": encryption[0]}, encryption[1])
    yield from (Finding("ok", "sink.names", said) for said in sink.names_held_otherwise(schemas))


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} minutes"
    return f"{seconds / 3600:.1f} hours" if seconds < 172800 else f"{seconds / 86400:.1f} days"
