"""Reads one snapshot split with DBLog watermarks and writes it (a Spark task's work).

MariaDB: START TRANSACTION WITH CONSISTENT SNAPSHOT, then the binlog position that read
view matches exactly (binlog_snapshot_file/position, what mysqldump --single-transaction
--master-data relies on), then the chunk SELECT in that view. The chunk is then exactly as
of that position: low and high watermark are the same, nothing needs folding, and the rows
stream to the sink without being held in memory.

Other servers (MySQL): SHOW MASTER STATUS can run ahead of what a new read view sees
(binlog written before the engine commits), so there: low watermark → SELECT the chunk →
high watermark → if the binlog moved, read the window [low, high) for this table, keep the
changes whose key is in the chunk, and fold them into the chunk rows. The result is the
chunk as of the high watermark. A transaction in group commit at the low watermark can
still be missed there: the residual window documented in docs/concepts.md. A table without
a key (a bag) cannot be folded so: the SELECT may have seen a window's insert already, and
equal rows cannot tell which. Its chunk is read again until a window holds none of its
changes (no lock: a table lock would make the application's writers wait, and deadlock).
"""

from __future__ import annotations

import collections
import itertools
import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import MySQLdb.cursors

from sluice.binlog.emit_rule import image_chunks
from sluice.binlog.rows.event_reader import read_window
from sluice.errors import SchemaDrift, SourceError
from sluice.event.projection import projection
from sluice.event.row_change import RowChange, RowKind
from sluice.event.snapshot_split import ProjectedRows, ReadSplits, SnapshotSplit, SplitRead, SplitTask
from sluice.snapshot.chunk_scan import ChunkScan, chunk_query
from sluice.source.connection import connect_scan, current_offset
from sluice.source.copy_text import copy_text_select
from sluice.source.key_order import KeyOrder, key_order_for
from sluice.source.offset import BinlogOffset
from sluice.source.row_decoding import Row, RowDecoder
from sluice.source.schema import TableSchema, live_shape
from sluice.source.server_flavour import is_mariadb
from sluice.source.sql import qualified

log = logging.getLogger(__name__)

BAG_READS = 20  # a keyless chunk's reads before it is given up as changing all the time

ER_TABLE_DEF_CHANGED = 1412  # "Table definition has changed, please retry transaction"


def begin_consistent_snapshot(conn: MySQLdb.connections.Connection) -> BinlogOffset:
    """Opens a read view and returns the binlog position it matches exactly (MariaDB)."""
    cur = conn.cursor()
    try:
        cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        cur.execute("SHOW STATUS WHERE Variable_name IN ('binlog_snapshot_file', 'binlog_snapshot_position')")
        status = {name.lower(): value for name, value in cur.fetchall()}
    finally:
        cur.close()
    return BinlogOffset(status["binlog_snapshot_file"], int(status["binlog_snapshot_position"]))


def read_split(task: SplitTask, conn: MySQLdb.connections.Connection) -> tuple[Iterable[Row], BinlogOffset, int]:
    """Returns the chunk's rows as of the high watermark, the watermark, and the fold count.

    `conn` comes from connect_scan (autocommit). On MariaDB the rows are a ChunkScan in a
    consistent snapshot the caller ends (end_split) once the rows are written."""
    if is_mariadb(conn):
        exact = _begin_read_view(task.schema, conn)
        return _scan(task, conn, exact=True), exact, 0
    _check_unchanged(task.schema, conn, in_read_view=False)
    rows, high, folded = read_split_with_window(task, conn)
    _check_unchanged(task.schema, conn, in_read_view=False)  # no change inside the window either
    return rows, high, folded


def _begin_read_view(schema: TableSchema, conn: MySQLdb.connections.Connection) -> BinlogOffset:
    exact = begin_consistent_snapshot(conn)
    _check_unchanged(schema, conn, in_read_view=True)
    return exact


def _check_unchanged(schema: TableSchema, conn: MySQLdb.connections.Connection, in_read_view: bool) -> None:
    """Raises SchemaDrift if the table's columns are no longer the planned ones: the chunk
    would mix two schemas. In a read view, touching the table first takes its metadata
    lock, so no DDL lands until the split ends; a DDL after the view began makes InnoDB
    refuse the table (1412), which is a change too."""
    if in_read_view:
        cur = conn.cursor()
        try:
            cur.execute(f"SELECT 1 FROM {qualified(schema.database, schema.table)} LIMIT 0")
        except MySQLdb.OperationalError as exc:
            if exc.args and exc.args[0] == ER_TABLE_DEF_CHANGED:
                raise SchemaDrift(schema.table_id) from exc
            raise
        finally:
            cur.close()
    if live_shape(conn, schema.database, schema.table) != schema.shape:
        raise SchemaDrift(schema.table_id)


