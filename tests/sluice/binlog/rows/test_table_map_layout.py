"""What a table map says a statement did, when the statement itself could not be read: the
difference between the reader's layout and the table map's, decided by the statement's
words where the layouts alone cannot decide (the end-to-end tests read real table maps:
tests/sluice/runtime/test_schema_evolution.py and the probes of the DDL corpus test)."""

from __future__ import annotations

from types import SimpleNamespace

from pymysqlreplication.constants import FIELD_TYPE

from sluice.binlog.rows.table_map_layout import as_the_server_spells, binlog_shape, layout_change, table_map_columns
from sluice.binlog.transaction_reader import Transaction
from sluice.event.schema_change import (
    AddColumn,
    AlterColumnType,
    AlterPrimaryKey,
    CreateTable,
    DropColumn,
    RenameColumn,
    SchemaChange,
)
from sluice.source.schema import Column, TableSchema, read_table_schema
from tests.harness.binlog_reading import position, read_between
from tests.harness.column_types import COLUMNS


def _int(name: str, unsigned: bool = False) -> SimpleNamespace:
    return SimpleNamespace(type=FIELD_TYPE.LONG, name=name, unsigned=unsigned, collation_name=None)


def _bigint(name: str) -> SimpleNamespace:
    return SimpleNamespace(type=FIELD_TYPE.LONGLONG, name=name, unsigned=False, collation_name=None)


def _varchar(name: str, chars: int, charset: str = "utf8mb4") -> SimpleNamespace:
    per_char = {"utf8mb4": 4, "latin1": 1, "binary": 1}[charset]
    collation = "binary" if charset == "binary" else f"{charset}_general_ci"
    return SimpleNamespace(
        type=FIELD_TYPE.VARCHAR, name=name, unsigned=False, collation_name=collation, max_length=chars * per_char
    )


def _table(*columns: SimpleNamespace, key: tuple[str, ...] = ("id",), nullable: tuple[bool, ...] | None = None):
    return SimpleNamespace(
        columns=list(columns), key_order=key, nullable=nullable or tuple(c.name not in key for c in columns)
    )


HELD = TableSchema(
    "db",
    "t",
    (
        Column("id", "int", "int(11)", False),
        Column("a", "int", "int(11)", True),
        Column("b", "varchar", "varchar(10)", True, "utf8mb4_general_ci", 10),
    ),
    ("id",),
    "id",
)


def test_the_same_layout_is_no_change_whatever_the_spelling_the_table_map_cannot_show():
    held = TableSchema(
        "db",
        "t",
        (
            Column("id", "int", "int(10) unsigned zerofill", False),
            Column("f", "float", "float(7,4)", True),
            Column("j", "longtext", "longtext", True, "utf8mb4_bin"),
            Column("p", "point", "point", True),
        ),
        ("id",),
        "id",
    )
    table = _table(
        _int("id", unsigned=True),
        SimpleNamespace(type=FIELD_TYPE.FLOAT, name="f", unsigned=False, collation_name=None),
        SimpleNamespace(type=FIELD_TYPE.BLOB, name="j", unsigned=False, collation_name="utf8mb4_bin", length_size=4),
        SimpleNamespace(type=FIELD_TYPE.GEOMETRY, name="p", unsigned=False, collation_name=None, geometry_type=1),
    )
    assert layout_change(held, "db.t", table).events == ()


def test_a_column_added_and_one_dropped_elsewhere_are_an_add_and_a_drop():
    table = _table(_int("id"), _varchar("b", 10), _int("c"))
    change = layout_change(HELD, "db.t", table)
    assert change.events == (
        DropColumn("db.t", "a"),
        AddColumn("db.t", table_map_columns(table)[2], "AFTER", "b"),
    )
    assert not change.undecided


def test_a_column_in_the_place_of_another_of_the_same_type_is_a_rename():
    change = layout_change(HELD, "db.t", _table(_int("id"), _int("a2"), _varchar("b", 10)))
    assert change.events == (RenameColumn("db.t", "a", "a2"),)


def test_the_statements_words_decide_between_a_rename_and_a_drop():
    table = _table(_int("id"), _bigint("a2"), _varchar("b", 10))
    renamed = layout_change(HELD, "db.t", table, "ALTER TABLE t CHANGE COLUMN `a` a2 BIGINT, FOO=1")
    assert [type(e) for e in renamed.events] == [RenameColumn, AlterColumnType] and not renamed.undecided
    dropped = layout_change(HELD, "db.t", table, "ALTER TABLE t DROP a, ADD a2 BIGINT AFTER id, FOO=1")
    assert [type(e) for e in dropped.events] == [DropColumn, AddColumn] and not dropped.undecided


