"""DDL statements from the binlog become typed schema change events, one per alteration of
a captured table; other tables' DDL gives none; what cannot be read is said, never skipped."""

from __future__ import annotations

import dataclasses

import pytest

from sluice.binlog.ddl.ddl_context import RowsReplaced, TableSchemas
from sluice.binlog.ddl.ddl_parser import parse_ddl
from sluice.binlog.ddl.ddl_terms import UnparsableDdl
from sluice.event.schema_change import (
    AddColumn,
    AlterColumnType,
    AlterPrimaryKey,
    CreateTable,
    DropColumn,
    DropTable,
    RenameColumn,
    RenameTable,
    SchemaEvolution,
    TruncateTable,
)
from sluice.source.schema import Column, TableSchema


def captured(database: str, table: str) -> bool:
    return database == "app" and table.startswith("t")


def parse(statement: str) -> list:
    return parse_ddl(statement, "app", captured)


def test_add_column_with_its_position_and_type():
    (first, after, last) = parse(
        "ALTER TABLE t1 ADD COLUMN c0 VARCHAR(255) NOT NULL FIRST, ADD c1 DECIMAL(10,2) AFTER id, ADD c2 INT UNSIGNED"
    )
    assert isinstance(first, AddColumn) and first.position == "FIRST"
    assert (first.column.name, first.column.data_type, first.column.column_type) == ("c0", "varchar", "varchar(255)")
    assert first.column.char_length == 255 and not first.column.nullable
    assert (after.position, after.after) == ("AFTER", "id")
    assert (after.column.numeric_precision, after.column.numeric_scale) == (10, 2)
    assert last.position == "LAST" and last.column.column_type == "int unsigned" and last.column.unsigned
    assert str(last) == (
        "AddColumnEvent{tableId=app.t1, addedColumns=[ColumnWithPosition{column=`c2` INT UNSIGNED, position=LAST}]}"
    )


def test_defaults_and_mariadb_only_types_are_kept():
    (inet, default) = parse("ALTER TABLE t1 ADD COLUMN ip INET6 NOT NULL, ADD c VARCHAR(5) DEFAULT 'web'")
    assert (inet.column.data_type, inet.column.column_type, inet.column.nullable) == ("inet6", "inet6", False)
    assert default.column.default == "'web'"
    (created,) = parse("CREATE TABLE t9 (id INT PRIMARY KEY, a INET4, u UUID)")
    assert [c.column_type for c in created.columns] == ["int", "inet4", "uuid"]


def test_partitioning_keeps_the_columns_and_rows_changed_without_row_events_name_their_tables():
    assert parse("ALTER TABLE t1 PARTITION BY HASH(id) PARTITIONS 4") == []
    assert parse("ALTER TABLE t1 REORGANIZE PARTITION p0 INTO (PARTITION p0 VALUES LESS THAN (5))") == []
    for statement in ("ALTER TABLE t1 DROP PARTITION p0", "ALTER TABLE `t1` TRUNCATE PARTITION p0"):
        with pytest.raises(RowsReplaced, match="without row events") as replaced:
            parse(statement)
        assert replaced.value.tables == ("app.t1",)
    with pytest.raises(RowsReplaced) as replaced:
        parse("ALTER TABLE t1 EXCHANGE PARTITION p0 WITH TABLE app.t2")
    assert replaced.value.tables == ("app.t1", "app.t2")  # both are captured: both are read again
    assert parse("ALTER TABLE other EXCHANGE PARTITION p0 WITH TABLE x") == []


def test_several_alterations_in_one_statement_are_several_events_in_order():
    events = parse("ALTER TABLE app.t2 DROP COLUMN a, RENAME COLUMN b TO c, MODIFY d BIGINT, CHANGE e f TEXT")
    assert events == [
        DropColumn("app.t2", "a"),
        RenameColumn("app.t2", "b", "c"),
        AlterColumnType("app.t2", events[2].column),
        RenameColumn("app.t2", "e", "f"),
        AlterColumnType("app.t2", events[4].column),
    ]
    assert events[2].column.column_type == "bigint" and events[4].column.name == "f"


def test_tables_outside_the_capture_are_ignored():
    assert parse("ALTER TABLE other ADD COLUMN x INT") == []
    assert parse("ALTER TABLE elsewhere.t1 ADD COLUMN x INT") == []
    assert parse("DROP TABLE other") == []
    assert parse("CREATE TABLE other (id INT)") == []


