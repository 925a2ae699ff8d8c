"""Reconcile: from an Observation to what should be, with no I/O. Level-triggered: the
same observation gives the same plan, whatever happened before; `act` then makes it so.

What it decides:
- the objects the pipeline needs (ConfigMap, driver identity, SparkApplication in the
  shape the state calls for: `snapshot` while splits are left, `streaming` after);
- the status fields the operator owns (phase, conditions, observedGeneration,
  lastReconciledSpec, application);
- the Events a user reads in `kubectl describe`, one per transition.

Bad input (an invalid spec, a missing Secret or key) is a Degraded condition and a Warning
Event naming what to fix; what runs is left as it is.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from sluice.coordinator.schema_change import SchemaChangeInFlight, Step, pending_message
from sluice.errors import DefinitionError
from sluice.pipeline.definition import PipelineDefinition
from sluice.state.compact_state import expand
from sluice.state.pipeline_state import PipelineState
from sluice_operator import conditions, retries
from sluice_operator.observe import Observation
from sluice_operator.pipeline_spec import PipelineSpec
from sluice_operator.rbac import driver_rbac
from sluice_operator.spark_application import Shape, applied, names, pipeline_config_map, spark_application
from sluice_operator.spark_operator import UNSUPPORTED_SUSPEND

FAILED_STATES = ("FAILED", "SUBMISSION_FAILED")
RETRYING_STATES = ("FAILING", "PENDING_RERUN")  # the Spark Operator's restartPolicy at work


@dataclass(frozen=True)
class Event:
    type: str  # Normal or Warning
    reason: str  # SpecChanged, Submit, ScaleDown, Suspended, Resumed, JobStatusChanged, ...
    message: str


@dataclass
class Plan:
    apply: list[dict[str, Any]] = field(default_factory=list)  # owned objects, as they should be
    # Delete the SparkApplication: to run it again (the next pass submits it), or to suspend
    # it where the Spark Operator has no spec.suspend.
    delete_application: bool = False
    status: dict[str, Any] = field(default_factory=dict)  # the operator's status fields
    events: list[Event] = field(default_factory=list)
    phase: str = ""


def reconcile(observation: Observation, now: datetime | None = None) -> Plan:
    now = now or datetime.now(timezone.utc)
    cr = observation.cdc_pipeline
    meta, status = cr["metadata"], cr.get("status") or {}
    spec = cr.get("spec") or {}
    generation = int(meta.get("generation", 1))
    spec_json = json.dumps(spec, sort_keys=True, separators=(",", ":"))
    plan = Plan()
    changed = bool(status.get("lastReconciledSpec")) and status["lastReconciledSpec"] != spec_json
    if changed:
        plan.events.append(Event("Normal", "SpecChanged", f"spec changed (generation {generation})"))
    pipeline = observation.pipeline
    try:
        if isinstance(pipeline, DefinitionError):
            raise pipeline
        assert pipeline is not None
        definition = pipeline.check()
    except DefinitionError as exc:
        return _refused(plan, observation, "ValidationError", f"invalid spec: {exc}", generation, now)
    missing = _missing_secrets(pipeline, observation)
    if missing:
        return _refused(plan, observation, "MissingSecret", missing, generation, now)
    if observation.spark_operator.problem:
        return _refused(plan, observation, "SparkOperatorMissing", observation.spark_operator.problem, generation, now)

    state = _state(status)
    shape = _shape(definition, state)
    application = spark_application(cr, pipeline, shape, observation.spark_operator.suspend)
    suspend_by_deletion = pipeline.suspend and not observation.spark_operator.suspend
    plan.apply = [pipeline_config_map(cr, pipeline), *driver_rbac(cr)]
    current = observation.application
    app_status = (current or {}).get("status") or {}
    app_state = (app_status.get("applicationState") or {}).get("state", "")
    driver = status.get("driver") or {}
    error = driver.get("error") or (app_status.get("applicationState") or {}).get("errorMessage", "")
    retriable = app_state in FAILED_STATES and not changed and driver.get("retriable", True)
    retry = retries.record(status, current, retriable, error, now)
    if suspend_by_deletion:
        plan.delete_application = current is not None
        if current is not None:
            plan.events.append(Event("Normal", "Suspended", UNSUPPORTED_SUSPEND))
    elif current is not None:
        plan.apply.append(application)
        plan.events += _application_changes(current, application, shape)
        if app_state == "COMPLETED" and not _bounded(state) and not pipeline.suspend:
            plan.delete_application = True  # a streaming driver ended (evicted, stopped): run it again
            plan.events.append(Event("Normal", "Submit", "the Spark job ended; submitting it again"))
        elif app_state in FAILED_STATES and changed:
            plan.delete_application = True  # the user changed the spec of a failed pipeline: try it
        elif retriable and retries.due(retry, now):
            plan.delete_application = True
            plan.events.append(Event("Normal", "Retry", f"resubmitting after failure {retry['attempts']}: {error}"))
    else:
        plan.apply.append(application)
        plan.events.append(
            Event("Normal", "Submit", f"submitting SparkApplication {names(meta['name'])['application']}")
        )

    phase, message = _phase(pipeline, shape, state, app_state, error, retriable, status, meta, suspend_by_deletion)
    # The driver run that was going when the operator last changed the application: until
    # another run has claimed the status, the Spark Operator has not rerun it yet.
    driver_run = driver.get("run")
    superseded = (status.get("application") or {}).get("supersededRun")
    if current is not None and not applied(current, application):
        superseded = driver_run
    rerun = superseded is None or driver_run != superseded
    settled = current is not None and applied(current, application) and rerun
    ready = phase == "Streaming" and app_state == "RUNNING" and settled or phase == "Completed"
    found = conditions.for_phase(phase, message, driver.get("reason", "") if phase == "Failed" else "")
    if phase != "Failed" and app_state in RETRYING_STATES and error:
        found = _with(found, conditions.DEGRADED, True, "DriverFailed", f"retrying: {error}")
    if retriable:
        wait = f"retry {retry['attempts']} at {retry['nextRetryTime']}"
        found = _with(found, conditions.DEGRADED, True, "Retrying", f"the Spark job failed: {error}; {wait}")
    found = _with(found, conditions.READY, ready, found[0].reason, "" if ready else found[0].message)
    if ready and retries.healed(status, now):
        retry = None  # the next failure waits the first interval again
    if spec.get("verification") or status.get("verification"):
        found.append(conditions.verified(status.get("verification") or {}))
    plan.events += _new_degradation(status, found)
    plan.phase = phase
    plan.status = {
        "phase": phase,
        "observedGeneration": generation,
        "conditions": conditions.merge(status.get("conditions") or [], found, generation, now),
        "lastReconciledSpec": spec_json,
        "retry": retry,
        "application": {
            "name": names(meta["name"])["application"],
            "shape": shape,
            "state": app_state,
            "attempts": int(app_status.get("executionAttempts", 0)),
            **({"supersededRun": superseded} if superseded else {}),
        },
    }
    plan.events += _transitions(status, phase, message, app_state)
    adopted, told = driver.get("adopted"), (status.get("application") or {}).get("adopted")
    if adopted and adopted != told:
        plan.events.append(Event("Normal", "Adopted", adopted))
        told = adopted
    if told:
        plan.status["application"]["adopted"] = told  # said once
    _tell_online_work(status, plan)
    return plan


def _tell_online_work(status: dict[str, Any], plan: Plan) -> None:
    """An Event per finished verification and per resnapshot request done, each said once."""
    application = status.get("application") or {}
    verification = status.get("verification") or {}
    told = application.get("verificationTold")
    finished = verification.get("finishedAt")
    if finished and finished != told:
        found = conditions.verified(verification)
        plan.events.append(
            Event(
                "Normal" if found.status else "Warning",
                "Verified" if found.status else "VerificationMismatch",
                found.message,
            )
        )
        told = finished
    if told:
        plan.status["application"]["verificationTold"] = told
    said = list(application.get("resnapshotsTold") or [])
    for request in status.get("resnapshots") or []:
        if request.get("state") not in ("Done", "Failed") or request.get("id") in said:
            continue
        if request["state"] == "Done":
            plan.events.append(
                Event("Normal", "Resnapshotted", f"{request['id']}: {request.get('rows', 0)} rows read again")
            )
        else:
            plan.events.append(Event("Warning", "ResnapshotFailed", f"{request['id']}: {request.get('message', '')}"))
        said.append(request["id"])
    if said:
        plan.status["application"]["resnapshotsTold"] = said[-100:]


def _state(status: dict[str, Any]) -> PipelineState | None:
    packed = status.get("state")
    return PipelineState.from_json(expand(packed)) if packed else None


def _shape(definition: PipelineDefinition, state: PipelineState | None) -> Shape:
    """Snapshot while splits are left to read; streaming once the plan is read (the status
    says so before the SparkApplication changes, so the rerun resumes the binlog phase)."""
    if not definition.source.startup.takes_snapshot:
        return "streaming"
    if state is None or state.tables is None:
        return "snapshot"
    if state.snapshot is not None and not state.snapshot.is_finished:
        return "snapshot"
    return "streaming"


def _bounded(state: PipelineState | None) -> bool:
    return state is not None and state.stop_at is not None


def _phase(
    pipeline: PipelineSpec,
    shape: Shape,
    state: PipelineState | None,
    app_state: str,
    error: str,
    retriable: bool,
    status: dict[str, Any],
    meta: dict[str, Any],
    suspend_by_deletion: bool,
) -> tuple[str, str]:
    """The phase and what it means to the user (the message conditions carry). A failure
    that will be retried keeps the phase of the work it interrupted."""
    if pipeline.suspend:
        return (
            "Suspended",
            UNSUPPORTED_SUSPEND if suspend_by_deletion else "spec.suspend is set: no driver runs; the state is kept",
        )
    if app_state in FAILED_STATES and not retriable:
        return "Failed", error or f"the SparkApplication is {app_state}"
    if state is not None and state.schema_change is not None:
        change = state.schema_change
        if change.step is Step.FAILED:
            return "Failed", pending_message(change, "")
        if change.paused:
            return "SchemaChangePaused", pending_message(change, _how_to_approve(change, pipeline, meta))
    if app_state == "COMPLETED" and _bounded(state):
        return "Completed", "the snapshot is in the target"
    if shape == "streaming":
        return "Streaming", ""
    if state is None or state.snapshot is None:
        return "Pending", "planning the snapshot"
    return "Snapshotting", f"{len(state.snapshot.finished)}/{len(state.snapshot.splits)} splits"


def _how_to_approve(change: SchemaChangeInFlight, pipeline: PipelineSpec, meta: dict[str, Any]) -> str:
    approved = json.dumps({"spec": {"schemaChanges": {"approved": [*pipeline.approved, change.id]}}})
    return (
        f"add {change.id} to spec.schemaChanges.approved (in Git, or kubectl patch cdcp {meta['name']} "
        f"-n {meta['namespace']} --type merge -p '{approved}')"
    )


def _application_changes(current: dict[str, Any], desired: dict[str, Any], shape: Shape) -> list[Event]:
    if applied(current, desired):
        return []
    was = ((current.get("metadata") or {}).get("labels") or {}).get("sluice.io/shape")
    was = was or ("snapshot" if current["spec"].get("executor", {}).get("instances") else "streaming")
    before, after = bool(current["spec"].get("suspend")), bool(desired["spec"].get("suspend"))
    if after and not before:
        return [Event("Normal", "Suspended", "suspending: the driver stops, the state is kept")]
    if before and not after:
        return [Event("Normal", "Resumed", "resuming from the state in status")]
    if shape == "streaming" and current["spec"].get("executor", {}).get("instances") != desired["spec"].get(
        "executor", {}
    ).get("instances"):
        executors = desired["spec"]["executor"].get("instances", 0)
        return [
            Event(
                "Normal",
                "ScaleDown",
                f"the snapshot is read: the single binlog reader takes over with {executors} executors",
            )
        ]
    return [Event("Normal", "SpecChanged", "the SparkApplication changes; the Spark Operator reruns it")]


def _transitions(status: dict[str, Any], phase: str, message: str, app_state: str) -> list[Event]:
    events = []
    before = status.get("phase")
    if before != phase:
        kind = "Warning" if phase == "Failed" else "Normal"
        text = f"{before or 'new'} -> {phase}" + (f": {message}" if message else "")
        events.append(Event(kind, "SchemaChangePending" if phase == "SchemaChangePaused" else "JobStatusChanged", text))
    was = (status.get("application") or {}).get("state")
    if app_state and was is not None and app_state != was:
        kind = "Warning" if app_state in FAILED_STATES + ("FAILING",) else "Normal"
        events.append(Event(kind, "JobStatusChanged", f"SparkApplication {was or 'new'} -> {app_state}"))
    return events


def _new_degradation(status: dict[str, Any], found: list[conditions.Condition]) -> list[Event]:
    """A Warning when the Degraded condition comes up or says something new."""
    degraded = next(c for c in found if c.type == conditions.DEGRADED)
    previous = {c.get("type"): c for c in status.get("conditions") or []}.get(conditions.DEGRADED, {})
    if not degraded.status or (previous.get("status") == "True" and previous.get("message") == degraded.message):
        return []
    return [Event("Warning", "Error", degraded.message)]


def _missing_secrets(pipeline: PipelineSpec, observation: Observation) -> str:
    namespace = observation.cdc_pipeline["metadata"]["namespace"]
    for _, ref in sorted(pipeline.secrets.items()):
        keys = observation.secret_keys.get(ref.name)
        if keys is None:
            return f"{ref.where}: Secret {namespace}/{ref.name} does not exist"
        if ref.key not in keys:
            return f"{ref.where}: Secret {namespace}/{ref.name} has no key '{ref.key}'"
    return ""


def refused(observation: Observation, reason: str, message: str, now: datetime | None = None) -> Plan:
    """The plan for a pipeline whose objects the API server refused (`act` found it)."""
    generation = int(observation.cdc_pipeline["metadata"].get("generation", 1))
    return _refused(Plan(), observation, reason, message, generation, now)


def _refused(
    plan: Plan, observation: Observation, reason: str, message: str, generation: int, now: datetime | None
) -> Plan:
    """Bad input: nothing changes in what runs; the status and an Event say what to fix."""
    status = observation.cdc_pipeline.get("status") or {}
    phase = status.get("phase") or "Failed"
    found = conditions.for_phase(phase)
    found = _with(found, conditions.DEGRADED, True, reason, message)
    found = _with(found, conditions.READY, False, reason, message)
    plan.phase = phase
    plan.status = {
        "phase": phase,
        "observedGeneration": generation,
        "conditions": conditions.merge(status.get("conditions") or [], found, generation, now),
    }
    if _new_degradation(status, found):
        plan.events.append(Event("Warning", reason, message))
    return plan


def _with(
    found: list[conditions.Condition], type_: str, status: bool, reason: str, message: str
) -> list[conditions.Condition]:
    return [conditions.Condition(type_, status, reason, message) if c.type == type_ else c for c in found]
