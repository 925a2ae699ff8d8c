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
import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

from sluice.errors import SinkError, SinkUnavailable
from sluice.event.change_fold import fold_run
from sluice.event.row_change import ChangeBatch, ChangeRow, RowKind
from sluice.event.schema_change import AlterPrimaryKey, SchemaChangeEvent, SchemaEvolution, is_reflected
from sluice.event.snapshot_split import SplitRead
from sluice.pipeline.sink_configs import JdbcSinkConfig
from sluice.sink.base import PendingCommit, SchemaChangeRefused, Sink, SinkWriter, StartCommit, in_background
from sluice.sink.jdbc.dialect import BINLOG_SPLIT_ID, META_SCHEMA, STATES_TABLE, TableChanges
from sluice.sink.jdbc.metadata_applier import schema_change_statements
from sluice.sink.jdbc.target import JdbcTarget, first_line
from sluice.sink.jdbc.target_limits import name_clashes, names_held_otherwise
from sluice.sink.jdbc.target_ranges import TargetRanges
from sluice.sink.target_values import TargetValues
from sluice.source.offset import BinlogOffset
from sluice.source.row_decoding import Row
from sluice.source.schema import TableSchema
from sluice.source.tls import TlsSettings

log = logging.getLogger(__name__)


class JdbcWriter(SinkWriter):
    def __init__(self, target: JdbcTarget) -> None:
        self.target = target
        self._conn: Any = None
        self._keys: dict[str, tuple[TableSchema, tuple[int, ...]]] = {}  # per table, its row key's positions
        self._fits: dict[str, tuple[TableSchema, Callable[[Row], Row] | None]] = {}
        self._upserts_inserts: set[str] = set()  # tables whose new rows were found in the target once

    @property
    def conn(self) -> Any:
        if self._conn is None:
            self._conn = self.target.connect()
        return self._conn

    def write_snapshot_splits(self, read: SplitRead) -> None:
        dialect = self.target.dialect
        try:
            if read.replaces is not None:
                dialect.begin_range_replace(self.conn)
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
                f"sink {self.target!r}: writing snapshot splits into {read.schema.table_id} failed: {first_line(exc)}"
            ) from exc

    def write_changes(self, batch: ChangeBatch, end: BinlogOffset, drop_split_records: bool) -> None:
        self._send(self._prepared(batch, end), end, drop_split_records).wait()

    def prepare_changes(self, batch: ChangeBatch, end: BinlogOffset) -> StartCommit:
        """The batch is folded and made ready to send (PostgreSQL's COPY data, MySQL's LOAD
        DATA text) now, while the target may still commit the batch before. PostgreSQL
        runs its statements in the server after the start returns (commit_later); a
        MySQL-dialect target's run at the start, in a thread whose waits on the server let
        the reader run."""
        prepared = self._prepared(batch, end)
        if self.target.dialect.commits_later:
            return lambda drop: self._send(prepared, end, drop)
        return lambda drop: in_background(lambda: self._send(prepared, end, drop).wait())

    def _prepared(self, batch: ChangeBatch, end: BinlogOffset) -> _Prepared:
        """Collapses the batch to each key's last image, and has the dialect prepare each
        table's share (dialect.prepare_changes). A bag's changes collapse to a count per
        distinct row: the source only deletes rows it holds, so applying the net counts in
        any order gives the same table."""
        dialect = self.target.dialect
        final: dict[str, tuple[TableSchema, dict[Any, Row | None], set[Any]]] = {}
        bags: dict[str, tuple[TableSchema, collections.Counter[Row]]] = {}
        rows, at = batch.rows, 0
        while at < len(rows):  # batches come in runs of one table's changes
            schema = rows[at].schema
            if schema.is_bag:
                counts = bags.setdefault(schema.table_id, (schema, collections.Counter()))[1]
                at = _count_bag_run(rows, at, self._fit(schema), counts)
            else:
                images, new = final.setdefault(schema.table_id, (schema, {}, set()))[1:]
                at = fold_run(rows, at, self._key_positions(schema), self._fit(schema), images, new)
        shares = []
        try:
            for schema, images, new in final.values():
                deleted = [_key_tuple(k) for k, row in images.items() if row is None]
                inserted = [row for k, row in images.items() if row is not None and k in new]
                upserted = [row for k, row in images.items() if row is not None and k not in new]
                shares.append(dialect.prepare_changes(self.conn, TableChanges(schema, deleted, inserted, upserted)))
        except Exception as exc:  # the connection may still run the commit before: it is left to that commit's wait
            raise SinkError(f"sink {self.target!r}: preparing changes up to {end} failed: {first_line(exc)}") from exc
        return _Prepared(shares, [(schema, counts) for schema, counts in bags.values()])

    def _send(
        self, prepared: _Prepared, end: BinlogOffset, drop_split_records: bool, directly: bool = True
    ) -> PendingCommit:
        """Deletes, inserts and upserts in bulk; what the dialect leaves to run with the
        commit may still run when this returns (see dialect.commit_later). New rows go in
        with no regard for rows the target holds (`directly`, where the dialect can): if
        one was there after all, the commit fails, the batch is sent again with them
        upserted, and so are that table's from then on."""
        dialect = self.target.dialect
        inserting = {s.schema.table_id for s in prepared.shares if directly and dialect.inserts_directly(s)}
        inserting -= self._upserts_inserts
        try:
            self._fence()
            statements: list[str] = []  # what the dialect leaves to run with the commit
            for share in prepared.shares:
                statements += dialect.stage_changes(
                    self.conn, share, self.target.batch_size, share.schema.table_id in inserting
                )
            for schema, counts in prepared.bags:
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
                if not (inserting and dialect.is_duplicate_key(exc)):
                    raise self._failed(end, exc) from exc
                self._abort()
                self._upserts_inserts |= inserting
                log.warning(
                    "sink %r: a row the binlog inserts was in the target already (%s); the batch up to %s is "
                    "committed again with the new rows of %s upserted, as they will be from now on (a table that "
                    "held rows before the pipeline, or one written by others, is written so)",
                    self.target,
                    first_line(exc),
                    end,
                    ", ".join(sorted(inserting)),
                )
                self._send(prepared, end, drop_split_records, directly=False).wait()

        return PendingCommit(wait, committed.ready)

    def _failed(self, end: BinlogOffset, exc: Exception) -> SinkError:
        self._abort()
        return SinkError(f"sink {self.target!r}: committing changes up to {end} failed: {first_line(exc)}")

    def apply_schema_change(self, change_id: str, evolution: SchemaEvolution) -> None:
        """PostgreSQL applies the events in one transaction; a MySQL-dialect target commits
        each DDL on its own, so what a crash left applied is found by `is_applied`."""
        dialect = self.target.dialect
        self._fence()
        cur = self.conn.cursor()
        for applied, (event, schemas, _) in enumerate(evolution.steps()):
            schema = schemas.get(event.table_id)
            try:
                if not self._shows(cur, event, schema):
                    for statement in schema_change_statements(dialect, event, schema):
                        cur.execute(statement)
            except Exception as exc:
                self._abort()
                done = 0 if dialect.transactional_ddl else applied
                raise SchemaChangeRefused(done, f"{event} on sink {self.target!r}: {first_line(exc)}") from exc
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

    def _key_positions(self, schema: TableSchema) -> tuple[int, ...]:
        known = self._keys.get(schema.table_id)
        if known is None or known[0] != schema:
            known = self._keys[schema.table_id] = (schema, tuple(schema.position(k) for k in schema.row_key))
        return known[1]

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


