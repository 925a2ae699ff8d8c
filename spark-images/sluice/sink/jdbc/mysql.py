"""MySQL and MariaDB as a JDBC target: LOAD DATA LOCAL ... REPLACE where the server allows
it, else multi-row INSERT ... ON DUPLICATE KEY UPDATE, rows bigger than a packet written in
pieces."""

from __future__ import annotations

import itertools
import json
import logging
import tempfile
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import pymysql

from sluice.event.schema_change import AddColumn, AlterColumnType
from sluice.pipeline.jdbc_url import JdbcUrl
from sluice.sink.jdbc.big_rows import can_pass, in_statements, packet_limit, write_in_pieces
from sluice.sink.jdbc.dialect import META_SCHEMA, JdbcDialect, TableChanges
from sluice.sink.jdbc.load_data_text import load_data_text, renders
from sluice.sink.jdbc.target_limits import (
    MYSQL_COLUMNS,
    mysql_identifier,
    width_problem,
)
from sluice.source.charsets import MYSQL_UTF8
from sluice.source.checks import current_user, missing_privileges
from sluice.source.connection import tls_cipher, with_surrogates
from sluice.source.copy_text import RendersCopyText, load_data_columns
from sluice.source.offset import BinlogOffset
from sluice.source.row_decoding import Row
from sluice.source.schema import Column, TableSchema
from sluice.source.tls import NO_SETTINGS, TlsSettings

log = logging.getLogger(__name__)


