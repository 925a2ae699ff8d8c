"""What every sink does: a driver-side part (prepare, read progress) and an executor-side writer.

Sinks are built from plain configuration so Spark can ship them to executors; they open
connections lazily, on the side that uses them.
"""

from __future__ import annotations

import dataclasses
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sluice.errors import SinkError
from sluice.event.row_change import ChangeBatch
from sluice.event.schema_change import AddColumn, SchemaEvolution
from sluice.event.snapshot_split import ReadSplits, SplitRead, SplitResult, SplitTask
from sluice.sink import target_values
from sluice.sink.target_values import TargetValues
from sluice.source.offset import BinlogOffset
from sluice.source.schema import TableSchema
from sluice.source.tls import TlsSettings

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession


class SchemaChangeRefused(SinkError):
    """The target refused a schema change event; `applied` events before it took effect."""

    troubleshooting = "schema-change-refused"

    def __init__(self, applied: int, message: str) -> None:
        super().__init__(message)
        self.applied = applied


class PendingCommit:
    """A batch's commit that the target may still be running: `wait()` returns once it is
    done (and raises if it failed); `ready()` says, without waiting, whether it is."""

    def __init__(self, wait: Callable[[], None] = lambda: None, ready: Callable[[], bool] = lambda: True) -> None:
        self.wait, self.ready = wait, ready


COMMITTED = PendingCommit()  # a commit that was done when it was handed back
StartCommit = Callable[[bool], PendingCommit]  # a prepared batch's commit: start(drop_split_records)


def in_background(commit: Callable[[], None]) -> PendingCommit:
    """`commit` run in a thread of its own: the binlog phase reads on while the target
    works (a driver waiting on its socket, pyarrow writing files: both let the reader run)."""
    failure: list[BaseException] = []

    def run() -> None:
        try:
            commit()
        except BaseException as exc:  # noqa: BLE001 - wait() raises it where the commit was asked for
            failure.append(exc)

    thread = threading.Thread(target=run, name="sink-commit", daemon=True)
    thread.start()

    def wait() -> None:
        thread.join()
        if failure:
            raise failure[0]

    return PendingCommit(wait, lambda: not thread.is_alive())


