"""The binlog phase: one reader follows the binlog and commits batches exactly once.

A reader process (runtime/reader_process.py) follows the binlog; this thread decodes
its transactions' rows, applies the emit rule, gathers transactions into a batch and
commits the batch with its end offset in one sink transaction, when the batch is large
enough or old enough (so latency stays low when the source is quiet). The target may still
be committing a batch while the next one is gathered; the split's state and progress are
recorded once it is done. Stopping (SIGTERM, or the end offset of a bounded run) commits
what was read and returns.

A lost connection to the source (a restart, a failover, a network cut) is not the end: what
was read is committed, and the reader connects again from there, waiting 1 s, 2 s, 4 s ...
up to 30 s between attempts, for as long as `connect.reconnect.timeout` allows. Where the
offset carries a GTID set it resumes after that set, so a failover to a promoted replica
behind the same address finds its place.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sluice.binlog.binlog_split import BinlogSplit
from sluice.binlog.binlog_split_reader import BinlogSplitReader
from sluice.binlog.ddl.ddl_context import Captured
from sluice.binlog.ddl.ddl_reader import DdlFollowing
from sluice.binlog.rows.event_reader import Replica
from sluice.binlog.rows.image_completion import TargetNeeds
from sluice.binlog.transaction_reader import BinlogSource, Heartbeat, Transaction, read_transactions
from sluice.coordinator.schema_change import short_statement
from sluice.event.row_change import ChangeBatch
from sluice.event.schema_change import SchemaChange
from sluice.route.routing import Routing
from sluice.runtime.commit_pipeline import CommitPipeline, OnCommit, OnProgress
from sluice.runtime.reader_process import END
from sluice.runtime.reader_supervisor import ReaderSupervisor
from sluice.sink.base import Sink, SinkWriter
from sluice.source.connection import connect
from sluice.source.endpoint import SourceEndpoint
from sluice.source.offset import BinlogOffset
from sluice.source.schema import TableSchema
from sluice.source.server_flavour import is_mariadb
from sluice.transform.transform_rule import rule_for

log = logging.getLogger(__name__)


def target_needs(sink: Sink, routing: Routing) -> TargetNeeds:
    """What `sink` under `routing` needs of a change beyond a row's key and after image."""

    def transformed(table_id: str) -> bool:
        return rule_for(routing.transforms, *table_id.split(".", 1)) is not None

    return TargetNeeds(changelog=not sink.replaces_key_ranges, transformed=transformed)


@dataclass(frozen=True)
class BinlogSettings:
    server_id: int
    heartbeat_seconds: float
    batch_rows: int = 5000
    max_batch_delay: float = 0.2
    commits_when_quiet: bool = False  # a batch is committed once the reader has had nothing for QUIET seconds
    target_needs: TargetNeeds = TargetNeeds()  # how rows events that leave columns out are made whole


BATCH_GROWTH = 10  # how many times sink.batch-size a batch grows to while the target is busy
# How long the reader is waited on, with no batch gathering, before the commit in flight is
# awaited: a reader with nothing more (caught up) then has its last commit recorded as soon
# as the target is done, not after an idle wait of its own.
IDLE_WITH_COMMIT_IN_FLIGHT = 0.005
QUIET = 0.02  # the reader had nothing for this long: the source is quiet, or the reader caught up


@contextlib.contextmanager
def collector_for_rows() -> Iterator[None]:
    """Rows are tuples, made by the hundred thousand a second and held for a batch: at
    Python's default thresholds the cyclic garbage collector runs every 700 of them and walks
    the batch again and again, three fifths of the cost of making them. Rows make no cycles,
    so it runs a hundred times less often while the binlog phase does."""
    before = gc.get_threshold()
    gc.set_threshold(100_000, 50, 100)
    try:
        yield
    finally:
        gc.set_threshold(*before)


def resumes_by_gtid(split: BinlogSplit, stop_at: BinlogOffset | None) -> bool:
    """A GTID set means the same on every server of the topology, file/position only on the
    one that wrote it: resuming by GTID follows a failover to a promoted replica. (The emit
    rule's watermarks and a bounded run's end are positions, so those runs resume by position.)"""
    return bool(split.offset.gtid) and not split.watermarks and stop_at is None


def transaction_lag(transaction: Transaction, now: float) -> float:
    """How far behind the source a target that holds `transaction` is. The binlog's times are
    whole seconds: a transaction read within its second was read as it was written (the
    reader keeps up), so its lag runs from when the reader got it, to the tenth of a second;
    one read later runs from its timestamp (within a second of the truth either way)."""
    if transaction.received and transaction.received - transaction.timestamp < 1.0:
        return max(0.0, now - transaction.received)
    return max(0.0, now - transaction.timestamp)


