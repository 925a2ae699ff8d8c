"""The jdbc sink: upserts into PostgreSQL or MySQL/MariaDB, exactly once.

Each write commits its rows together with the offsets it covers (a snapshot split's high
watermark, later the binlog position) in one transaction, so the target's offsets table
says precisely what the target holds, whatever crashed when.

Every run takes a new epoch for its pipeline in the target, and every write checks it in
its transaction: a writer of an older run (a zombie executor, a driver cut off from its
pod) can no longer commit over what the newer run wrote.
"""

from __future__ import annotations

import collections
import contextlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from sluice.errors import SinkError, SinkUnavailable
from sluice.event.row_change import ChangeBatch, RowKind
from sluice.event.schema_change import AlterPrimaryKey, SchemaChangeEvent, apply_events, is_reflected
from sluice.event.snapshot_split import SnapshotSplit, SplitRead, chunk_keys_of
from sluice.pipeline.jdbc_url import JdbcUrl
from sluice.pipeline.sink_configs import JdbcSinkConfig
from sluice.sink.base import PendingCommit, SchemaChangeRefused, Sink, SinkWriter, in_background
from sluice.sink.jdbc.dialect import META_SCHEMA, STATES_TABLE, JdbcDialect, TableChanges
from sluice.sink.jdbc.dialects import DIALECTS
from sluice.sink.jdbc.metadata_applier import schema_change_statements
from sluice.sink.jdbc.target_limits import name_clashes, names_held_otherwise
from sluice.sink.target_values import TargetValues
from sluice.source.offset import BinlogOffset
from sluice.source.row_decoding import Row, RowDecoder
from sluice.source.schema import TableSchema

BINLOG_SPLIT_ID = "binlog"


class JdbcTarget:
    """Connection details; picklable, and the password stays out of repr."""

    def __init__(self, config: JdbcSinkConfig, pipeline: str) -> None:
        self.url: JdbcUrl = config.url
        self.username = config.username
        self._password = config.password
        self.pipeline = pipeline
        self.batch_size = config.batch_size
        mysql = self.dialect.holds_mysql_values
        self.values = TargetValues(
            None if mysql else config.nul_replacement, None if mysql else config.zero_date, not mysql
        )
        self.epoch: int | None = None  # taken by JdbcSink.prepare, before writers ship

    def __repr__(self) -> str:
        return f"JdbcTarget({self.url.dialect}://{self.url.host}:{self.url.port}/{self.url.database})"

    @property
    def dialect(self) -> JdbcDialect:
        return DIALECTS[self.url.dialect]

    def connect(self) -> Any:
        try:
            return self.dialect.connect(self.url, self.username, self._password)
        except Exception as exc:  # driver errors differ per dialect
            raise SinkUnavailable(f"sink {self!r}: cannot connect: {_first_line(exc)}") from exc


