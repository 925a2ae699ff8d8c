r"""The schema change coordinator: what to do with a DDL's events, and the steps a change
goes through. Pure Python, no pyspark and no I/O, so that the local runner and the
Kubernetes operator drive the same state machine.

A change is one DDL statement on captured tables, known by its binlog position. Its steps,
each recorded before the next begins, so a crash resumes at the step it reached:

    Flushed -> (AwaitingApproval ->) Applying -> Applied | ApplyFailed -> Resumed
                                    \-> Skipped -> Resumed
                                    \-> Failed

`coordinate` drives a change from whatever step the state recorded; the effects it needs
(record, apply, approvals, waiting) are the caller's: the local runner's state directory
and sink here, the CdcPipeline status on Kubernetes.

Decisions follow Flink CDC's `schema.change.behavior` (evolve, try_evolve, lenient, ignore,
exception) plus `manual`: wait until the change's id is in the approved list.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sluice.event.schema_change import (
    AddColumn,
    AlterColumnType,
    CreateTable,
    DropColumn,
    DropTable,
    RenameColumn,
    SchemaChangeEvent,
    SchemaEvolution,
    TruncateTable,
    event_from_json,
    event_to_json,
)
from sluice.pipeline.schema_change_types import EVENT_TYPES
from sluice.source.offset import BinlogOffset
from sluice.source.schema import TableSchema

HISTORY = 20  # applied changes kept in state


class Step(str, enum.Enum):
    FLUSHED = "Flushed"  # everything before it is committed to the sink
    AWAITING_APPROVAL = "AwaitingApproval"  # manual: its id is not approved yet
    APPLYING = "Applying"  # the decided events are going to the target (idempotently)
    APPLIED = "Applied"  # the sink's metadata applier changed the target
    SKIPPED = "Skipped"  # the behaviour sends nothing to the target
    APPLY_FAILED = "ApplyFailed"  # try_evolve: the target refused; the pipeline goes on
    FAILED = "Failed"  # exception, or evolve with a refusing target: the pipeline stops here
    RESUMED = "Resumed"  # reading goes on after the DDL with the new schema


class Decision(str, enum.Enum):
    APPLY = "apply"  # send the (possibly transformed) events to the target
    SKIP = "skip"
    FAIL = "fail"
    WAIT = "wait"


@dataclass(frozen=True)
class Verdict:
    decision: Decision
    events: tuple[SchemaChangeEvent, ...] = ()  # what to apply
    reason: str = ""


def change_id(position: BinlogOffset) -> str:
    """A change's id, stable across runs: where its DDL starts in the binlog."""
    return f"{position.file}:{position.pos}"


def decide(
    behavior: str,
    change: str,
    events: Sequence[SchemaChangeEvent],
    schemas: Mapping[str, TableSchema],
    approved: Collection[str] = (),
    accepted: Collection[str] = EVENT_TYPES,
) -> Verdict:
    """What `behavior` does with one change's events (after the flush). `schemas` are the
    target's; `accepted`, the event types the sink takes (include/exclude.schema.changes)."""
    verdict = _decide(behavior, change, events, schemas, approved)
    if verdict.decision is not Decision.APPLY:
        return verdict
    taken = tuple(e for e in verdict.events if e.tag in accepted)
    if not verdict.events:  # rows changed without row events, their tables read again: nothing to change
        return Verdict(Decision.SKIP, reason="no change of the target's tables")
    if not taken:
        return Verdict(Decision.SKIP, reason=f"the sink takes no {', '.join(sorted({e.tag for e in verdict.events}))}")
    return Verdict(Decision.APPLY, taken, verdict.reason)


def _decide(
    behavior: str,
    change: str,
    events: Sequence[SchemaChangeEvent],
    schemas: Mapping[str, TableSchema],
    approved: Collection[str],
) -> Verdict:
    if behavior == "exception":
        return Verdict(Decision.FAIL, reason="pipeline.schema.change.behavior is exception")
    if behavior == "ignore":  # but a new table's rows need the table (FLINK-37837)
        # A name the target kept (its DROP ignored) keeps its table: rows are projected onto it.
        created = tuple(e for e in events if isinstance(e, CreateTable) and e.table_id not in schemas)
        return Verdict(Decision.APPLY if created else Decision.SKIP, created, "schema.change.behavior is ignore")
    if behavior == "manual" and change not in approved:
        return Verdict(
            Decision.WAIT,
            reason=f"schema change {change} waits for approval: add '{change}' to schema-change.approved",
        )
    if behavior == "lenient":
        lenient = tuple(e for event in events for e in lenient_events(event, schemas.get(event.table_id)))
        return Verdict(Decision.APPLY if lenient else Decision.SKIP, lenient, "schema.change.behavior is lenient")
    return Verdict(Decision.APPLY, tuple(events), f"schema.change.behavior is {behavior}")