@dataclass(frozen=True)
class BinlogRun:
    """What a binlog phase reads, from where, to where, and whom it tells: reads from
    split.offset until stop_at (a bounded run) or until `stopping` is set.

    on_commit(split, tables that entered pure binlog phase) follows every commit;
    on_progress(offset, rows committed by table and kind, lag in seconds, seconds the commit
    took) follows every commit, and every heartbeat when nothing is pending (caught up with
    the server, the lag is zero; no commit, None). on_reconnect() follows a lost connection
    opened again.
    on_schema_change(change, split) is called for a DDL on a `captured` table once
    everything before it is committed. It resolves the change, moves the split past it and
    gives the source's and the target's schemas from then on; it raises to stop the
    pipeline there, and gives None when the pipeline stops while the change waits.
    `targets`: the target's schemas where they differ from the source's (rows are
    projected onto them). `migrations`: the online schema changes in progress, when the
    pipeline reads them as such (scan.parse.online.schema.changes.enabled), else None.
    `unread_tables`: tables a statement that could not be read changed (state.unread).
    skip_before_millis: transactions from seconds before this (scan.startup.mode timestamp)
    only advance the offset; those of the starting second itself are kept, never lost.
    """

    endpoint: SourceEndpoint
    settings: BinlogSettings
    split: BinlogSplit
    schemas: Mapping[str, TableSchema]
    writer: SinkWriter
    stopping: threading.Event
    on_commit: OnCommit
    on_progress: OnProgress
    stop_at: BinlogOffset | None = None
    skip_before_millis: int = 0
    captured: Captured | None = None
    on_schema_change: Callable[[SchemaChange, BinlogSplit], Resumed | None] | None = None
    targets: Mapping[str, TableSchema] | None = None
    migrations: Mapping[str, Any] | None = None
    unread_tables: Sequence[str] = ()
    on_reconnect: Callable[[], None] = lambda: None


def run_binlog_phase(run: BinlogRun) -> None:
    _BinlogPhase(run).run()


