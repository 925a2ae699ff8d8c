"""Turns a DDL statement from the binlog (a QueryEvent) into schema change events.

sqlglot's MySQL dialect parses the statement; each alteration of a captured table becomes
one typed event, so one ALTER with three clauses gives three events, in clause order.
Statements on other tables give none. What does not change the columns (indexes, defaults,
table options) gives none either. A statement that changes a captured table in a way this
parser cannot read raises UnparsableDdl, for the schema change behaviour to decide on:
never a silent skip. (An ALTER's clauses: binlog/alter_clauses; column definitions and
names: binlog/ddl_terms.)
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Collection

import sqlglot
from sqlglot import exp

from sluice.binlog.ddl.alter_clauses import AlterClauses, alter_events
from sluice.binlog.ddl.ddl_context import Captured, KnownTables, RowsReplaced, TableSchemas
from sluice.binlog.ddl.ddl_terms import UnparsableDdl, column_constraints, column_from_definition, table_id_of
from sluice.binlog.ddl.mysql_dialect import MariaDB
from sluice.event.schema_change import (
    CreateTable,
    DropTable,
    RenameTable,
    SchemaChangeEvent,
    TruncateTable,
)
from sluice.source.schema import TableSchema

# sqlglot warns on stderr about every statement it reads only as a command (GRANT, CREATE
# USER, ...): those are no schema change, and the CLI's output is no place for them.
logging.getLogger("sqlglot").setLevel(logging.ERROR)

NO_TABLES = TableSchemas()  # no captured table known (a statement read alone)

# Table maintenance (sqlglot reads some of it not at all): the layout stays as it is.
_MAINTENANCE = re.compile(
    r"^\s*(?:REPAIR|CHECK|CHECKSUM|OPTIMIZE|ANALYZE)\s+(?:NO_WRITE_TO_BINLOG\s+|LOCAL\s+)?TABLES?\b", re.IGNORECASE
)
_COMMENT = re.compile(r"/\*(?![!M]).*?\*/", re.DOTALL)  # not /*! ... */, whose text MySQL runs
_DML = re.compile(r"^\s*(?:INSERT|REPLACE|UPDATE|DELETE|LOAD\s+(?:DATA|XML))\b", re.IGNORECASE)
_STRING = re.compile(r"'(?:[^'\\]|\\.|'')*'|\"(?:[^\"\\]|\\.|\"\")*\"")  # a literal's words name no table
_RENAME_TABLES = re.compile(r"^\s*RENAME\s+TABLES?\s+(.+)$", re.IGNORECASE | re.DOTALL)
_NAME = r"(?:`(?:[^`]|``)+`|[\w$]+)"
_RENAME_PAIR = re.compile(rf"^\s*({_NAME}(?:\s*\.\s*{_NAME})?)\s+TO\s+({_NAME}(?:\s*\.\s*{_NAME})?)\s*$", re.IGNORECASE)


def parse_ddl(
    statement: str,
    default_database: str,
    captured: Captured,
    known: KnownTables = NO_TABLES,
    mariadb: bool = False,
    lower_case_table_names: int = 0,
) -> list[SchemaChangeEvent]:
    """The schema change events `statement` makes on captured tables (maybe none);
    `known` has the captured tables' current schemas (CREATE TABLE ... LIKE copies one, an
    ALTER's clauses name columns as they were); `mariadb`: the source's types are MariaDB's;
    `lower_case_table_names`: the server's, which says how it resolves table names."""
    if not lower_case_table_names:
        return _parse_ddl(statement, default_database, captured, known, mariadb)
    name = _TableNames(known, lower_case_table_names)
    try:
        events = _parse_ddl(statement, name(default_database), lambda d, t: captured(*name.id(d, t)), name, mariadb)
    except RowsReplaced as replaced:
        raise RowsReplaced(statement, tuple(map(name.table_id, replaced.tables))) from None
    return [name.events(e) for e in events]


class _TableNames:
    """Table names as a server with lower_case_table_names resolves them: 1 stores and
    compares them in lower case, 2 stores them as created and compares them in lower case."""

    def __init__(self, known: KnownTables, setting: int) -> None:
        self.known = known
        self.setting = setting

    def __call__(self, name: str) -> str:
        return name.lower() if self.setting == 1 else name

    def id(self, database: str, table: str) -> tuple[str, str]:
        table_id = self.table_id(f"{database}.{table}")
        return table_id.split(".", 1)[0], table_id.split(".", 1)[1]

    def table_id(self, table_id: str) -> str:
        if self.setting == 1:
            return table_id.lower()
        return next((t for t in self.known.table_ids() if t.lower() == table_id.lower()), table_id)

    def schema(self, table_id: str) -> TableSchema | None:
        return self.known.schema(self.table_id(table_id))

    def table_ids(self) -> Collection[str]:
        return self.known.table_ids()

    def events(self, event: SchemaChangeEvent) -> SchemaChangeEvent:
        moved = {"new_table_id": self.table_id(event.new_table_id)} if isinstance(event, RenameTable) else {}
        return dataclasses.replace(event, table_id=self.table_id(event.table_id), **moved)