def lenient_events(event: SchemaChangeEvent, schema: TableSchema | None) -> list[SchemaChangeEvent]:
    """Flink CDC's lenient conversion: nothing already in the target is lost. A dropped
    column stays (nullable), a renamed one stays and the new name is added (nullable), an
    added one is nullable, a truncated or dropped table is left alone, and a table created
    again under a name the target kept gets the columns it lacks (nullable)."""
    if isinstance(event, (TruncateTable, DropTable)):
        return []
    if isinstance(event, CreateTable) and schema is not None:  # the target kept it (a DROP left alone)
        return [
            AddColumn(event.table_id, dataclasses.replace(column, nullable=True))
            for column in event.columns
            if column.name not in schema.column_names
        ]
    if isinstance(event, AddColumn):
        return [dataclasses.replace(event, column=dataclasses.replace(event.column, nullable=True))]
    if isinstance(event, DropColumn):
        return _nullable(event.table_id, schema, event.name)
    if isinstance(event, RenameColumn):
        if schema is None or event.old_name not in schema.column_names:
            return []
        renamed = dataclasses.replace(schema.column(event.old_name), name=event.new_name, nullable=True)
        return [*_nullable(event.table_id, schema, event.old_name), AddColumn(event.table_id, renamed)]
    return [event]


def _nullable(table_id: str, schema: TableSchema | None, name: str) -> list[SchemaChangeEvent]:
    if schema is None or name not in schema.column_names or schema.column(name).nullable:
        return []
    return [AlterColumnType(table_id, dataclasses.replace(schema.column(name), nullable=True))]


@dataclass
class SchemaChangeInFlight:
    """One change between the flush and its resumption: what the state records."""

    id: str
    position: BinlogOffset  # where the DDL starts: nothing at or after it is written before it is resolved
    resume_at: BinlogOffset  # right after the DDL
    statement: str
    events: tuple[SchemaChangeEvent, ...]  # what the DDL did at the source
    step: Step = Step.FLUSHED
    message: str = ""
    target_events: tuple[SchemaChangeEvent, ...] = ()  # what goes (went) to the target
    reread: tuple[str, ...] = ()  # tables whose rows the DDL changed without row events: read again

    @property
    def tables(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(e.table_id for e in self.events))

    @property
    def paused(self) -> bool:
        """Reading waits on it (the pipeline's phase is SchemaChangePaused)."""
        return self.step not in (Step.RESUMED, Step.FAILED)

    def advance(self, step: Step, message: str = "") -> None:
        if step not in _NEXT[self.step]:
            raise ValueError(f"schema change {self.id}: {self.step.value} cannot go to {step.value}")
        self.step, self.message = step, message

    def schemas_after(
        self, source: Mapping[str, TableSchema], target: Mapping[str, TableSchema]
    ) -> tuple[dict[str, TableSchema], dict[str, TableSchema]]:
        """The source's schemas after the DDL, and the target's after what reached it."""
        reached = self.target_events if self.step in (Step.APPLIED, Step.APPLY_FAILED, Step.RESUMED) else ()
        return SchemaEvolution(source, self.events).after, SchemaEvolution(target, reached).after

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "position": self.position.to_json(),
            "resumeAt": self.resume_at.to_json(),
            "statement": self.statement,
            "tables": list(self.tables),
            "events": [event_to_json(e) for e in self.events],
            "described": [str(e) for e in self.events],  # for people reading the state or status
            "step": self.step.value,
            "message": self.message,
            "targetEvents": [event_to_json(e) for e in self.target_events],
            **({"reread": list(self.reread)} if self.reread else {}),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SchemaChangeInFlight:
        return cls(
            data["id"],
            BinlogOffset.from_json(data["position"]),
            BinlogOffset.from_json(data["resumeAt"]),
            data["statement"],
            tuple(event_from_json(e) for e in data.get("events", [])),
            Step(data["step"]),
            data.get("message", ""),
            tuple(event_from_json(e) for e in data.get("targetEvents", [])),
            tuple(data.get("reread", ())),
        )