def test_alterations_that_leave_the_columns_give_no_event():
    assert parse("ALTER TABLE t1 ADD INDEX i (a), ALTER COLUMN a SET DEFAULT 1") == []


def test_create_truncate_drop_and_rename_tables():
    (create,) = parse("CREATE TABLE IF NOT EXISTS t9 (id BIGINT, v TEXT NOT NULL, PRIMARY KEY (id))")
    assert isinstance(create, CreateTable) and create.primary_key == ("id",)
    assert [(c.name, c.nullable) for c in create.columns] == [("id", False), ("v", False)]
    assert parse("TRUNCATE TABLE t1") == [TruncateTable("app.t1")]
    assert parse("DROP TABLE IF EXISTS t1, other, app.t2") == [DropTable("app.t1"), DropTable("app.t2")]
    assert parse("RENAME TABLE t1 TO t1_old, `other` TO `t3`") == [
        RenameTable("app.t1", "app.t1_old"),
        RenameTable("app.other", "app.t3"),  # renamed into the capture
    ]
    assert parse("ALTER TABLE t1 RENAME TO archive.t1") == [RenameTable("app.t1", "archive.t1")]
    # gh-ost's cut-over, its comment and all (it was read as no statement at all)
    assert parse("rename /* gh-ost */ table `app`.`t1` to `app`.`_t1_del`, `app`.`_t1_gho` to `app`.`t1`") == [
        RenameTable("app.t1", "app._t1_del"),
        RenameTable("app._t1_gho", "app.t1"),
    ]


def test_what_cannot_be_read_on_a_captured_table_is_refused_naming_the_statement():
    with pytest.raises(UnparsableDdl, match="cannot read the DDL statement 'ALTER TABLE t1 ADD COLUMN"):
        parse("ALTER TABLE t1 ADD COLUMN c INT DEFAULT LAST_VALUE(a, b)")
    # Another table's statement never stops the pipeline, whatever it says.
    assert parse("ALTER TABLE other ADD COLUMN c INT DEFAULT LAST_VALUE(a, b)") == []
    assert parse("ALTER TABLE other UNKNOWN SYNTAX (") == []


def test_statements_that_are_no_table_ddl_give_nothing_even_naming_a_captured_table():
    assert parse("CREATE USER 't1'@'%' IDENTIFIED BY 'x'") == []
    assert parse("GRANT SELECT ON app.t1 TO 'u'@'%'") == []
    assert parse("CREATE DATABASE t1") == []


def test_a_primary_key_names_its_columns_case_insensitively():
    (create,) = parse("CREATE TABLE t1 (id INT, Code VARCHAR(5), PRIMARY KEY (ID, code))")
    assert create.primary_key == ("id", "Code")
    assert [c.nullable for c in create.columns] == [False, False]


@pytest.mark.parametrize(
    "statement",
    [
        "ALTER TABLE t1 FORCE",
        "REPAIR TABLE t1",
        "REPAIR NO_WRITE_TO_BINLOG TABLE t1 QUICK",
        "CHECK TABLE t1 FOR UPGRADE",
        "OPTIMIZE LOCAL TABLE t1",
        "ANALYZE TABLE t1 PERSISTENT FOR ALL",
    ],
)
def test_statements_that_change_no_layout_give_no_event(statement):
    assert parse(statement) == []


def test_create_table_like_takes_the_layout_of_the_table_it_names():
    original = TableSchema(
        "app", "t1", (Column("id", "int", "int", False), Column("v", "text", "text", True)), ("id",), "id"
    )
    known = TableSchemas({"app.t1": original})
    for statement in ("CREATE TABLE t1_new LIKE t1", "CREATE TABLE t1_new (LIKE app.t1)"):
        (create,) = parse_ddl(statement, "app", captured, known)
        assert create == CreateTable("app.t1_new", original.columns, ("id",))
    with pytest.raises(UnparsableDdl, match="the table it copies, app.other, is not captured"):
        parse_ddl("CREATE TABLE t1_new LIKE other", "app", captured, known)


T1 = TableSchema(
    "app",
    "t1",
    (Column("id", "int", "int", False), Column("a", "int", "int", True), Column("b", "varchar", "varchar(5)", True)),
    ("id",),
    "id",
)


