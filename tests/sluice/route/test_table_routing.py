"""What the target tables are given: rows through the filter's in-and-out rule, and schema
change events as the target's query changes (a rename route passes them on renamed; a
merged table changes once for all its members)."""

from __future__ import annotations

import pytest

from sluice.errors import DefinitionError, SinkError
from sluice.event.row_change import ChangeRow, RowKind
from sluice.event.schema_change import (
    AddColumn,
    AlterColumnType,
    DropColumn,
    RenameColumn,
    RenameTable,
    SchemaEvolution,
    TruncateTable,
)
from sluice.route.route_rule import parse_routes
from sluice.route.routing import Routing
from sluice.route.table_routing import TableRouting
from sluice.source.offset import BinlogOffset
from sluice.source.schema import Column, TableSchema
from sluice.transform.transform_rule import parse_transforms

ID = Column("id", "int", "int(11)", False)
NAME = Column("name", "varchar", "varchar(20)", True, char_length=20)
QTY = Column("qty", "int", "int(11)", True)


def shard(database: str, table: str, *extra: Column) -> TableSchema:
    return TableSchema(database, table, (ID, NAME, QTY, *extra), ("id",), "id")


def routing(route: list | None = None, transform: list | None = None) -> Routing:
    return Routing(parse_routes(route, "ALL_MATCH"), parse_transforms(transform))


def tables(rules: Routing, *schemas: TableSchema) -> TableRouting:
    return TableRouting(rules, {s.table_id: s for s in schemas})


MERGE = routing([{"source-table": "shop.orders_[0-9]", "sink-table": "shop.orders"}])
AT = BinlogOffset("mysql-bin.000001", 4)


def after(current: TableRouting, *events) -> tuple[TableRouting, list]:
    later = TableRouting(current.routing, SchemaEvolution(current.sources, events).after)
    return later, current.schema_events(events, later)


def test_a_rename_route_passes_events_on_under_the_target_name():
    rules = routing([{"source-table": "app.users", "sink-table": "ods.app_users"}])
    current = tables(rules, shard("app", "users"))
    _, events = after(current, RenameColumn("app.users", "qty", "quantity"), TruncateTable("app.users"))
    assert events == [RenameColumn("ods.app_users", "qty", "quantity"), TruncateTable("ods.app_users")]


def test_an_added_column_reaches_a_target_under_star_only():
    note = Column("note", "varchar", "varchar(10)", True, char_length=10)
    star = tables(
        routing(transform=[{"source-table": "app.users", "projection": "*, UPPER(name) AS up"}]), shard("app", "users")
    )
    _, events = after(star, AddColumn("app.users", note))
    assert events == [AddColumn("app.users", note, "AFTER", "qty")]  # where `*` stands
    listed = tables(routing(transform=[{"source-table": "app.users", "projection": "id, qty"}]), shard("app", "users"))
    assert after(listed, AddColumn("app.users", note))[1] == []
    assert after(listed, DropColumn("app.users", "name"))[1] == []  # nobody projects it: no change


def test_dropping_a_column_an_expression_reads_stops_with_the_rule_named():
    current = tables(
        routing(transform=[{"source-table": "app.users", "projection": "id, UPPER(name) AS up"}]), shard("app", "users")
    )
    with pytest.raises(
        DefinitionError, match=r"transform\[0\]\.projection \(app\.users\): name at character 11: no column name"
    ):
        after(current, DropColumn("app.users", "name"))


def test_a_merged_table_changes_once_for_all_its_members():
    current = tables(MERGE, shard("shop", "orders_0"), shard("shop", "orders_1"))
    wide = Column("qty", "bigint", "bigint(20)", True)
    current, events = after(current, AlterColumnType("shop.orders_0", wide))
    assert events == [AlterColumnType("shop.orders", wide)]
    current, events = after(current, AlterColumnType("shop.orders_1", wide))
    assert events == []  # the merged column holds it already
    note = Column("note", "text", "text", True)
    current, events = after(current, AddColumn("shop.orders_1", note))
    assert events == [AddColumn("shop.orders", note, "AFTER", "qty")]
    current, events = after(current, AddColumn("shop.orders_0", note))
    assert events == []
    current, events = after(current, DropColumn("shop.orders_0", "note"))
    assert events == []  # orders_1 still has it


def test_merged_types_widen_and_a_column_one_member_lacks_is_nullable():
    narrow = Column("code", "varchar", "varchar(10)", False, char_length=10)
    wide = Column("code", "varchar", "varchar(40)", False, char_length=40)
    current = tables(
        MERGE,
        shard("shop", "orders_0", narrow),
        TableSchema("shop", "orders_1", (ID, NAME, Column("qty", "bigint", "bigint(20)", True), wide), ("id",), "id"),
        shard("shop", "orders_2"),
    )
    merged = current.sinks["shop.orders"]
    assert merged.column("qty").column_type == "bigint(20)"
    assert merged.column("code").column_type == "varchar(40)" and merged.column("code").nullable
    row = ChangeRow(current.sources["shop.orders_2"], RowKind.INSERT, (1, "a", 2), 0, AT)
    assert current.change_rows([row])[0].row == (1, "a", 2, None)  # in the merged columns


def test_merged_members_with_different_keys_are_refused():
    other = TableSchema("shop", "orders_1", (ID, NAME, QTY), ("name",), "name")
    with pytest.raises(
        DefinitionError, match=r"shop\.orders have different keys: shop\.orders_0 \(id\); shop\.orders_1 \(name\)"
    ):
        tables(MERGE, shard("shop", "orders_0"), other)


