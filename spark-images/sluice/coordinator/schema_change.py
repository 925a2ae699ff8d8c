"""The schema change coordinator: what to do with a DDL's events, and the steps a change
goes through. Pure Python, no pyspark and no I/O, so that the local runner and the
Kubernetes operator drive the same state machine.

A change is one DDL statement on captured tables, known by its binlog position. Its steps,
each recorded before the next begins, so a crash resumes at the step it reached:

    Detected -> Flushed -> (AwaitingApproval ->) Applied | Skipped | ApplyFailed | Failed -> Resumed

Decisions follow Flink CDC's `schema.change.behavior` (evolve, try_evolve, lenient, ignore,
exception) plus `manual`: wait until the change's id is in the approved list.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from sluice.event.schema_change import (
    AddColumn,
    AlterColumnType,
    DropColumn,
    DropTable,
    RenameColumn,
    SchemaChangeEvent,
    TruncateTable,
)
from sluice.source.offset import BinlogOffset
from sluice.source.schema import TableSchema

HISTORY = 20  # applied changes kept in state


class Step(str, enum.Enum):
    DETECTED = "Detected"  # the reader stopped before the DDL
    FLUSHED = "Flushed"  # everything before it is committed to the sink
    AWAITING_APPROVAL = "AwaitingApproval"  # manual: its id is not approved yet
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
    schemas: dict[str, TableSchema],
    approved: Collection[str] = (),
) -> Verdict:
    """What `behavior` does with one change's events (after the flush)."""
    if behavior == "exception":
        return Verdict(Decision.FAIL, reason="pipeline.schema.change.behavior is exception")
    if behavior == "ignore":
        return Verdict(Decision.SKIP, reason="schema.change.behavior is ignore")
    if behavior == "manual" and change not in approved:
        return Verdict(
            Decision.WAIT,
            reason=f"schema change {change} waits for approval: add '{change}' to schema-change.approved",
        )
    if behavior == "lenient":
        lenient = tuple(e for event in events for e in lenient_events(event, schemas.get(event.table_id)))
        return Verdict(Decision.APPLY if lenient else Decision.SKIP, lenient, "schema.change.behavior is lenient")
    return Verdict(Decision.APPLY, tuple(events))  # evolve, try_evolve, an approved manual change


def lenient_events(event: SchemaChangeEvent, schema: TableSchema | None) -> list[SchemaChangeEvent]:
    """Flink CDC's lenient conversion: nothing already in the target is lost. A dropped
    column stays (nullable), a renamed one stays and the new name is added (nullable), an
    added one is nullable, a truncated or dropped table is left alone."""
    if isinstance(event, (TruncateTable, DropTable)):
        return []
    if isinstance(event, AddColumn):
        return [AddColumn(event.table_id, dataclasses.replace(event.column, nullable=True))]
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
    """One change between its detection and its resumption: what the state records."""

    id: str
    position: BinlogOffset  # where the DDL starts: nothing at or after it is written before it is resolved
    resume_at: BinlogOffset  # right after the DDL
    statement: str
    tables: tuple[str, ...]
    step: Step = Step.DETECTED
    message: str = ""

    def advance(self, step: Step, message: str = "") -> None:
        if step not in _NEXT[self.step]:
            raise ValueError(f"schema change {self.id}: {self.step.value} cannot go to {step.value}")
        self.step, self.message = step, message

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "position": self.position.to_json(),
            "resumeAt": self.resume_at.to_json(),
            "statement": self.statement,
            "tables": list(self.tables),
            "step": self.step.value,
            "message": self.message,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SchemaChangeInFlight:
        return cls(
            data["id"],
            BinlogOffset.from_json(data["position"]),
            BinlogOffset.from_json(data["resumeAt"]),
            data["statement"],
            tuple(data["tables"]),
            Step(data["step"]),
            data.get("message", ""),
        )


_NEXT: dict[Step, set[Step]] = {
    Step.DETECTED: {Step.FLUSHED},
    Step.FLUSHED: {Step.AWAITING_APPROVAL, Step.APPLIED, Step.SKIPPED, Step.APPLY_FAILED, Step.FAILED},
    Step.AWAITING_APPROVAL: {Step.AWAITING_APPROVAL, Step.APPLIED, Step.SKIPPED, Step.APPLY_FAILED, Step.FAILED},
    Step.APPLIED: {Step.RESUMED},
    Step.SKIPPED: {Step.RESUMED},
    Step.APPLY_FAILED: {Step.RESUMED},
    Step.FAILED: set(),
    Step.RESUMED: set(),
}


@dataclass
class SchemaChangeHistory:
    """The last HISTORY resolved changes, newest last."""

    entries: list[dict[str, Any]] = field(default_factory=list)

    def record(self, change: SchemaChangeInFlight) -> None:
        self.entries = [*self.entries, change.to_json()][-HISTORY:]