def parse_known(statement: str) -> list:
    return parse_ddl(statement, "app", captured, TableSchemas({"app.t1": T1}), mariadb=True)


def after(statement: str) -> TableSchema:
    return SchemaEvolution({"app.t1": T1}, parse_known(statement)).after["app.t1"]


@pytest.mark.parametrize(
    ("statement", "types"),
    [
        ("CREATE TABLE t2 (id INT PRIMARY KEY, f FLOAT UNSIGNED, d DOUBLE(10,2) UNSIGNED ZEROFILL)",
         ["int", "float unsigned", "double(10,2) unsigned zerofill"]),
        ("CREATE TABLE t2 (id INT PRIMARY KEY, p POINT NOT NULL, g GEOMETRY NOT NULL SRID 4326, l LINESTRING "
         "REF_SYSTEM_ID=4326, mp MULTIPOLYGON, gc GEOMETRYCOLLECTION, SPATIAL INDEX (p))",
         ["int", "point", "geometry", "linestring", "multipolygon", "geometrycollection"]),
        ("CREATE TABLE t2 (id INT PRIMARY KEY, n NATIONAL VARCHAR(10), c NATIONAL CHAR(3), v LONG VARCHAR)",
         ["int", "varchar(10)", "char(3)", "mediumtext"]),
        ("CREATE TABLE t2 (id SERIAL, v INT SERIAL DEFAULT VALUE)", ["bigint(20) unsigned", "int"]),
        ("CREATE TABLE t2 (id INT, d DATE, PRIMARY KEY (id, d)) PARTITION BY RANGE (YEAR(d)) "
         "(PARTITION p0 VALUES LESS THAN (2000), PARTITION p1 VALUES LESS THAN MAXVALUE)", ["int", "date"]),
        ("CREATE TABLE t2 (id INT PRIMARY KEY, x INT WITHOUT SYSTEM VERSIONING) WITH SYSTEM VERSIONING",
         ["int", "int"]),
        ("CREATE TABLE t2 (a BOOL, b DECIMAL, c NUMERIC(5), d CHAR, e YEAR, f INT(2) ZEROFILL, g JSON, h BINARY, "
         "i BLOB(300), j REAL, k FLOAT(30), l TEXT CHARACTER SET binary, m ENUM('a ','b'), n VARCHAR(9) COMPRESSED)",
         ["tinyint(1)", "decimal(10,0)", "decimal(5,0)", "char(1)", "year(4)", "int(2) unsigned zerofill", "longtext",
          "binary(1)", "blob", "double", "double", "blob", "enum('a','b')", "varchar(9)"]),
    ],
)  # fmt: skip
def test_every_day_create_table_statements_read_as_the_server_spells_their_types(statement, types):
    (create,) = parse_ddl(statement, "app", captured, mariadb=True)
    assert [c.column_type for c in create.columns] == types


@pytest.mark.parametrize(
    "statement",
    [
        "ALTER TABLE t1 CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci",
        "ALTER TABLE t1 WITH SYSTEM VERSIONING",
        "ALTER TABLE t1 DROP SYSTEM VERSIONING",
        "ALTER TABLE t1 DISABLE KEYS",
        "ALTER TABLE t1 DISCARD TABLESPACE",
        "ALTER TABLE t1 ALTER INDEX i IGNORED",
        "ALTER TABLE t1 DROP INDEX i, DROP FOREIGN KEY IF EXISTS fk, DROP CONSTRAINT c, RENAME KEY k TO kk",
        "ALTER TABLE t1 ADD KEY IF NOT EXISTS x (a), ADD FOREIGN KEY IF NOT EXISTS (a) REFERENCES t9 (id)",
        "ALTER TABLE t1 ADD PERIOD FOR SYSTEM_TIME (s, e)",
        "ALTER TABLE t1 AVG_ROW_LENGTH 10",
        "ALTER TABLE t1",
    ],
)
def test_alterations_of_indexes_constraints_and_options_change_no_column(statement):
    assert parse_known(statement) == []


def test_alter_online_and_ignore_are_read_like_any_alter():
    """They were read as commands naming no table: a column added ONLINE was lost."""
    assert after("ALTER ONLINE TABLE t1 ADD COLUMN c INT").column_names == ("id", "a", "b", "c")
    assert after("ALTER IGNORE TABLE t1 DROP COLUMN a").column_names == ("id", "b")


