"""PostgreSQL as a JDBC target: COPY (binary where every column takes it) into staging
tables, then one INSERT ... ON CONFLICT per batch."""

from __future__ import annotations

import dataclasses
import io
import json
import zlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import psycopg
from psycopg.copy import FileWriter

from sluice.event.schema_change import AddColumn, AlterColumnType
from sluice.pipeline.jdbc_url import JdbcUrl
from sluice.sink.base import PendingCommit
from sluice.sink.jdbc.dialect import META_SCHEMA, JdbcDialect, TableChanges
from sluice.sink.jdbc.pg_commit import CopyIn, commit_later, run_now
from sluice.sink.jdbc.pg_far_dates import register_far_date_dumpers
from sluice.sink.jdbc.pg_numeric import register_numeric_dumper
from sluice.sink.jdbc.target_limits import (
    POSTGRES_COLUMNS,
    postgres_identifier,
    width_problem,
)
from sluice.source.copy_text import RendersCopyText
from sluice.source.offset import BinlogOffset
from sluice.source.row_decoding import Row
from sluice.source.schema import BINARY_STRING_TYPES, SPATIAL_TYPES, TEXT_STRING_TYPES, Column, TableSchema
from sluice.source.tls import NO_SETTINGS, TlsSettings

_POSTGRES_FIXED = {
    "boolean": "boolean",
    "float": "real",
    "double": "double precision",
    "bit": "bigint",
    "date": "date",
    "time": "interval",
    "year": "smallint",
    "json": "jsonb",
    "enum": "text",
    "set": "text",
    "tinytext": "text",
    "text": "text",
    "mediumtext": "text",
    "longtext": "text",
    "binary": "bytea",
    "varbinary": "bytea",
    "tinyblob": "bytea",
    "blob": "bytea",
    "mediumblob": "bytea",
    "longblob": "bytea",
    "uuid": "uuid",
    "inet4": "inet",
    "inet6": "inet",
    **dict.fromkeys(SPATIAL_TYPES, "bytea"),
}


def postgres_type(column: Column) -> str:
    t = column.data_type
    if column.beyond_signed_64_bits:
        return "numeric(20)"
    if t in _POSTGRES_FIXED:
        return _POSTGRES_FIXED[t]
    if t in ("tinyint", "smallint"):
        return "integer" if column.unsigned and t == "smallint" else "smallint"
    if t == "mediumint":
        return "integer"
    if t == "int":
        return "bigint" if column.unsigned else "integer"
    if t == "bigint":
        return "bigint"
    if t == "decimal":
        return f"numeric({column.numeric_precision},{column.numeric_scale})"
    if t in ("datetime", "timestamp"):
        precision = _fractional_digits(column)
        base = "timestamptz" if t == "timestamp" else "timestamp"
        return f"{base}({precision})" if precision else base
    if t in ("char", "varchar"):
        return f"varchar({column.char_length})" if column.char_length else "text"
    return "text"


def _fractional_digits(column: Column) -> int:
    inside = column.column_type.partition("(")[2].partition(")")[0]
    return int(inside) if inside.isdigit() else 0


class CopyData(NamedTuple):
    """Rows as COPY sends them, in binary or text."""

    columns: tuple[str, ...]
    data: bytes
    binary: bool


class StagedChanges(NamedTuple):
    """A table's share of a binlog batch as COPY data: the keys it deletes, the rows it
    inserts first (the target normally lacks them), the rows it changes."""

    schema: TableSchema
    deleted: CopyData | None
    inserted: CopyData | None
    upserted: CopyData | None