_NEXT: dict[Step, set[Step]] = {
    Step.FLUSHED: {Step.AWAITING_APPROVAL, Step.APPLYING, Step.SKIPPED, Step.FAILED},
    Step.AWAITING_APPROVAL: {Step.APPLYING, Step.SKIPPED, Step.FAILED},
    Step.APPLYING: {Step.APPLIED, Step.APPLY_FAILED, Step.FAILED},
    Step.APPLIED: {Step.RESUMED},
    Step.SKIPPED: {Step.RESUMED},
    Step.APPLY_FAILED: {Step.RESUMED},
    Step.FAILED: set(),
    Step.RESUMED: set(),
}


class SchemaChangeFailed(Exception):
    """The pipeline stops before the change (exception, or evolve with a refusing target)."""


@dataclass(frozen=True)
class Effects:
    """What the coordinator asks of its caller."""

    record: Callable[[SchemaChangeInFlight], None]  # persist the change at its new step
    apply: Callable[[tuple[SchemaChangeEvent, ...]], tuple[int, str]]  # events applied, and the refusal ("" if none)
    approved: Callable[[], Collection[str]]  # the approved ids as they are now
    wait: Callable[[], bool]  # pause a moment for an approval; False once the pipeline stops


def coordinate(
    change: SchemaChangeInFlight,
    behavior: str,
    target: Mapping[str, TableSchema],
    effects: Effects,
    accepted: Collection[str] = EVENT_TYPES,
) -> bool:
    """Moves `change` from its recorded step to Applied, Skipped or ApplyFailed (True), or
    leaves it AwaitingApproval when the pipeline stops first (False). Raises
    SchemaChangeFailed at Failed. Every step is recorded before the next begins; the apply
    step may run again after a crash, so `effects.apply` must be idempotent."""
    if change.step is Step.FAILED:  # a rerun: the behaviour may have changed since
        change.step = Step.FLUSHED
    while change.step in (Step.FLUSHED, Step.AWAITING_APPROVAL):
        verdict = decide(behavior, change.id, change.events, target, effects.approved(), accepted)
        if verdict.decision is Decision.WAIT:
            if change.step is not Step.AWAITING_APPROVAL:
                change.advance(Step.AWAITING_APPROVAL, verdict.reason)
                effects.record(change)
            if not effects.wait():
                return False
            continue
        if verdict.decision is Decision.FAIL:
            change.advance(Step.FAILED, verdict.reason)
            effects.record(change)
            raise SchemaChangeFailed(verdict.reason)
        if verdict.decision is Decision.SKIP:
            change.advance(Step.SKIPPED, verdict.reason)
        else:
            change.target_events = verdict.events
            change.advance(Step.APPLYING, verdict.reason)
        effects.record(change)
    if change.step is Step.APPLYING:
        applied, refusal = effects.apply(change.target_events)
        if not refusal:
            change.advance(Step.APPLIED)
        elif behavior == "try_evolve":
            change.target_events = change.target_events[:applied]
            change.advance(Step.APPLY_FAILED, f"the target refused it, rows go on in its old shape: {refusal}")
        else:
            change.advance(Step.FAILED, f"the target refused it: {refusal}")
            effects.record(change)
            raise SchemaChangeFailed(change.message)
        effects.record(change)
    return True


def pending_message(change: SchemaChangeInFlight, how_to_approve: str) -> str:
    """What a paused pipeline says about its change: which one, what it does, and, while it
    waits for approval, how to give it (the pipeline file locally, the CdcPipeline's spec
    on Kubernetes)."""
    described = "; ".join(str(e) for e in change.events) or short_statement(change.statement)
    if change.step is Step.AWAITING_APPROVAL:
        return f"schema change {change.id} ({described}) waits for approval: {how_to_approve}"
    return f"schema change {change.id} ({described}): {change.step.value}" + (
        f": {change.message}" if change.message else ""
    )


def short_statement(statement: str) -> str:
    return " ".join(statement.split())[:120]


@dataclass
class SchemaChangeHistory:
    """The last HISTORY resolved changes, newest last."""

    entries: list[dict[str, Any]] = field(default_factory=list)

    def record(self, change: SchemaChangeInFlight) -> None:
        self.entries = [*self.entries, change.to_json()][-HISTORY:]
