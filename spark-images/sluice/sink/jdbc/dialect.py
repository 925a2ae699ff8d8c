"""The SQL every JDBC target speaks, and where the two differ: a dialect connects, creates a
table from a source schema, upserts and deletes rows in bulk, and keeps the pipeline's
records (offsets, epochs, state) in the target's own tables. Everything runs inside the
caller's transaction. PostgreSQL's: sink/jdbc/postgres; MySQL's and MariaDB's:
sink/jdbc/mysql."""

from __future__ import annotations

import contextlib
import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from sluice.errors import SinkError
from sluice.event.schema_change import AddColumn, AlterColumnType
from sluice.event.snapshot_split import SnapshotSplit
from sluice.pipeline.jdbc_url import JdbcUrl
from sluice.sink.base import COMMITTED, PendingCommit
from sluice.sink.jdbc.target_limits import (
    TargetNames,
)
from sluice.source.offset import BinlogOffset
from sluice.source.row_decoding import Row
from sluice.source.schema import Column, TableSchema
from sluice.source.tls import NO_SETTINGS, TlsSettings

BINLOG_SPLIT_ID = "binlog"  # the offsets table's row of the binlog position
META_SCHEMA = "sluice_meta"
OFFSETS_TABLE = "offsets"
EPOCHS_TABLE = "epochs"  # per pipeline, bumped by every run: the fencing token of its writers
KEYS_A_STATEMENT = 5000  # chunk keys one statement selects or deletes (PostgreSQL takes 65,535 parameters)
_EMPTY_STRING_TYPES = ("char", "varchar", "tinytext", "text", "mediumtext", "longtext")
STATES_TABLE = "states"  # per pipeline, its state as last saved: a lost state directory or status is adopted from it


class TableChanges(NamedTuple):
    """A table's share of a binlog batch, folded to each key's last image."""

    schema: TableSchema
    deleted: Sequence[tuple[Any, ...]]  # the keys it deletes
    inserted: Sequence[Row]  # rows it inserts first: the target normally lacks them
    upserted: Sequence[Row]  # rows it changes


