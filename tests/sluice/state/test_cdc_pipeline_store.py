"""The state store the Spark driver uses on Kubernetes keeps the pipeline's state in the
CdcPipeline's status: conflict-safe next to the operator's writes, throttled, compact, and
fenced against an older driver run. Against the Kubernetes API test double."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from sluice.source.offset import BinlogOffset
from sluice.state.cdc_pipeline_store import GROUP, PLURAL, VERSION, StateFenced, StatusStateStore
from tests.harness.states import bigint_edges, planned_state
from tests.harness.test_kube_api_double import cdc_pipeline


class CountingApi:
    """The CustomObjectsApi, counting status writes and the conflicts they met."""

    def __init__(self, api: client.CustomObjectsApi) -> None:
        self.api, self.writes, self.conflicts = api, 0, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.api, name)

    def replace_namespaced_custom_object_status(self, *args: Any) -> Any:
        self.writes += 1
        try:
            return self.api.replace_namespaced_custom_object_status(*args)
        except ApiException as exc:
            self.conflicts += exc.status == 409
            raise


@pytest.fixture
def api(kube_api) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(kube_api.client())


@pytest.fixture
def name(api, request) -> str:
    name = request.node.name.replace("_", "-")[:40].strip("-")
    api.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, cdc_pipeline(name))
    yield name
    api.delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, name)


def status(api, name: str) -> dict[str, Any]:
    return api.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, name).get("status", {})


def test_the_state_comes_back_as_it_was_saved(api, name):
    store = StatusStateStore(api, "default", name)
    assert store.load() is None
    state = planned_state(bigint_edges(40), finish=25)
    store.save(state)
    assert StatusStateStore(api, "default", name).load().to_json() == state.to_json()
    shown = status(api, name)["snapshot"]
    assert shown == {"splitsDone": 25, "splitsTotal": 40, "progress": "25/40", "rows": shown["rows"]}


def test_a_conflict_with_the_operator_is_retried_and_loses_neither_side(api, name):
    counting = CountingApi(api)
    store = StatusStateStore(counting, "default", name, interval=0)
    store.load()
    state = planned_state(bigint_edges(10), finish=10)
    store.save(state)
    # The operator writes its fields meanwhile: the store's resourceVersion is now stale.
    api.patch_namespaced_custom_object_status(
        GROUP, VERSION, "default", PLURAL, name, {"status": {"phase": "Snapshotting", "observedGeneration": 1}}
    )
    store.record_binlog_offset(BinlogOffset("mysql-bin.000009", 1234))
    assert counting.conflicts == 1
    written = status(api, name)
    assert written["phase"] == "Snapshotting" and written["observedGeneration"] == 1
    assert written["binlog"]["position"] == "mysql-bin.000009:1234"
    assert StatusStateStore(api, "default", name).load().binlog.offset == BinlogOffset("mysql-bin.000009", 1234)


def test_progress_is_written_at_most_every_interval_and_then_flushed(api, name):
    counting = CountingApi(api)
    store = StatusStateStore(counting, "default", name, interval=1.0)
    store.load()
    state = planned_state(bigint_edges(100), finish=0)
    store.save(state)
    before = counting.writes
    for split in state.snapshot.splits[:50]:
        state.snapshot.record(split.split_id, BinlogOffset("mysql-bin.000007", 100 + split.index), 10)
        store.record_split_finished(split.split_id, state.snapshot.finished[split.split_id])
    assert counting.writes - before <= 1  # 50 records, within one interval
    deadline = time.monotonic() + 5
    while status(api, name)["snapshot"]["splitsDone"] != 50 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert status(api, name)["snapshot"]["splitsDone"] == 50  # the held-back records, written by the timer


def test_an_older_driver_run_is_fenced_off(api, name):
    old = StatusStateStore(api, "default", name, interval=0)
    old.load()
    old.save(planned_state(bigint_edges(10), finish=5))
    new = StatusStateStore(api, "default", name, interval=0)
    new.load()  # the Spark Operator's rerun claims the status
    with pytest.raises(StateFenced, match="claimed by another driver run"):
        old.save(planned_state(bigint_edges(10), finish=6))
    assert len(new.load().snapshot.finished) == 5


def test_100000_splits_fit_the_status_and_it_shrinks_after_the_pure_binlog_phase(api, name):
    store = StatusStateStore(api, "default", name)
    store.load()
    state = planned_state(bigint_edges(100_000), finish=100_000)
    store.save(state)
    whole = api.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, name)
    size = len(json.dumps(whole, separators=(",", ":")))
    assert size < 1024 * 1024, f"{size:,} bytes"
    # Past every high watermark: the plan is dropped, a summary stays.
    state.snapshot, state.snapshot_summary = None, {"splits": 100_000, "rows": 809_600_000}
    state.binlog.watermarks.clear()
    store.save(state)
    after = len(json.dumps(api.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, name)))
    assert after < size / 50, f"{size:,} -> {after:,} bytes"
    assert status(api, name)["snapshot"]["progress"] == "100000/100000"
