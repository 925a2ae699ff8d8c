"""The binlog reader's DDL against schemas that are ahead of its position (a table read whole
after it, a run started at an older position): what they show already is no change."""

from __future__ import annotations

from sluice.binlog.transaction_reader import SchemaChange
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