def test_a_truncate_of_one_merged_member_is_refused_naming_it():
    current = tables(MERGE, shard("shop", "orders_0"), shard("shop", "orders_1"))
    with pytest.raises(SinkError, match=r"TRUNCATE of shop\.orders_1, one of the tables merged into shop\.orders"):
        after(current, TruncateTable("shop.orders_1"))


def test_a_table_two_all_match_routes_send_to_two_targets_reaches_each_once():
    """Flink CDC's default route-mode, ALL_MATCH: a table every rule it matches sends to
    that rule's target (an ODS copy beside a merged table, say), each change once in each."""
    rules = Routing(
        parse_routes(
            [
                {"source-table": "shop.orders_1", "sink-table": "ods.orders_1"},
                {"source-table": "shop.orders_[0-9]", "sink-table": "dw.orders"},
            ],
            "ALL_MATCH",
        )
    )
    current = tables(rules, shard("shop", "orders_1"), shard("shop", "orders_2"))
    assert [r.sink_id for r in current.routes["shop.orders_1"]] == ["ods.orders_1", "dw.orders"]
    assert current.members == {"ods.orders_1": ["shop.orders_1"], "dw.orders": ["shop.orders_1", "shop.orders_2"]}
    row = ChangeRow(shard("shop", "orders_1"), RowKind.INSERT, (1, "a", 2), 0, AT)
    assert [(r.schema.table_id, r.row) for r in current.change_rows([row])] == [
        ("ods.orders_1", (1, "a", 2)),
        ("dw.orders", (1, "a", 2)),
    ]
    ods, merged = current.routes["shop.orders_1"]
    assert current.replaceable(ods) and not current.replaceable(merged)
    _, events = after(current, AddColumn("shop.orders_1", Column("note", "text", "text", True), "LAST", None))
    assert sorted(e.table_id for e in events) == ["dw.orders", "ods.orders_1"]  # the column reaches both


def test_a_table_without_a_key_is_not_fanned_out():
    rules = Routing(
        parse_routes(
            [{"source-table": "a.t", "sink-table": "b.t"}, {"source-table": "a.\\.*", "sink-table": "c.all"}],
            "ALL_MATCH",
        )
    )
    keyless = TableSchema("a", "t", (ID, NAME), (), "id")
    with pytest.raises(DefinitionError, match=r"a\.t goes to 2 target tables \(b\.t, c\.all\), and has no key"):
        tables(rules, keyless)


def test_a_renamed_table_renames_its_target_where_it_alone_fills_it():
    rules = routing([{"source-table": "app.\\.*", "sink-table": "ods.app_<>", "replace-symbol": "<>"}])
    current = tables(rules, shard("app", "users"))
    _, events = after(current, RenameTable("app.users", "app.people"))
    assert events == [RenameTable("ods.app_users", "ods.app_people")]  # the rows go with it
    merged = tables(MERGE, shard("shop", "orders_0"), shard("shop", "orders_1"))
    _, events = after(merged, RenameTable("shop.orders_1", "shop.orders_9"))
    assert events == []  # still a member of the same target: nothing changes there


def test_a_merged_member_whose_alter_gave_its_rows_values_is_read_again():
    """The merged column is every member's, with no DEFAULT, and stays while another member
    has it: only reading the member again gives its rows the values its ALTER gave them."""
    note = Column("note", "varchar", "varchar(10)", True, char_length=10)
    current = tables(MERGE, shard("shop", "orders_0", note), shard("shop", "orders_1", note))
    flag = Column("flag", "int", "int(11)", False, default="7")
    given = [
        AddColumn("shop.orders_0", flag),  # the DEFAULT reaches orders_0's rows alone
        AddColumn("shop.orders_0", Column("code", "char", "char(2)", False, char_length=2)),  # NOT NULL: ''
        DropColumn("shop.orders_1", "note"),  # orders_0 keeps note: orders_1's rows hold NULL there
        AlterColumnType("shop.orders_1", Column("qty", "tinyint", "tinyint(4)", True)),  # values cut to fit
        AlterColumnType("shop.orders_1", Column("qty", "int", "int(10) unsigned", True)),  # negatives become 0
        AlterColumnType("shop.orders_1", Column("qty", "int", "int(11)", False)),  # NULLs become 0
    ]
    for event in given:
        later, _ = after(current, event)
        assert later.members_given_values([event], current) == [event.table_id], event
    untouched = [
        AddColumn("shop.orders_0", Column("later", "int", "int(11)", True)),  # NULL, as in the target
        AddColumn("shop.orders_0", Column("later", "int", "int(11)", True, default="NULL")),
        AlterColumnType("shop.orders_1", Column("qty", "bigint", "bigint(20)", True)),  # widened: values as they were
        AlterColumnType("shop.orders_1", Column("name", "varchar", "varchar(40)", True, char_length=40)),
    ]
    for event in untouched:
        later, _ = after(current, event)
        assert later.members_given_values([event], current) == [], event
    # A column only one member had goes from the target with it; one a table alone fills
    # takes the target's own ALTER.
    alone = tables(routing([{"source-table": "app.users", "sink-table": "ods.users"}]), shard("app", "users"))
    dropped = [DropColumn("shop.orders_0", "note"), DropColumn("shop.orders_1", "note")]
    assert after(current, *dropped)[0].members_given_values(dropped, current) == []
    added = [AddColumn("app.users", flag)]
    assert after(alone, *added)[0].members_given_values(added, alone) == []