def _parse_ddl(
    statement: str, default_database: str, captured: Captured, known: KnownTables, mariadb: bool
) -> list[SchemaChangeEvent]:
    bare = _COMMENT.sub(" ", statement)  # `rename /* gh-ost */ table ...`: what the patterns below read
    if _MAINTENANCE.match(bare):
        return []
    renamed = _RENAME_TABLES.match(bare)
    if renamed:
        return _rename_tables(renamed.group(1), default_database, captured, statement)
    if _DML.match(bare):
        # Rows logged as a statement: MariaDB logs every change of a table versioned by
        # transaction id so, and a session may set binlog_format=STATEMENT or MIXED.
        named = _named(_STRING.sub("''", bare), default_database, captured)
        tables = tuple(t for t in named if known.schema(t) is not None)
        if tables:
            raise RowsReplaced(statement, tables)
        return []
    if _PARTITIONING.match(bare):  # sqlglot reads partitioning partly, and not as Sluice needs
        gone = _PARTITION_ROWS_GONE.match(statement)
        if gone:
            named = [gone.group(1), *re.findall(rf"\bWITH\s+TABLE\s+({_NAME}(?:\s*\.\s*{_NAME})?)", statement, re.I)]
            ids = [_named_id(n, default_database) for n in named]
            tables = tuple(t for t in ids if captured(*t.split(".", 1)))
            if tables:
                raise RowsReplaced(statement, tables)
        return []  # rows and columns stay as they are
    try:
        tree = sqlglot.parse_one(statement, read=MariaDB, error_level=sqlglot.ErrorLevel.RAISE)
    except sqlglot.errors.SqlglotError as exc:
        if not _touches_captured(statement, default_database, captured):
            return []  # another table's DDL, whatever it says
        raise UnparsableDdl(statement, str(exc).splitlines()[0]) from exc
    if isinstance(tree, exp.Alter) and tree.args.get("kind") == "TABLE":
        table_id = table_id_of(tree.this, default_database)
        if not captured(*table_id.split(".", 1)):
            return []
        before = known.schema(table_id)
        table_id = before.table_id if before is not None else table_id  # as the reader spells it
        return alter_events(tree, table_id, statement, AlterClauses(table_id, before, mariadb))
    if isinstance(tree, exp.Create) and tree.args.get("kind") == "TABLE":
        return _create(tree, default_database, captured, statement, known, mariadb)
    if isinstance(tree, exp.TruncateTable):
        return [TruncateTable(t) for t in _table_ids(tree.expressions, default_database) if captured(*t.split(".", 1))]
    if isinstance(tree, exp.Drop) and tree.args.get("kind") in ("DATABASE", "SCHEMA"):
        database = tree.args["tables"][0].db or tree.args["tables"][0].name  # sqlglot reads the two apart
        return [DropTable(t) for t in sorted(known.table_ids()) if t.split(".", 1)[0] == database]
    if isinstance(tree, exp.Drop) and tree.args.get("kind") == "TABLE":
        return [DropTable(t) for t in _table_ids(tree.args["tables"], default_database) if captured(*t.split(".", 1))]
    if isinstance(tree, exp.Command) and _touches_captured(statement, default_database, captured):
        raise UnparsableDdl(statement, "sqlglot does not know this syntax")
    return []


def _create(
    tree: exp.Create, default_database: str, captured: Captured, statement: str, known: KnownTables, mariadb: bool
) -> list[SchemaChangeEvent]:
    schema = tree.this
    table_id = table_id_of(schema.this if isinstance(schema, exp.Schema) else schema, default_database)
    if not captured(*table_id.split(".", 1)):
        return []
    like = tree.find(exp.LikeProperty)
    if like is not None:  # CREATE TABLE t LIKE u, or (LIKE u): u's layout
        original_id = table_id_of(like.this, default_database)
        original = known.schema(original_id)
        if original is None:
            raise UnparsableDdl(
                statement, f"the table it copies, {original_id}, is not captured: its layout is unknown"
            )
        return [*_replaced(tree, table_id, known), CreateTable(table_id, original.columns, original.primary_key)]
    if not isinstance(schema, exp.Schema):  # CREATE TABLE ... AS SELECT
        raise UnparsableDdl(statement, "a table created from a query has no column list")
    definitions = [e for e in schema.expressions if isinstance(e, exp.ColumnDef)]
    primary_key = [
        d.name
        for d in definitions
        if any(isinstance(c.kind, exp.PrimaryKeyColumnConstraint) for c in column_constraints(d))
    ]
    spelled = {d.name.lower(): d.name for d in definitions}  # MySQL resolves column names case-insensitively
    for key in schema.find_all(exp.PrimaryKey):
        primary_key.extend(spelled.get(e.name.lower(), e.name) for e in key.expressions)
    charsets = [p.this.name.lower() for p in tree.find_all(exp.CharacterSetProperty)]
    charsets += ["binary" for p in tree.find_all(exp.CollateProperty) if p.this.name.lower() == "binary"]
    columns = tuple(column_from_definition(d, primary_key, mariadb, (charsets or [""])[0]) for d in definitions)
    return [*_replaced(tree, table_id, known), CreateTable(table_id, columns, tuple(primary_key))]


