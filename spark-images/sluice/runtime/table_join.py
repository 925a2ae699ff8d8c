"""Tables that join a streaming pipeline's capture, and snapshot splits a schema change
deferred: both read now, on the driver, split by split, with high watermarks after the
binlog reader's position, so the emit rule holds for them from there on."""

from __future__ import annotations

import dataclasses
import sys

from sluice.binlog.binlog_split import BinlogSplit
from sluice.errors import SchemaDrift
from sluice.event.schema_change import DropTable, SchemaEvolution, create_table_event
from sluice.event.snapshot_split import SnapshotSplit, SplitTask
from sluice.runtime.run_context import RunContext
from sluice.snapshot.chunk_splitter import split_table
from sluice.snapshot.snapshot_split_assigner import SnapshotAssignerState
from sluice.snapshot.split_reader import read_splits, reads_onto
from sluice.source.checks import check_select
from sluice.source.connection import connect, current_offset
from sluice.source.schema import TableSchema, live_shape, read_table_schema

JOIN_ATTEMPTS = 5  # reads of a table renamed into `tables` that may meet a DDL on it before one does not


class TablesJoining:
    """Reads the tables joining the capture, and the deferred splits, into the sink."""

    def __init__(self, context: RunContext) -> None:
        self.context = context

    def capture_joined(self, split: BinlogSplit) -> bool:
        """Tables renamed into `tables`: created in the target and snapshotted now (on this
        process, split by split), then read from the binlog with the emit rule from the
        rename on (their high watermarks are after it)."""
        state = self.context.state
        joining = [t for t in state.joining if t not in (state.tables or {})]
        if not joining:
            state.joining = []
            return False
        # A name the target holds already (a swap's rename skipped under `ignore`): the
        # table joins onto the target's columns, projected; any other is created.
        kept = {t: schema for t, schema in state.targets.items() if t in joining}
        for attempt in range(JOIN_ATTEMPTS):
            try:
                plan = self._snapshot_joining(joining, kept, split, attempt)
                break
            except SchemaDrift as drift:  # a DDL on it while it was read: read it again, as it is now
                if attempt + 1 == JOIN_ATTEMPTS:
                    raise
                sys.stderr.write(f"capture: {drift.table_id} changed while it was read: reading it again\n")
        joined_marks = plan.binlog_split().watermarks
        split.watermarks.update({t: dataclasses.replace(w, schema_at=plan.planned_at) for t, w in joined_marks.items()})
        targets = {**state.targets, **plan.tables, **kept}
        state.tables = {**(state.tables or {}), **plan.tables}
        state.target_tables = None if targets == state.tables else targets
        state.joining = []
        state.binlog = split
        self.context.store.save(state)
        sys.stderr.write(
            f"capture: {', '.join(joining)} renamed into source.tables: snapshotted ({len(plan.splits)} splits, "
            f"{plan.rows_done:,} rows), "
            "streaming\n"
        )
        return True

    def _snapshot_joining(
        self, joining: list[str], kept: dict[str, TableSchema], split: BinlogSplit, attempt: int
    ) -> SnapshotAssignerState:
        """Plans and reads the joining tables as they are now, each created in the target
        first, in the layout it has now."""
        source = self.context.definition.source
        conn = connect(self.context.endpoint)
        try:
            planned_at = current_offset(conn)
            schemas = [
                read_table_schema(conn, *t.split(".", 1), source.chunk_key_column_for(*t.split(".", 1)))
                for t in joining
            ]
            check_select(conn, joining)
            splits = [s for schema in schemas for s in split_table(conn, schema, source.chunk_size)]
        finally:
            conn.close()
        writer = self.context.sink.writer()
        try:
            for schema in schemas:
                if schema.table_id in kept:
                    continue
                # Dropped first: a table an earlier attempt, or a run killed during the join,
                # created in an older layout (CREATE would find it there and keep it).
                events = [DropTable(schema.table_id), create_table_event(schema)]
                change = f"capture:{schema.table_id}@{split.offset}#{attempt}"
                writer.apply_schema_change(change, SchemaEvolution({schema.table_id: schema}, events))
        finally:
            writer.close()
        plan = SnapshotAssignerState.plan(schemas, splits, planned_at)
        for schema in schemas:
            tasks = [self._task(s, plan.tables[s.table_id]) for s in splits if s.table_id == schema.table_id]
            read = reads_onto(kept[schema.table_id]) if schema.table_id in kept else read_splits
            try:
                results = self.context.sink.write_splits_now(tasks, read)
            except Exception as exc:  # noqa: BLE001 - a Spark task's error names a drift in its text
                table_id = SchemaDrift.of(exc)
                if table_id is None:
                    raise
                raise SchemaDrift(table_id) from exc
            for result in results:
                plan.record(result.split_id, result.high_watermark, result.rows)
        return plan

    def _task(self, split: SnapshotSplit, schema: TableSchema) -> SplitTask:
        """A split read by the driver while the binlog reader runs, with a server id of its own."""
        source = self.context.definition.source
        return SplitTask(split, schema, self.context.endpoint, source.server_ids.beside_the_reader, source.fetch_size)

    def reread_deferred(self, split: BinlogSplit) -> None:
        """Reads the splits deferred by a schema change during the snapshot, for each table
        whose columns the binlog reader (and so the target) has caught up with: their new
        high watermarks are after the reader's position, so the emit rule holds for them."""
        state = self.context.state
        snapshot = state.snapshot
        if snapshot is None or not snapshot.deferred:
            return
        sources, targets = state.tables or {}, state.targets
        conn = connect(self.context.endpoint)
        try:
            waiting = {snapshot.splits_table(i) for i in snapshot.deferred}
            ready = [
                t for t in sorted(waiting) if t in sources and live_shape(conn, *t.split(".", 1)) == sources[t].shape
            ]
        finally:
            conn.close()
        for table_id in ready:
            tasks = [self._task(s, sources[table_id]) for s in snapshot.deferred_splits(table_id)]
            read = reads_onto(targets.get(table_id, sources[table_id]))
            try:
                results = self.context.sink.write_splits_now(tasks, read)
            except Exception as exc:  # noqa: BLE001 - changed again: the next change of it tries again
                if SchemaDrift.of(exc) is None:
                    from sluice.runtime.split_reading import task_failure

                    raise task_failure(exc) from exc
                continue
            boundaries = split.watermarks[table_id]
            for result in results:
                snapshot.record(result.split_id, result.high_watermark, result.rows)
                index = int(result.split_id.rsplit(":", 1)[1])
                boundaries.high_watermarks[index] = result.high_watermark
            state.binlog = split
            self.context.store.save(state)
            sys.stderr.write(f"snapshot: read the {len(results)} deferred splits of {table_id} again\n")
