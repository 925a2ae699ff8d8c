"""The schema change coordinator: decisions by behaviour, with Flink CDC's semantics, and
the steps a change may take."""

from __future__ import annotations

import subprocess
import sys

import pytest

from sluice.coordinator.schema_change import (
    HISTORY,
    Decision,
    Effects,
    SchemaChangeFailed,
    SchemaChangeHistory,
    SchemaChangeInFlight,
    Step,
    change_id,
    coordinate,
    decide,
    lenient_events,
)
from sluice.event.schema_change import (
    AddColumn,
    AlterColumnType,
    CreateTable,
    DropColumn,
    DropTable,
    RenameColumn,
    TruncateTable,
)
from sluice.pipeline.schema_change_types import accepted_types
from sluice.source.offset import BinlogOffset
from sluice.source.schema import Column, TableSchema

ID = Column("id", "int", "int", False)
NAME = Column("name", "varchar", "varchar(20)", False, char_length=20)
SCHEMA = TableSchema("app", "t1", (ID, NAME), ("id",), "id")
SCHEMAS = {"app.t1": SCHEMA}
ADD = AddColumn("app.t1", Column("c0", "int", "int", False))


@pytest.mark.parametrize(
    ("behavior", "decision"),
    [
        ("evolve", Decision.APPLY),
        ("try_evolve", Decision.APPLY),
        ("ignore", Decision.SKIP),
        ("exception", Decision.FAIL),
    ],
)
def test_each_behaviour_decides_as_flink_cdc(behavior, decision):
    verdict = decide(behavior, "mysql-bin.000001:400", [ADD], SCHEMAS)
    assert verdict.decision is decision
    assert verdict.events == ((ADD,) if decision is Decision.APPLY else ())


def test_manual_waits_until_the_id_is_approved_and_says_how():
    waiting = decide("manual", "mysql-bin.000001:400", [ADD], SCHEMAS, approved=["mysql-bin.000001:9"])
    assert waiting.decision is Decision.WAIT
    assert "add 'mysql-bin.000001:400' to schema-change.approved" in waiting.reason
    approved = decide("manual", "mysql-bin.000001:400", [ADD], SCHEMAS, approved=["mysql-bin.000001:400"])
    assert approved.decision is Decision.APPLY and approved.events == (ADD,)


def test_lenient_keeps_everything_the_target_holds():
    assert lenient_events(ADD, SCHEMA) == [AddColumn("app.t1", Column("c0", "int", "int", True))]
    assert lenient_events(DropColumn("app.t1", "name"), SCHEMA) == [
        AlterColumnType("app.t1", Column("name", "varchar", "varchar(20)", True, char_length=20))
    ]
    assert lenient_events(RenameColumn("app.t1", "name", "title"), SCHEMA) == [
        AlterColumnType("app.t1", Column("name", "varchar", "varchar(20)", True, char_length=20)),
        AddColumn("app.t1", Column("title", "varchar", "varchar(20)", True, char_length=20)),
    ]
    assert lenient_events(TruncateTable("app.t1"), SCHEMA) == []
    assert lenient_events(DropTable("app.t1"), SCHEMA) == []
    assert decide("lenient", "x", [DropTable("app.t1")], SCHEMAS).decision is Decision.SKIP


POSITION = BinlogOffset("mysql-bin.000001", 400)


def _change(*events) -> SchemaChangeInFlight:
    return SchemaChangeInFlight(
        change_id(POSITION), POSITION, BinlogOffset("mysql-bin.000001", 520), "ALTER TABLE t1 ADD c0 INT", events
    )


class Recorder:
    """The caller's side of the coordinator: records every step it is given."""

    def __init__(self, approved=(), refuse_at: int | None = None, waits: int = 0) -> None:
        self.steps: list[str] = []
        self.applied: list = []
        self.approved = list(approved)
        self.refuse_at = refuse_at
        self.waits = waits

    def effects(self) -> Effects:
        return Effects(self.record, self.apply, lambda: self.approved, self.wait)

    def record(self, change: SchemaChangeInFlight) -> None:
        self.steps.append(change.step.value)
        assert SchemaChangeInFlight.from_json(change.to_json()) == change

    def apply(self, events):
        if self.refuse_at is not None:
            self.applied.extend(events[: self.refuse_at])
            return self.refuse_at, "ERROR: type text cannot be cast"
        self.applied.extend(events)
        return len(events), ""

    def wait(self) -> bool:
        self.waits -= 1
        return self.waits >= 0


def test_an_evolved_change_is_recorded_at_each_step_before_the_next():
    recorder, change = Recorder(), _change(ADD)
    assert coordinate(change, "evolve", SCHEMAS, recorder.effects())
    assert recorder.steps == ["Applying", "Applied"] and recorder.applied == [ADD]
    source, target = change.schemas_after(SCHEMAS, SCHEMAS)
    assert source["app.t1"].column_names == target["app.t1"].column_names == ("id", "name", "c0")


def test_a_change_recorded_at_applying_is_applied_again_after_a_crash():
    """The applier is idempotent; the coordinator only has to go on where the state says."""
    recorder, change = Recorder(), _change(ADD)
    change.target_events, change.step = (ADD,), Step.APPLYING
    restored = SchemaChangeInFlight.from_json(change.to_json())
    assert coordinate(restored, "evolve", SCHEMAS, recorder.effects())
    assert recorder.steps == ["Applied"] and recorder.applied == [ADD]


