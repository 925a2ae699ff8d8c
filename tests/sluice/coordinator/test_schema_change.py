"""The schema change coordinator: decisions by behaviour, with Flink CDC's semantics, and
the steps a change may take."""

from __future__ import annotations

import subprocess
import sys

import pytest

from sluice.coordinator.schema_change import (
    HISTORY,
    Decision,
    SchemaChangeHistory,
    SchemaChangeInFlight,
    Step,
    change_id,
    decide,
    lenient_events,
)
from sluice.event.schema_change import (
    AddColumn,
    AlterColumnType,
    DropColumn,
    DropTable,
    RenameColumn,
    TruncateTable,
)
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


def test_a_change_moves_through_its_steps_and_survives_a_restart():
    position = BinlogOffset("mysql-bin.000001", 400)
    change = SchemaChangeInFlight(
        change_id(position), position, BinlogOffset("mysql-bin.000001", 520), "ALTER TABLE t1 ADD c0 INT", ("app.t1",)
    )
    change.advance(Step.FLUSHED)
    change.advance(Step.AWAITING_APPROVAL, "waits")
    restored = SchemaChangeInFlight.from_json(change.to_json())
    assert restored == change and restored.id == "mysql-bin.000001:400"
    restored.advance(Step.APPLIED)
    restored.advance(Step.RESUMED)
    with pytest.raises(ValueError, match="Resumed cannot go to Applied"):
        restored.advance(Step.APPLIED)


def test_nothing_is_applied_before_the_flush():
    change = SchemaChangeInFlight("x", BinlogOffset("f", 4), BinlogOffset("f", 9), "DDL", ())
    with pytest.raises(ValueError, match="Detected cannot go to Applied"):
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