class JdbcWriter(SinkWriter):
    def __init__(self, target: JdbcTarget) -> None:
        self.target = target
        self._conn: Any = None
        self._decoders: dict[str, RowDecoder] = {}  # per table, for row keys
        self._fits: dict[str, tuple[TableSchema, Callable[[Row], Row] | None]] = {}

    @property
    def conn(self) -> Any:
        if self._conn is None:
            self._conn = self.target.connect()
        return self._conn

    def write_snapshot_splits(self, read: SplitRead) -> None:
        dialect = self.target.dialect
        try:
            self._fence()
            if read.replaces is not None:
                dialect.delete_range(self.conn, read.schema, read.replaces)
            dialect.insert_new(self.conn, read.schema, self.target.values.rows(read.schema, read.rows))
            covered = {split.split_id: read.high_watermark for split, _ in read.covered()}
            dialect.save_offsets(self.conn, self.target.pipeline, covered)
            self.conn.commit()
        except Exception as exc:
            self._abort()
            raise SinkError(
                f"sink {self.target!r}: writing snapshot splits into {read.schema.table_id} failed: {_first_line(exc)}"
            ) from exc

    def write_changes(self, batch: ChangeBatch, end: BinlogOffset, drop_split_records: bool) -> None:
        self._apply(batch, end, drop_split_records).wait()

    def start_changes(self, batch: ChangeBatch, end: BinlogOffset, drop_split_records: bool) -> PendingCommit:
        """PostgreSQL's statements run in the server after this returns (commit_later); a
        MySQL-dialect target's run in a thread, whose waits on the server let the reader run."""
        if self.target.dialect.commits_later:
            return self._apply(batch, end, drop_split_records)
        return in_background(lambda: self.write_changes(batch, end, drop_split_records))

    def _apply(self, batch: ChangeBatch, end: BinlogOffset, drop_split_records: bool) -> PendingCommit:
        """Collapses the batch to each key's last image, then deletes, inserts and upserts in
        bulk; what the dialect leaves to run with the commit may still run when this
        returns (see dialect.commit_later). A bag's changes collapse to a count per distinct row: the
        source only deletes rows it holds, so applying the net counts in any order gives
        the same table."""
        dialect = self.target.dialect
        final: dict[str, tuple[TableSchema, dict[Any, Row | None], set[Any]]] = {}
        bags: dict[str, tuple[TableSchema, collections.Counter[Row]]] = {}
        current: TableSchema | None = None
        for schema, kind, row, _, _ in batch:
            if schema is not current:  # batches come in runs of one table's changes
                current = schema
                fit = self._fit(schema)
                if schema.is_bag:
                    images = None
                    counts = bags.setdefault(schema.table_id, (schema, collections.Counter()))[1]
                else:
                    images, new = final.setdefault(schema.table_id, (schema, {}, set()))[1:]
                    row_key = self._row_key(schema)
            removes = kind is RowKind.DELETE or kind is RowKind.UPDATE_BEFORE
            if fit is not None:
                row = fit(row)
            if images is None:
                counts[row] += -1 if removes else 1
            else:
                key = row_key(row)
                if kind is RowKind.INSERT and key not in images:
                    new.add(key)  # the batch inserts it first: the target normally lacks it
                images[key] = None if removes else row
        try:
            self._fence()
            statements: list[str] = []  # what the dialect leaves to run with the commit
            for schema, images, new in final.values():
                deleted = [_key_tuple(k) for k, row in images.items() if row is None]
                inserted = [row for k, row in images.items() if row is not None and k in new]
                upserted = [row for k, row in images.items() if row is not None and k not in new]
                changes = TableChanges(schema, deleted, inserted, upserted)
                statements += dialect.stage_changes(self.conn, changes, self.target.batch_size)
            for schema, counts in bags.values():
                dialect.delete_equal_rows(self.conn, schema, [(row, -n) for row, n in counts.items() if n < 0])
                self._in_slices(dialect.upsert, schema, [row for row, n in counts.items() for _ in range(n)])
            dialect.save_offsets(self.conn, self.target.pipeline, {BINLOG_SPLIT_ID: end})
            if drop_split_records:
                dialect.delete_offsets(self.conn, self.target.pipeline, exclude=BINLOG_SPLIT_ID)
            committed = dialect.commit_later(self.conn, statements)
        except Exception as exc:
            raise self._failed(end, exc) from exc

        def wait() -> None:
            try:
                committed.wait()
            except Exception as exc:
                raise self._failed(end, exc) from exc

        return PendingCommit(wait, committed.ready)

    def _failed(self, end: BinlogOffset, exc: Exception) -> SinkError:
        self._abort()
        return SinkError(f"sink {self.target!r}: committing changes up to {end} failed: {_first_line(exc)}")

    def apply_schema_change(
        self, change_id: str, events: Sequence[SchemaChangeEvent], before: Mapping[str, TableSchema]
    ) -> None:
        """PostgreSQL applies the events in one transaction; a MySQL-dialect target commits
        each DDL on its own, so what a crash left applied is found by `is_applied`."""
        dialect = self.target.dialect
        schemas = dict(before)
        self._decoders.clear()
        self._fence()
        cur = self.conn.cursor()
        for applied, event in enumerate(events):
            schema = schemas.get(event.table_id)
            try:
                if not self._shows(cur, event, schema):
                    for statement in schema_change_statements(dialect, event, schema):
                        cur.execute(statement)
            except Exception as exc:
                self._abort()
                done = 0 if dialect.transactional_ddl else applied
                raise SchemaChangeRefused(done, f"{event} on sink {self.target!r}: {_first_line(exc)}") from exc
            schemas = apply_events(schemas, [event])
        self.conn.commit()

    def _shows(self, cur: Any, event: SchemaChangeEvent, schema: TableSchema | None) -> bool:
        """Whether the target shows `event` already (a MySQL-dialect target that applied it
        before a crash)."""
        dialect = self.target.dialect
        if isinstance(event, AlterPrimaryKey) and schema is not None:
            return dialect.primary_key(cur, schema.database, schema.table) == event.applied_to(schema).row_key
        return is_reflected(event, lambda db, table: dialect.column_names(cur, db, table))

    def _in_slices(
        self, write: Callable[[Any, TableSchema, list[Row]], None], schema: TableSchema, rows: list[Row]
    ) -> None:
        """A dialect's write in slices of sink.batch-size (a bag's upserts: it has no key,
        so they are inserts)."""
        for start in range(0, len(rows), self.target.batch_size):
            write(self.conn, schema, rows[start : start + self.target.batch_size])

    def _fit(self, schema: TableSchema) -> Callable[[Row], Row] | None:
        """What the table's rows become in the target (sink/target_values), per schema."""
        known = self._fits.get(schema.table_id)
        if known is None or known[0] != schema:
            known = self._fits[schema.table_id] = (schema, self.target.values.for_table(schema))
        return known[1]

    def _row_key(self, schema: TableSchema) -> Callable[[Row], Any]:
        decoder = self._decoders.get(schema.table_id)
        if decoder is None:
            decoder = self._decoders[schema.table_id] = RowDecoder(schema)
        return decoder.row_key

    def _fence(self) -> None:
        held = self.target.dialect.held_epoch(self.conn, self.target.pipeline)
        if held != self.target.epoch:
            raise SinkError(
                f"pipeline {self.target.pipeline!r} runs as epoch {held} now; this writer of epoch "
                f"{self.target.epoch} was fenced off and commits nothing"
            )

    def committed_binlog_offset(self) -> BinlogOffset | None:
        offsets = self.target.dialect.load_offsets(self.conn, self.target.pipeline)
        self.conn.commit()
        return offsets.get(BINLOG_SPLIT_ID)

    def _abort(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):  # the connection is gone; close below
                self._conn.rollback()
            self.close()

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


