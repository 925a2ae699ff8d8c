"""Which tables a pipeline captures: found once by `source.tables` and kept in the state
(a rerun reads the same tables), and changed while it streams when `source.tables`
changes: tables it no longer selects leave, tables it newly selects join."""

from __future__ import annotations

import sys
from typing import Any

from sluice.errors import SluiceError
from sluice.sink.base import Sink
from sluice.snapshot.chunk_splitter import split_table
from sluice.snapshot.snapshot_split_assigner import SnapshotAssignerState
from sluice.source.checks import check_select
from sluice.source.config import SourceConfig
from sluice.source.connection import current_offset
from sluice.source.schema import TableSchema, discover_tables
from sluice.state.pipeline_state import PipelineState


def capture_tables(conn: Any, source: SourceConfig, state: PipelineState) -> list[TableSchema]:
    """The captured tables' schemas (source.tables), kept in the state: a rerun reads the same tables."""
    configured = source.chunk_key_column_for
    schemas = discover_tables(conn, source.tables, configured)
    check_select(conn, [s.table_id for s in schemas])
    state.tables = {s.table_id: s for s in schemas}
    for schema in schemas:
        if schema.single_split:
            sys.stderr.write(
                f"snapshot: {schema.table_id} has no key and no indexed column that splits it: read as one split\n"
            )
        elif schema.is_bag and configured(schema.database, schema.table) is None:
            sys.stderr.write(
                f"snapshot: {schema.table_id} has no key: chunked by its indexed column {schema.chunk_key}\n"
            )
    return schemas


def change_capture(conn: Any, source: SourceConfig, state: PipelineState) -> None:
    """`tables` changed on a streaming pipeline. Tables it no longer selects leave the
    capture (their targets stay); tables it newly selects join it: in `initial` mode
    they are snapshotted first, and the binlog reader then takes them with the emit rule
    from where it is (Flink CDC's scan.newly-added-table.enabled). The other tables are
    not read again."""
    known = state.tables or {}
    planned_at = current_offset(conn)  # before the schemas are read
    selected = {s.table_id: s for s in discover_tables(conn, source.tables, source.chunk_key_column_for)}
    added = [schema for table_id, schema in selected.items() if table_id not in known]
    removed = [table_id for table_id in known if table_id not in selected]
    check_select(conn, [s.table_id for s in added])
    state.tables = {**{t: s for t, s in known.items() if t in selected}, **{s.table_id: s for s in added}}
    if state.target_tables is not None:
        kept = {t: s for t, s in state.target_tables.items() if t in selected}
        state.target_tables = {**kept, **{s.table_id: s for s in added}}
    if added and source.startup.takes_snapshot:
        chunk_size = source.chunk_size
        splits = [s for schema in added for s in split_table(conn, schema, chunk_size)]
        state.snapshot = SnapshotAssignerState.plan(added, splits, planned_at)
        state.adding_tables = [s.table_id for s in added]
    if added or removed:
        sys.stderr.write(
            f"capture: {len(added)} tables added ({', '.join(s.table_id for s in added) or '-'}), "
            f"{len(removed)} removed ({', '.join(removed) or '-'})\n"
        )


APPLYING_BEHAVIORS = ("lenient", "try_evolve", "evolve")  # the behaviours that apply an added column


def bring_kept_targets_up(sink: Sink, state: PipelineState, behavior: str) -> None:
    """A table joining the capture whose target was kept while it was out (and that gained
    columns at the source meanwhile) has its target altered to its columns before its
    snapshot is written into it, where schema.change.behavior applies schema changes; else
    the run stops, naming the table, the columns and the ways on."""
    joining = [state.targets[t] for t in state.adding_tables if t in state.targets]
    if not joining:  # the usual start: no target is asked about
        return
    for table_id, names in sorted(sink.missing_columns(joining).items()):
        columns = ("the column " if len(names) == 1 else "the columns ") + ", ".join(names)
        if behavior not in APPLYING_BEHAVIORS:
            raise SluiceError(
                f"{table_id} joins the capture, and its target table lacks {columns}, which the table has "
                f"now: schema.change.behavior {behavior} applies no schema change; add "
                f"{'it' if len(names) == 1 else 'them'}, drop the target table (Sluice creates it anew), or set "
                f"schema.change.behavior to {', '.join(APPLYING_BEHAVIORS[:-1])} or {APPLYING_BEHAVIORS[-1]}"
            )
        sink.add_missing_columns(state.targets[table_id], f"capture:{table_id}:columns")
        sys.stderr.write(f"capture: {table_id} joins again; its target table gained {columns}\n")
