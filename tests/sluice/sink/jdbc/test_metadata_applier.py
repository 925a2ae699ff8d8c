"""The jdbc metadata appliers change a real PostgreSQL and a real MariaDB target as each
schema change event says, keeping the rows the table holds."""

from __future__ import annotations

import itertools
import os
from decimal import Decimal

import pytest

from sluice.event.schema_change import (
    AddColumn,
    AlterColumnType,
    CreateTable,
    DropColumn,
    DropTable,
    RenameColumn,
    RenameTable,
    TruncateTable,
)
from sluice.pipeline.jdbc_url import parse_jdbc_url
from sluice.sink.jdbc.dialects import dialect_of
from sluice.sink.jdbc.metadata_applier import schema_change_statements
from sluice.source.schema import Column

_names = itertools.count()
ID = Column("id", "int", "int", False)
NAME = Column("name", "varchar", "varchar(20)", False, char_length=20)
QTY = Column("qty", "int", "int", True)


class Target:
    """A target database of one dialect: runs statements, reads columns and rows back."""

    def __init__(self, dialect: str, conn, database: str) -> None:
        self.dialect = dialect_of(dialect)
        self.conn = conn
        self.database = database

    def run(self, statements: list[str]) -> None:
        cur = self.conn.cursor()
        for statement in statements:
            cur.execute(statement)
        self.conn.commit()

    def columns(self, table: str) -> list[tuple[str, str]]:
        cur = self.conn.cursor()
        cur.execute(
            "SELECT column_name, is_nullable FROM information_schema.columns WHERE table_schema = %s "
            "AND table_name = %s ORDER BY ordinal_position",
            (self.database, table),
        )
        return [(name, nullable) for name, nullable in cur.fetchall()]

    def rows(self, table: str) -> list[tuple]:
        cur = self.conn.cursor()
        cur.execute(f"SELECT * FROM {self.dialect.quote(self.database)}.{self.dialect.quote(table)}")
        rows = sorted(tuple(r) for r in cur.fetchall())
        self.conn.commit()
        return rows


@pytest.fixture(params=["postgresql", "mysql"])
def target(request, postgresql, mariadb_target):
    database = f"meta_{os.getpid()}_{next(_names)}"
    if request.param == "postgresql":
        conn = dialect_of("postgresql").connect(_url(postgresql, "postgresql"), postgresql.user, postgresql.password)
    else:
        conn = dialect_of("mysql").connect(_url(mariadb_target, "mysql"), mariadb_target.user, mariadb_target.password)
    yield Target(request.param, conn, database)
    conn.close()


def _url(server, dialect: str):
    database = server.database if dialect == "postgresql" else "mysql"
    return parse_jdbc_url(f"{dialect}://{server.host}:{server.port}/{database}")


def test_each_event_changes_the_target_and_keeps_its_rows(target):
    db = target.database
    schema = CreateTable(f"{db}.t", (ID, NAME, QTY), ("id",)).applied_to(None)
    postgres = target.dialect is dialect_of("postgresql")

    def apply(event) -> None:
        nonlocal schema
        target.run(schema_change_statements(target.dialect, event, schema))
        schema = event.applied_to(schema)

    apply(CreateTable(f"{db}.t", (ID, NAME, QTY), ("id",)))
    target.run([f"INSERT INTO {target.dialect.target_table(schema)} VALUES (1, 'a', 5)"])

    apply(AddColumn(f"{db}.t", Column("c0", "varchar", "varchar(10)", False, char_length=10), "AFTER", "id"))
    expected = ["id", "name", "qty", "c0"] if postgres else ["id", "c0", "name", "qty"]
    assert [name for name, _ in target.columns("t")] == expected
    assert dict(target.columns("t"))["c0"] == ("YES" if postgres else "NO")  # PostgreSQL: rows need a value

    apply(RenameColumn(f"{db}.t", "qty", "amount"))
    apply(AlterColumnType(f"{db}.t", Column("amount", "bigint", "bigint", False)))
    apply(AlterColumnType(f"{db}.t", Column("amount", "bigint", "bigint", False), "FIRST"))  # MODIFY ... FIRST
    assert [name for name, _ in target.columns("t")] == (
        ["id", "name", "amount", "c0"] if postgres else ["amount", "id", "c0", "name"]
    )
    apply(AlterColumnType(f"{db}.t", Column("amount", "bigint", "bigint", False), "AFTER", "name"))
    apply(DropColumn(f"{db}.t", "name"))
    assert dict(target.columns("t")) == {"id": "NO", "c0": "YES" if postgres else "NO", "amount": "NO"}
    # The row the table held gets what MariaDB gives it: a NOT NULL VARCHAR's implicit ''.
    assert target.rows("t") == ([(1, 5, "")] if postgres else [(1, "", 5)])

    apply(
        AddColumn(
            f"{db}.t",
            Column("d", "decimal", "decimal(5,2)", True, numeric_precision=5, numeric_scale=2, default="1.50"),
        )
    )
    apply(AddColumn(f"{db}.t", Column("s", "varchar", "varchar(5)", False, char_length=5, default="'web'")))
    assert target.rows("t") == (
        [(1, 5, "", Decimal("1.50"), "web")] if postgres else [(1, "", 5, Decimal("1.50"), "web")]
    )
    apply(DropColumn(f"{db}.t", "d"))
    apply(DropColumn(f"{db}.t", "s"))

    apply(RenameTable(f"{db}.t", f"{db}.t_old"))
    assert target.columns("t") == [] and target.rows("t_old") == ([(1, 5, "")] if postgres else [(1, "", 5)])

    apply(TruncateTable(f"{db}.t_old"))
    assert target.rows("t_old") == []
    apply(DropTable(f"{db}.t_old"))
    assert target.columns("t_old") == []