def _scan(task: SplitTask, conn: MySQLdb.connections.Connection, exact: bool = False) -> ChunkScan:
    """`exact`: the rows need no fold, so a target may take them as COPY text instead."""
    sql, params = chunk_query(task.schema, task.split)
    select = copy_text_select(task.schema) if exact else None
    copy_text_sql = chunk_query(task.schema, task.split, select)[0] if select else None
    return ChunkScan(conn, sql, params, RowDecoder(task.schema), task.fetch_size, copy_text_sql, in_read_view=exact)


def read_split_with_window(
    task: SplitTask, conn: MySQLdb.connections.Connection
) -> tuple[list[Row], BinlogOffset, int]:
    """DBLog's window for servers without an exact low watermark (any server can run it)."""
    for _ in range(BAG_READS):
        rows, high, in_chunk, decoder = _read_in_window(task, conn)
        if not in_chunk:
            return rows, high, 0
        if not task.schema.is_bag:
            return fold(rows, in_chunk, decoder), high, len(in_chunk)
    raise SourceError(
        f"{task.schema.table_id}: chunk {task.split.index} changed during each of {BAG_READS} reads, and the table has "
        "no key to fold its changes in by; give it a primary key or a unique NOT NULL column "
        "(scan.incremental.snapshot.chunk.key-column does not make rows unique)"
    )


def _read_in_window(
    task: SplitTask, conn: MySQLdb.connections.Connection
) -> tuple[list[Row], BinlogOffset, list[tuple[RowChange, bool, bool]], RowDecoder]:
    """The chunk's rows, the high watermark, and the chunk's changes between the watermarks."""
    schema, split = task.schema, task.split
    low = current_offset(conn)
    scan = _scan(task, conn)
    try:
        rows = list(scan)
    except UnicodeDecodeError:  # a string holds surrogates: read again, decoding them (ChunkScan)
        rows = list(scan)
    high = current_offset(conn)
    if (high.file, high.pos) == (low.file, low.pos):
        return rows, high, [], scan.decoder
    changes = read_window(task.endpoint, task.server_id, low, high, {schema.table_id: schema}, is_mariadb(conn))
    order = key_order_for(schema.column(schema.chunk_key), conn)
    return rows, high, changes_in_chunk(changes, split, scan.decoder, order), scan.decoder


def end_split(conn: MySQLdb.connections.Connection) -> None:
    """Closes the split's read view (a no-op outside one)."""
    conn.rollback()


def changes_in_chunk(
    changes: Iterable[RowChange], split: SnapshotSplit, decoder: RowDecoder, order: KeyOrder, batch: int = 1000
) -> list[tuple[RowChange, bool, bool]]:
    """Changes touching the chunk, each with whether its before and after images are inside.
    The window is judged a batch at a time: only the chunk's own changes are kept."""
    boundaries = [b for b in (split.start, split.end) if b is not None]
    target = 0 if split.start is None else 1
    result = []
    pending: list[RowChange] = []
    for change in [*changes, None]:
        if change is not None:
            pending.append(change)
            if len(pending) < batch:
                continue
        indexes = image_chunks(pending, decoder, order, boundaries) if pending else []
        for i, change_in_window in enumerate(pending):
            before_in = change_in_window.before is not None and indexes[2 * i] == target
            after_in = change_in_window.after is not None and indexes[2 * i + 1] == target
            if before_in or after_in:
                result.append((change_in_window, before_in, after_in))
        pending = []
    return result


def fold(rows: list[Row], changes: list[tuple[RowChange, bool, bool]], decoder: RowDecoder) -> list[Row]:
    """Applies the window's changes to the chunk rows: the chunk as of the high watermark.

    An insert or update puts the after-image (the SELECT may already have seen it, so this
    is an upsert); a delete removes the row; an update that moves a row's key out of the
    chunk removes it here, and the chunk it moved into picks it up. A bag has no key to
    upsert by: it is never folded (read_split_with_window reads it again).
    """
    by_key = {decoder.row_key(row): row for row in rows}
    for change, before_in, after_in in changes:
        if change.kind is not RowKind.INSERT and before_in:
            by_key.pop(decoder.row_key(change.before), None)  # type: ignore[arg-type]
        if change.kind is not RowKind.DELETE and after_in:
            by_key[decoder.row_key(change.after)] = change.after  # type: ignore[arg-type,index]
    return list(by_key.values())


