"""Turns a DDL statement from the binlog (a QueryEvent) into schema change events.

sqlglot's MySQL dialect parses the statement; each alteration of a captured table becomes
one typed event, so one ALTER with three clauses gives three events, in clause order.
Statements on other tables give none. What does not change the columns (indexes, defaults,
table options) gives none either. A statement that changes a captured table in a way this
parser cannot read raises UnparsableDdl, for the schema change behaviour to decide on:
never a silent skip.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

import sqlglot
from sqlglot import exp

from sluice.event.schema_change import (
    AddColumn,
    AlterColumnType,
    CreateTable,
    DropColumn,
    DropTable,
    RenameColumn,
    RenameTable,
    SchemaChangeEvent,
    TruncateTable,
)
from sluice.source.schema import Column, TableSchema

# sqlglot warns on stderr about every statement it reads only as a command (GRANT, CREATE
# USER, ...): those are no schema change, and the CLI's output is no place for them.
logging.getLogger("sqlglot").setLevel(logging.ERROR)

Captured = Callable[[str, str], bool]  # (database, table) -> whether the pipeline captures it

# Alterations that leave the columns as they are.
_NO_COLUMN_CHANGE = (exp.AddConstraint, exp.AlterColumn, exp.DropPrimaryKey, exp.AlterSet, exp.ForceProperty)
# Table maintenance (sqlglot reads some of it not at all): the layout stays as it is.
_MAINTENANCE = re.compile(
    r"^\s*(?:REPAIR|CHECK|CHECKSUM|OPTIMIZE|ANALYZE)\s+(?:NO_WRITE_TO_BINLOG\s+|LOCAL\s+)?TABLES?\b", re.IGNORECASE
)
_RENAME_TABLES = re.compile(r"^\s*RENAME\s+TABLES?\s+(.+)$", re.IGNORECASE | re.DOTALL)
_NAME = r"(?:`(?:[^`]|``)+`|[\w$]+)"
_RENAME_PAIR = re.compile(rf"^\s*({_NAME}(?:\s*\.\s*{_NAME})?)\s+TO\s+({_NAME}(?:\s*\.\s*{_NAME})?)\s*$", re.IGNORECASE)


class UnparsableDdl(ValueError):
    """A DDL statement on a captured table that Sluice cannot turn into events."""

    def __init__(self, statement: str, reason: str) -> None:
        super().__init__(f"cannot read the DDL statement {statement.strip()[:200]!r}: {reason}")
        self.statement = statement


# MariaDB types sqlglot does not know, read as a SET of one marker value and turned back.
_MARIADB_TYPES = re.compile(r"\b(INET4|INET6)\b", re.IGNORECASE)
_MARKED_TYPE = re.compile(r"^set\('sluice:(inet4|inet6)'\)$")


Layout = Callable[[str], TableSchema | None]  # a table's schema as the binlog reader knows it, if it does


def parse_ddl(
    statement: str, default_database: str, captured: Captured, layout: Layout = lambda _: None
) -> list[SchemaChangeEvent]:
    """The schema change events `statement` makes on captured tables (maybe none);
    `layout` knows the captured tables' current schemas (CREATE TABLE ... LIKE copies one)."""
    if _MAINTENANCE.match(statement):
        return []
    renamed = _RENAME_TABLES.match(statement)
    if renamed:
        return _rename_tables(renamed.group(1), default_database, captured, statement)
    if _PARTITIONING.match(statement):  # sqlglot reads partitioning partly, and not as Sluice needs
        if _PARTITION_ROWS_GONE.match(statement) and _touches_captured(statement, default_database, captured):
            raise UnparsableDdl(
                statement,
                "it removes or swaps rows without row events in the binlog, so the target cannot follow; take a "
                "new snapshot after it (a new --state-dir), or set schema.change.behavior ignore to go on",
            )
        return []  # rows and columns stay as they are
    readable = _MARIADB_TYPES.sub(lambda m: f"SET('sluice:{m.group(1).lower()}')", statement)
    try:
        tree = sqlglot.parse_one(readable, read="mysql", error_level=sqlglot.ErrorLevel.RAISE)
    except sqlglot.errors.SqlglotError as exc:
        raise UnparsableDdl(statement, str(exc).splitlines()[0]) from exc
    if isinstance(tree, exp.Alter) and tree.args.get("kind") == "TABLE":
        table_id = _table_id(tree.this, default_database)
        return _alter(tree, table_id, statement) if captured(*table_id.split(".", 1)) else []
    if isinstance(tree, exp.Create) and tree.args.get("kind") == "TABLE":
        return _create(tree, default_database, captured, statement, layout)
    if isinstance(tree, exp.TruncateTable):
        return [TruncateTable(t) for t in _table_ids(tree.expressions, default_database) if captured(*t.split(".", 1))]
    if isinstance(tree, exp.Drop) and tree.args.get("kind") == "TABLE":
        return [DropTable(t) for t in _table_ids(tree.args["tables"], default_database) if captured(*t.split(".", 1))]
    if isinstance(tree, exp.Command) and _touches_captured(statement, default_database, captured):
        raise UnparsableDdl(statement, "sqlglot does not know this syntax")
    return []


