"""A sink behind `route` and `transform`: the pipeline hands it rows, splits and schema
change events of the captured tables; it hands the sink it wraps those of the target
tables (route/table_routing). Every sink type takes routed tables this way, and none of
them knows routes exist."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sluice.errors import SinkError
from sluice.event.projection import projection
from sluice.event.row_change import ChangeBatch
from sluice.event.schema_change import SchemaEvolution
from sluice.event.snapshot_split import (
    ProjectedRows,
    ReadSplits,
    SnapshotSplit,
    SplitRead,
    SplitResult,
    SplitTask,
)
from sluice.route.table_routing import RoutedTable, Routing, TableRouting
from sluice.sink.base import SchemaChangeRefused, Sink, SinkWriter, StartCommit
from sluice.sink.target_values import TargetValues
from sluice.source.offset import BinlogOffset
from sluice.source.row_decoding import Row
from sluice.source.schema import TableSchema
from sluice.source.tls import TlsSettings
from sluice.transform.target_rows import TargetRows
from sluice.transform.user_functions import close_user_functions

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)


class RoutedSink(Sink):
    def __init__(self, inner: Sink, routing: Routing) -> None:
        self.inner, self.routing = inner, routing
        self.max_batch_delay = inner.max_batch_delay
        self.commits_when_quiet = inner.commits_when_quiet
        self.writes_changes_with_spark = inner.writes_changes_with_spark
        self.replaces_key_ranges = inner.replaces_key_ranges
        self.tables: TableRouting | None = None

    def route(self, schemas: Iterable[TableSchema]) -> TableRouting:
        """The routing of these captured tables (checked: every rule compiles against them);
        made once for one set of schemas (the run's checks and prepare ask for the same)."""
        sources = {s.table_id: s for s in schemas}
        if self.tables is None or self.tables.sources != sources:
            self.tables = TableRouting(self.routing, sources, self.inner.holds_far_dates)
        return self.tables

    @property
    def routed(self) -> TableRouting:
        if self.tables is None:
            raise AssertionError("RoutedSink.prepare must run before the sink is used")
        return self.tables

    def attach(self, spark: SparkSession) -> None:
        self.inner.attach(spark)

    @property
    def values(self) -> TargetValues | None:  # type: ignore[override]
        return self.inner.values

    def encryption(self) -> tuple[str, TlsSettings] | None:
        return self.inner.encryption()

    def check_target(self, schemas: Sequence[TableSchema]) -> list[SinkError] | None:
        return self.inner.check_target(list(self.route(schemas).sinks.values()))

    def missing_columns(self, schemas: Sequence[TableSchema]) -> dict[str, list[str]]:
        """By source table: what its targets lack of the columns its routes and transform give them."""
        targets = {r.sink_id: r.target for s in schemas for r in self.routed.routes[s.table_id]}
        lacking = self.inner.missing_columns(list(targets.values()))
        found = {
            s.table_id: [n for r in self.routed.routes[s.table_id] for n in lacking.get(r.sink_id, ())] for s in schemas
        }
        return {source: list(dict.fromkeys(names)) for source, names in found.items() if names}

    def add_missing_columns(self, schema: TableSchema, change_id: str) -> None:
        for route in self.routed.routes[schema.table_id]:
            self.inner.add_missing_columns(route.target, change_id)

    def prepare(self, schemas: Sequence[TableSchema]) -> None:
        routed = self.route(schemas)
        fanned = [t for t, routes in routed.routes.items() if len(routes) > 1]
        if fanned and not self.inner.takes_several_targets_of_a_split:
            raise SinkError(
                f"route: {fanned[0]} goes to {len(routed.routes[fanned[0]])} target tables, and the parquet "
                "changelog writes a table's snapshot into one: set pipeline.route-mode: FIRST_MATCH, or narrow the "
                "rules' source-table"
            )
        for table in (route for routes in routed.routes.values() for route in routes):
            rule = table.transform.rule if table.transform else None
            if rule is None or not (rule.partition_keys or rule.table_options):
                continue
            if not self.inner.table_layout(table.sink_id, rule.partition_keys, rule.table_options):
                log.warning("%s: partition-keys and table-options are for lakehouse sinks; ignored", rule.where)
        self.inner.prepare(list(routed.sinks.values()))

    def write_snapshot_job(self, sc: SparkContext, tasks: list[SplitTask], read: ReadSplits) -> list[SplitResult]:
        return self.inner.write_snapshot_job(sc, tasks, RoutedRead(read, self.routed, tasks[0].split.table_id))

    def write_splits_now(
        self, tasks: list[SplitTask], read: ReadSplits, on_split: Callable[[SplitResult], None] | None = None
    ) -> list[SplitResult]:
        results: list[SplitResult] = []
        for table_id in dict.fromkeys(t.split.table_id for t in tasks):
            mine = [t for t in tasks if t.split.table_id == table_id]
            results += self.inner.write_splits_now(mine, RoutedRead(read, self.routed, table_id), on_split)
        return results

    def committed_splits(self) -> Mapping[str, BinlogOffset]:
        return self.inner.committed_splits()

    def holds_commits(self) -> bool | None:
        return self.inner.holds_commits()

    def recorded_state(self) -> tuple[int, dict[str, Any]] | None:
        return self.inner.recorded_state()

    def record_state(self, revision: int, document: dict[str, Any]) -> None:
        self.inner.record_state(revision, document)

    def forget_commits(self) -> None:
        self.inner.forget_commits()

    def tables_holding_rows(self, schemas: Sequence[TableSchema]) -> set[str]:
        """Only tables whose chunks can replace their key ranges in their target are asked
        about; a merged table's member holding rows there is logged (its chunks upsert)."""
        own = {s.table_id: route for s in schemas if (route := self._own_route(s.table_id)) is not None}
        sinks = {route.sink_id: table_id for table_id, route in own.items()}
        holding = self.inner.tables_holding_rows([route.target for route in own.values()])
        merged = [s.table_id for s in schemas if s.table_id not in own]
        if merged:
            log.info("%s: chunks upsert into their targets (not replaceable by key range)", ", ".join(merged))
        return {sinks[t] for t in holding}

    def _own_route(self, table_id: str) -> RoutedTable | None:
        """The table's one target, where its chunks replace their key ranges there; None
        for a merged member or a table fanned out to several targets (their chunks upsert)."""
        routes = self.routed.routes[table_id]
        return routes[0] if len(routes) == 1 and self.routed.replaceable(routes[0]) else None

    def chunk_keys(self, schema: TableSchema) -> Iterator[list[Any]]:
        """The target's chunk keys, where the table's rows are its target's alone; none for
        a merged member, whose rows are replaced by their keys (the other members' keys in
        the target are not its own to clear)."""
        route = self._own_route(schema.table_id)
        return iter(()) if route is None else self.inner.chunk_keys(route.target)

    def delete_chunk_keys(self, schema: TableSchema, keys: Sequence[Any] | None) -> None:
        route = self._own_route(schema.table_id)
        assert route is not None, "only a table's own target has its chunk keys cleared"
        self.inner.delete_chunk_keys(route.target, keys)

    def replace_range(
        self,
        schema: TableSchema,
        split: SnapshotSplit,
        rows_as_of: Callable[[BinlogOffset], list[Row]],
        keys_also: Sequence[Any] | None = None,
    ) -> int:
        """A table read again after a schema change gave its rows values (verify/verifier's
        resnapshot), in its target's table and columns: a table that fills its target alone
        replaces the range there (by its chunk keys and `keys_also`, where the target orders
        the key otherwise); a merged member's rows replace the rows of their keys, and the
        other members' rows stay as they are."""
        return sum(
            self._replace_in(route, split, rows_as_of, keys_also) for route in self.routed.routes[schema.table_id]
        )

    def _replace_in(
        self,
        route: RoutedTable,
        split: SnapshotSplit,
        rows_as_of: Callable[[BinlogOffset], list[Row]],
        keys_also: Sequence[Any] | None,
    ) -> int:
        routed, target, source_id = self.routed, route.target, route.source_id

        def routed_rows(position: BinlogOffset) -> list[Row]:
            return list(route.rows.snapshot(rows_as_of(position)))

        if routed.replaceable(route):
            in_target = dataclasses.replace(split, table_id=target.table_id)
            return self.inner.replace_range(target, in_target, routed_rows, keys_also)
        if not target.row_key:
            raise SinkError(
                f"{source_id}: read again into {target.table_id}, which has no key to replace its rows by and "
                "whose ranges it cannot replace: give the transform primary-keys, or take a new snapshot"
            )
        key = [target.position(name) for name in target.row_key]

        def keyed(position: BinlogOffset) -> tuple[list[tuple[Any, ...]], list[Row]]:
            rows = routed_rows(position)
            return [tuple(row[i] for i in key) for row in rows], rows

        return self.inner.replace_keys(target, keyed)

    def writer(self) -> SinkWriter:
        return RoutedWriter(self, self.inner.writer())


class RoutedRead:
    """read_splits whose splits come in their target's table and columns; shipped to
    executors with the routing's inputs."""

    def __init__(self, read: ReadSplits, routing: TableRouting, table_id: str) -> None:
        self.read, self.routing, self.table_id = read, routing, table_id
        self.targets = [route.target for route in routing.routes[table_id]]  # each read's split goes to each
        self.onto = self.targets[0]  # for a sink that names its columns first (parquet): a table's one target

    def __call__(self, tasks: list[SplitTask]) -> Iterator[SplitRead]:
        try:
            yield from self._routed(tasks)
        finally:
            if self.routing.shipped:  # a Spark task's end: Flink CDC closes UDFs with their operator
                close_user_functions()

    def _routed(self, tasks: list[SplitTask]) -> Iterator[SplitRead]:
        """Each read's rows into each of the table's targets, in its columns: one read, so one
        high watermark for all of them. The splits are recorded done with the last target's
        rows (a stop before them reads them again: every target of a fanned-out table is
        keyed, and takes rows again as the same rows)."""
        routes = self.routing.routes[self.table_id]
        shape = self.routing.sources[self.table_id]  # what the transform was compiled for
        replaceable = [self.routing.replaceable(route) for route in routes]
        last = len(routes) - 1
        for split in self.read(tasks):
            onto_shape = projection(split.schema, shape)
            # A table only renamed keeps its rows object: the source's COPY text still serves.
            if not last and onto_shape is None and routes[0].rows.as_they_are:
                yield dataclasses.replace(
                    split, schema=routes[0].target, replaces=split.replaces if replaceable[0] else None
                )
                continue
            rows: Any = split.rows if onto_shape is None else ProjectedRows(split.rows, onto_shape)
            if last:
                rows = list(rows)  # read once, written into each target
            for i, route in enumerate(routes):
                yield SplitRead(
                    route.target,
                    _Rows(route.rows, rows),
                    split.high_watermark,
                    split.covered if i == last else _none_covered,
                    split.replaces if replaceable[i] else None,
                )


def _none_covered() -> list[tuple[SnapshotSplit, int]]:
    """A target before a read's last: its splits are recorded with the last one's rows."""
    return []


class _Rows:
    """A split's routed rows, as often as they are iterated."""

    def __init__(self, target: TargetRows, rows: Any) -> None:
        self._target, self._rows = target, rows

    def __iter__(self) -> Iterator[Row]:
        return self._target.snapshot(self._rows)


class RoutedWriter(SinkWriter):
    def __init__(self, sink: RoutedSink, inner: SinkWriter) -> None:
        self.sink, self.inner = sink, inner

    def _changed(self, evolution: SchemaEvolution) -> tuple[TableRouting, TableRouting, SchemaEvolution]:
        """The routing before and after the source's evolution, and its targets' evolution."""
        current = self.sink.route(evolution.before.values())
        after = TableRouting(current.routing, evolution.after, current.far_dates)
        return current, after, SchemaEvolution(current.sinks, current.schema_events(evolution.events, after))

    def rereads_after(self, evolution: SchemaEvolution) -> list[str]:
        current, after, targets = self._changed(evolution)
        again = self.inner.rereads_after(targets)
        members = [source for sink_id in again for source in after.members.get(sink_id, [])]
        return list(dict.fromkeys([*members, *after.members_given_values(evolution.events, current)]))

    def ranges_not_replaceable(self) -> dict[str, str]:
        routed = self.sink.routed
        why = {}
        for table_id, routes in routed.routes.items():
            for route in (r for r in routes if not routed.replaceable(r)):
                why[table_id] = (
                    f"is merged with other tables into {route.sink_id}, whose rows a range there holds too"
                    if route.merged
                    else f"fills {route.sink_id} through a transform that does not keep its chunk key as it is"
                )
        return why

    def write_snapshot_splits(self, read: SplitRead) -> None:
        self.inner.write_snapshot_splits(read)  # already routed by RoutedRead

    def write_changes(self, batch: ChangeBatch, end: BinlogOffset, drop_split_records: bool) -> None:
        self.inner.write_changes(self._routed(batch), end, drop_split_records)

    def prepare_changes(self, batch: ChangeBatch, end: BinlogOffset) -> StartCommit:
        return self.inner.prepare_changes(self._routed(batch), end)

    def _routed(self, batch: ChangeBatch) -> ChangeBatch:
        return ChangeBatch(self.sink.routed.change_rows(batch.rows))

    def committed_binlog_offset(self) -> BinlogOffset | None:
        return self.inner.committed_binlog_offset()

    def apply_schema_change(self, change_id: str, evolution: SchemaEvolution) -> None:
        _, after, targets = self._changed(evolution)
        shown = "; ".join(map(str, targets.events)) or "none"
        log.info("schema change %s reaches the targets as: %s", change_id, shown)
        try:
            self.inner.apply_schema_change(change_id, targets)
        except SchemaChangeRefused as exc:
            raise SchemaChangeRefused(0, str(exc)) from exc
        self.sink.tables = after

    def close(self) -> None:
        self.inner.close()
