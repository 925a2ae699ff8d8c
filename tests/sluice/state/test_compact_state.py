"""The state's compact form keeps everything (expand(compact(doc)) == doc) and keeps a
100,000-split plan of a BIGINT key, with every split finished and the binlog split's
watermarks, under 1 MiB: what a CdcPipeline's status can hold (etcd's limit is 1.5 MiB)."""

from __future__ import annotations

import json
import random

from sluice.snapshot.snapshot_split import SnapshotSplit
from sluice.snapshot.snapshot_split_assigner import SnapshotAssignerState
from sluice.source.offset import BinlogOffset
from sluice.source.schema import Column, TableSchema
from sluice.state.compact_state import compact, expand
from sluice.state.pipeline_state import PipelineState

KEY = TableSchema("shop", "orders", (Column("id", "bigint", "bigint", False),), ("id",), "id")


def _state(edges: list, finish: int, seed: int = 7) -> PipelineState:
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


def test_a_100000_split_bigint_plan_fits_a_status_and_comes_back_whole():
    edges = [None, *range(8096, 8096 * 100_000, 8096), None]
    document = _state(edges, finish=100_000).to_json()
    small = compact(document)
    size = len(json.dumps(small, separators=(",", ":")))
    assert size < 1024 * 1024, f"{size:,} bytes"
    assert len(json.dumps(document)) > 10 * size  # what it saves
    assert expand(json.loads(json.dumps(small))) == document
    assert small["binlog"]["watermarks"][KEY.table_id] == {"fromPlan": True}


def test_a_plan_in_progress_with_deferred_splits_comes_back_whole():
    edges = [None, *range(100, 100 * 50, 100), None]
    state = _state(edges, finish=20)
    assert state.snapshot is not None
    state.snapshot.defer(KEY.table_id)
    document = state.to_json()
    assert expand(json.loads(json.dumps(compact(document)))) == document


def test_string_keys_stay_a_plain_list_bounded_by_the_chunk_count():
    edges = [None, "b", "d", "k", "q", None]
    document = _state(edges, finish=5).to_json()
    small = compact(document)
    assert small["snapshot"]["plan"][KEY.table_id]["boundaries"] == {"values": ["b", "d", "k", "q"]}
    assert expand(small) == document