def test_one_alters_clauses_name_the_columns_as_they_were_before_it():
    swapped = after("ALTER TABLE t1 CHANGE a b VARCHAR(5), CHANGE b a INT")
    assert [(c.name, c.column_type) for c in swapped.columns] == [("id", "int"), ("b", "varchar(5)"), ("a", "int")]
    chained = after("ALTER TABLE t1 RENAME COLUMN a TO b, RENAME COLUMN b TO c")
    assert chained.column_names == ("id", "b", "c")
    readded = after("ALTER TABLE t1 DROP b, ADD b INT NOT NULL")
    assert [(c.name, c.column_type, c.nullable) for c in readded.columns][-1] == ("b", "int", False)
    assert (
        after("ALTER TABLE t1 ADD COLUMN IF NOT EXISTS a BIGINT, ADD c INT, MODIFY c BIGINT").column("c").column_type
        == "bigint"
    )
    assert after("ALTER TABLE t1 ADD COLUMN IF NOT EXISTS a BIGINT").column("a").column_type == "int"
    assert after("ALTER TABLE t1 DROP COLUMN IF EXISTS nope, MODIFY IF EXISTS nope INT") == T1
    assert after("ALTER TABLE t1 ADD COLUMN (c INT, d INT)").column_names == ("id", "a", "b", "c", "d")
    assert after("ALTER TABLE t1 CHANGE id id BIGINT").column("id").nullable is False  # a key column stays NOT NULL


def test_a_rename_to_goes_after_the_columns_clauses():
    events = parse_known("ALTER TABLE t1 RENAME TO t2, ADD c CHAR(10)")
    assert [type(e) for e in events] == [AddColumn, RenameTable]
    assert SchemaEvolution({"app.t1": T1}, events).after["app.t2"].column_names == ("id", "a", "b", "c")
    # MySQL's TO is optional and AS is its synonym (the corpus has `RENAME as t2, DROP b`).
    assert parse_known("ALTER TABLE t1 RENAME AS t2, DROP b")[-1] == RenameTable("app.t1", "app.t2")
    assert parse_known("ALTER TABLE t1 RENAME archive.t2") == [RenameTable("app.t1", "archive.t2")]


def test_create_or_replace_of_a_known_table_drops_it_first_and_drop_database_drops_its_tables():
    assert [type(e) for e in parse_known("CREATE OR REPLACE TABLE t1 (x INT)")] == [DropTable, CreateTable]
    assert parse_known("DROP DATABASE app") == [DropTable("app.t1")]
    assert parse_known("DROP SCHEMA IF EXISTS other") == []


def test_a_primary_key_added_dropped_or_moved_is_one_event_after_the_columns_changes():
    assert parse_known("ALTER TABLE t1 DROP PRIMARY KEY") == [AlterPrimaryKey("app.t1", ())]
    assert parse_known("ALTER TABLE t1 DROP PRIMARY KEY, ADD CONSTRAINT pk PRIMARY KEY (ID, a)") == [
        AlterPrimaryKey("app.t1", ("id", "a"))
    ]
    assert parse_known("ALTER TABLE t1 ADD PRIMARY KEY IF NOT EXISTS (a)") == []  # it has one
    added = parse_known("ALTER TABLE t1 DROP PRIMARY KEY, ADD k INT AUTO_INCREMENT PRIMARY KEY FIRST")
    assert [type(e) for e in added] == [AddColumn, AlterPrimaryKey] and added[-1].primary_key == ("k",)
    keyed = after("ALTER TABLE t1 DROP PRIMARY KEY, ADD PRIMARY KEY (a, b(3))")
    assert keyed.primary_key == ("a", "b") and not keyed.column("a").nullable


def test_table_names_resolve_as_lower_case_table_names_says():
    def shop(database: str, table: str) -> bool:
        return (database, table) == ("app", "t1")

    statement = "ALTER TABLE APP.T1 ADD COLUMN c INT"
    assert parse_ddl(statement, "app", shop, TableSchemas({"app.t1": T1})) == []  # 0: names are case-sensitive
    for setting in (1, 2):  # 1: stored in lower case; 2: stored as created, compared in lower case
        (added,) = parse_ddl(statement, "App", shop, TableSchemas({"app.t1": T1}), lower_case_table_names=setting)
        assert added.table_id == "app.t1"


