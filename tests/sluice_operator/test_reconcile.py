"""Reconcile decides from what is, not from what happened: the same observation gives the
same plan, a plan's status observed again gives no new write or Event, the SparkApplication
takes its streaming shape once status says every split is done, and each phase says what it
means."""

from __future__ import annotations

import copy
from datetime import datetime, timedelta, timezone
from typing import Any

from sluice.state.compact_state import compact
from sluice_operator.observe import Observation
from sluice_operator.pipeline_spec import read_spec
from sluice_operator.reconcile import reconcile
from sluice_operator.spark_application import pipeline_config_map, spark_application
from tests.harness.states import bigint_edges, planned_state
from tests.sluice_operator.test_spark_application import CDC_PIPELINE

SECRETS = {"mariadb-cdc": {"password"}, "pg-writer": {"pw"}}


def observed(status: dict[str, Any] | None = None, app: dict[str, Any] | None = None, **spec: Any) -> Observation:
    cr = copy.deepcopy(CDC_PIPELINE)
    cr["metadata"]["generation"] = 3
    cr["spec"].update(spec)
    if status is not None:
        cr["status"] = status
    return Observation(cr, app, dict(SECRETS))


def with_state(finished: int, total: int = 20) -> dict[str, Any]:
    return {"state": compact(planned_state(bigint_edges(total), finish=finished).to_json())}


def running(shape: str, state: str = "RUNNING", **spec: Any) -> dict[str, Any]:
    cr = copy.deepcopy(CDC_PIPELINE)
    cr["spec"].update(spec)
    app = spark_application(cr, read_spec("orders", "data", cr["spec"]), shape)
    app["status"] = {"applicationState": {"state": state}, "executionAttempts": 1}
    return app


def test_a_new_pipeline_gets_its_objects_and_a_snapshot_shaped_application():
    plan = reconcile(observed())
    kinds = [o["kind"] for o in plan.apply]
    assert kinds == ["ConfigMap", "ServiceAccount", "Role", "RoleBinding", "SparkApplication"]
    assert plan.apply[-1]["spec"]["executor"]["instances"] == 3  # the snapshot executors: parallelism 3
    assert plan.phase == "Pending" and plan.status["observedGeneration"] == 3
    assert [e.reason for e in plan.events] == ["Submit", "JobStatusChanged"]


def test_the_application_takes_its_streaming_shape_once_every_split_is_done():
    snapshotting = reconcile(observed(with_state(10), running("snapshot")))
    assert snapshotting.phase == "Snapshotting" and "10/20 splits" in snapshotting.status["conditions"][1]["message"]
    assert snapshotting.apply[-1]["spec"]["executor"]["instances"] == 3
    done = reconcile(observed(with_state(20), running("snapshot")))
    assert done.phase == "Streaming" and "dynamicAllocation" in done.apply[-1]["spec"]
    assert "ScaleDown" in [e.reason for e in done.events]
    ready = {c["type"]: c["status"] for c in done.status["conditions"]}["Ready"]
    assert ready == "False"  # not before the streaming run runs


def test_a_pass_over_its_own_result_writes_nothing_new():
    first = reconcile(observed(with_state(20), running("streaming")))
    again = reconcile(observed({**with_state(20), **first.status}, running("streaming")))
    assert again.status == first.status and again.events == []
    assert {c["type"]: c["status"] for c in again.status["conditions"]}["Ready"] == "True"


def test_suspend_and_failure_are_phases_with_their_reasons():
    suspended = reconcile(observed(with_state(20), running("streaming"), suspend=True))
    assert suspended.phase == "Suspended" and suspended.apply[-1]["spec"]["suspend"] is True
    assert "Suspended" in [e.reason for e in suspended.events]
    failed_app = running("streaming", "FAILED")
    must_fix = "source.scan.incremental.snapshot.chunk.key-column: table shop.orders has no column 'nope'"
    status = {**with_state(20), "driver": {"run": "r1", "error": must_fix, "retriable": False}}
    failed = reconcile(observed(status, failed_app))
    degraded = {c["type"]: c for c in failed.status["conditions"]}["Degraded"]
    assert failed.phase == "Failed" and degraded["status"] == "True" and must_fix in degraded["message"]
    assert ("Warning", "Error") in [(e.type, e.reason) for e in failed.events]
    assert not failed.delete_application and failed.status["retry"] is None  # not retried in a loop