def _replaced(tree: exp.Create, table_id: str, known: KnownTables) -> list[SchemaChangeEvent]:
    """CREATE OR REPLACE of a table that exists drops it first (its rows go with it)."""
    return [DropTable(table_id)] if tree.args.get("replace") and known.schema(table_id) is not None else []


def _table_ids(tables: list[exp.Table], default_database: str) -> list[str]:
    return [table_id_of(t, default_database) for t in tables]


def _named_id(name: str, default_database: str) -> str:
    """The table id a written name (`t`, db.t, `db`.`t`, `a.b`) names: a quoted name may
    hold dots of its own."""
    parts = [p.strip() for p in re.split(r"\.(?=(?:[^`]*`[^`]*`)*[^`]*$)", name)]
    bare = [p[1:-1].replace("``", "`") if p.startswith("`") else p for p in parts]
    return ".".join(bare) if len(bare) == 2 else f"{default_database}.{bare[0]}"


def _rename_tables(pairs: str, default_database: str, captured: Captured, statement: str) -> list[SchemaChangeEvent]:
    """RENAME TABLE a TO b, c TO d (sqlglot reads it only as a command)."""
    events: list[SchemaChangeEvent] = []
    for pair in re.split(r",(?=(?:[^`]*`[^`]*`)*[^`]*$)", pairs):
        match = _RENAME_PAIR.match(pair)
        if not match:
            raise UnparsableDdl(statement, f"{pair.strip()!r} is not 'old TO new'")
        old_id, new_id = (_named_id(name, default_database) for name in match.groups())
        if captured(*old_id.split(".", 1)) or captured(*new_id.split(".", 1)):
            events.append(RenameTable(old_id, new_id))
    return events


_ALTER = rf"^\s*ALTER\s+(?:ONLINE\s+)?(?:IGNORE\s+)?TABLE\s+({_NAME}(?:\s*\.\s*{_NAME})?)\s+"
# Partitioning that keeps every row (sqlglot reads these only as commands).
_PARTITIONING = re.compile(
    _ALTER + r"(?:PARTITION\s+BY|REMOVE\s+PARTITIONING|(?:ADD|COALESCE|REORGANIZE|ANALYZE|CHECK|OPTIMIZE|REBUILD"
    r"|REPAIR|DROP|TRUNCATE|EXCHANGE)\s+PARTITION)\b",
    re.IGNORECASE,
)
_PARTITION_ROWS_GONE = re.compile(_ALTER + r"(?:DROP|TRUNCATE|EXCHANGE)\s+PARTITION\b", re.IGNORECASE)

_TABLE_DDL = re.compile(
    r"^\s*(ALTER|CREATE|DROP|RENAME|TRUNCATE)\s+(?:(?:TEMPORARY|ONLINE|IGNORE|OR\s+REPLACE)\s+)*TABLES?\b",
    re.IGNORECASE,
)


def _touches_captured(statement: str, default_database: str, captured: Captured) -> bool:
    """For a statement sqlglot could only read as a command: is it a table DDL naming a
    captured table? (Users, grants, procedures and the like are no schema change.)"""
    return bool(_captured_names(statement, default_database, captured))


def _captured_names(statement: str, default_database: str, captured: Captured) -> list[str]:
    if not _TABLE_DDL.match(statement):
        return []
    return _named(statement, default_database, captured)


def _named(statement: str, default_database: str, captured: Captured) -> list[str]:
    """The captured tables a statement's words name (a word that only looks like one too)."""
    ids = []
    for word in re.findall(rf"{_NAME}(?:\s*\.\s*{_NAME})?", statement):
        table_id = _named_id(word, default_database)
        if captured(*table_id.split(".", 1)) and table_id not in ids:
            ids.append(table_id)
    return ids


def captured_tables(
    statement: str,
    default_database: str,
    captured: Captured,
    known: KnownTables = NO_TABLES,
    lower_case_table_names: int = 0,
) -> tuple[str, ...]:
    """The captured tables a table DDL statement names, found by its words: for a statement
    Sluice cannot read, whose effect the tables' next table maps tell (a word that only looks
    like a table name costs one look at that table's next table map)."""
    if not lower_case_table_names:
        return tuple(_captured_names(statement, default_database, captured))
    name = _TableNames(known, lower_case_table_names)
    found = _captured_names(statement, name(default_database), lambda d, t: captured(*name.id(d, t)))
    return tuple(dict.fromkeys(map(name.table_id, found)))
