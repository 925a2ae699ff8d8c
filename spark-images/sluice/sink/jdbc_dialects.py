"""The SQL each JDBC target speaks: PostgreSQL and MySQL/MariaDB.

A dialect knows how to connect, create a table from a source schema, upsert and delete
rows in bulk, and keep the offsets table. Everything runs inside the caller's transaction.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import tempfile
import zlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import psycopg
import pymysql

from sluice.errors import SinkError
from sluice.event.snapshot_split import SnapshotSplit
from sluice.pipeline.jdbc_url import JdbcUrl
from sluice.sink.base import already_committed
from sluice.sink.big_rows import can_pass, in_statements, packet_limit, write_in_pieces
from sluice.sink.target_limits import (
    MYSQL_COLUMNS,
    POSTGRES_COLUMNS,
    TargetNames,
    mysql_identifier,
    postgres_identifier,
    width_problem,
)
from sluice.sink.type_mapping import mysql_type, postgres_type
from sluice.source.charsets import MYSQL_UTF8
from sluice.source.checks import current_user, missing_privileges
from sluice.source.connection import with_surrogates
from sluice.source.copy_text import RendersCopyText, load_data_columns
from sluice.source.offset import BinlogOffset
from sluice.source.row_decoding import Row
from sluice.source.schema import BINARY_STRING_TYPES, TEXT_STRING_TYPES, Column, TableSchema

META_SCHEMA = "sluice_meta"
OFFSETS_TABLE = "offsets"
EPOCHS_TABLE = "epochs"  # per pipeline, bumped by every run: the fencing token of its writers
STATES_TABLE = "states"  # per pipeline, its state as last saved: a lost state directory or status is adopted from it

log = logging.getLogger(__name__)


class JdbcDialect(ABC):
    @abstractmethod
    def connect(self, url: JdbcUrl, username: str, password: str) -> Any: ...

    @abstractmethod
    def identifier(self, name: str) -> str:
        """`name` as the target holds it (sink/target_limits.py)."""

    @abstractmethod
    def quote(self, name: str) -> str:
        """`name` as the target holds it, quoted."""

    container: str  # what holds a source database's tables: SCHEMA or DATABASE
    holds_mysql_values: bool  # NUL in strings, dates no calendar has (sink/target_values)
    transactional_ddl: bool  # whether a DDL waits for the transaction's commit (PostgreSQL) or commits at once
    column_type: Callable[[Column], str]

    def name_fold(self, conn: Any) -> Callable[[str], str]:
        """How the target tells table names apart: as they are (PostgreSQL, quoted)."""
        return str

    @abstractmethod
    def width_problem(self, schema: TableSchema) -> str | None:
        """Why the target cannot hold the table's columns (sink/target_limits.py)."""

    def create_table_statements(self, schema: TableSchema) -> list[str]:
        """The target table, keyed by the source's row key (a unique key becomes the primary
        key); a bag gets an index on its chunk key, which its deletes look rows up by."""
        problem = self.width_problem(schema)
        if problem:
            raise SinkError(problem)
        null = {True: "", False: " NOT NULL"}
        columns = [f"{self.quote(c.name)} {self.column_type(c)}{null[c.nullable]}" for c in schema.columns]
        if schema.row_key:
            columns.append(f"PRIMARY KEY ({', '.join(map(self.quote, schema.row_key))})")
        statements = [
            f"CREATE {self.container} IF NOT EXISTS {self.quote(schema.database)}",
            f"CREATE TABLE IF NOT EXISTS {self.target_table(schema)} ({', '.join(columns)})",
        ]
        return statements + self.bag_index_statements(schema)

    def bag_index_statements(self, schema: TableSchema) -> list[str]:
        """A bag's index on its chunk key, which its deletes look rows up by."""
        chunk_key = schema.column(schema.chunk_key) if schema.chunk_key in schema.column_names else None
        if chunk_key is None or not schema.is_bag or (chunk_key.char_length or 0) > 255:
            return []
        index = self.quote(f"{schema.table}_sluice_chunk_key")
        return [f"CREATE INDEX IF NOT EXISTS {index} ON {self.target_table(schema)} ({self.quote(chunk_key.name)})"]

    @abstractmethod
    def meta_table_statements(self) -> list[str]: ...

    @abstractmethod
    def privilege_problems(self, conn: Any, containers: Sequence[str]) -> list[str]:
        """What the user may not do that the pipeline does in these schemas or databases
        (they may not exist yet), each with the GRANT to run on the target."""

    @abstractmethod
    def begin_epoch(self, conn: Any, pipeline: str) -> int:
        """Bumps the pipeline's epoch and returns it: every writer of older runs is fenced off."""

    share_lock = "FOR SHARE"

    def held_epoch(self, conn: Any, pipeline: str) -> int | None:
        """The pipeline's epoch, share-locked until the transaction ends: a run starting
        meanwhile waits, so a commit either precedes the bump or sees it."""
        cur = conn.cursor()
        cur.execute(f"SELECT epoch FROM {self.epochs_table()} WHERE pipeline = %s {self.share_lock}", (pipeline,))
        row = cur.fetchone()
        cur.close()
        return row[0] if row else None

    @abstractmethod
    def upsert(self, conn: Any, schema: TableSchema, rows: Iterable[Row]) -> None: ...

    def staged_upsert(self, conn: Any, schema: TableSchema, rows: Iterable[Row]) -> list[str]:
        """upsert, up to statements it leaves to commit_later (PostgreSQL: those after its COPY)."""
        self.upsert(conn, schema, rows)
        return []

    def commit_later(self, conn: Any, statements: Sequence[str]) -> Callable[[], None]:
        """Runs the statements and commits. The call returned waits until that is done;
        here it is done at once."""
        with conn.cursor() as cur:
            for statement in statements:
                cur.execute(statement)
        conn.commit()
        return already_committed

    def insert_new(self, conn: Any, schema: TableSchema, rows: Iterable[Row]) -> None:
        """Writes rows whose keys the target normally lacks (a snapshot chunk, rows a binlog
        batch inserts first), but may hold (a table that existed before the pipeline)."""
        self.upsert(conn, schema, rows)

    @abstractmethod
    def delete(self, conn: Any, schema: TableSchema, keys: Sequence[tuple[Any, ...]]) -> None:
        """Deletes rows by their row key (primary key values, in key order)."""

    def delete_equal_rows(self, conn: Any, schema: TableSchema, rows: Iterable[tuple[Row, int]]) -> None:
        """A bag's deletes: for each (row, n), n of the rows equal to it (not every copy)."""
        statements: dict[tuple[bool, ...], str] = {}
        cur = conn.cursor()
        for row, count in rows:
            nulls = tuple(v is None for v in row)
            sql = statements.get(nulls)
            if sql is None:
                sql = statements[nulls] = self.delete_equal_sql(schema, nulls)
            cur.execute(sql, [*(v for v in row if v is not None), count])
        cur.close()

    @abstractmethod
    def delete_equal_sql(self, schema: TableSchema, nulls: Sequence[bool]) -> str:
        """DELETE of at most %s rows whose columns equal the parameters (IS NULL where `nulls`)."""

    def select_range(self, conn: Any, schema: TableSchema, split: SnapshotSplit) -> list[Row]:
        """The target's rows in a chunk's key range (the target's columns, in order)."""
        key = schema.column(schema.chunk_key)
        where, params = split.key_condition(self.quote(key.name), self._parameter(key))
        columns = ", ".join(self._selected(c) for c in schema.columns)
        with contextlib.closing(conn.cursor()) as cur:
            cur.execute(f"SELECT {columns} FROM {self.target_table(schema)}{where}", params)
            return [tuple(row) for row in cur.fetchall()]

    def _selected(self, column: Column) -> str:
        return self.quote(column.name)

    @abstractmethod
    def begin_consistent_read(self, conn: Any) -> None:
        """Starts a transaction whose reads all see one committed state of the target."""

    def lock_epoch(self, conn: Any, pipeline: str) -> None:
        """Locks the pipeline's epoch row until the transaction ends: the pipeline's writes
        (each share-locks it first, see held_epoch) wait for this transaction, and this
        waits for the one in flight."""
        with contextlib.closing(conn.cursor()) as cur:
            cur.execute(f"SELECT epoch FROM {self.epochs_table()} WHERE pipeline = %s FOR UPDATE", (pipeline,))

    def delete_range(self, conn: Any, schema: TableSchema, split: SnapshotSplit) -> None:
        """Removes the target's rows in a chunk's key range, which the chunk's rows replace."""
        key = schema.column(schema.chunk_key)
        where, params = split.key_condition(self.quote(key.name), self._parameter(key))
        with contextlib.closing(conn.cursor()) as cur:
            cur.execute(f"DELETE FROM {self.target_table(schema)}{where}", params)

    def _equal(self, column: Column, null: bool) -> str:
        return (
            f"{self.quote(column.name)} IS NULL" if null else f"{self.quote(column.name)} = {self._parameter(column)}"
        )

    def _parameter(self, column: Column) -> str:
        """A parameter compared with the column: the value as the column's type."""
        return f"CAST(%s AS {self.column_type(column)})"

    @abstractmethod
    def save_offsets(self, conn: Any, pipeline: str, offsets: Mapping[str, BinlogOffset]) -> None: ...

    def column_names(self, cur: Any, database: str, table: str) -> TargetNames:
        """The target table's columns (none if there is no such table), asked with the
        source's names."""
        cur.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = %s AND table_name = %s",
            (self.identifier(database), self.identifier(table)),
        )
        return TargetNames((name for (name,) in cur.fetchall()), self.identifier)

    def primary_key(self, cur: Any, database: str, table: str) -> tuple[str, ...]:
        """The target table's primary key columns, in key order (none without one)."""
        cur.execute(
            "SELECT k.column_name FROM information_schema.table_constraints c "
            "JOIN information_schema.key_column_usage k ON k.constraint_name = c.constraint_name "
            "AND k.table_schema = c.table_schema AND k.table_name = c.table_name "
            "WHERE c.constraint_type = 'PRIMARY KEY' AND c.table_schema = %s AND c.table_name = %s "
            "ORDER BY k.ordinal_position",
            (self.identifier(database), self.identifier(table)),
        )
        return tuple(name for (name,) in cur.fetchall())

    def target_table(self, schema: TableSchema) -> str:
        return f"{self.quote(schema.database)}.{self.quote(schema.table)}"

    def offsets_table(self) -> str:
        return f"{self.quote(META_SCHEMA)}.{self.quote(OFFSETS_TABLE)}"

    def epochs_table(self) -> str:
        return f"{self.quote(META_SCHEMA)}.{self.quote(EPOCHS_TABLE)}"

    def states_table(self) -> str:
        return f"{self.quote(META_SCHEMA)}.{self.quote(STATES_TABLE)}"

    @abstractmethod
    def save_state(self, conn: Any, pipeline: str, revision: int, document: str) -> None:
        """Keeps the pipeline's state document, unless the target holds a later revision."""

    def load_state(self, conn: Any, pipeline: str) -> tuple[int, str] | None:
        cur = conn.cursor()
        cur.execute(f"SELECT revision, document FROM {self.states_table()} WHERE pipeline = %s", (pipeline,))
        row = cur.fetchone()
        cur.close()
        return None if row is None else (int(row[0]), row[1])

    def load_offsets(self, conn: Any, pipeline: str) -> dict[str, BinlogOffset]:
        cur = conn.cursor()
        cur.execute(f"SELECT split_id, position FROM {self.offsets_table()} WHERE pipeline = %s", (pipeline,))
        result = {split_id: BinlogOffset.from_json(json.loads(pos)) for split_id, pos in cur.fetchall()}
        cur.close()
        return result

    def delete_offsets(self, conn: Any, pipeline: str, exclude: str | None = None) -> None:
        """Deletes the pipeline's commit records, all but `exclude` if given."""
        with contextlib.closing(conn.cursor()) as cur:
            if exclude is None:
                cur.execute(f"DELETE FROM {self.offsets_table()} WHERE pipeline = %s", (pipeline,))
            else:
                sql = f"DELETE FROM {self.offsets_table()} WHERE pipeline = %s AND split_id <> %s"
                cur.execute(sql, (pipeline, exclude))