class MySqlDialect(JdbcDialect):
    container = "DATABASE"
    holds_mysql_values = True
    transactional_ddl = False
    sql_dialect = "mysql"
    spells_implicit_defaults = False

    @staticmethod
    def column_type(column: Column) -> str:
        """The same dialect: the source's own column type."""
        return column.column_type

    def connect(
        self, url: JdbcUrl, username: str, password: str, tls: TlsSettings = NO_SETTINGS
    ) -> pymysql.connections.Connection:
        conn = pymysql.connect(
            **tls.pymysql_settings(),
            host=url.host,
            port=url.port,
            user=username,
            password=password,
            charset="utf8mb4",
            autocommit=False,
            # UTC, and zero or partial dates taken as the source has them (MySQL's default refuses them)
            init_command="SET time_zone = '+00:00', "
            "sql_mode = REPLACE(REPLACE(@@sql_mode, 'NO_ZERO_IN_DATE', ''), 'NO_ZERO_DATE', '')",
            local_infile=True,  # LOAD DATA of a snapshot chunk's text (insert_new)
        )
        return with_surrogates(conn)

    def tls_cipher(self, conn: pymysql.connections.Connection) -> str:
        return tls_cipher(conn)

    def identifier(self, name: str) -> str:
        return mysql_identifier(name)

    def width_problem(self, schema: TableSchema) -> str | None:
        return width_problem(schema, MYSQL_COLUMNS, "MySQL's InnoDB")

    def name_fold(self, conn: pymysql.connections.Connection) -> Callable[[str], str]:
        """Whatever the case, where lower_case_table_names says so (Windows, macOS, many managed servers)."""
        with conn.cursor() as cur:
            cur.execute("SELECT @@lower_case_table_names")
            return str.casefold if int(cur.fetchone()[0]) else str

    def quote(self, name: str) -> str:
        return "`" + self.identifier(name).replace("`", "``") + "`"

    def _selected(self, column: Column) -> str:
        """The server prints a FLOAT to six digits; as a DOUBLE, its exact float32 value."""
        name = self.quote(column.name)
        return f"{name} + 0e0" if column.data_type == "float" else name

    # The same dialect: an added or retyped column is placed as the source placed it.
    def add_column_statements(self, table: str, event: AddColumn) -> list[str]:
        column, where = event.column, self._placed(event.position, event.after)
        return [f"ALTER TABLE {table} ADD COLUMN {self.column_definition(column)}{self.default_clause(column)}{where}"]

    def alter_column_type_statements(self, table: str, event: AlterColumnType) -> list[str]:
        where = self._placed(event.position, event.after)
        return [f"ALTER TABLE {table} MODIFY COLUMN {self.column_definition(event.column)}{where}"]

    def _placed(self, position: str, after: str | None) -> str:
        return {"FIRST": " FIRST", "AFTER": f" AFTER {self.quote(after or '')}"}.get(position, "")

    def primary_key_statements(self, before: TableSchema, after: TableSchema) -> list[str]:
        key = ", ".join(map(self.quote, after.row_key))
        clauses = (["DROP PRIMARY KEY"] if before.row_key else []) + ([f"ADD PRIMARY KEY ({key})"] if key else [])
        return [f"ALTER TABLE {self.target_table(before)} {', '.join(clauses)}"] if clauses else []

    def rename_table_statements(self, before: TableSchema, after: TableSchema) -> list[str]:
        return [f"RENAME TABLE {self.target_table(before)} TO {self.target_table(after)}"]

    def begin_consistent_read(self, conn: pymysql.connections.Connection) -> None:
        with conn.cursor() as cur:
            cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")

    def begin_range_replace(self, conn: pymysql.connections.Connection) -> None:
        """READ COMMITTED for the next transaction: under InnoDB's REPEATABLE READ a range
        DELETE locks the gap past its range, and writes of adjacent ranges deadlock on each
        other's gaps (the target rolls one back). Not where the target logs statements,
        which InnoDB refuses under READ COMMITTED."""
        if conn not in _STATEMENT_LOGGED:
            with conn.cursor() as cur:
                cur.execute("SELECT @@log_bin AND @@binlog_format = 'STATEMENT'")
                _STATEMENT_LOGGED[conn] = bool(cur.fetchone()[0])
        if not _STATEMENT_LOGGED[conn]:
            with conn.cursor() as cur:
                cur.execute("SET TRANSACTION ISOLATION LEVEL READ COMMITTED")

    share_lock = "LOCK IN SHARE MODE"  # MySQL 5.7 and MariaDB spell it so too

    WRITES = ("SELECT", "INSERT", "UPDATE", "DELETE", "CREATE", "ALTER", "DROP", "INDEX")

    def privilege_problems(self, conn: pymysql.connections.Connection, containers: Sequence[str]) -> list[str]:
        with conn.cursor() as cur:
            cur.execute("SHOW GRANTS")
            grants = [row[0] for row in cur.fetchall()]
        user, host = current_user(conn)
        problems = []
        for database in containers:
            missing = missing_privileges(grants, self.WRITES, database)
            if missing:
                problems.append(
                    f"sink user '{user}'@'{host}' lacks {', '.join(missing)} on database {self.quote(database)}; on "
                    f"the target run: GRANT {', '.join(self.WRITES)} ON {self.quote(database)}.* TO '{user}'@'{host}'"
                )
        return problems

    def meta_table_statements(self) -> list[str]:
        return [
            f"CREATE DATABASE IF NOT EXISTS {self.quote(META_SCHEMA)}",
            f"CREATE TABLE IF NOT EXISTS {self.offsets_table()} (pipeline varchar(253) NOT NULL, "
            "split_id varchar(512) NOT NULL, position text NOT NULL, "
            "updated_at timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP, PRIMARY KEY (pipeline, split_id))",
            f"CREATE TABLE IF NOT EXISTS {self.epochs_table()} (pipeline varchar(253) PRIMARY KEY, "
            "epoch bigint NOT NULL, started_at timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP)",
            f"CREATE TABLE IF NOT EXISTS {self.states_table()} (pipeline varchar(253) PRIMARY KEY, "
            "revision bigint NOT NULL, document longtext NOT NULL, "
            "saved_at timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP)",
        ]

    def save_state(self, conn: pymysql.connections.Connection, pipeline: str, revision: int, document: str) -> None:
        with conn.cursor() as cur:
            cur.execute(
                f"INSERT INTO {self.states_table()} (pipeline, revision, document) VALUES (%s, %s, %s) "
                "ON DUPLICATE KEY UPDATE document = IF(revision <= VALUES(revision), VALUES(document), document), "
                "saved_at = IF(revision <= VALUES(revision), CURRENT_TIMESTAMP, saved_at), "
                "revision = GREATEST(revision, VALUES(revision))",
                (pipeline, revision, document),
            )

    def begin_epoch(self, conn: pymysql.connections.Connection, pipeline: str) -> int:
        with conn.cursor() as cur:
            cur.execute(
                f"INSERT INTO {self.epochs_table()} (pipeline, epoch) VALUES (%s, 1) "
                "ON DUPLICATE KEY UPDATE epoch = epoch + 1, started_at = CURRENT_TIMESTAMP",
                (pipeline,),
            )
            cur.execute(f"SELECT epoch FROM {self.epochs_table()} WHERE pipeline = %s", (pipeline,))
            return cur.fetchone()[0]

    def insert_new(self, conn: pymysql.connections.Connection, schema: TableSchema, rows: Iterable[Row]) -> None:
        """LOAD DATA REPLACE of the COPY text the source rendered (snapshot/copy_text), or of
        the rows rendered here (load_data_text); multi-row upserts where the server refuses
        local files, the table's types have no text form or REPLACE is no upsert there."""
        if isinstance(rows, RendersCopyText) and rows.has_copy_text:
            if self._replaced(conn, schema, rows.copy_text()):
                return
        elif renders(schema):
            # Rendered a slice at a time into the file: a chunk's rows stream, never held whole
            # (reading them again for the upsert path reads the chunk again).
            blocks = (load_data_text(schema, part) for part in _slices(rows, RENDERED_ROWS))
            if self._replaced(conn, schema, blocks):
                return
        self.upsert(conn, schema, rows)

    def prepare_changes(
        self, conn: pymysql.connections.Connection, changes: TableChanges
    ) -> TableChanges | LoadedChanges:
        """The share with its new images rendered as LOAD DATA text (load_data_text): both
        the rows it inserts and those it changes, which one REPLACE writes."""
        if not renders(changes.schema) or (conn.host, conn.port) in _REFUSING:
            return changes
        written = [*changes.inserted, *changes.upserted]
        return LoadedChanges(changes.schema, changes.deleted, written, load_data_text(changes.schema, written))

    def stage_changes(
        self, conn: pymysql.connections.Connection, changes: Any, slice_rows: int, insert_directly: bool = True
    ) -> list[str]:
        """Deletes by key, then one LOAD DATA REPLACE of the new images (the set-based apply:
        a third of a multi-row upsert's time in the server, a fifth in the client)."""
        if not isinstance(changes, LoadedChanges):
            return super().stage_changes(conn, changes, slice_rows, insert_directly)
        self.delete(conn, changes.schema, changes.deleted)
        if changes.written and not self._replaced(conn, changes.schema, [changes.text]):
            for start in range(0, len(changes.written), slice_rows):
                self.upsert(conn, changes.schema, changes.written[start : start + slice_rows])
        return []

    def _replaced(self, conn: pymysql.connections.Connection, schema: TableSchema, text: Iterable[str]) -> bool:
        """Loads the text with REPLACE; False where the server refuses local files or
        REPLACE is no upsert (replace_is_upsert), which leaves the rows to `upsert`."""
        if (conn.host, conn.port) in _REFUSING or not self._replace_is_upsert(conn, schema):
            return False
        with tempfile.NamedTemporaryFile("w", encoding=MYSQL_UTF8, newline="", suffix=".tsv") as file:
            file.writelines(text)
            file.flush()
            return self._load_data(conn, schema, file.name)

    def _replace_is_upsert(self, conn: pymysql.connections.Connection, schema: TableSchema) -> bool:
        """REPLACE deletes the row it replaces and inserts the new one: the same as an
        upsert only where the target table has no column the pipeline does not write (it
        would go back to its default), no foreign key referring to it (ON DELETE would act)
        and no trigger. A table Sluice created has none of them; one made by hand may."""
        known = _REPLACE_IS_UPSERT.setdefault(conn, {})
        if known.get(schema.table_id, (None,))[0] != schema:
            database, table = self.identifier(schema.database), self.identifier(schema.table)
            with conn.cursor() as cur:
                cur.execute(
                    "SELECT (SELECT COUNT(*) FROM information_schema.columns "
                    "WHERE table_schema = %s AND table_name = %s), "
                    "(SELECT COUNT(*) FROM information_schema.referential_constraints "
                    "WHERE unique_constraint_schema = %s AND referenced_table_name = %s), "
                    "(SELECT COUNT(*) FROM information_schema.triggers "
                    "WHERE event_object_schema = %s AND event_object_table = %s)",
                    (database, table) * 3,
                )
                columns, referring, triggers = cur.fetchone()
            known[schema.table_id] = (schema, columns == len(schema.columns) and not referring and not triggers)
        return known[schema.table_id][1]

    def _load_data(self, conn: pymysql.connections.Connection, schema: TableSchema, path: str) -> bool:
        """Loads the file; False if the server refuses local files. Anything LOAD DATA
        would only warn about (a value it changed to fit) is an error here."""
        sql = (
            f"LOAD DATA LOCAL INFILE %s REPLACE INTO TABLE {self.target_table(schema)} CHARACTER SET utf8mb4 "
            + load_data_columns(schema)
        )
        with conn.cursor() as cur:
            try:
                cur.execute(sql, (path,))
            except pymysql.err.OperationalError as exc:
                if exc.args[0] not in _LOCAL_FILES_REFUSED:
                    raise
                _REFUSING.add((conn.host, conn.port))  # its next chunks skip the text
                log.warning(
                    "target %s:%s refuses LOAD DATA LOCAL INFILE (%s): rows are written with multi-row "
                    "upserts instead; set local_infile=ON on the target for the faster path",
                    conn.host,
                    conn.port,
                    exc.args[1],
                )
                return False
            if cur.warning_count:
                cur.execute("SHOW WARNINGS LIMIT 3")
                warnings = "; ".join(f"{level} {code}: {message}" for level, code, message in cur.fetchall())
                raise pymysql.err.DataError(f"loading {schema.table_id} into the target changed values: {warnings}")
        return True

    def upsert(self, conn: pymysql.connections.Connection, schema: TableSchema, rows: Iterable[Row]) -> None:
        names = schema.column_names
        placeholders = ", ".join(["%s"] * len(names))
        key = schema.row_key
        updates = [n for n in names if n not in key] or list(key)
        sql = (
            f"INSERT INTO {self.target_table(schema)} ({', '.join(map(self.quote, names))}) "
            f"VALUES ({placeholders}) ON DUPLICATE KEY UPDATE "
            + ", ".join(f"{self.quote(n)} = VALUES({self.quote(n)})" for n in updates)
        )
        limit = packet_limit(conn)
        with conn.cursor() as cur:
            if not can_pass(schema, limit):
                rows = iter(rows)
                first = next(rows, None)
                if first is not None:  # PyMySQL's multi-row INSERT takes the first row unasked (an empty chunk)
                    cur.executemany(sql, itertools.chain([first], rows))
                return
            for run, big in in_statements(rows, limit):
                if run:  # PyMySQL's multi-row INSERT takes the first row unasked (an empty chunk)
                    cur.executemany(sql, run)
                if big is not None:
                    write_in_pieces(cur, schema, sql, big, limit, self.quote, self.target_table(schema))

    def delete(
        self, conn: pymysql.connections.Connection, schema: TableSchema, keys: Sequence[tuple[Any, ...]]
    ) -> None:
        """In statements of up to a thousand keys: `key IN (...)`, or `(a, b) IN ((...), ...)`
        for a composite key (a range on the primary key either way), not one per key."""
        columns = schema.row_key
        one = "%s" if len(columns) == 1 else f"({', '.join(['%s'] * len(columns))})"
        match = ", ".join(map(self.quote, columns))
        with conn.cursor() as cur:
            for start in range(0, len(keys), 1000):
                part = keys[start : start + 1000]
                cur.execute(
                    f"DELETE FROM {self.target_table(schema)} WHERE ({match}) IN ({', '.join([one] * len(part))})",
                    [value for key in part for value in key],
                )

    def delete_equal_sql(self, schema: TableSchema, nulls: Sequence[bool]) -> str:
        match = " AND ".join(self._equal(c, null) for c, null in zip(schema.columns, nulls, strict=True))
        return f"DELETE FROM {self.target_table(schema)} WHERE {match} LIMIT %s"

    def _parameter(self, column: Column) -> str:
        # A MySQL-dialect target has the source's own types: the values compare as they are.
        return "%s"

    def save_offsets(
        self, conn: pymysql.connections.Connection, pipeline: str, offsets: Mapping[str, BinlogOffset]
    ) -> None:
        with conn.cursor() as cur:
            cur.executemany(
                f"INSERT INTO {self.offsets_table()} (pipeline, split_id, position) VALUES (%s, %s, %s) "
                "ON DUPLICATE KEY UPDATE position = VALUES(position), updated_at = CURRENT_TIMESTAMP",
                [(pipeline, split_id, json.dumps(o.to_json())) for split_id, o in offsets.items()],
            )


def _slices(rows: Iterable[Row], size: int) -> Iterator[list[Row]]:
    iterator = iter(rows)
    while part := list(itertools.islice(iterator, size)):
        yield part


RENDERED_ROWS = 10_000  # rows rendered as LOAD DATA text at a time
_LOCAL_FILES_REFUSED = {1148, 3948, 4166}  # not allowed here; disabled (MySQL 8; MariaDB)
_REFUSING: set[tuple[str, int]] = set()  # targets (host, port) that refused it, in this process
# Whether a target connection's server logs statements (begin_range_replace)
_STATEMENT_LOGGED: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()
# Per target connection and table: whether REPLACE is an upsert there, for which schema
_REPLACE_IS_UPSERT: weakref.WeakKeyDictionary[Any, dict[str, tuple[TableSchema, bool]]] = weakref.WeakKeyDictionary()


class LoadedChanges(NamedTuple):
    """A table's share of a binlog batch: the keys it deletes, and its new images (rows it
    inserts and rows it changes alike) as they are and as LOAD DATA text."""

    schema: TableSchema
    deleted: Sequence[tuple[Any, ...]]
    written: Sequence[Row]
    text: str