class JdbcDialect(ABC):
    @abstractmethod
    def connect(self, url: JdbcUrl, username: str, password: str, tls: TlsSettings = NO_SETTINGS) -> Any:
        """A connection to the target, encrypted as `tls` says (sink's ssl-mode and files)."""

    @abstractmethod
    def tls_cipher(self, conn: Any) -> str:
        """The connection's TLS cipher as the server sees it; '' for plaintext."""

    @abstractmethod
    def identifier(self, name: str) -> str:
        """`name` as the target holds it (sink/jdbc/target_limits.py)."""

    @abstractmethod
    def quote(self, name: str) -> str:
        """`name` as the target holds it, quoted."""

    container: str  # what holds a source database's tables: SCHEMA or DATABASE
    holds_mysql_values: bool  # NUL in strings, dates no calendar has (sink/target_values)
    holds_far_dates: bool = False  # dates past year 9999 (source/row_decoding's FarDate)
    transactional_ddl: bool  # whether a DDL waits for the transaction's commit (PostgreSQL) or commits at once
    column_type: Callable[[Column], str]

    def name_fold(self, conn: Any) -> Callable[[str], str]:
        """How the target tells table names apart: as they are (PostgreSQL, quoted)."""
        return str

    @abstractmethod
    def width_problem(self, schema: TableSchema) -> str | None:
        """Why the target cannot hold the table's columns (sink/jdbc/target_limits.py)."""

    # Schema changes as the target's DDL (sink/jdbc/metadata_applier.py applies them; the
    # statements every target shares are there).
    sql_dialect: str  # sqlglot's name of the target's SQL: a DEFAULT expression is written in it
    spells_implicit_defaults: bool  # whether an added NOT NULL column needs MySQL's implicit default said

    @abstractmethod
    def add_column_statements(self, table: str, event: AddColumn) -> list[str]: ...

    @abstractmethod
    def alter_column_type_statements(self, table: str, event: AlterColumnType) -> list[str]: ...

    @abstractmethod
    def primary_key_statements(self, before: TableSchema, after: TableSchema) -> list[str]:
        """The target keyed by `after`'s row key (none: a bag)."""

    @abstractmethod
    def rename_table_statements(self, before: TableSchema, after: TableSchema) -> list[str]:
        """The table moved, once any table holding the new name is dropped."""

    def default_clause(self, column: Column) -> str:
        """The DEFAULT clause of an added column: the source fills the rows it already has with
        it, and so must the target. Without one, MySQL fills a NOT NULL column with its type's
        implicit default (0, ''), which other targets must be told. (An expression such as
        CURRENT_TIMESTAMP is evaluated by the target when it applies the change, not at the
        source's instant.)"""
        value = column.default
        if value is None and not column.nullable and self.spells_implicit_defaults:
            value = "0" if column.is_numeric else "''" if column.data_type in _EMPTY_STRING_TYPES else None
        if value is None:
            return ""
        import sqlglot  # loaded by the first schema change that needs it, not at every start

        return f" DEFAULT {sqlglot.transpile(value, read='mysql', write=self.sql_dialect)[0]}"

    def column_definition(self, column: Column) -> str:
        """A column as CREATE TABLE and ALTER TABLE write it: name, type, nullability."""
        return f"{self.quote(column.name)} {self.column_type(column)}{'' if column.nullable else ' NOT NULL'}"

    def create_table_statements(self, schema: TableSchema) -> list[str]:
        """The target table, keyed by the source's row key (a unique key becomes the primary
        key); a bag gets an index on its chunk key, which its deletes look rows up by."""
        problem = self.width_problem(schema)
        if problem:
            raise SinkError(problem)
        columns = [self.column_definition(c) for c in schema.columns]
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

    def prepare_changes(self, conn: Any, changes: TableChanges) -> Any:
        """What of staging a table's share of a binlog batch needs no round trip to the
        target, which may still be running the commit before on `conn`; stage_changes takes
        what this gives. Here that is nothing: the share as it is."""
        return changes

    def inserts_directly(self, changes: Any) -> bool:
        """Whether stage_changes would write the share's new rows (as prepare_changes gave
        it) with no regard for rows the target holds already, so that a duplicate key fails
        the commit (is_duplicate_key) and the batch goes again with insert_directly off.
        Here inserting is upserting, always."""
        return False

    def is_duplicate_key(self, exc: Exception) -> bool:
        return False

    def stage_changes(self, conn: Any, changes: Any, slice_rows: int, insert_directly: bool = True) -> list[str]:
        """Writes a table's share of a binlog batch (as prepare_changes gave it) in
        statements of at most `slice_rows` rows. Gives the statements it leaves to
        commit_later; here it leaves none."""
        self.delete(conn, changes.schema, changes.deleted)
        for write, rows in ((self.insert_new, changes.inserted), (self.upsert, changes.upserted)):
            for start in range(0, len(rows), slice_rows):
                write(conn, changes.schema, rows[start : start + slice_rows])
        return []

    commits_later = False  # whether commit_later returns before the target is done

    def commit_later(self, conn: Any, statements: Sequence[str]) -> PendingCommit:
        """Runs the statements and commits. The call returned waits until that is done;
        here it is done at once."""
        with conn.cursor() as cur:
            for statement in statements:
                cur.execute(statement)
        conn.commit()
        return COMMITTED

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

    def select_range(
        self, conn: Any, schema: TableSchema, split: SnapshotSplit, keys: Sequence[Any] | None = None
    ) -> list[Row]:
        """The target's rows in a chunk's key range (the target's columns, in order); with
        `keys`, those of these chunk keys instead (the range's, where the target cannot
        order the key as the source does)."""
        columns = ", ".join(self._selected(c) for c in schema.columns)
        rows: list[Row] = []
        with contextlib.closing(conn.cursor()) as cur:
            for where, params in self._in_range(schema, split, keys):
                cur.execute(f"SELECT {columns} FROM {self.target_table(schema)}{where}", params)
                rows.extend(tuple(row) for row in cur.fetchall())
        return rows

    def _in_range(
        self, schema: TableSchema, split: SnapshotSplit, keys: Sequence[Any] | None
    ) -> Iterator[tuple[str, list[Any]]]:
        """WHERE clauses (with their parameters) that together select a range's rows."""
        key = schema.column(schema.chunk_key)
        if keys is None:
            yield split.key_condition(self.quote(key.name), self._parameter(key))
            return
        if None in keys:
            yield f" WHERE {self.quote(key.name)} IS NULL", []
        values = [k for k in keys if k is not None]
        for start in range(0, len(values), KEYS_A_STATEMENT):
            part = values[start : start + KEYS_A_STATEMENT]
            yield f" WHERE {self.quote(key.name)} IN ({', '.join([self._parameter(key)] * len(part))})", part

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

    def begin_range_replace(self, conn: Any) -> None:  # noqa: B027 - a hook, MySQL's sets something
        """Before a transaction that clears key ranges and loads rows beside others doing so
        in the same table (snapshot splits): here nothing to set."""

    def delete_range(
        self, conn: Any, schema: TableSchema, split: SnapshotSplit, keys: Sequence[Any] | None = None
    ) -> None:
        """Removes the target's rows in a chunk's key range (or of `keys`, see select_range),
        which the chunk's rows replace."""
        with contextlib.closing(conn.cursor()) as cur:
            for where, params in self._in_range(schema, split, keys):
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
