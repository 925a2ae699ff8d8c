"""Verifies a streaming pipeline's target against its source, chunk by chunk, and repairs
the ranges that differ, while the pipeline goes on streaming (pt-table-checksum and
pt-table-sync, or Debezium's ad-hoc incremental snapshot, for a Sluice target).

Each range is compared exactly as of the position the target committed: the target's rows
and that position come from one consistent read, and the source's rows are read after it
and wound back to it (verify/source_rows). So lag never raises a false alarm, and checking
holds nothing up. A range is compared by row count and a digest of each row's values in
one normal form (verify/normal_form), so a mismatch says how many rows differ.

Repair reads a range again in a transaction that holds the pipeline's writes (its epoch
row), at the committed position: the source's rows as of it replace the range, and the
pipeline streams on from it. The pipeline pauses for one range at a time.

The tables and their columns are the pipeline's, as its target records them (the target
is the truth), so neither needs the pipeline's state directory or status.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TextIO, runtime_checkable

import pymysql

from sluice.errors import SchemaDrift, SluiceError
from sluice.event.snapshot_split import SnapshotSplit, SplitTask, chunk_keys_of
from sluice.pipeline.definition import PipelineDefinition
from sluice.sink.target_values import TargetValues
from sluice.source.connection import connect, connect_scan
from sluice.source.endpoint import SourceEndpoint
from sluice.source.key_order import key_order_for
from sluice.source.offset import BinlogOffset
from sluice.source.row_decoding import Row
from sluice.source.schema import TableSchema
from sluice.source.server_flavour import is_mariadb
from sluice.source.sql import qualified, quote
from sluice.state.compact_state import expand
from sluice.state.pipeline_state import PipelineState
from sluice.verify.forward_windows import ForwardWindows
from sluice.verify.range_compare import RangeMismatch, compare
from sluice.verify.range_planner import place_keys, plan_ranges
from sluice.verify.range_text import bound_value, parse_range, range_text
from sluice.verify.source_rows import PositionInsideTransaction, rows_matching_as_of, source_rows_as_of

RETRIES = 20  # a range whose target position sits inside a huge transaction is tried again
RETRY_SECONDS = 0.5


@runtime_checkable
class VerifiedSink(Protocol):
    """What verification asks of a target: the jdbc sinks and the lakehouse sinks have it."""

    values: TargetValues  # what the target holds of a source value

    def recorded_state(self) -> tuple[int, dict[str, Any]] | None: ...

    def read_range(
        self,
        schema: TableSchema,
        split: SnapshotSplit,
        keys_as_of: Callable[[BinlogOffset], Sequence[Any]] | None = None,
        conn: Any = None,
    ) -> tuple[list[Row], BinlogOffset | None]:
        """A key range's rows and the position they are as of, read consistently; with
        `keys_as_of`, the rows of the chunk keys it gives for that position; on `conn`."""

    def replace_range(
        self,
        schema: TableSchema,
        split: SnapshotSplit,
        rows_as_of: Callable[[BinlogOffset], list[Row]],
        keys_also: Sequence[Any] | None = None,
    ) -> int: ...

    def replace_keys(
        self, schema: TableSchema, rows_as_of: Callable[[BinlogOffset], tuple[list[tuple[Any, ...]], list[Row]]]
    ) -> int: ...

    def chunk_keys(self, schema: TableSchema) -> Iterator[list[Any]]: ...

    def reading_connection(self) -> Any:
        """A connection to read every range on (None where the target needs none)."""


class NotStreamingYet(SluiceError):
    """The pipeline has not streamed past its snapshot: there is no one position to compare at."""

    troubleshooting = "not-streaming-yet"


@dataclass
class VerificationResult:
    ranges: int = 0
    checked: int = 0
    mismatches: list[RangeMismatch] = field(default_factory=list)
    repaired: list[RangeMismatch] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # tables that changed shape meanwhile

    @property
    def equal(self) -> bool:
        return not self.mismatches and not self.skipped


class Verifier:
    def __init__(
        self,
        definition: PipelineDefinition,
        sink: VerifiedSink,
        endpoint: SourceEndpoint,
        out: TextIO | None = None,
        state: PipelineState | None = None,
    ) -> None:
        """`state`: the running pipeline's own (else the one its target records)."""
        self.definition, self.sink, self.endpoint = definition, sink, endpoint
        self.out = out or sys.stderr
        self.state = state or self._streaming_state()
        self.server_id = definition.source.server_ids.verifier
        self._lower_case_table_names: int | None = None  # the server's, once a name needs it
        self._source_conn: pymysql.connections.Connection | None = None
        self._scan_conn: Any = None  # the one the source's rows of each range are read on
        self._target_conn: Any = None  # the one the target's rows of each range are read on
        # verify()'s binlog since the target's position, read on one stream; a read-again
        # (resnapshot) beside the binlog reader reads each range's window on its own.
        self._windows: ForwardWindows | None = None
        self._verifying = False
        # Ranges of a key the target orders otherwise than the source are read by chunk
        # keys: each range's own, and these of the target's that the source lacks.
        self._strays: dict[tuple[str, int], list[Any]] = {}

    def _streaming_state(self) -> PipelineState:
        recorded = self.sink.recorded_state()
        name = self.definition.name
        if recorded is None:
            raise SluiceError(f"sink {self.definition.sink.name} holds no records of pipeline '{name}': has it run?")
        state = PipelineState.from_json(expand(recorded[1]))
        if state.binlog is None or state.snapshot is not None:
            raise NotStreamingYet(
                f"pipeline '{name}' has not streamed past its snapshot yet (its binlog reader moves past the "
                "snapshot's high watermarks with the first change after them): verify it once it has"
            )
        return state

    def tables(self, wanted: list[str] | None = None) -> list[str]:
        """The captured tables, or those of `wanted` (named as the server resolves names)."""
        known = sorted(self.state.tables or {})
        wanted = [self._resolved(t, known) for t in wanted or []]
        unknown = [t for t in wanted if t not in known]
        if unknown:
            raise SluiceError(f"--table: {', '.join(unknown)} not captured by pipeline '{self.definition.name}'")
        return [t for t in known if not wanted or t in wanted]

    def _resolved(self, table_id: str, known: list[str]) -> str:
        """A captured table named in another case, where the server's lower_case_table_names
        compares names in lower case (as the pipeline's DDL reader does)."""
        if table_id in known:
            return table_id
        if self._lower_case_table_names is None:
            with self._source().cursor() as cur:
                cur.execute("SELECT @@lower_case_table_names")
                self._lower_case_table_names = int(cur.fetchone()[0])
        if not self._lower_case_table_names:
            return table_id
        return next((t for t in known if t.lower() == table_id.lower()), table_id)

    def ranges(self, table_id: str) -> list[SnapshotSplit]:
        """The table's ranges, each at most a chunk of rows (verify/range_planner)."""
        return plan_ranges(self._source(), self.state.tables[table_id], self.definition.source.chunk_size)  # type: ignore[index]

    def _by_keys(self, table_id: str) -> bool:
        """Whether the target cannot select the table's ranges itself: strings under a
        collation (PostgreSQL has no utf8mb4_unicode_ci) and ENUMs (held as their text)."""
        schema = self.state.tables[table_id]  # type: ignore[index]
        column = schema.column(schema.chunk_key)
        return not column.orders_like_python or column.data_type == "enum"

    def _find_strays(self, table_id: str, splits: list[SnapshotSplit]) -> None:
        """The target's chunk keys the source does not hold (rows planted, or deleted since
        the target's position), each placed into its range by the source's order: a range
        read by keys reads them too, so no target row goes unseen."""
        if not self._by_keys(table_id):
            return
        source, target = self._schemas(table_id)
        key, table = quote(source.chunk_key), qualified(source.database, source.table)
        strays: list[Any] = []
        for batch in self.sink.chunk_keys(target):
            present = [k for k in batch if k is not None]
            found: set[Any] = set()
            if present:
                with self._source().cursor() as cur:
                    listed = ", ".join(["%s"] * len(present))
                    cur.execute(f"SELECT {key} FROM {table} WHERE {key} IN ({listed})", present)
                    found = {row[0] for row in cur.fetchall()}
            strays += [k for k in batch if k not in found]
        order = key_order_for(source.column(source.chunk_key), self._source())
        for split, keys in zip(splits, place_keys(order, strays, splits), strict=True):
            self._strays[(table_id, split.index)] = keys

    def named_ranges(self, texts: list[str]) -> dict[str, list[SnapshotSplit]]:
        """Ranges as verify prints them (`db.t [1000, 2000)`), by table."""
        named: dict[str, list[SnapshotSplit]] = {}
        for text in texts:
            table_text, start, end = parse_range(text)
            (table_id,) = self.tables([table_text])
            key = self.state.tables[table_id].column(self.state.tables[table_id].chunk_key)  # type: ignore[index]
            bounds = bound_value(start, key, "start"), bound_value(end, key, "end")
            splits = named.setdefault(table_id, [])
            splits.append(SnapshotSplit(table_id, len(splits), *bounds))
        return named

    def _source(self) -> pymysql.connections.Connection:
        """The verification's one metadata connection to the source."""
        if self._source_conn is None:
            self._source_conn = connect(self.endpoint)
        return self._source_conn

    def __enter__(self) -> Verifier:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        if self._source_conn is not None:
            self._source_conn.close()
            self._source_conn = None
        self._close_scan()
        self._close_windows()
        self._close_target()

    def _close_target(self) -> None:
        if self._target_conn is not None:
            with contextlib.suppress(Exception):  # it may be gone already
                self._target_conn.close()
            self._target_conn = None

    def _scan(self) -> Any:
        if self._scan_conn is None:
            self._scan_conn = connect_scan(self.endpoint)
        return self._scan_conn

    def _close_scan(self) -> None:
        if self._scan_conn is not None:
            with contextlib.suppress(Exception):  # it may be gone already
                self._scan_conn.close()
            self._scan_conn = None

    def _close_windows(self) -> None:
        if self._windows is not None:
            self._windows.close()
            self._windows = None

    def _source_rows(self, split: SnapshotSplit, position: BinlogOffset, target: TableSchema) -> list[Row]:
        """The range's rows at the source as of `position`, on the verification's one scan
        connection and one binlog stream."""
        try:
            conn = self._scan()
            if self._windows is None and self._verifying:
                tables = self.state.tables or {}
                self._windows = ForwardWindows(self.endpoint, self.server_id, tables, is_mariadb(conn))
            return source_rows_as_of(self._task(split), position, target, conn, self._windows)
        except PositionInsideTransaction:
            raise  # tried again on the same connections
        except BaseException:
            self._close_scan()  # the next range starts on fresh connections
            self._close_windows()
            raise

    def verify(
        self,
        tables: list[str],
        repair: bool = False,
        on_progress: Callable[[VerificationResult], None] | None = None,
        pace: float = 0.0,
        ranges: dict[str, list[SnapshotSplit]] | None = None,
    ) -> VerificationResult:
        """Compares (and with `repair` mends) the tables' ranges, or just `ranges` (see
        named_ranges); `on_progress` hears after each. `pace`: after each range, wait this
        many times as long as it took (1.0: the verifier works half the time), as
        pt-table-checksum's chunk time bounds its load."""
        self._verifying = True
        try:
            return self._verify(tables, repair, on_progress, pace, ranges)
        finally:
            self._verifying = False
            self._close_windows()

    def _verify(
        self,
        tables: list[str],
        repair: bool,
        on_progress: Callable[[VerificationResult], None] | None,
        pace: float,
        ranges: dict[str, list[SnapshotSplit]] | None,
    ) -> VerificationResult:
        result = VerificationResult()
        plans = ranges or {table_id: self.ranges(table_id) for table_id in tables}
        result.ranges = sum(len(p) for p in plans.values())
        progress = _Progress(self.out, result)
        for table_id, splits in plans.items():
            try:
                self._find_strays(table_id, splits)
                for split in splits:
                    began = time.monotonic()
                    mismatch = self.check(split)
                    result.checked += 1
                    if mismatch is not None:
                        self.out.write(f"verify: mismatch: {mismatch.describe()}\n")
                        if repair:
                            self.repair(split)
                            result.repaired.append(mismatch)
                            self.out.write(f"verify: repaired {mismatch.table_id} {range_text(split)}\n")
                        else:
                            result.mismatches.append(mismatch)
                    progress.show()
                    if on_progress is not None:
                        on_progress(result)
                    time.sleep(pace * (time.monotonic() - began))
            except SchemaDrift:
                result.skipped.append(table_id)
                self.out.write(f"verify: {table_id} changed while it was compared; verify it again\n")
        progress.show(final=True)
        return result

    def resnapshot(self, tables: list[str], where: str | None = None) -> int:
        """Reads the tables again, range by range, while the pipeline streams: each range
        replaces the target's (Debezium's execute-snapshot signal). With `where`, only the
        rows matching it at the source, by key (its additional-conditions). Returns the rows read."""
        if where:
            for table_id in tables:  # every table takes the condition, or none is read again
                self._check_condition(table_id, where)
            return sum(self._resnapshot_matching(table_id, where) for table_id in tables)
        ranges = {table_id: self.ranges(table_id) for table_id in tables}
        total, done, rows = sum(len(r) for r in ranges.values()), 0, 0
        for table_id, splits in ranges.items():
            self._find_strays(table_id, splits)
            for split in splits:
                rows += self.repair(split)
                done += 1
            self.out.write(f"resnapshot: {table_id} read again ({done}/{total} ranges, {rows:,} rows)\n")
        return rows

    def _check_condition(self, table_id: str, where: str) -> None:
        """The table has a key to find the matching rows by, and the source takes the condition on it."""
        source, _ = self._schemas(table_id)
        if source.is_bag:
            raise SluiceError(f"{table_id} has no key to find the rows matching '{where}' by: read it again whole")
        try:
            with self._source().cursor() as cur:
                cur.execute(f"SELECT 1 FROM {qualified(source.database, source.table)} WHERE ({where}) LIMIT 0")
        except pymysql.MySQLError as exc:
            raise SluiceError(f"{table_id}: the condition '{where}' failed at the source: {exc.args[-1]}") from exc

    def _resnapshot_matching(self, table_id: str, where: str) -> int:
        _, target = self._schemas(table_id)
        task = self._task(SnapshotSplit(table_id, 0, None, None))
        for _ in _attempts():
            try:
                rows = self.sink.replace_keys(
                    target, lambda position: rows_matching_as_of(task, where, position, target, self._scan())
                )
            except PositionInsideTransaction:
                continue
            self.out.write(f"resnapshot: {table_id}: {rows:,} rows matching '{where}' read again\n")
            return rows
        raise SluiceError(f"{table_id}: the target stayed inside one transaction")

    def _schemas(self, table_id: str) -> tuple[TableSchema, TableSchema]:
        return self.state.tables[table_id], self.state.targets[table_id]  # type: ignore[index]

    def _task(self, split: SnapshotSplit) -> SplitTask:
        source, _ = self._schemas(split.table_id)
        return SplitTask(split, source, self.endpoint, self.server_id, self.definition.source.fetch_size)

    def check(self, split: SnapshotSplit) -> RangeMismatch | None:
        _, target = self._schemas(split.table_id)
        strays = self._strays.get((split.table_id, split.index))
        held: list[list[Row]] = []  # the source's rows that keys_as_of read

        def keys_as_of(position: BinlogOffset) -> list[Any]:
            held.append(self._source_rows(split, position, target))
            return chunk_keys_of(target, held[-1], strays or ())

        for _ in _attempts():
            held.clear()
            try:
                if self._target_conn is None:
                    self._target_conn = self.sink.reading_connection()
                by_keys = None if strays is None else keys_as_of
                target_rows, position = self.sink.read_range(target, split, by_keys, self._target_conn)
                if position is None:
                    raise SluiceError(f"pipeline '{self.definition.name}' has no binlog position in its target")
                source_rows = held[-1] if held else self._source_rows(split, position, target)
            except PositionInsideTransaction:
                continue
            except BaseException:
                self._close_target()  # the next range starts on a fresh connection
                raise
            fit = self.sink.values.for_table(target)  # what the target holds of them
            return compare(split, target, source_rows if fit is None else list(map(fit, source_rows)), target_rows)
        raise SluiceError(f"{split.table_id} {range_text(split)}: the target stayed inside one transaction")

    def repair(self, split: SnapshotSplit) -> int:
        """Replaces the range in the target by the source's rows as of the target's position."""
        _, target = self._schemas(split.table_id)
        strays = self._strays.get((split.table_id, split.index))
        for _ in _attempts():
            try:
                return self.sink.replace_range(
                    target, split, lambda position: self._source_rows(split, position, target), strays
                )
            except PositionInsideTransaction:
                continue
        raise SluiceError(f"{split.table_id} {range_text(split)}: the target stayed inside one transaction")


def _attempts() -> Iterator[int]:
    for attempt in range(RETRIES):
        if attempt:
            time.sleep(RETRY_SECONDS)
        yield attempt


class _Progress:
    """verify: ranges checked / total, mismatches; a line every few seconds."""

    def __init__(self, out: TextIO, result: VerificationResult) -> None:
        self.out, self.result = out, result
        self._last = 0.0

    def show(self, final: bool = False) -> None:
        now = time.monotonic()
        if not final and (now - self._last < 5 or self.result.checked == self.result.ranges):
            return  # the last range gets the final line
        self._last = now
        r = self.result
        found = len(r.mismatches) + len(r.repaired)
        repaired = f", {len(r.repaired)} repaired" if r.repaired else ""
        self.out.write(f"verify: {r.checked}/{r.ranges} ranges checked, {found} mismatched{repaired}\n")
