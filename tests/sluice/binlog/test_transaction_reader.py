"""The binlog reader's DDL against schemas that are ahead of its position (a table read whole
after it, a run started at an older position): what they show already is no change."""

from __future__ import annotations

from sluice.binlog.transaction_reader import SchemaChange, read_transactions
from sluice.source.offset import BinlogOffset
from sluice.source.schema import read_table_schema


def test_a_rename_the_schemas_show_already_is_no_change_even_through_a_name_of_its_own(mariadb, source_db):
    """The schemas have `b`, so `RENAME COLUMN a TO b` clashes with it and goes through
    `a#sluice-renaming`: judged clause by clause, its first half looked like a change, and
    the target refused it (a column `a` it does not have). A MODIFY of a column renamed
    later is no change either."""
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, a INT, c INT)", database=source_db)
    with mariadb.connect(source_db) as conn, conn.cursor() as cur:
        cur.execute("SHOW MASTER STATUS")
        start = BinlogOffset(*cur.fetchone()[:2])
        cur.execute("ALTER TABLE t RENAME COLUMN a TO b")
        cur.execute("ALTER TABLE t MODIFY c BIGINT")  # c is renamed e after: the schemas show e
        cur.execute("ALTER TABLE t ADD COLUMN d INT")
        cur.execute("SHOW MASTER STATUS")
        end = BinlogOffset(*cur.fetchone()[:2])
        cur.execute("ALTER TABLE t DROP COLUMN d")
        cur.execute("ALTER TABLE t RENAME COLUMN c TO e")
        now = read_table_schema(conn, source_db, "t")  # id, b, e: the renames show, d does not
    changes = [
        item
        for item in read_transactions(
            mariadb.endpoint(),
            server_id=6210,
            start=start,
            schemas={now.table_id: now},
            mariadb=True,
            stop_at=end,
            heartbeat_seconds=1.0,
            captured=lambda database, table: database == source_db,
        )
        if isinstance(item, SchemaChange)
    ]
    assert [[str(e) for e in c.events] for c in changes] == [
        [f"AddColumnEvent{{tableId={source_db}.t, addedColumns=[ColumnWithPosition{{column=`d` INT, position=LAST}}]}}"]
    ]
