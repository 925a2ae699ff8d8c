"""The state's compact form keeps everything (expand(compact(doc)) == doc) and keeps a
100,000-split plan of a BIGINT key, with every split finished and the binlog split's
watermarks, under 1 MiB: what a CdcPipeline's status can hold (etcd's limit is 1.5 MiB)."""

from __future__ import annotations

import json

from sluice.state.compact_state import compact, expand
from tests.harness.states import KEY, planned_state


def test_a_100000_split_bigint_plan_fits_a_status_and_comes_back_whole():
    edges = [None, *range(8096, 8096 * 100_000, 8096), None]
    document = planned_state(edges, finish=100_000).to_json()
    small = compact(document)
    size = len(json.dumps(small, separators=(",", ":")))
    assert size < 1024 * 1024, f"{size:,} bytes"
    assert len(json.dumps(document)) > 10 * size  # what it saves
    assert expand(json.loads(json.dumps(small))) == document
    assert small["binlog"]["watermarks"][KEY.table_id] == {"fromPlan": True}


def test_a_plan_in_progress_with_deferred_splits_comes_back_whole():
    edges = [None, *range(100, 100 * 50, 100), None]
    state = planned_state(edges, finish=20)
    assert state.snapshot is not None
    state.snapshot.defer(KEY.table_id)
    document = state.to_json()
    assert expand(json.loads(json.dumps(compact(document)))) == document


def test_string_keys_stay_a_plain_list_bounded_by_the_chunk_count():
    edges = [None, "b", "d", "k", "q", None]
    document = planned_state(edges, finish=5).to_json()
    small = compact(document)
    assert small["snapshot"]["plan"][KEY.table_id]["boundaries"] == {"values": ["b", "d", "k", "q"]}
    assert expand(small) == document