def test_renamed_and_retyped_with_no_words_to_decide_is_undecided_and_read_as_a_rename():
    change = layout_change(HELD, "db.t", _table(_int("id"), _bigint("a2"), _varchar("b", 10)))
    assert [type(e) for e in change.events] == [RenameColumn, AlterColumnType]
    assert "whether a int(11) became a2 bigint(20) by a rename or by a drop and an add" in change.undecided


def test_a_type_widened_nullability_and_the_primary_key_are_changes_of_their_own():
    table = _table(_int("id"), _int("a"), _varchar("b", 40), key=("id", "a"))
    change = layout_change(HELD, "db.t", table)
    assert change.events == (
        AlterColumnType("db.t", table_map_columns(table)[1]),
        AlterColumnType("db.t", table_map_columns(table)[2]),
        AlterPrimaryKey("db.t", ("id", "a")),
    )
    assert table_map_columns(table)[2].column_type == "varchar(40)"  # bytes over the charset's widest character


def test_a_name_whose_case_alone_changed_takes_the_servers_spelling():
    change = layout_change(HELD, "db.t", _table(_int("id"), _int("A"), _varchar("b", 10)))
    assert change.events == (RenameColumn("db.t", "a", "A"),)


def test_a_table_the_reader_does_not_know_is_created_as_its_table_map_says():
    change = layout_change(None, "db.n", _table(_int("id"), _varchar("c", 10, "latin1")))
    (event,) = change.events
    assert isinstance(event, CreateTable) and event.primary_key == ("id",)
    assert [(c.name, c.column_type, c.nullable) for c in event.columns] == [
        ("id", "int(11)", False),
        ("c", "varchar(10)", True),
    ]


def test_the_servers_spelling_is_taken_where_it_agrees_with_the_table_map():
    table = _table(_int("id"), _int("a"), _varchar("b", 10), _int("z", unsigned=True))
    (added,) = layout_change(HELD, "db.t", table).events
    live = TableSchema("db", "t", (*HELD.columns, Column("z", "int", "int(10) unsigned zerofill", True)), ("id",), "id")
    (spelled,) = as_the_server_spells([added], live)
    assert spelled.column.column_type == "int(10) unsigned zerofill"
    later = TableSchema("db", "t", (*HELD.columns, Column("z", "bigint", "bigint(20)", True)), ("id",), "id")
    assert as_the_server_spells([added], later) == (added,)  # changed again since: the table map's
    assert binlog_shape(spelled.column) == binlog_shape(added.column)


def test_the_table_map_of_every_column_type_matches_the_layout_a_snapshot_reads(mariadb, source_db):
    """A table map is compared with the reader's layout after a statement that could not
    be read: a difference where there is none would alter a target's column for nothing.
    Every type and modifier of the every-type test, from a real binlog, against
    information_schema's description."""
    columns = ", ".join(f"{name} {kind}" for name, kind in COLUMNS.items())
    mariadb.execute(f"CREATE TABLE every_type (id INT PRIMARY KEY, {columns})", database=source_db)
    with mariadb.connect(source_db) as conn, conn.cursor() as cur:
        schema = read_table_schema(conn, source_db, "every_type")
        start = position(cur)
        cur.execute("INSERT INTO every_type (id) VALUES (1)")
        end = position(cur)
    # As after a statement on it that could not be read: its next table map is compared.
    read = read_between(mariadb, source_db, start, end, {schema.table_id: schema}, unread=[schema.table_id])
    (settled,) = [i for i in read if isinstance(i, SchemaChange)]
    assert settled.events == () and settled.settled == (schema.table_id,)
    assert sum(len(i.events) for i in read if isinstance(i, Transaction)) == 1


def test_the_invisible_system_time_columns_of_a_versioned_table_are_no_columns_of_its_layout():
    """WITH SYSTEM VERSIONING adds row_start and row_end last, invisible: a table map shows
    them and information_schema does not. In a layout they would be copied to the target,
    and the history rows they mark would pass for current ones."""

    def system_time(name: str) -> SimpleNamespace:
        return SimpleNamespace(type=FIELD_TYPE.TIMESTAMP2, name=name, unsigned=False, collation_name=None, fsp=6)

    versioned = _table(_int("id"), _int("a"), system_time("row_start"), system_time("row_end"))
    created = layout_change(None, "db.t", versioned).events
    assert created == (
        CreateTable("db.t", (Column("id", "int", "int(11)", False), Column("a", "int", "int(11)", True)), ("id",)),
    )
    held = TableSchema("db", "t", (Column("id", "int", "int(11)", False),), ("id",), "id")
    assert layout_change(held, "db.t", versioned).events == (
        AddColumn("db.t", Column("a", "int", "int(11)", True), "AFTER", "id"),
    )
    declared = TableSchema(
        "db", "t", (*held.columns, Column("row_start", "timestamp", "timestamp(6)", True)), ("id",), "id"
    )
    assert [e.column.name for e in layout_change(declared, "db.t", versioned).events] == ["a", "row_end"]