class SinkWriter(ABC):
    """Executor side (snapshot splits) or driver side (binlog batches); closed after use."""

    def rereads_after(self, evolution: SchemaEvolution) -> list[str]:
        """The tables to read again after `events`: where the values the source's ALTER gave
        the rows (an added column's DEFAULT, a retyped column's converted values) do not
        reach the rows the target holds. A jdbc target's own ALTER gives them: none."""
        return []

    def ranges_not_replaceable(self) -> dict[str, str]:
        """The tables whose key ranges the target cannot replace, with why: rows a DDL
        removed without row events cannot be found there by reading the table again."""
        return {}

    def write_snapshot_splits(self, read: SplitRead) -> None:
        """Writes the chunks as of their high watermark (`read.rows` may stream: each
        iteration reads them again), and records the splits they covered as finished with
        it, atomically where the sink can (so a crash never leaves one without the other).
        Only sinks that keep Sink.write_snapshot_job's default are asked to."""
        raise NotImplementedError(f"{type(self).__name__} writes snapshot splits in its sink's write_snapshot_job")

    @abstractmethod
    def write_changes(self, batch: ChangeBatch, end: BinlogOffset, drop_split_records: bool) -> None:
        """What a sink implements: writes a batch and records `end` as where the binlog
        reader resumes, atomically where the sink can. `drop_split_records`: every table is
        in pure binlog phase, so the per-split records can go. The runtime commits through
        prepare_changes alone."""

    def prepare_changes(self, batch: ChangeBatch, end: BinlogOffset) -> StartCommit:
        """The one way the runtime commits a batch. What of committing it needs nothing of
        the target is done now, while the target may still commit the batch before; the
        start this gives, start(drop_split_records), is called once that commit is done and
        gives the commit, which may still run when it returns (nothing else may use the
        writer before its wait() returned). Here nothing is done before the start, and the
        commit is write_changes in a thread of its own."""
        return lambda drop_split_records: in_background(lambda: self.write_changes(batch, end, drop_split_records))

    def committed_binlog_offset(self) -> BinlogOffset | None:
        """Where the binlog reader resumes according to the target (transactional sinks)."""
        return None

    @abstractmethod
    def apply_schema_change(self, change_id: str, evolution: SchemaEvolution) -> None:
        """The metadata applier: applies the evolution's events to the target, whose tables'
        schemas are its `before`. Idempotent: after a crash part way it applies again only what the target
        lacks. Raises SchemaChangeRefused when the target refuses one; rows after the
        change come with their new schemas (per-table caches must not outlive it)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        pass


class Sink(ABC):
    """Driver side."""

    max_batch_delay: float = 0.2  # how long the binlog phase may hold a batch before committing
    # Whether a batch is committed as soon as the source goes quiet, rather than held for
    # max_batch_delay: for targets whose commits are cheap (a database's; not a lakehouse's
    # files, each commit a snapshot or a Spark job).
    commits_when_quiet: bool = False
    writes_changes_with_spark: bool = False  # the binlog phase then keeps the Spark session
    replaces_key_ranges: bool = False  # a snapshot chunk replaces its key range (snapshot/range_replacement)
    # A split's rows may go to several targets (a table fanned out by ALL_MATCH routes): each
    # SplitRead names its own target table.
    takes_several_targets_of_a_split: bool = True
    holds_far_dates: bool = False  # its dates reach past year 9999 (a transform's date arithmetic may go there)
    values: TargetValues | None = None  # the target's rules for values it cannot hold as MySQL has them

    def attach(self, spark: SparkSession) -> None:  # noqa: B027 - optional hook
        """Given the driver's Spark session, for sinks that write with Spark itself."""

    def write_snapshot_job(self, sc: SparkContext, tasks: list[SplitTask], read: ReadSplits) -> list[SplitResult]:
        """Runs splits as one Spark task whose writer commits each split on its own."""
        sink = self
        (results,) = sc.parallelize([tasks], 1).map(lambda t: _write_splits_on_executor(t, sink, read)).collect()
        return results

    def write_splits_now(
        self, tasks: list[SplitTask], read: ReadSplits, on_split: Callable[[SplitResult], None] | None = None
    ) -> list[SplitResult]:
        """Reads and writes splits in this process (a plan smaller than one Spark job; chunks
        read again after a schema change): a few, and maybe no Spark session at hand.
        `on_split` hears of each split as it commits."""
        return _write_splits(tasks, self, read, on_split)

    def table_layout(self, table_id: str, partitions: tuple[str, ...], options: Mapping[str, str]) -> bool:
        """Creates the table partitioned by these columns and with these options (a
        transform's partition-keys and table-options) where the sink has partitions and
        table options; False where it has neither (the sink's own partition.key names a
        table first)."""
        return False

    @abstractmethod
    def prepare(self, schemas: Sequence[TableSchema]) -> None:
        """Creates what the pipeline writes into (target tables, offsets table)."""

    def check_target(self, schemas: Sequence[TableSchema]) -> list[SinkError] | None:
        """What keeps the target from taking these tables' rows, changing nothing (`sluice
        check`): unreachable (SinkUnavailable, which may heal), not allowed, a table already
        there that cannot take them. None where the sink has no target to reach."""
        return None

    def missing_columns(self, schemas: Sequence[TableSchema]) -> dict[str, list[str]]:
        """The target tables already there without some of these tables' columns (a table
        that left the capture, was altered at the source and joins again), by table id: the
        names each lacks. Empty where the sink keeps no tables to compare."""
        return {}

    def add_missing_columns(self, schema: TableSchema, change_id: str) -> None:
        """Adds to the table's target the columns it lacks, where `schema` has them."""
        lacking = set(self.missing_columns([schema]).get(schema.table_id, ()))
        if not lacking:
            return
        kept = tuple(c for c in schema.columns if c.name not in lacking)
        before = dataclasses.replace(schema, columns=kept, _positions={})
        events = [
            AddColumn(schema.table_id, column, *(("AFTER", schema.columns[i - 1].name) if i else ("FIRST", None)))
            for i, column in enumerate(schema.columns)
            if column.name in lacking
        ]
        writer = self.writer()
        try:
            writer.apply_schema_change(change_id, SchemaEvolution({schema.table_id: before}, events))
        finally:
            writer.close()

    def names_held_otherwise(self, schemas: Sequence[TableSchema]) -> list[str]:
        """The tables and columns the target holds under another name (one too long for
        it), a sentence each (`sluice check`)."""
        return []

    def encryption(self) -> tuple[str, TlsSettings] | None:
        """A connection's TLS cipher ('' for plaintext) and the TLS settings it was made with
        (`sluice check`); None where the sink has no connection of its own to tell of."""
        return None

    def committed_splits(self) -> Mapping[str, BinlogOffset]:
        """Splits the target has committed, with their high watermarks (transactional sinks)."""
        return {}

    def holds_commits(self) -> bool | None:
        """Whether the target holds anything this pipeline committed; None where the sink
        keeps no record (values)."""
        return None

    def recorded_state(self) -> tuple[int, dict[str, Any]] | None:
        """The pipeline's state document as last saved into the target, with its revision;
        None where the target holds none (or the sink keeps no records)."""
        return None

    def record_state(self, revision: int, document: dict[str, Any]) -> None:  # noqa: B027 - optional hook
        """Keeps the state document in the target: the state directory or status is then a
        cache of what the target holds, and a lost one is adopted from it."""

    def forget_commits(self) -> None:
        """Drops the pipeline's commit records (a snapshot read again makes new ones)."""
        raise NotImplementedError(f"{type(self).__name__} keeps its commit records")

    def tables_holding_rows(self, schemas: Sequence[TableSchema]) -> set[str]:
        """Which of the tables hold rows in the target already: their snapshot chunks
        replace their key ranges (snapshot/range_replacement); none where the sink cannot."""
        return set()

    def chunk_keys(self, schema: TableSchema) -> Iterator[list[Any]]:
        """The target's distinct chunk keys of a table, in batches."""
        raise NotImplementedError(f"{type(self).__name__} does not replace key ranges")

    def delete_chunk_keys(self, schema: TableSchema, keys: Sequence[Any] | None) -> None:
        """Deletes the target's rows with these chunk keys; with None, all its rows."""
        raise NotImplementedError(f"{type(self).__name__} does not replace key ranges")

    @abstractmethod
    def writer(self) -> SinkWriter:
        """A writer for an executor task or for the binlog phase."""


def _write_splits_on_executor(tasks: list[SplitTask], sink: Sink, read: ReadSplits) -> list[SplitResult]:
    before = target_values.changed.copy()
    return target_values.on_executor(_write_splits(tasks, sink, read), before)


def _write_splits(
    tasks: list[SplitTask], sink: Sink, read: ReadSplits, on_split: Callable[[SplitResult], None] | None = None
) -> list[SplitResult]:
    """Runs on an executor: read the splits, write each (it commits on its own, so a failure
    part way keeps the splits before it), report their high watermarks."""
    writer = sink.writer()
    try:
        results = []
        for split in read(tasks):
            writer.write_snapshot_splits(split)
            for result in split.results():
                results.append(result)
                if on_split is not None:
                    on_split(result)
        return results
    finally:
        writer.close()