def _alter(tree: exp.Alter, table_id: str, statement: str) -> list[SchemaChangeEvent]:
    events: list[SchemaChangeEvent] = []
    for action in tree.args.get("actions") or []:
        if isinstance(action, exp.ColumnDef):
            position, after = _position(action.args.get("position"))
            events.append(AddColumn(table_id, column_from_definition(action), position, after))
        elif isinstance(action, exp.Drop) and action.args.get("kind") == "COLUMN":
            events.extend(DropColumn(table_id, column.name) for column in action.args["tables"])
        elif isinstance(action, exp.RenameColumn):
            events.append(RenameColumn(table_id, action.this.name, action.args["to"].name))
        elif isinstance(action, exp.ModifyColumn):  # MODIFY c TYPE, or CHANGE old new TYPE
            definition = action.this
            renamed_from = action.args.get("rename_from")
            if renamed_from is not None and renamed_from.name != definition.name:
                events.append(RenameColumn(table_id, renamed_from.name, definition.name))
            events.append(AlterColumnType(table_id, column_from_definition(definition)))
        elif isinstance(action, exp.AlterRename):
            events.append(RenameTable(table_id, _table_id(action.this, table_id.split(".", 1)[0])))
        elif not isinstance(action, _NO_COLUMN_CHANGE):
            raise UnparsableDdl(statement, f"the alteration {action.sql(dialect='mysql')[:80]!r} is not understood")
    return events


def _create(
    tree: exp.Create, default_database: str, captured: Captured, statement: str, layout: Layout
) -> list[SchemaChangeEvent]:
    schema = tree.this
    table_id = _table_id(schema.this if isinstance(schema, exp.Schema) else schema, default_database)
    if not captured(*table_id.split(".", 1)):
        return []
    like = tree.find(exp.LikeProperty)
    if like is not None:  # CREATE TABLE t LIKE u, or (LIKE u): u's layout
        original_id = _table_id(like.this, default_database)
        original = layout(original_id)
        if original is None:
            raise UnparsableDdl(
                statement, f"the table it copies, {original_id}, is not captured: its layout is unknown"
            )
        return [CreateTable(table_id, original.columns, original.primary_key)]
    if not isinstance(schema, exp.Schema):  # CREATE TABLE ... AS SELECT
        raise UnparsableDdl(statement, "a table created from a query has no column list")
    definitions = [e for e in schema.expressions if isinstance(e, exp.ColumnDef)]
    primary_key = [
        d.name for d in definitions if any(isinstance(c.kind, exp.PrimaryKeyColumnConstraint) for c in _constraints(d))
    ]
    spelled = {d.name.lower(): d.name for d in definitions}  # MySQL resolves column names case-insensitively
    for key in schema.find_all(exp.PrimaryKey):
        primary_key.extend(spelled.get(e.name.lower(), e.name) for e in key.expressions)
    columns = tuple(column_from_definition(d, primary_key) for d in definitions)
    return [CreateTable(table_id, columns, tuple(primary_key))]


