"""Schema change events change the schema that rows after them are decoded with."""

from __future__ import annotations

from sluice.event.schema_change import (
    AddColumn,
    AlterColumnType,
    CreateTable,
    DropColumn,
    DropTable,
    RenameColumn,
    RenameTable,
    SchemaEvolution,
    as_spelled,
    is_reflected,
)
from sluice.source.schema import Column, TableSchema

SCHEMA = TableSchema(
    "app", "t1", (Column("id", "int", "int", False), Column("name", "text", "text", True)), ("id",), "id"
)


def test_events_change_the_schema_rows_are_decoded_with():
    added = AddColumn("app.t1", Column("c0", "int", "int", True), "AFTER", "id").applied_to(SCHEMA)
    assert added.column_names == ("id", "c0", "name")
    renamed = RenameColumn("app.t1", "id", "key").applied_to(added)
    assert (renamed.column_names, renamed.primary_key, renamed.chunk_key) == (("key", "c0", "name"), ("key",), "key")
    assert DropColumn("app.t1", "c0").applied_to(renamed).column_names == ("key", "name")
    assert DropTable("app.t1").applied_to(SCHEMA) is None
    moved = RenameTable("app.t1", "archive.t1").applied_to(SCHEMA)
    assert moved.table_id == "archive.t1" and moved.position("name") == 1


def test_an_evolution_gives_each_event_the_schemas_it_finds_and_leaves():
    other = TableSchema("app", "t2", (Column("id", "int", "int", False),), ("id",), "id")
    add = AddColumn("app.t1", Column("c0", "int", "int", True))
    rename = RenameTable("app.t1", "app.t3")
    drop = DropTable("app.t2")
    evolution = SchemaEvolution({"app.t1": SCHEMA, "app.t2": other}, [add, rename, drop])

    steps = list(evolution.steps())

    assert [event for event, _, _ in steps] == [add, rename, drop]
    assert steps[0][1]["app.t1"] == SCHEMA and steps[0][2]["app.t1"].column_names == ("id", "name", "c0")
    assert steps[1][1] == steps[0][2] and set(steps[1][2]) == {"app.t3", "app.t2"}
    assert set(evolution.after) == {"app.t3"} and evolution.after["app.t3"].column_names == ("id", "name", "c0")
    assert set(evolution.before) == {"app.t1", "app.t2"}  # as given, untouched


def test_events_print_as_flink_cdc_prints_them():
    event = AddColumn("app.t1", Column("c0", "varchar", "varchar(255)", True), "AFTER", "id")
    assert str(event) == (
        "AddColumnEvent{tableId=app.t1, addedColumns=[ColumnWithPosition{column=`c0` VARCHAR(255), "
        "position=AFTER `id`}]}"
    )
    assert str(DropColumn("app.t1", "c0")) == "DropColumnEvent{tableId=app.t1, droppedColumnNames=['c0']}"


def test_an_event_a_table_already_shows_is_recognised():
    """What makes applying idempotent across a crash, and history read from an older
    position harmless."""
    tables = {("app", "t1"): ("id", "name")}

    def columns(database: str, table: str) -> tuple[str, ...]:
        return tables.get((database, table), ())

    created = CreateTable("app.t1", SCHEMA.columns, ("id",))
    assert is_reflected(created, columns) and not is_reflected(CreateTable("app.t2", SCHEMA.columns, ()), columns)
    assert is_reflected(AddColumn("app.t1", Column("name", "text", "text", True)), columns)
    assert not is_reflected(AddColumn("app.t1", Column("c0", "int", "int", True)), columns)
    assert is_reflected(DropColumn("app.t1", "c0"), columns) and not is_reflected(DropColumn("app.t1", "name"), columns)
    assert is_reflected(RenameColumn("app.t1", "old", "name"), columns)
    assert not is_reflected(RenameColumn("app.t1", "name", "title"), columns)
    assert is_reflected(RenameTable("app.t0", "app.t1"), columns)
    assert not is_reflected(DropColumn("app.t3", "c0"), columns)  # no such table: nothing shown


def test_column_names_are_spelled_as_the_table_spells_them():
    columns = lambda database, table: ("id", "name") if table == "t1" else ()  # noqa: E731
    events = as_spelled(
        [
            DropColumn("app.t1", "NAME"),
            AddColumn("app.t1", Column("c0", "int", "int", True), "AFTER", "ID"),
            RenameColumn("app.t1", "C0", "c1"),
            AlterColumnType("app.t1", Column("Id", "bigint", "bigint", False)),
        ],
        columns,
    )
    assert events == [
        DropColumn("app.t1", "name"),
        AddColumn("app.t1", Column("c0", "int", "int", True), "AFTER", "id"),
        RenameColumn("app.t1", "c0", "c1"),
        RenameColumn("app.t1", "id", "Id"),  # MODIFY Id ... respells the column, as MySQL does
        AlterColumnType("app.t1", Column("Id", "bigint", "bigint", False)),
    ]