_RECREATE = "or drop the table for the pipeline to create it"


class JdbcSink(Sink):
    replaces_key_ranges = True

    def __init__(self, config: JdbcSinkConfig, pipeline: str) -> None:
        self.target = JdbcTarget(config, pipeline)
        self._meta_tables = False  # created in this process (the first state is kept before `prepare`)
        self._reads: Any = None  # verification's connection (read_range)

    @property
    def values(self) -> TargetValues:
        return self.target.values

    def check_target(self, schemas: Sequence[TableSchema]) -> list[SinkError]:
        try:
            conn = self.target.connect()
        except SinkUnavailable as exc:
            return [exc]
        containers = sorted({schema.database for schema in schemas})
        try:
            problems = self.target.dialect.privilege_problems(conn, [META_SCHEMA, *containers])
            problems += name_clashes(self.target.dialect, self.target.dialect.name_fold(conn), schemas)
            with contextlib.closing(conn.cursor()) as cur:
                problems += [p for schema in schemas if (p := self.target.dialect.width_problem(schema))]
                problems += [p for schema in schemas for p in self._adopted_table_problems(cur, schema)]
            return [SinkError(problem) for problem in problems]
        finally:
            conn.close()

    def names_held_otherwise(self, schemas: Sequence[TableSchema]) -> list[str]:
        return names_held_otherwise(self.target.dialect, schemas)

    def _adopted_table_problems(self, cur: Any, schema: TableSchema) -> Iterator[str]:
        """A target table already there (a leftover, one made by hand) is written into as it
        is (`CREATE TABLE IF NOT EXISTS`): what it lacks would fail the first write. Names
        compare as MySQL's do, whatever the case."""
        dialect, table = self.target.dialect, self.target.dialect.target_table(schema)
        present = {name.casefold() for name in dialect.column_names(cur, schema.database, schema.table)}
        if not present:
            return
        missing = [c.name for c in schema.columns if dialect.identifier(c.name).casefold() not in present]
        if missing:
            what = f"the column {missing[0]}" if len(missing) == 1 else f"the columns {', '.join(missing)}"
            it = "it" if len(missing) == 1 else "them"
            yield f"target table {table} lacks {what}, which the pipeline writes: add {it}, {_RECREATE}"
            return
        key = dialect.primary_key(cur, schema.database, schema.table)
        if schema.row_key and [k.casefold() for k in key] != [dialect.identifier(k).casefold() for k in schema.row_key]:
            has = f"has the primary key ({', '.join(key)})" if key else "has no primary key"
            wanted = f"({', '.join(schema.row_key)})"
            yield (
                f"target table {table} {has}, and the pipeline writes its rows by {wanted}: "
                f"make {wanted} its primary key, {_RECREATE}"
            )

    def prepare(self, schemas: Sequence[TableSchema]) -> None:
        dialect = self.target.dialect
        conn = self.target.connect()
        try:
            clashes = name_clashes(dialect, dialect.name_fold(conn), schemas)
            if clashes:
                raise SinkError(clashes[0])
            statements = dialect.meta_table_statements()
            for schema in schemas:
                statements += dialect.create_table_statements(schema)
            cur = conn.cursor()
            for statement in statements:
                try:
                    cur.execute(statement)
                except Exception as exc:
                    raise SinkError(f"sink {self.target!r}: '{statement[:120]}' failed: {_first_line(exc)}") from exc
            conn.commit()
            self.target.epoch = dialect.begin_epoch(conn, self.target.pipeline)
            conn.commit()
        finally:
            conn.close()

    def committed_splits(self) -> dict[str, BinlogOffset]:
        conn = self.target.connect()
        try:
            return self.target.dialect.load_offsets(conn, self.target.pipeline)
        finally:
            conn.close()

    def holds_commits(self) -> bool:
        return bool(self.committed_splits())

    def recorded_state(self) -> tuple[int, dict[str, Any]] | None:
        dialect = self.target.dialect
        conn = self.target.connect()
        try:
            if not dialect.column_names(conn.cursor(), META_SCHEMA, STATES_TABLE):
                return None  # a target no pipeline of this Sluice version wrote
            found = dialect.load_state(conn, self.target.pipeline)
            conn.commit()
            return None if found is None else (found[0], json.loads(found[1]))
        finally:
            conn.close()

    def record_state(self, revision: int, document: dict[str, Any]) -> None:
        dialect = self.target.dialect
        conn = self.target.connect()
        try:
            if not self._meta_tables:
                cur = conn.cursor()
                for statement in dialect.meta_table_statements():
                    cur.execute(statement)
            dialect.save_state(conn, self.target.pipeline, revision, json.dumps(document, separators=(",", ":")))
            conn.commit()
            self._meta_tables = True  # after the commit: PostgreSQL rolls DDL back with the rest
        except Exception as exc:
            raise SinkError(f"sink {self.target!r}: keeping the pipeline's state failed: {_first_line(exc)}") from exc
        finally:
            conn.close()

    def forget_commits(self) -> None:
        with contextlib.closing(self.target.connect()) as conn:
            self.target.dialect.delete_offsets(conn, self.target.pipeline)
            conn.commit()

    def tables_holding_rows(self, schemas: Sequence[TableSchema]) -> set[str]:
        """The tables whose target holds rows: their chunks replace their key ranges
        (snapshot/range_replacement)."""
        table = self.target.dialect.target_table
        with contextlib.closing(self.target.connect()) as conn, contextlib.closing(conn.cursor()) as cur:
            holding = set()
            for schema in schemas:
                cur.execute(f"SELECT 1 FROM {table(schema)} LIMIT 1")
                if cur.fetchone() is not None:
                    holding.add(schema.table_id)
            conn.commit()
            return holding

    def chunk_keys(self, schema: TableSchema) -> Iterator[list[Any]]:
        """The target's distinct chunk keys, a batch at a time in the target's own order
        (NULL, if any, alone first)."""
        dialect = self.target.dialect
        key, table = dialect.quote(schema.chunk_key), dialect.target_table(schema)
        with contextlib.closing(self.target.connect()) as conn, contextlib.closing(conn.cursor()) as cur:
            cur.execute(f"SELECT 1 FROM {table} WHERE {key} IS NULL LIMIT 1")
            if cur.fetchone() is not None:
                yield [None]
            after: list[Any] = []
            while True:
                where = f"{key} IS NOT NULL" + (f" AND {key} > %s" if after else "")
                cur.execute(f"SELECT DISTINCT {key} FROM {table} WHERE {where} ORDER BY {key} LIMIT {KEY_BATCH}", after)
                keys = [row[0] for row in cur.fetchall()]
                conn.commit()
                if not keys:
                    return
                yield keys
                after = [keys[-1]]

    def delete_chunk_keys(self, schema: TableSchema, keys: Sequence[Any] | None) -> None:
        """Deletes the target's rows with these chunk keys (every row, for None), committed."""
        dialect = self.target.dialect
        key, table = dialect.quote(schema.chunk_key), dialect.target_table(schema)
        with contextlib.closing(self.target.connect()) as conn, contextlib.closing(conn.cursor()) as cur:
            if keys is None:
                cur.execute(f"DELETE FROM {table}")
            if None in (keys or ()):
                cur.execute(f"DELETE FROM {table} WHERE {key} IS NULL")
            values = [k for k in keys or () if k is not None]
            for start in range(0, len(values), KEY_BATCH):
                part = values[start : start + KEY_BATCH]
                cur.execute(f"DELETE FROM {table} WHERE {key} IN ({', '.join(['%s'] * len(part))})", part)
            conn.commit()

    def read_range(
        self,
        schema: TableSchema,
        split: SnapshotSplit,
        keys_as_of: Callable[[BinlogOffset], Sequence[Any]] | None = None,
    ) -> tuple[list[Row], BinlogOffset | None]:
        """The target's rows in a key range and the binlog position they are as of (the
        pipeline's committed one), read in one consistent view: nothing waits for it. With
        `keys_as_of`, the rows of the chunk keys it gives for that position instead (a
        range of a key the target orders otherwise than the source)."""
        dialect = self.target.dialect
        conn = self._reading()
        try:
            dialect.begin_consistent_read(conn)
            position = dialect.load_offsets(conn, self.target.pipeline).get(BINLOG_SPLIT_ID)
            keys = None if keys_as_of is None or position is None else keys_as_of(position)
            rows = dialect.select_range(conn, schema, split, keys)
            conn.rollback()
            return rows, position
        except BaseException:
            self.release()  # the next read starts on a fresh connection
            raise

    def _reading(self) -> Any:
        """The one connection verification reads the target on."""
        if self._reads is None:
            self._reads = self.target.connect()
        return self._reads

    def release(self) -> None:
        """Closes the connection verification read on."""
        if self._reads is not None:
            self._reads.close()
            self._reads = None

    def replace_range(
        self,
        schema: TableSchema,
        split: SnapshotSplit,
        rows_as_of: Callable[[BinlogOffset], list[Row]],
        keys_also: Sequence[Any] | None = None,
    ) -> int:
        """Replaces the target's rows in a key range by `rows_as_of(position)`, the source's
        rows as of the pipeline's committed position. With `keys_also`, the range is the
        rows' chunk keys and these (see read_range). Returns the rows written."""

        def replace(conn: Any, position: BinlogOffset) -> int:
            rows = rows_as_of(position)
            keys = None if keys_also is None else chunk_keys_of(schema, rows, keys_also)
            self.target.dialect.delete_range(conn, schema, split, keys)
            self.target.dialect.insert_new(conn, schema, self.target.values.rows(schema, rows))
            return len(rows)

        return self._at_committed_position(replace)

    def replace_keys(
        self,
        schema: TableSchema,
        rows_as_of: Callable[[BinlogOffset], tuple[list[tuple[Any, ...]], list[Row]]],
    ) -> int:
        """Replaces the target's rows of the keys `rows_as_of(position)` gives by the rows it
        gives with them (the source's as of the pipeline's committed position)."""

        def replace(conn: Any, position: BinlogOffset) -> int:
            keys, rows = rows_as_of(position)
            for start in range(0, len(keys), self.target.batch_size):
                self.target.dialect.delete(conn, schema, keys[start : start + self.target.batch_size])
            self.target.dialect.insert_new(conn, schema, self.target.values.rows(schema, rows))
            return len(rows)

        return self._at_committed_position(replace)

    def _at_committed_position(self, write: Callable[[Any, BinlogOffset], int]) -> int:
        """Runs `write` in a transaction at the pipeline's committed binlog position: its
        writes wait meanwhile (the epoch row is locked), so the position holds until the
        rows are in; the pipeline pauses for as long as one write takes."""
        dialect = self.target.dialect
        with contextlib.closing(self.target.connect()) as conn:
            try:
                dialect.lock_epoch(conn, self.target.pipeline)
                position = dialect.load_offsets(conn, self.target.pipeline).get(BINLOG_SPLIT_ID)
                if position is None:
                    raise SinkError(f"sink {self.target!r}: pipeline {self.target.pipeline!r} has no binlog position")
                written = write(conn, position)
                conn.commit()
                return written
            except Exception:
                with contextlib.suppress(Exception):
                    conn.rollback()
                raise

    def writer(self) -> JdbcWriter:
        return JdbcWriter(self.target)


KEY_BATCH = 1000  # chunk keys per query when a collation-keyed table's unread chunks are cleared


def _key_tuple(key: Any) -> tuple[Any, ...]:
    return key if isinstance(key, tuple) else (key,)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