def test_qualified_column_names_and_index_renames_read_as_the_server_reads_them():
    (created,) = parse("CREATE TABLE t2 (t2.a INT, app.t2.b INT)")
    assert [c.name for c in created.columns] == ["a", "b"]
    assert after("ALTER TABLE t1 ADD COLUMN t1.c INT").column_names == ("id", "a", "b", "c")
    assert parse_known("ALTER TABLE t1 RENAME KEY IF EXISTS d TO e") == []


def test_rows_a_server_logged_as_a_statement_name_the_captured_tables_to_read_again():
    """MariaDB logs every change of a table versioned by transaction id as a statement, even
    under binlog_format=ROW; a session may log its own so (binlog_format=STATEMENT)."""
    known = TableSchemas({"app.t1": T1, "app.t2": dataclasses.replace(T1, table="t2")})

    def parse(statement: str) -> list:
        return parse_ddl(statement, "app", captured, known)

    for statement in (
        "UPDATE t1 SET v = -v WHERE id BETWEEN 10 AND 14",
        "/* app */ DELETE FROM app.t1 WHERE id = 3",
        "INSERT INTO `t1` (id) VALUES (1)",
        "REPLACE INTO t1 SELECT * FROM other",
        "LOAD DATA INFILE '/tmp/x' INTO TABLE t1",
    ):
        with pytest.raises(RowsReplaced, match="without row events") as replaced:
            parse(statement)
        assert replaced.value.tables == ("app.t1",), statement
    with pytest.raises(RowsReplaced) as replaced:
        parse("UPDATE t1 JOIN t2 USING (id) SET t1.v = t2.v, t2.v = 0")
    assert replaced.value.tables == ("app.t1", "app.t2")
    assert parse("INSERT INTO other VALUES (1)") == []
    assert parse("INSERT INTO t3 VALUES (1)") == []  # captured, but no table the reader knows of


def test_modify_and_change_move_a_column_where_first_or_after_says():
    assert after("ALTER TABLE t1 MODIFY b VARCHAR(5) FIRST").column_names == ("b", "id", "a")
    assert after("ALTER TABLE t1 CHANGE a a2 BIGINT AFTER b").column_names == ("id", "b", "a2")
    assert after("ALTER TABLE t1 MODIFY a BIGINT").column_names == ("id", "a", "b")  # stays
    (moved,) = parse_known("ALTER TABLE t1 MODIFY id INT AFTER b")
    assert str(moved) == "AlterColumnTypeEvent{tableId=app.t1, typeMapping={id=INT}, position=AFTER `b`}"


def test_a_primary_key_dropped_and_added_in_one_statement_is_the_added_one_whatever_the_order():
    assert after("ALTER TABLE t1 ADD PRIMARY KEY (a, b), DROP PRIMARY KEY").primary_key == ("a", "b")
    assert after("ALTER TABLE t1 DROP PRIMARY KEY, ADD PRIMARY KEY (a)").primary_key == ("a",)
    assert after("ALTER TABLE t1 DROP PRIMARY KEY").primary_key == ()


@pytest.mark.parametrize(
    ("written", "spelled"),
    [
        ("YEAR(4294967295)", "year(4)"),
        ("YEAR(2)", "year(2)"),
        ("BIT(0)", "bit(1)"),
        ("DECIMAL(0,0)", "decimal(10,0)"),
        ("SET('a','a ') CHARACTER SET binary", "set('a','a ')"),  # binary keeps trailing spaces
        ("ENUM('a ','b')", "enum('a','b')"),
        ("LONG BYTE", "mediumblob"),
        ("DECIMAL(10.2)", "decimal(10,0)"),  # a fraction in the precision is dropped
        ("CHAR(1) COLLATE binary", "binary(1)"),  # the binary collation is the binary set
        ("CHAR(1) BYTE NOT NULL", "binary(1)"),  # BYTE is the binary set too
        ("VARCHAR(3) BYTE", "varbinary(3)"),
        ("ENUM(0x0061) CHARACTER SET 'Binary'", "enum('\\0a')"),  # NUL as the server writes it
        ("TEXT(100) CHARACTER SET latin1", "tinytext"),  # n characters, in bytes of its set
        ("TEXT(100) CHARACTER SET utf8mb4", "text"),
    ],
)
def test_edge_spellings_are_the_servers(written, spelled):
    (created,) = parse_known(f"CREATE TABLE t5 (c {written})")
    assert created.columns[0].column_type == spelled