def test_ignore_skips_and_rows_keep_the_target_schema():
    recorder, change = Recorder(), _change(ADD)
    assert coordinate(change, "ignore", SCHEMAS, recorder.effects())
    assert recorder.steps == ["Skipped"] and recorder.applied == []
    source, target = change.schemas_after(SCHEMAS, SCHEMAS)
    assert "c0" in source["app.t1"].column_names and target == SCHEMAS


def test_ignore_creates_a_new_table_but_keeps_a_table_the_target_kept_under_its_name():
    """A DROP ignored leaves the target's table: the CREATE that follows keeps it, and rows
    are projected onto its columns (FLINK-37837's exception is for tables it lacks)."""
    created = CreateTable("app.t1", (ID, NAME, Column("z", "int", "int", True)), ("id",))
    assert decide("ignore", "mysql-bin.000001:400", [created], SCHEMAS).decision is Decision.SKIP
    new = CreateTable("app.t2", (ID,), ("id",))
    assert decide("ignore", "mysql-bin.000001:400", [new], SCHEMAS).events == (new,)


def test_try_evolve_goes_on_with_what_the_target_took():
    drop = DropColumn("app.t1", "name")
    recorder, change = Recorder(refuse_at=1), _change(ADD, drop)
    assert coordinate(change, "try_evolve", SCHEMAS, recorder.effects())
    assert change.step is Step.APPLY_FAILED and "type text cannot be cast" in change.message
    _, target = change.schemas_after(SCHEMAS, SCHEMAS)
    assert target["app.t1"].column_names == ("id", "name", "c0")


def test_evolve_fails_when_the_target_refuses():
    recorder, change = Recorder(refuse_at=0), _change(ADD)
    with pytest.raises(SchemaChangeFailed, match="type text cannot be cast"):
        coordinate(change, "evolve", SCHEMAS, recorder.effects())
    assert recorder.steps == ["Applying", "Failed"]


def test_exception_fails_and_a_rerun_with_another_behaviour_decides_again():
    recorder, change = Recorder(), _change(ADD)
    with pytest.raises(SchemaChangeFailed, match="behavior is exception"):
        coordinate(change, "exception", SCHEMAS, recorder.effects())
    assert coordinate(change, "evolve", SCHEMAS, recorder.effects())
    assert recorder.steps == ["Failed", "Applying", "Applied"]


def test_manual_waits_recorded_once_and_applies_when_approved_meanwhile():
    recorder = Recorder(waits=3)
    change = _change(ADD)

    def approve_on_second_wait() -> bool:
        if recorder.waits == 2:
            recorder.approved.append(change.id)
        return Recorder.wait(recorder)

    recorder.wait = approve_on_second_wait  # type: ignore[method-assign]
    assert coordinate(change, "manual", SCHEMAS, recorder.effects())
    assert recorder.steps == ["AwaitingApproval", "Applying", "Applied"] and recorder.applied == [ADD]


def test_manual_leaves_the_change_waiting_when_the_pipeline_stops():
    recorder, change = Recorder(waits=0), _change(ADD)
    assert not coordinate(change, "manual", SCHEMAS, recorder.effects())
    assert change.step is Step.AWAITING_APPROVAL and recorder.applied == []
    assert "add 'mysql-bin.000001:400' to schema-change.approved" in change.message


def test_the_sinks_schema_change_filters_decide_what_reaches_it():
    drop = DropColumn("app.t1", "name")
    accepted = accepted_types([], ["drop"])
    verdict = decide("evolve", "x", [ADD, drop], SCHEMAS, accepted=accepted)
    assert verdict.decision is Decision.APPLY and verdict.events == (ADD,)
    assert decide("evolve", "x", [drop], SCHEMAS, accepted=accepted).decision is Decision.SKIP
    assert accepted_types(["column"], ["add"]) == {"alter.column.type", "drop.column", "rename.column", "create.table"}
    with pytest.raises(ValueError, match="'drop.index' is no schema change type"):
        accepted_types(["drop.index"], [])


def test_steps_only_go_forward():
    change = _change(ADD)
    with pytest.raises(ValueError, match="Flushed cannot go to Applied"):
        change.advance(Step.APPLIED)
    change.advance(Step.SKIPPED)
    change.advance(Step.RESUMED)
    with pytest.raises(ValueError, match="Resumed cannot go to Applied"):
        change.advance(Step.APPLIED)


def test_history_keeps_the_last_changes():
    history = SchemaChangeHistory()
    for i in range(HISTORY + 5):
        history.record(SchemaChangeInFlight(str(i), BinlogOffset("f", i), BinlogOffset("f", i + 1), "DDL", ()))
    assert [e["id"] for e in history.entries] == [str(i) for i in range(5, HISTORY + 5)]


def test_the_coordinator_needs_no_spark():
    """The operator imports it, and the operator's image has no pyspark."""
    code = "import sys, sluice.coordinator.schema_change; assert 'pyspark' not in sys.modules, sorted(sys.modules)"
    subprocess.run([sys.executable, "-c", code], check=True)