class PostgresDialect(JdbcDialect):
    container = "SCHEMA"
    holds_mysql_values = False
    transactional_ddl = True
    column_type = staticmethod(postgres_type)

    def connect(self, url: JdbcUrl, username: str, password: str) -> psycopg.Connection:
        conn = psycopg.connect(
            host=url.host,
            port=url.port,
            dbname=url.database,
            user=username,
            password=password,
            application_name="sluice",
        )
        conn.execute("SET TIME ZONE 'UTC'")
        conn.commit()
        return conn

    def identifier(self, name: str) -> str:
        return postgres_identifier(name)

    def width_problem(self, schema: TableSchema) -> str | None:
        return width_problem(schema, POSTGRES_COLUMNS, "PostgreSQL")

    def quote(self, name: str) -> str:
        return '"' + self.identifier(name).replace('"', '""') + '"'

    def begin_consistent_read(self, conn: psycopg.Connection) -> None:
        conn.rollback()
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ  # one snapshot for the transaction

    def privilege_problems(self, conn: psycopg.Connection, containers: Sequence[str]) -> list[str]:
        """A schema that exists needs USAGE and CREATE; one to create, CREATE on the database."""
        problems = []
        with conn.cursor() as cur:
            cur.execute("SELECT current_user, current_database(), has_database_privilege(current_database(), 'CREATE')")
            user, database, creates_schemas = cur.fetchone()
            for schema in containers:
                cur.execute(
                    "SELECT has_schema_privilege(oid, 'USAGE') AND has_schema_privilege(oid, 'CREATE') "
                    "FROM pg_namespace WHERE nspname = %s",
                    (schema,),
                )
                row = cur.fetchone()
                if row is None and not creates_schemas:
                    problems.append(
                        f"sink user {self.quote(user)} cannot create schema {self.quote(schema)} in database "
                        f"{self.quote(database)}; on the target run: GRANT CREATE ON DATABASE {self.quote(database)} "
                        f"TO {self.quote(user)}"
                    )
                elif row is not None and not row[0]:
                    problems.append(
                        f"sink user {self.quote(user)} cannot create tables in schema {self.quote(schema)}; on the "
                        f"target run: GRANT USAGE, CREATE ON SCHEMA {self.quote(schema)} TO {self.quote(user)}"
                    )
        conn.rollback()
        return problems

    def meta_table_statements(self) -> list[str]:
        return [
            f"CREATE SCHEMA IF NOT EXISTS {self.quote(META_SCHEMA)}",
            f"CREATE TABLE IF NOT EXISTS {self.offsets_table()} (pipeline varchar(253) NOT NULL, "
            "split_id varchar(512) NOT NULL, position text NOT NULL, "
            "updated_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (pipeline, split_id))",
            f"CREATE TABLE IF NOT EXISTS {self.epochs_table()} (pipeline varchar(253) PRIMARY KEY, "
            "epoch bigint NOT NULL, started_at timestamptz NOT NULL DEFAULT now())",
            f"CREATE TABLE IF NOT EXISTS {self.states_table()} (pipeline varchar(253) PRIMARY KEY, "
            "revision bigint NOT NULL, document text NOT NULL, saved_at timestamptz NOT NULL DEFAULT now())",
        ]

    def save_state(self, conn: psycopg.Connection, pipeline: str, revision: int, document: str) -> None:
        conn.execute(
            f"INSERT INTO {self.states_table()} AS s (pipeline, revision, document) VALUES (%s, %s, %s) "
            "ON CONFLICT (pipeline) DO UPDATE SET revision = EXCLUDED.revision, document = EXCLUDED.document, "
            "saved_at = now() WHERE s.revision <= EXCLUDED.revision",
            (pipeline, revision, document),
        )

    def begin_epoch(self, conn: psycopg.Connection, pipeline: str) -> int:
        row = conn.execute(
            f"INSERT INTO {self.epochs_table()} AS e (pipeline, epoch) VALUES (%s, 1) ON CONFLICT (pipeline) "
            "DO UPDATE SET epoch = e.epoch + 1, started_at = now() RETURNING epoch",
            (pipeline,),
        ).fetchone()
        return row[0]

    def _staging(self, conn: psycopg.Connection, schema: TableSchema, columns: Sequence[str]) -> str:
        """A temporary table shaped like the target's given columns, emptied at commit; one
        per shape, so a schema change gets a new one."""
        shape = zlib.crc32(repr([(c, schema.column(c).column_type) for c in columns]).encode())
        name = self.quote(f"stage_{schema.database}_{schema.table}_{shape:08x}")
        conn.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS {name} ON COMMIT DELETE ROWS AS "
            f"SELECT {', '.join(map(self.quote, columns))} FROM {self.target_table(schema)} WITH NO DATA"
        )
        return name

    def _copy(
        self,
        conn: psycopg.Connection,
        table: str,
        schema: TableSchema,
        columns: Sequence[str],
        rows: Iterable[Sequence[Any]],
    ) -> None:
        """COPY in binary where every column's values have a binary form the target reads
        as it would their text (no number or date parsing on either side), else in text."""
        binary = [binary_copy_type(schema.column(c)) for c in columns]
        options = " (FORMAT BINARY)" if all(binary) else ""
        with (
            conn.cursor() as cur,
            cur.copy(f"COPY {table} ({', '.join(map(self.quote, columns))}) FROM STDIN{options}") as copy,
        ):
            if options:
                copy.set_types(binary)
            for row in rows:
                copy.write_row(row)

    def insert_new(self, conn: psycopg.Connection, schema: TableSchema, rows: Iterable[Row]) -> None:
        """COPY straight into the table (the fast path), inside a savepoint: as the COPY text
        the source rendered where it did (snapshot/copy_text), else row by row. Rows already
        in the target (a table that existed before the pipeline) send it to the upsert path."""
        table, columns = self.target_table(schema), ", ".join(map(self.quote, schema.column_names))
        try:
            with conn.transaction():
                if isinstance(rows, RendersCopyText) and rows.has_copy_text:
                    with conn.cursor() as cur, cur.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                        for block in rows.copy_text():
                            copy.write(block)
                else:
                    self._copy(conn, table, schema, schema.column_names, rows)
        except psycopg.errors.UniqueViolation:
            self.upsert(conn, schema, rows)

    def upsert(self, conn: psycopg.Connection, schema: TableSchema, rows: Iterable[Row]) -> None:
        for statement in self.staged_upsert(conn, schema, rows):
            conn.execute(statement)

    def staged_upsert(self, conn: psycopg.Connection, schema: TableSchema, rows: Iterable[Row]) -> list[str]:
        """COPYs the rows into the staging table; the upsert from there is left to run."""
        names = schema.column_names
        stage = self._staging(conn, schema, names)
        self._copy(conn, stage, schema, names, rows)
        quoted = ", ".join(map(self.quote, names))
        key = schema.row_key
        updates = [n for n in names if n not in key]
        action = (
            "DO UPDATE SET " + ", ".join(f"{self.quote(n)} = EXCLUDED.{self.quote(n)}" for n in updates)
            if updates
            else "DO NOTHING"
        )
        conflict = f" ON CONFLICT ({', '.join(map(self.quote, key))}) {action}" if key else ""
        return [
            f"INSERT INTO {self.target_table(schema)} ({quoted}) SELECT {quoted} FROM {stage}{conflict}",
            f"TRUNCATE {stage}",
        ]

    def commit_later(self, conn: psycopg.Connection, statements: Sequence[str]) -> Callable[[], None]:
        """Sends the statements and COMMIT as one query and returns at once: PostgreSQL runs
        them while the binlog phase reads the next batch. The call returned reads their
        results; until then nothing else may use the connection."""
        pgconn = conn.pgconn
        pgconn.send_query(";".join([*statements, "COMMIT"]).encode(conn.info.encoding))

        def committed() -> None:
            failure = None
            while (result := pgconn.get_result()) is not None:
                if result.status == psycopg.pq.ExecStatus.FATAL_ERROR and failure is None:
                    failure = (result.error_message or b"").decode(errors="replace").strip()
            if failure is not None:
                raise psycopg.DatabaseError(failure)

        return committed

    def delete(self, conn: psycopg.Connection, schema: TableSchema, keys: Sequence[tuple[Any, ...]]) -> None:
        if not keys:
            return
        key = schema.row_key
        stage = self._staging(conn, schema, key)
        self._copy(conn, stage, schema, key, keys)
        match = " AND ".join(f"t.{self.quote(k)} = s.{self.quote(k)}" for k in key)
        conn.execute(f"DELETE FROM {self.target_table(schema)} t USING {stage} s WHERE {match}")
        conn.execute(f"TRUNCATE {stage}")

    def delete_equal_sql(self, schema: TableSchema, nulls: Sequence[bool]) -> str:
        match = " AND ".join(self._equal(c, null) for c, null in zip(schema.columns, nulls, strict=True))
        table = self.target_table(schema)
        return f"DELETE FROM {table} WHERE ctid IN (SELECT ctid FROM {table} WHERE {match} LIMIT %s)"

    def save_offsets(self, conn: psycopg.Connection, pipeline: str, offsets: Mapping[str, BinlogOffset]) -> None:
        with conn.cursor() as cur:
            cur.executemany(
                f"INSERT INTO {self.offsets_table()} (pipeline, split_id, position) VALUES (%s, %s, %s) "
                "ON CONFLICT (pipeline, split_id) DO UPDATE SET position = EXCLUDED.position, updated_at = now()",
                [(pipeline, split_id, json.dumps(o.to_json())) for split_id, o in offsets.items()],
            )