def column_from_definition(definition: exp.ColumnDef, primary_key: list[str] | tuple[str, ...] = ()) -> Column:
    """A Column as information_schema would describe it, from a column definition."""
    kind = definition.args["kind"]
    column_type = kind.sql(dialect="mysql").lower().replace(", ", ",")
    marked = _MARKED_TYPE.match(column_type)
    if marked:
        column_type = marked.group(1)
    data_type = re.split(r"[\s(]", column_type, maxsplit=1)[0]
    params = [int(p.this.name) for p in kind.expressions if isinstance(p, exp.DataTypeParam) and p.this.is_int]
    not_null = any(
        isinstance(c.kind, exp.NotNullColumnConstraint) and not c.kind.args.get("allow_null")
        for c in _constraints(definition)
    )
    is_key = definition.name in primary_key or any(
        isinstance(c.kind, exp.PrimaryKeyColumnConstraint) for c in _constraints(definition)
    )
    defaults = [c.kind.this for c in _constraints(definition) if isinstance(c.kind, exp.DefaultColumnConstraint)]
    return Column(
        name=definition.name,
        data_type=data_type,
        column_type=column_type,
        nullable=not (not_null or is_key),
        char_length=params[0] if data_type in ("char", "varchar", "binary", "varbinary") and params else None,
        numeric_precision=params[0] if data_type == "decimal" and params else (10 if data_type == "decimal" else None),
        numeric_scale=(params[1] if len(params) > 1 else 0) if data_type == "decimal" else None,
        default=defaults[0].sql(dialect="mysql") if defaults else None,
    )


def _constraints(definition: exp.ColumnDef) -> list[exp.ColumnConstraint]:
    return list(definition.args.get("constraints") or [])


def _position(position: exp.ColumnPosition | None) -> tuple[str, str | None]:
    if position is None:
        return "LAST", None
    if position.this is not None:
        return "AFTER", position.this.name
    return str(position.args.get("position") or "LAST").upper(), None


def _table_id(table: exp.Table, default_database: str) -> str:
    return f"{table.db or default_database}.{table.name}"


def _table_ids(tables: list[exp.Table], default_database: str) -> list[str]:
    return [_table_id(t, default_database) for t in tables]


def _unquote(name: str) -> str:
    parts = [p.strip() for p in re.split(r"\.(?=(?:[^`]*`[^`]*`)*[^`]*$)", name)]
    return ".".join(p[1:-1].replace("``", "`") if p.startswith("`") else p for p in parts)


def _rename_tables(pairs: str, default_database: str, captured: Captured, statement: str) -> list[SchemaChangeEvent]:
    """RENAME TABLE a TO b, c TO d (sqlglot reads it only as a command)."""
    events: list[SchemaChangeEvent] = []
    for pair in re.split(r",(?=(?:[^`]*`[^`]*`)*[^`]*$)", pairs):
        match = _RENAME_PAIR.match(pair)
        if not match:
            raise UnparsableDdl(statement, f"{pair.strip()!r} is not 'old TO new'")
        old, new = (_unquote(name) for name in match.groups())
        old_id = old if "." in old else f"{default_database}.{old}"
        new_id = new if "." in new else f"{default_database}.{new}"
        if captured(*old_id.split(".", 1)) or captured(*new_id.split(".", 1)):
            events.append(RenameTable(old_id, new_id))
    return events


_ALTER = r"^\s*ALTER\s+(?:ONLINE\s+)?(?:IGNORE\s+)?TABLE\s+\S+\s+"
# Partitioning that keeps every row (sqlglot reads these only as commands).
_PARTITIONING = re.compile(
    _ALTER + r"(?:PARTITION\s+BY|REMOVE\s+PARTITIONING|(?:ADD|COALESCE|REORGANIZE|ANALYZE|CHECK|OPTIMIZE|REBUILD"
    r"|REPAIR|DROP|TRUNCATE|EXCHANGE)\s+PARTITION)\b",
    re.IGNORECASE,
)
_PARTITION_ROWS_GONE = re.compile(_ALTER + r"(?:DROP|TRUNCATE|EXCHANGE)\s+PARTITION\b", re.IGNORECASE)

_TABLE_DDL = re.compile(r"^\s*(ALTER|CREATE|DROP|RENAME|TRUNCATE)\s+(TEMPORARY\s+)?TABLES?\b", re.IGNORECASE)


def _touches_captured(statement: str, default_database: str, captured: Captured) -> bool:
    """For a statement sqlglot could only read as a command: is it a table DDL naming a
    captured table? (Users, grants, procedures and the like are no schema change.)"""
    if not _TABLE_DDL.match(statement):
        return False
    words = re.findall(rf"{_NAME}(?:\s*\.\s*{_NAME})?", statement)
    for word in words:
        name = _unquote(word)
        table_id = name if "." in name else f"{default_database}.{name}"
        if captured(*table_id.split(".", 1)):
            return True
    return False