def test_a_tables_binary_collation_makes_its_strings_binary():
    (created,) = parse_known("CREATE TABLE t5 (a CHAR(10)) COLLATE binary")
    assert created.columns[0].column_type == "binary(10)"


def test_a_key_column_dropped_and_added_again_in_one_statement_keeps_the_key():
    """MariaDB keeps the key over a column an ALTER drops and adds again under its name."""
    assert after("ALTER TABLE t1 DROP id, ADD id BIGINT NOT NULL").primary_key == ("id",)
    assert after("ALTER TABLE t1 DROP id, ADD id2 BIGINT NOT NULL").primary_key == ()


def test_a_quoted_table_name_may_hold_dots():
    (rename,) = parse("RENAME TABLE t1 TO `t2_....end`")
    assert rename.new_table_id == "app.t2_....end"


def test_convert_to_a_character_set_grows_a_text_type_where_its_characters_take_more_bytes():
    """MySQL keeps a string column's length in characters: a latin1 TINYTEXT holds 255 of
    them, which take a TEXT in utf8mb3. A type whose old character set is not known (a column
    a statement created without naming one), or an ENUM member the new one may not spell,
    is told by the table's next table map instead."""

    def column(name: str, column_type: str, collation: str | None) -> Column:
        return Column(name, column_type.split("(")[0], column_type, True, collation=collation)

    latin1 = TableSchema(
        "app",
        "t3",
        (
            Column("id", "int", "int", False),
            column("tt", "tinytext", "latin1_swedish_ci"),
            column("mt", "mediumtext", "latin1_swedish_ci"),
            column("lt", "longtext", "latin1_swedish_ci"),
            column("u", "text", "utf8mb4_general_ci"),
            column("v", "varchar(300)", "latin1_swedish_ci"),
            column("e", "enum('a','b')", "latin1_swedish_ci"),
        ),
        ("id",),
        "id",
    )
    events = parse_ddl("ALTER TABLE t3 CONVERT TO CHARSET utf8", "app", captured, TableSchemas({"app.t3": latin1}))
    assert {e.column.name: e.column.column_type for e in events} == {"tt": "text", "mt": "longtext"}
    assert all(isinstance(e, AlterColumnType) and e.column.collation is None for e in events)

    for unknown in (column("t", "text", None), column("e", "enum('é')", "latin1_swedish_ci")):
        table = dataclasses.replace(latin1, columns=(latin1.columns[0], unknown))
        with pytest.raises(UnparsableDdl, match="the next table map tells"):
            parse_ddl(
                "ALTER TABLE t3 CONVERT TO CHARACTER SET utf8mb4", "app", captured, TableSchemas({"app.t3": table})
            )


@pytest.mark.parametrize(
    ("written", "spelled"),
    [
        ("ENUM('ä','b') CHARACTER SET latin1", "enum('ä','b')"),
        ("ENUM('€','ж') CHARACTER SET latin1", "enum('€','?')"),  # MySQL's latin1 is cp1252
        ("ENUM(x'E4','b') CHARACTER SET latin1", "enum('ä','b')"),
        ("SET(x'FFFF', 'a') CHARACTER SET utf8mb4", "set('??','a')"),
        ("ENUM(b'01100001') CHARACTER SET ascii", "enum('a')"),
    ],
)
def test_enum_and_set_members_are_what_the_columns_character_set_holds(written, spelled):
    """The server stores a member in the column's character set: a hex or bit literal is its
    bytes there, and a character the set cannot hold is '?'."""
    (created,) = parse_known(f"CREATE TABLE t5 (c {written})")
    assert created.columns[0].column_type == spelled


def test_enum_members_whose_character_set_is_not_named_are_told_by_the_table_map():
    """Without CHARACTER SET the members' set is the database's, which the statement does not
    say; so is the type a TEXT(n) of n characters takes."""
    with pytest.raises(UnparsableDdl, match="the next table map tells"):
        parse_known("CREATE TABLE t5 (c ENUM(x'FFFF'))")
    with pytest.raises(UnparsableDdl, match="the next table map tells"):
        parse_known("CREATE TABLE t5 (c TEXT(100))")
    (created,) = parse_known("CREATE TABLE t5 (c ENUM('a','b'))")
    assert created.columns[0].column_type == "enum('a','b')"