def unfold(rows: list[Row], changes: list[tuple[RowChange, bool, bool]], decoder: RowDecoder) -> list[Row]:
    """fold's inverse: the chunk rows as of the window's start, from its rows as of its end
    and the window's changes (a verifier reads the source after the position it compares at).

    A bag takes each change back (an after image goes, a before image returns). A key takes
    the before image of the first change that touches it, or is absent if that change made
    it (an insert, or an update that moved a row onto it); keys no change touched stay.
    """
    if decoder.schema.is_bag:
        bag = collections.Counter(rows)
        for change, before_in, after_in in changes:
            if change.kind is not RowKind.DELETE and after_in:
                bag[change.after] -= 1
            if change.kind is not RowKind.INSERT and before_in:
                bag[change.before] += 1
        return list(bag.elements())
    by_key = {decoder.row_key(row): row for row in rows}
    seen: set[Any] = set()
    for change, before_in, after_in in changes:
        if change.kind is not RowKind.INSERT and before_in:
            key = decoder.row_key(change.before)  # type: ignore[arg-type]
            if key not in seen:
                seen.add(key)
                by_key[key] = change.before  # type: ignore[assignment]
        if change.kind is not RowKind.DELETE and after_in:
            key = decoder.row_key(change.after)  # type: ignore[arg-type]
            if key not in seen:
                seen.add(key)
                by_key.pop(key, None)
    return list(by_key.values())


def read_splits(tasks: list[SplitTask]) -> Iterator[SplitRead]:
    """Reads splits one read after another over one source connection. On MariaDB a read
    takes adjacent splits of one table into one consistent snapshot while it has read
    fewer than READ_VIEW_ROWS rows: the target then commits them in one transaction, and a
    default chunk no longer costs a read view, a COPY and a commit of its own."""
    conn = connect_scan(tasks[0].endpoint)
    try:
        exact_reads = is_mariadb(conn)
        pending = collections.deque(tasks)
        while pending:
            task = pending[0]
            if exact_reads:
                exact = _begin_read_view(task.schema, conn)
                offered = _adjacent(pending)
                group = ChunkGroup(conn, offered)
                replaces = task.split.spanning(offered[-1].split) if task.replaces else None
                yield SplitRead(task.schema, group, exact, group.covered, replaces)
                for _ in group.covered():
                    pending.popleft()
            else:
                pending.popleft()
                rows, high, _ = read_split(task, conn)
                replaces = task.split if task.replaces else None
                yield SplitRead(task.schema, rows, high, lambda t=task, r=rows: [(t.split, len(r))], replaces)
            end_split(conn)
    finally:
        conn.close()


READ_VIEW_ROWS = 131_072  # measured: a read view and its commit cost about 8 ms, 3% of this many rows


def _adjacent(pending: collections.deque[SplitTask]) -> list[SplitTask]:
    """The pending tasks that continue the first one's key range in its table."""
    run = [pending[0]]
    for task in itertools.islice(pending, 1, None):
        if task.split.table_id != run[-1].split.table_id or task.split.index != run[-1].split.index + 1:
            break
        run.append(task)
    return run


class ChunkGroup:
    """Adjacent chunks of one table read in one read view, as one stream of rows (or COPY
    text blocks).

    Each pass takes chunks in order while fewer than READ_VIEW_ROWS rows were read; within
    one read view every pass sees the same rows, so every pass covers the same chunks. A
    chunk's scan is made when a pass first reaches it."""

    def __init__(self, conn: MySQLdb.connections.Connection, tasks: list[SplitTask]) -> None:
        self._conn, self._tasks = conn, tasks
        self._scans: list[ChunkScan] = []
        self._counts: list[int] | None = None  # per covered chunk, from the last complete pass

    def _scan(self, index: int) -> ChunkScan:
        if index == len(self._scans):
            self._scans.append(_scan(self._tasks[index], self._conn, exact=True))
        return self._scans[index]

    @property
    def has_copy_text(self) -> bool:
        return self._scan(0).has_copy_text  # one table: one select list

    def __iter__(self) -> Iterator[Row]:
        return self._pass(iter)

    def copy_text(self) -> Iterator[str]:
        return self._pass(ChunkScan.copy_text)

    def _pass(self, stream: Callable[[ChunkScan], Iterator[Any]]) -> Iterator[Any]:
        counts: list[int] = []
        rows = 0
        for index in range(len(self._tasks)):
            if rows >= READ_VIEW_ROWS:
                break
            scan = self._scan(index)
            yield from stream(scan)
            counts.append(scan.count)
            rows += scan.count
        self._counts = counts

    def covered(self) -> list[tuple[SnapshotSplit, int]]:
        if self._counts is None:
            raise AssertionError("a split read's rows must be iterated before it is recorded")
        return [(task.split, count) for task, count in zip(self._tasks, self._counts, strict=False)]


def reads_onto(target: TableSchema) -> ReadSplits:
    """read_splits for a target whose columns a schema change left other than the source's
    (lenient, ignore): rows are projected onto them, and the sink is given the target's."""

    def read(tasks: list[SplitTask]) -> Iterator[SplitRead]:
        for split in read_splits(tasks):
            project = projection(split.schema, target)
            if project is None:
                yield split
                continue
            yield SplitRead(
                target, ProjectedRows(split.rows, project), split.high_watermark, split.covered, split.replaces
            )

    read.onto = target  # type: ignore[attr-defined]  # for a sink that must name its columns first (parquet)
    return read