class JdbcSink(TargetRanges, Sink):
    replaces_key_ranges = True
    commits_when_quiet = True

    def __init__(self, config: JdbcSinkConfig, pipeline: str) -> None:
        self.target = JdbcTarget(config, pipeline)
        self._meta_tables = False  # created in this process (the first state is kept before `prepare`)

    @property
    def values(self) -> TargetValues:
        return self.target.values

    @property
    def holds_far_dates(self) -> bool:  # type: ignore[override]
        return self.target.dialect.holds_far_dates

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

    def encryption(self) -> tuple[str, TlsSettings] | None:
        with contextlib.closing(self.target.connect()) as conn:
            return self.target.dialect.tls_cipher(conn), self.target.tls

    def names_held_otherwise(self, schemas: Sequence[TableSchema]) -> list[str]:
        return names_held_otherwise(self.target.dialect, schemas)

    def missing_columns(self, schemas: Sequence[TableSchema]) -> dict[str, list[str]]:
        with contextlib.closing(self.target.connect()) as conn, contextlib.closing(conn.cursor()) as cur:
            lacking = {schema.table_id: self._lacking(cur, schema) for schema in schemas}
        return {table_id: names for table_id, names in lacking.items() if names}

    def _lacking(self, cur: Any, schema: TableSchema) -> list[str] | None:
        """The columns the target table lacks (names compare as MySQL's do, whatever the
        case); None where there is no target table."""
        dialect = self.target.dialect
        present = {name.casefold() for name in dialect.column_names(cur, schema.database, schema.table)}
        if not present:
            return None
        return [c.name for c in schema.columns if dialect.identifier(c.name).casefold() not in present]

    def _adopted_table_problems(self, cur: Any, schema: TableSchema) -> Iterator[str]:
        """A target table already there (a leftover, one made by hand) is written into as it
        is (`CREATE TABLE IF NOT EXISTS`): what it lacks would fail the first write."""
        dialect, table = self.target.dialect, self.target.dialect.target_table(schema)
        missing = self._lacking(cur, schema)
        if missing is None:
            return
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
                    raise SinkError(f"sink {self.target!r}: '{statement[:120]}' failed: {first_line(exc)}") from exc
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
            raise SinkError(f"sink {self.target!r}: keeping the pipeline's state failed: {first_line(exc)}") from exc
        finally:
            conn.close()

    def forget_commits(self) -> None:
        with contextlib.closing(self.target.connect()) as conn:
            self.target.dialect.delete_offsets(conn, self.target.pipeline)
            conn.commit()

    def writer(self) -> JdbcWriter:
        return JdbcWriter(self.target)


class _Prepared(NamedTuple):
    """A batch ready to send: each table's share as the dialect prepared it, each bag's counts."""

    shares: list[Any]
    bags: list[tuple[TableSchema, collections.Counter[Row]]]


def _count_bag_run(
    rows: list[ChangeRow], start: int, fit: Callable[[Row], Row] | None, counts: collections.Counter[Row]
) -> int:
    """Counts the run of a bag's changes from `start` into `counts` (+1 an added row, -1 a
    removed one); gives the index after the run."""
    schema, end = rows[start].schema, start
    while end < len(rows) and rows[end].schema is schema:
        _, kind, row, _, _ = rows[end]
        counts[row if fit is None else fit(row)] += -1 if kind in (RowKind.DELETE, RowKind.UPDATE_BEFORE) else 1
        end += 1
    return end


def _key_tuple(key: Any) -> tuple[Any, ...]:
    return key if isinstance(key, tuple) else (key,)