class _BinlogPhase:
    """One run of the binlog phase: the reader supervisor's items gathered into batches for
    the commit pipeline; a DDL flushes the batch and waits for its decision."""

    def __init__(self, run: BinlogRun) -> None:
        self.run_, self.split = run, run.split
        self.control = connect(run.endpoint)
        self.mariadb = is_mariadb(self.control)
        with self.control.cursor() as cur:
            cur.execute("SELECT @@lower_case_table_names")
            self.lower_case_table_names = int(cur.fetchone()[0])
        needs = run.settings.target_needs
        self.split_reader = BinlogSplitReader(
            run.schemas, run.targets or run.schemas, self.control, run.endpoint, needs
        )
        self.migrating = run.migrations  # as the reader has them: a reader started again starts from these
        self.unread = list(run.unread_tables)
        self.sources = run.schemas  # what rows are decoded with, as schema changes move it
        self.reader = ReaderSupervisor(self._transactions, run.endpoint.reconnect_timeout, self._reconnected)
        self.commits = CommitPipeline(run.writer, run.split, run.on_commit, run.on_progress)
        self.batch = ChangeBatch()
        self.end = run.split.offset
        self.first_pending = 0.0
        self.latest: Transaction | None = None  # the last transaction read
        self.caught_up = False  # the server had nothing more after what was read

    def _transactions(
        self, start: BinlogOffset, sources: Mapping[str, TableSchema], by_gtid: bool, before_waiting: Callable[[], None]
    ) -> Iterator:
        """What the reader process reads (in the child: the state here as it was at its start)."""
        run = self.run_
        replica = Replica(run.endpoint, run.settings.server_id, self.mariadb)
        source = BinlogSource(replica, run.settings.heartbeat_seconds, run.stop_at, self.lower_case_table_names)
        following = (
            DdlFollowing(run.captured, self.migrating, self.unread, self.split.schemas_read_at())
            if run.captured is not None and run.on_schema_change is not None
            else None
        )
        return read_transactions(source, start, sources, by_gtid, following, before_waiting)

    def _reconnected(self) -> None:
        self.run_.on_reconnect()
        self.control.close()
        self.control = connect(self.run_.endpoint)  # the old one went with the server
        self.split_reader.reconnect(self.control)

    def lag(self) -> float:
        return 0.0 if self.caught_up or self.latest is None else transaction_lag(self.latest, time.time())

    def run(self) -> None:
        run = self.run_
        self.reader.start(self.split.offset, self.sources, resumes_by_gtid(self.split, run.stop_at))
        try:
            self._follow()
            if self.reader.failure is not None:
                raise self.reader.failure
            if self.batch or self.end != self.split.offset or self.split.watermarks:
                self._commit()  # also drops the snapshot's watermarks once the reader is past them
            self.commits.settle()
        finally:
            self.commits.abandon()
            run.stopping.set()
            self.reader.stop()
            self.control.close()
            self.split_reader.close()

    def _follow(self) -> None:
        """Reads until the run stops, the bounded run ends or reading fails."""
        while True:
            item = self.reader.get(self._timeout())
            if item is END:
                if not self._connected_again():
                    return
                continue
            if isinstance(item, Transaction):
                self._transaction(item)
            elif isinstance(item, SchemaChange) and self.run_.on_schema_change is not None:
                if not self._schema_change(item):
                    return  # stopped while the change waited: the next run takes it up again
            elif isinstance(item, Heartbeat):
                self._heartbeat(item)
            self._commit_when_due(item)
            if self.run_.stopping.is_set() and not self.batch:
                return

    def _timeout(self) -> float:
        """How long to wait for the reader: until the batch is due, or a moment."""
        settings = self.run_.settings
        if not self.batch:
            return IDLE_WITH_COMMIT_IN_FLIGHT if self.commits.in_flight else 0.5
        timeout = max(0.0, self.first_pending + settings.max_batch_delay - time.monotonic())
        return min(timeout, QUIET) if settings.commits_when_quiet else timeout

    def _connected_again(self) -> bool:
        """After the reader ended: what was read before a lost connection is committed, and
        the reader starts again once it may (False: it ended, failed, or gave up)."""
        lost = self.reader.lost()
        if lost is None:
            return False
        if self.batch or self.end != self.split.offset:
            self._commit()  # what was read before the loss
        self.commits.settle()
        if not self.reader.wait_for_next_attempt(lost, self.run_.stopping):
            return False
        self.reader.start(self.split.offset, self.sources, resumes_by_gtid(self.split, self.run_.stop_at))
        return True

    def _transaction(self, item: Transaction) -> None:
        self.caught_up = False
        if not self.batch:
            self.first_pending = time.monotonic()
        if item.timestamp >= self.run_.skip_before_millis // 1000:  # binlog times are whole seconds
            self.split_reader.emit(item, self.split, self.batch)
        self.end = item.end
        self.latest = item

    def _schema_change(self, item: SchemaChange) -> bool:
        """Everything before the DDL committed, then its decision; False if the run stopped
        while it waited."""
        assert self.run_.on_schema_change is not None
        if item.unread:  # its effect comes with the tables' next rows
            log.warning(
                "binlog %s: cannot read %r; the layout of %s follows from the table map of its next rows",
                item.position,
                short_statement(item.statement),
                ", ".join(item.unread),
            )
        self.unread = list(item.waiting)
        if self.batch or self.end != self.split.offset:
            self._commit()  # the flush: everything before the DDL is in the target
        self.commits.settle()
        resumed = self.run_.on_schema_change(item, self.split)
        if item.migrations is not None and self.run_.migrations is not None:
            self.migrating = item.migrations
        if resumed is None:
            return False
        self.split_reader.update(resumed.sources, resumed.targets)
        self.sources = resumed.sources
        self.end = self.split.offset
        if resumed.read_again:  # a table joined: the reader starts again, knowing it
            self.reader.start(self.split.offset, resumed.sources, by_gtid=False)
        return True

    def _heartbeat(self, item: Heartbeat) -> None:
        self.end = max(self.end, item.end)
        self.caught_up = True
        if not self.batch and self.end == self.split.offset:
            self.commits.settle()  # its progress first
            self.run_.on_progress(self.end, {}, 0.0, None)

    def _commit_when_due(self, item: object) -> None:
        settings = self.run_.settings
        held = time.monotonic() - self.first_pending
        quiet = item is None and settings.commits_when_quiet
        batch = self.batch
        due = len(batch) >= settings.batch_rows or bool(batch and (held >= settings.max_batch_delay or quiet))
        # While the target still commits the batch before, a due batch grows for as long
        # as the reader has more: behind, batches get bigger and commits fewer (each a
        # wait for the target's durable write), and more changes fold into one image.
        if due and isinstance(item, Transaction) and len(batch) < BATCH_GROWTH * settings.batch_rows:
            due = not self.commits.busy()
        if due or (not batch and self.end != self.split.offset and item is None):
            self._commit()
        elif item is None and not batch:
            self.commits.settle()  # idle: the commit in flight is recorded now, not when the next item comes

    def _commit(self) -> None:
        self.commits.commit(self.batch, self.end, self.lag)
        self.batch = ChangeBatch()


@dataclass(frozen=True)
class Resumed:
    """How reading goes on after a schema change."""

    sources: Mapping[str, TableSchema]  # the schemas rows are decoded with
    targets: Mapping[str, TableSchema]  # the target's, which rows are projected onto
    read_again: bool = False  # from the split's offset: a table joined the capture (its rows were skipped)