class PostgresDialect(JdbcDialect):
    container = "SCHEMA"
    holds_mysql_values = False
    holds_far_dates = True  # its dates reach year 5874897 (pg_far_dates dumps them)
    transactional_ddl = True
    commits_later = True
    sql_dialect = "postgres"
    spells_implicit_defaults = True
    column_type = staticmethod(postgres_type)

    def connect(self, url: JdbcUrl, username: str, password: str, tls: TlsSettings = NO_SETTINGS) -> psycopg.Connection:
        conn = psycopg.connect(
            host=url.host,
            port=url.port,
            dbname=url.database,
            user=username,
            password=password,
            application_name="sluice",
            **tls.libpq_settings(),
        )
        register_numeric_dumper(conn.adapters)
        register_far_date_dumpers(conn.adapters)
        conn.execute("SET TIME ZONE 'UTC'")
        conn.commit()
        return conn

    def tls_cipher(self, conn: psycopg.Connection) -> str:
        row = conn.execute("SELECT cipher FROM pg_stat_ssl WHERE pid = pg_backend_pid()").fetchone()
        conn.rollback()
        return str(row[0]) if row and row[0] else ""

    def identifier(self, name: str) -> str:
        return postgres_identifier(name)

    def width_problem(self, schema: TableSchema) -> str | None:
        return width_problem(schema, POSTGRES_COLUMNS, "PostgreSQL")

    def quote(self, name: str) -> str:
        return '"' + self.identifier(name).replace('"', '""') + '"'

    # PostgreSQL cannot place a column FIRST or AFTER another (an added column goes last), and
    # an added column is nullable (rows of the new shape may come before the old rows are
    # updated).
    def add_column_statements(self, table: str, event: AddColumn) -> list[str]:
        column = event.column
        name, column_type = self.quote(column.name), self.column_type(column)
        return [f"ALTER TABLE {table} ADD COLUMN {name} {column_type}{self.default_clause(column)}"]

    def alter_column_type_statements(self, table: str, event: AlterColumnType) -> list[str]:
        name, new_type = self.quote(event.column.name), self.column_type(event.column)
        null = "DROP NOT NULL" if event.column.nullable else "SET NOT NULL"
        return [
            f"ALTER TABLE {table} ALTER COLUMN {name} TYPE {new_type} USING {name}::{new_type}",
            f"ALTER TABLE {table} ALTER COLUMN {name} {null}",
        ]

    def primary_key_statements(self, before: TableSchema, after: TableSchema) -> list[str]:
        """The key constraint is dropped by the name it has, whatever renames the table went through."""
        table, key = self.target_table(before), ", ".join(map(self.quote, after.row_key))
        literal = table.replace("'", "''")
        drop = (
            "DO $$ DECLARE c text; BEGIN "
            f"SELECT conname INTO c FROM pg_constraint WHERE conrelid = '{literal}'::regclass AND contype = 'p'; "
            f"IF c IS NOT NULL THEN EXECUTE format('ALTER TABLE {literal} DROP CONSTRAINT %I', c); END IF; END $$"
        )
        return [drop, *([f"ALTER TABLE {table} ADD PRIMARY KEY ({key})"] if key else [])]

    def rename_table_statements(self, before: TableSchema, after: TableSchema) -> list[str]:
        statements = []
        if after.database != before.database:
            statements.append(f"ALTER TABLE {self.target_table(before)} SET SCHEMA {self.quote(after.database)}")
        if after.table != before.table:
            moved = dataclasses.replace(before, database=after.database, _positions={})
            statements.append(f"ALTER TABLE {self.target_table(moved)} RENAME TO {self.quote(after.table)}")
        return statements

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

    def _staged(self, schema: TableSchema, role: str, data: CopyData) -> tuple[str, CopyIn]:
        """A temporary table shaped like the target's given columns, emptied at commit (one
        per role, deleted keys or written rows, and per shape, so a schema change gets a new
        one), and the COPY of `data` into it."""
        shape = zlib.crc32(repr([(c, schema.column(c).column_type) for c in data.columns]).encode())
        name = self.quote(f"stage_{schema.database}_{schema.table}_{role}{shape:08x}")
        columns = ", ".join(map(self.quote, data.columns))
        create = (
            f"CREATE TEMP TABLE IF NOT EXISTS {name} ON COMMIT DELETE ROWS AS "
            f"SELECT {columns} FROM {self.target_table(schema)} WITH NO DATA"
        )
        return name, CopyIn(create, self._copy_into(name, data), data.data)

    def _copy_into(self, table: str, data: CopyData) -> str:
        """The COPY of `data` into `table` (quoted), in its format."""
        options = " (FORMAT BINARY)" if data.binary else ""
        return f"COPY {table} ({', '.join(map(self.quote, data.columns))}) FROM STDIN{options}"

    def _copy_data(
        self, conn: psycopg.Connection, schema: TableSchema, columns: Sequence[str], rows: Iterable[Sequence[Any]]
    ) -> CopyData:
        """The rows as COPY data, made without a word to the server (the connection may still
        be running the commit before). Binary where every column's values have a binary form
        the target reads as it would their text (no number or date parsing on either side),
        else text."""
        types = [binary_copy_type(schema.column(c)) for c in columns]
        binary = all(types)
        data = io.BytesIO()
        with conn.cursor() as cur, psycopg.Copy(cur, binary=binary, writer=FileWriter(data)) as copy:
            if binary:
                copy.set_types(types)
            for row in rows:
                copy.write_row(row)
        return CopyData(tuple(columns), data.getvalue(), binary)

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
                    data = self._copy_data(conn, schema, schema.column_names, rows)
                    with conn.cursor() as cur, cur.copy(self._copy_into(table, data)) as copy:
                        copy.write(data.data)
        except psycopg.errors.UniqueViolation:
            self.upsert(conn, schema, rows)

    def upsert(self, conn: psycopg.Connection, schema: TableSchema, rows: Iterable[Row]) -> None:
        run_now(conn, self._staged_upsert(schema, self._copy_data(conn, schema, schema.column_names, rows)))

    def prepare_changes(self, conn: psycopg.Connection, changes: TableChanges) -> StagedChanges:
        """The batch's keys and rows as COPY data, made while the commit before may still run."""
        schema, names = changes.schema, changes.schema.column_names
        return StagedChanges(
            schema,
            self._copy_data(conn, schema, schema.row_key, changes.deleted) if changes.deleted else None,
            self._copy_data(conn, schema, names, changes.inserted) if changes.inserted else None,
            self._copy_data(conn, schema, names, changes.upserted) if changes.upserted else None,
        )

    def inserts_directly(self, changes: StagedChanges) -> bool:
        return changes.inserted is not None

    def is_duplicate_key(self, exc: Exception) -> bool:
        return isinstance(exc, psycopg.errors.UniqueViolation)

    def stage_changes(
        self, conn: psycopg.Connection, changes: StagedChanges, slice_rows: int, insert_directly: bool = True
    ) -> list[str | CopyIn]:
        """Leaves the COPYs of the batch's keys and rows into staging tables, the DELETE and
        the INSERT ... ON CONFLICT from them to commit_later, so that PostgreSQL applies
        them while the next batch is read. With `insert_directly` the rows the batch
        inserts first are COPYed straight into the table: a third of the server's work of
        an upsert from a staging table (a unique violation fails the commit, and the
        writer sends the batch again without it). A staging table takes any number of
        rows: there are no slices."""
        schema = changes.schema
        statements = self._staged_delete(schema, changes.deleted) if changes.deleted else []
        if insert_directly and changes.inserted is not None:
            statements.append(self._direct_copy(schema, changes.inserted))
            written = [changes.upserted]
        else:
            written = [changes.inserted, changes.upserted]
        written_data = [data for data in written if data is not None]
        return statements + (self._staged_upsert(schema, *written_data) if written_data else [])

    def _direct_copy(self, schema: TableSchema, data: CopyData) -> CopyIn:
        return CopyIn("", self._copy_into(self.target_table(schema), data), data.data)

    def _staged_upsert(self, schema: TableSchema, data: CopyData, *more: CopyData) -> list[str | CopyIn]:
        """The COPYs of the rows into a staging table, and the upsert from there."""
        names = schema.column_names
        stage, copy = self._staged(schema, "u", data)
        copies = [copy, *(self._staged(schema, "u", each)[1] for each in more)]
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
            *copies,
            f"INSERT INTO {self.target_table(schema)} ({quoted}) SELECT {quoted} FROM {stage}{conflict}",
            f"TRUNCATE {stage}",
        ]

    def commit_later(self, conn: psycopg.Connection, statements: Sequence[str | CopyIn]) -> PendingCommit:
        """Sends the statements and COMMIT as one query and returns once its COPYs are fed:
        PostgreSQL runs the rest while the binlog phase reads the next batch (pg_commit)."""
        return commit_later(conn, statements)

    def delete(self, conn: psycopg.Connection, schema: TableSchema, keys: Sequence[tuple[Any, ...]]) -> None:
        if keys:
            run_now(conn, self._staged_delete(schema, self._copy_data(conn, schema, schema.row_key, keys)))

    def _staged_delete(self, schema: TableSchema, keys: CopyData) -> list[str | CopyIn]:
        """The COPY of the keys into a staging table, and the DELETE by them."""
        key = schema.row_key
        stage, copy = self._staged(schema, "d", keys)
        match = " AND ".join(f"t.{self.quote(k)} = s.{self.quote(k)}" for k in key)
        # The staging table has no statistics, so the planner guesses thousands of keys and
        # hashes the whole target table for a batch's few: a nested loop probes the key's
        # index once a key. The transaction's other statements are all by key as well.
        return [
            copy,
            "SET LOCAL enable_hashjoin = off",
            "SET LOCAL enable_mergejoin = off",
            f"DELETE FROM {self.target_table(schema)} t USING {stage} s WHERE {match}",
            f"TRUNCATE {stage}",
        ]

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
    return {
        "boolean": "bool",
        "decimal": "numeric",
        "date": "date",
        "datetime": "timestamp",
        "timestamp": "timestamp",
    }.get(kind)