_BINARY_COPY_INTEGERS = {"smallint": "int2", "integer": "int4", "bigint": "int8"}


def binary_copy_type(column: Column) -> str | None:
    """The PostgreSQL type a column's values go to binary COPY as, for the types whose
    values are always the Python type its binary dumper takes; None for the rest."""
    kind = column.data_type
    if column.beyond_signed_64_bits:
        return None
    if column.is_integer or kind in ("year", "bit"):
        return _BINARY_COPY_INTEGERS[postgres_type(column)]
    if kind in TEXT_STRING_TYPES:
        return "text"
    if kind in BINARY_STRING_TYPES:
        return "bytea"
    # A TIMESTAMP's value is a naive datetime in UTC; timestamptz's binary form is
    # timestamp's (microseconds since 2000-01-01), read as UTC: the very instant.
    return {"decimal": "numeric", "date": "date", "datetime": "timestamp", "timestamp": "timestamp"}.get(kind)


class MySqlDialect(JdbcDialect):
    container = "DATABASE"
    holds_mysql_values = True
    transactional_ddl = False
    column_type = staticmethod(mysql_type)

    def connect(self, url: JdbcUrl, username: str, password: str) -> pymysql.connections.Connection:
        conn = pymysql.connect(
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

    def begin_consistent_read(self, conn: pymysql.connections.Connection) -> None:
        with conn.cursor() as cur:
            cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")

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
        """LOAD DATA of the COPY text the source rendered (snapshot/copy_text), REPLACE-ing
        rows already in the target; else, or where the server refuses local files,
        multi-row upserts."""
        if isinstance(rows, RendersCopyText) and rows.has_copy_text and (conn.host, conn.port) not in _REFUSING:
            with tempfile.NamedTemporaryFile("w", encoding=MYSQL_UTF8, newline="", suffix=".tsv") as text:
                text.writelines(rows.copy_text())
                text.flush()
                if self._load_data(conn, schema, text.name):
                    return
        self.upsert(conn, schema, rows)

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
                    "target %s:%s refuses LOAD DATA LOCAL INFILE (%s): snapshot chunks are written with multi-row "
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


_LOCAL_FILES_REFUSED = {1148, 3948, 4166}  # not allowed here; disabled (MySQL 8; MariaDB)
_REFUSING: set[tuple[str, int]] = set()  # targets (host, port) that refused it, in this process


DIALECTS: dict[str, JdbcDialect] = {"postgresql": PostgresDialect(), "mysql": MySqlDialect()}
