"""Pipeline states for tests of the state's stores and forms."""

from __future__ import annotations

import random

from sluice.event.snapshot_split import SnapshotSplit
from sluice.snapshot.snapshot_split_assigner import SnapshotAssignerState
from sluice.source.offset import BinlogOffset
from sluice.source.schema import Column, TableSchema
from sluice.state.pipeline_state import PipelineState

KEY = TableSchema("shop", "orders", (Column("id", "bigint", "bigint", False),), ("id",), "id")


def planned_state(edges: list, finish: int, seed: int = 7) -> PipelineState:
    """A plan of shop.orders split at `edges` (BIGINT key), its first `finish` splits read."""
    rng = random.Random(seed)
    splits = [SnapshotSplit(KEY.table_id, i, edges[i], edges[i + 1]) for i in range(len(edges) - 1)]
    plan = SnapshotAssignerState.plan([KEY], splits, BinlogOffset("mysql-bin.000007", 4))
    position = 4
    for split in splits[:finish]:  # two readers: positions grow, not quite in split order
        position += rng.randrange(200, 4000)
        file = "mysql-bin.000007" if position < 40_000_000 else "mysql-bin.000008"
        plan.record(split.split_id, BinlogOffset(file, position - rng.randrange(0, 150)), 8096 + rng.randrange(-40, 40))
    state = PipelineState("data.orders", {"source.tables": "shop.orders"}, tables={KEY.table_id: KEY}, snapshot=plan)
    if plan.is_finished:
        state.binlog = plan.binlog_split()
    return state


def bigint_edges(splits: int) -> list:
    return [None, *range(8096, 8096 * splits, 8096), None]