def test_a_failure_that_may_heal_is_retried_for_ever_with_backoff_up_to_five_minutes():
    t0 = datetime(2026, 11, 25, 8, 0, tzinfo=timezone.utc)

    def failed(uid: str) -> dict[str, Any]:
        app = running("streaming", "FAILED")
        app["metadata"]["uid"] = uid
        app["status"]["applicationState"]["errorMessage"] = "sluice: error: binlog connection to the source failed"
        return app

    first = reconcile(observed(with_state(20), failed("u1")), now=t0)
    assert first.phase == "Streaming" and not first.delete_application
    assert first.status["retry"] == {
        "attempts": 1,
        "lastError": "sluice: error: binlog connection to the source failed",
        "nextRetryTime": "2026-11-25T08:00:10Z",
        "failedApplication": "u1",
    }
    degraded = {c["type"]: c for c in first.status["conditions"]}["Degraded"]
    assert degraded["reason"] == "Retrying" and "retry 1 at 2026-11-25T08:00:10Z" in degraded["message"]
    status = {**with_state(20), **first.status}
    assert not reconcile(observed(status, failed("u1")), now=t0 + timedelta(seconds=9)).delete_application
    due = reconcile(observed(status, failed("u1")), now=t0 + timedelta(seconds=10))
    assert due.delete_application and "Retry" in [e.reason for e in due.events]
    # The resubmitted application failed too: twice the wait, and so on up to five minutes.
    waits = []
    for attempt, uid in enumerate(["u2", "u3", "u4", "u5", "u6", "u7"], start=2):
        plan = reconcile(observed(status, failed(uid)), now=t0)
        assert plan.status["retry"]["attempts"] == attempt
        waits.append(datetime.fromisoformat(plan.status["retry"]["nextRetryTime"].replace("Z", "+00:00")) - t0)
        status = {**status, **plan.status}
    assert [w.total_seconds() for w in waits] == [20, 40, 80, 160, 300, 300]
    # Ready for ten minutes: it healed, and the count starts again.
    healthy = {
        **status,
        "driver": {"run": "r9"},
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-25T08:00:00Z"}],
    }
    assert reconcile(observed(healthy, running("streaming")), now=t0 + timedelta(minutes=9)).status["retry"]
    assert reconcile(observed(healthy, running("streaming")), now=t0 + timedelta(minutes=10)).status["retry"] is None


def test_a_missing_secret_changes_nothing_that_runs():
    observation = observed(with_state(20), running("streaming"))
    observation.secret_keys["pg-writer"] = None
    plan = reconcile(observation)
    assert plan.apply == [] and plan.status["phase"] == "Failed"
    assert (
        "Secret data/pg-writer does not exist"
        in {c["type"]: c for c in plan.status["conditions"]}["Degraded"]["message"]
    )


def test_the_config_map_carries_approvals_from_the_spec():
    cr = copy.deepcopy(CDC_PIPELINE)
    cr["spec"]["schemaChanges"] = {"approved": ["mysql-bin.000003:4711"]}
    config = pipeline_config_map(cr, read_spec("orders", "data", cr["spec"]))
    assert "mysql-bin.000003:4711" in config["data"]["pipeline.yaml"]


def test_a_definition_edit_reruns_the_application_and_an_approval_does_not():
    base = reconcile(observed(with_state(20), running("streaming"))).apply[-1]["spec"]
    tables = reconcile(
        observed(
            with_state(20),
            running("streaming"),
            source={**CDC_PIPELINE["spec"]["source"], "tables": "shop.orders,shop.items"},
        )
    )
    assert tables.apply[-1]["spec"] != base  # a new table joins: the driver runs again with it
    approved = reconcile(observed(with_state(20), running("streaming"), schemaChanges={"approved": ["b.000001:4"]}))
    assert approved.apply[-1]["spec"] == base


def test_ready_waits_for_a_driver_run_started_after_the_switch():
    """The Spark Operator reruns the application after the operator changed it: until a new
    driver run has claimed the status, the old run's RUNNING says nothing about the new shape."""

    def ready(plan) -> str:
        return {c["type"]: c["status"] for c in plan.status["conditions"]}["Ready"]

    before = {**with_state(20), "driver": {"run": "snapshot-run"}}
    switched = reconcile(observed(before, running("snapshot")))
    assert switched.status["application"]["supersededRun"] == "snapshot-run"
    status = {**before, **switched.status}
    assert ready(reconcile(observed(status, running("streaming")))) == "False"  # not rerun yet
    rerun = reconcile(observed({**status, "driver": {"run": "streaming-run"}}, running("streaming")))
    assert ready(rerun) == "True"
