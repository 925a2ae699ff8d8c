"""The binlog reader's DDL against schemas that are ahead of its position (a table read whole
after it, a run started at an older position): what they show already is no change."""

from __future__ import annotations

import pymysql
import pytest

from sluice.event.schema_change import SchemaChange
from sluice.source.schema import read_table_schema
from tests.harness.binlog_reading import position, read_between


def test_a_rename_the_schemas_show_already_is_no_change_even_through_a_name_of_its_own(mariadb, source_db):
    """The schemas have `b`, so `RENAME COLUMN a TO b` clashes with it and goes through
    `a#sluice-renaming`: judged clause by clause, its first half looked like a change, and
    the target refused it (a column `a` it does not have). A MODIFY of a column renamed
    later is no change either."""
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, a INT, c INT)", database=source_db)
    with mariadb.connect(source_db) as conn, conn.cursor() as cur:
        start = position(cur)
        cur.execute("ALTER TABLE t RENAME COLUMN a TO b")
        cur.execute("ALTER TABLE t MODIFY c BIGINT")  # c is renamed e after: the schemas show e
        cur.execute("ALTER TABLE t ADD COLUMN d INT")
        end = position(cur)
        cur.execute("ALTER TABLE t DROP COLUMN d")
        cur.execute("ALTER TABLE t RENAME COLUMN c TO e")
        now = read_table_schema(conn, source_db, "t")  # id, b, e: the renames show, d does not
    read = read_between(mariadb, source_db, start, end, {now.table_id: now})
    changes = [item for item in read if isinstance(item, SchemaChange)]
    assert [[str(e) for e in c.events] for c in changes] == [
        [f"AddColumnEvent{{tableId={source_db}.t, addedColumns=[ColumnWithPosition{{column=`d` INT, position=LAST}}]}}"]
    ]


def test_a_tables_ddl_before_the_position_its_schema_was_read_at_is_no_change(mariadb, source_db):
    """A table joining the capture is read as it is now, while the reader is still behind:
    every DDL on it before the read is in that schema, whatever the schema shows of it. A
    column added and renamed before the read (the schema has its last name) is no change;
    judged by names alone, the ADD looked new, and the rename then met a column of its
    name (the target refused it). DDL after the read is a change as ever."""
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)", database=source_db)
    with mariadb.connect(source_db) as conn, conn.cursor() as cur:
        start = position(cur)
        cur.execute("ALTER TABLE t ADD COLUMN a INT")
        cur.execute("ALTER TABLE t RENAME COLUMN a TO b")
        cur.execute("ALTER TABLE t MODIFY v BIGINT")
        read_at = position(cur)
        now = read_table_schema(conn, source_db, "t")  # id, v BIGINT, b
        cur.execute("ALTER TABLE t ADD COLUMN c INT")
        end = position(cur)
    read = read_between(mariadb, source_db, start, end, {now.table_id: now}, read_at={now.table_id: read_at})
    changes = [item for item in read if isinstance(item, SchemaChange)]
    assert [[str(e) for e in c.events] for c in changes] == [
        [f"AddColumnEvent{{tableId={source_db}.t, addedColumns=[ColumnWithPosition{{column=`c` INT, position=LAST}}]}}"]
    ]


def test_dropping_a_table_the_reader_never_had_is_no_change(mariadb, source_db):
    """gh-ost begins with `DROP TABLE IF EXISTS _t_gho`: with every table of the database
    captured, the table the statement names never existed, and the target refused to drop
    it (a table not known to the pipeline), which stopped the pipeline."""
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY)", database=source_db)
    with mariadb.connect(source_db) as conn, conn.cursor() as cur:
        known = read_table_schema(conn, source_db, "t")
        start = position(cur)
        cur.execute("DROP TABLE IF EXISTS _t_gho")
        cur.execute("DROP TABLE t")
        end = position(cur)
    read = read_between(mariadb, source_db, start, end, {known.table_id: known})
    changes = [[str(e) for e in c.events] for c in read if isinstance(c, SchemaChange)]
    assert changes == [[f"DropTableEvent{{tableId={source_db}.t}}"]]


def test_a_create_or_replace_that_failed_after_its_drop_leaves_only_the_drop(mariadb, source_db):
    """MariaDB logs the statement, with its error code, because the table it replaced is
    gone: the reader kept a table the server no longer has."""
    mariadb.execute("CREATE TABLE t (a INT)", database=source_db)
    with mariadb.connect(source_db) as conn, conn.cursor() as cur:
        known = read_table_schema(conn, source_db, "t")
        start = position(cur)
        with pytest.raises(pymysql.err.MySQLError):
            cur.execute("CREATE OR REPLACE TABLE t (a INT DEFAULT b, b INT DEFAULT a)")
        end = position(cur)
    read = read_between(mariadb, source_db, start, end, {known.table_id: known})
    changes = [[str(e) for e in c.events] for c in read if isinstance(c, SchemaChange)]
    assert changes == [[f"DropTableEvent{{tableId={source_db}.t}}"]]


def test_truncating_a_table_whose_layout_waits_for_its_table_map_is_no_change(mariadb, source_db):
    """`CREATE TABLE t LIKE mysql.time_zone_name` copies a table the pipeline does not
    capture: t's layout waits for its first table map. A TRUNCATE before it went to the
    target as a change of a table it has not got (MariaDB's own test suite does this)."""
    with mariadb.connect(source_db) as conn, conn.cursor() as cur:
        start = position(cur)
        cur.execute("CREATE TABLE t LIKE mysql.time_zone_name")
        cur.execute("TRUNCATE TABLE t")
        cur.execute("INSERT INTO t VALUES ('UTC', 1)")
        end = position(cur)
    read = read_between(mariadb, source_db, start, end, {})
    changes = [
        (f"{source_db}.t" in c.unread, [type(e).__name__ for e in c.events], f"{source_db}.t" in c.waiting)
        for c in read
        if isinstance(c, SchemaChange)
    ]
    # each change says which tables wait for their table map after it: the state keeps them
    assert changes == [(True, [], True), (False, ["CreateTable"], False)]


def test_a_migration_step_read_again_after_a_restart_is_taken_once(mariadb, source_db):
    """The state keeps a migration's steps as soon as they are read, ahead of the position a
    run resumes from: after a kill, pt-osc's ALTER of its shadow was read again and taken
    twice, and the cut-over added `w` twice (a MySQL target refused it: "Column 'w'
    specified twice")."""
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)", database=source_db)
    with mariadb.connect(source_db) as conn, conn.cursor() as cur:
        known = read_table_schema(conn, source_db, "t")
        start = position(cur)
        cur.execute("CREATE TABLE _t_new LIKE t")
        created = position(cur)
        cur.execute("ALTER TABLE _t_new ADD COLUMN w INT NOT NULL DEFAULT 7")
        altered = position(cur)
        cur.execute("RENAME TABLE t TO _t_old, _t_new TO t")
        end = position(cur)
    schemas = {known.table_id: known}
    first = read_between(mariadb, source_db, start, altered, schemas, migrations={})
    kept = [c.migrations for c in first if isinstance(c, SchemaChange)][-1]  # the state, before the kill
    again = read_between(mariadb, source_db, created, end, schemas, migrations=kept)  # resumed before the ALTER
    changes = [[str(e) for e in c.events] for c in again if isinstance(c, SchemaChange) and c.events]
    assert changes == [
        [f"AddColumnEvent{{tableId={source_db}.t, addedColumns=[ColumnWithPosition{{column=`w` INT NOT NULL, "
         "position=LAST}]}"]
    ]  # fmt: skip
