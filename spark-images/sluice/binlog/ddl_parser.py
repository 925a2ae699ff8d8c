"""Turns a DDL statement from the binlog (a QueryEvent) into schema change events.

sqlglot's MySQL dialect parses the statement; each alteration of a captured table becomes
one typed event, so one ALTER with three clauses gives three events, in clause order.
Statements on other tables give none. What does not change the columns (indexes, defaults,
table options) gives none either. A statement that changes a captured table in a way this
parser cannot read raises UnparsableDdl, for the schema change behaviour to decide on:
never a silent skip.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Protocol

import sqlglot
from sqlglot import exp

from sluice.binlog.mysql_dialect import ConvertCharset, MariaDB, NoColumnChange
from sluice.event.schema_change import (
    AddColumn,
    AlterColumnType,
    AlterPrimaryKey,
    CreateTable,
    DropColumn,
    DropTable,
    RenameColumn,
    RenameTable,
    SchemaChangeEvent,
    TruncateTable,
    apply_events,
)
from sluice.source.charsets import MBMAXLEN, python_codec
from sluice.source.schema import Column, TableSchema

# sqlglot warns on stderr about every statement it reads only as a command (GRANT, CREATE
# USER, ...): those are no schema change, and the CLI's output is no place for them.
logging.getLogger("sqlglot").setLevel(logging.ERROR)

Captured = Callable[[str, str], bool]  # (database, table) -> whether the pipeline captures it

# Alterations that leave the columns as they are.
_NO_COLUMN_CHANGE = (
    exp.AddConstraint,
    exp.AlterColumn,
    exp.AlterSet,
    exp.ForceProperty,
    exp.RenameIndex,
    NoColumnChange,
)
# The bytes each TEXT type holds, smallest first, and the most a VARCHAR holds.
_TEXT_BYTES = {"tinytext": 255, "text": 65535, "mediumtext": 16777215, "longtext": 4294967295}
_VARCHAR_BYTES = 65532
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


class RowsReplaced(Exception):
    """A statement that changes captured tables' rows without row events in the binlog
    (EXCHANGE or TRUNCATE PARTITION, and DML the server logged as a statement): the target
    follows by reading them again."""

    def __init__(self, statement: str, tables: tuple[str, ...]) -> None:
        super().__init__(f"{statement.strip()[:200]!r} changes the rows of {', '.join(tables)} without row events")
        self.statement = statement
        self.tables = tables


RENAMING = "#sluice-renaming"  # the suffix of the name a column takes on its way in a swap or chain


class UnparsableDdl(ValueError):
    """A DDL statement on a captured table that Sluice cannot turn into events."""

    def __init__(self, statement: str, reason: str) -> None:
        super().__init__(f"cannot read the DDL statement {statement.strip()[:200]!r}: {reason}")
        self.statement = statement


class KnownTables(Protocol):
    """The captured tables as the binlog reader knows them at the statement."""

    def schema(self, table_id: str) -> TableSchema | None: ...

    def table_ids(self) -> Collection[str]: ...


@dataclass(frozen=True)
class TableSchemas:
    """KnownTables from a mapping of table id to schema."""

    schemas: Mapping[str, TableSchema] = field(default_factory=dict)

    def schema(self, table_id: str) -> TableSchema | None:
        return self.schemas.get(table_id)

    def table_ids(self) -> Collection[str]:
        return self.schemas.keys()

    def columns(self, database: str, table: str) -> tuple[str, ...]:
        schema = self.schemas.get(f"{database}.{table}")
        return schema.column_names if schema else ()


def parse_ddl(
    statement: str,
    default_database: str,
    captured: Captured,
    known: KnownTables = TableSchemas(),
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
        table_id = _table_id(tree.this, default_database)
        if not captured(*table_id.split(".", 1)):
            return []
        before = known.schema(table_id)
        table_id = before.table_id if before is not None else table_id  # as the reader spells it
        return _alter(tree, table_id, statement, _AlterClauses(table_id, before, mariadb))
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


def _alter(tree: exp.Alter, table_id: str, statement: str, clauses: _AlterClauses) -> list[SchemaChangeEvent]:
    """One ALTER TABLE as MySQL runs it: every clause names the columns as the table had
    them before the statement (`CHANGE a b INT, CHANGE b a INT` swaps two columns), IF
    [NOT] EXISTS looks at them, and a RENAME TO moves the table after the rest."""
    for action in tree.args.get("actions") or []:
        if isinstance(action, exp.ColumnDef):
            clauses.add(action)
        elif isinstance(action, exp.Drop) and action.args.get("kind") == "COLUMN":
            for column in action.args["tables"]:
                clauses.drop(column.name, bool(action.args.get("exists")))
        elif isinstance(action, exp.Drop):  # an index, a key, a check constraint
            continue
        elif isinstance(action, exp.RenameColumn):
            clauses.rename(action.this.name, action.args["to"].name, bool(action.args.get("exists")))
        elif isinstance(action, exp.ModifyColumn):  # MODIFY c TYPE, or CHANGE old new TYPE
            definition = action.this
            renamed_from = action.args.get("rename_from")
            if_exists = bool(action.meta.get("exists"))
            if if_exists and not clauses.has(renamed_from.name if renamed_from is not None else definition.name):
                continue
            if renamed_from is not None:
                clauses.rename(renamed_from.name, definition.name, False)
            clauses.modify(definition)
        elif isinstance(action, exp.AlterRename):
            clauses.new_id = _table_id(action.this, table_id.split(".", 1)[0])
        elif isinstance(action, exp.DropPrimaryKey):
            # MySQL drops keys before it adds any: `ADD PRIMARY KEY (a), DROP PRIMARY KEY` keys a.
            clauses.key = clauses.key if clauses.key_added else ()
        elif isinstance(action, exp.AddConstraint) and (key := action.find(exp.PrimaryKey)) is not None:
            if not (action.meta.get("exists") and clauses.key):  # IF NOT EXISTS: the table has one
                clauses.key = tuple(e.name for e in key.expressions)
                clauses.key_added = True
        elif isinstance(action, ConvertCharset) and str(action.this.name).lower() == "binary":
            clauses.convert_to_binary()
        elif isinstance(action, ConvertCharset):
            collation = str(action.args["collation"].name).lower() if action.args.get("collation") else None
            if not clauses.convert(str(action.this.name).lower(), collation):
                raise UnparsableDdl(statement, "the string columns' new types: the next table map tells")
        elif not isinstance(action, _NO_COLUMN_CHANGE):
            raise UnparsableDdl(statement, f"the alteration {action.sql(dialect='mysql')[:80]!r} is not understood")
    return clauses.events()


class _AlterClauses:
    """The clauses of one ALTER TABLE, gathered by the column they name, and turned into
    events that give MySQL's result when applied one after another."""

    def __init__(self, table_id: str, before: TableSchema | None, mariadb: bool) -> None:
        self.table_id = table_id
        self.before = before  # None: not known to the reader; clauses then apply in order
        self.mariadb = mariadb
        self.names = list(before.column_names) if before else []
        self.dropped: list[str] = []
        self.renamed: dict[str, str] = {}  # old name -> new name
        self.modified: dict[str, exp.ColumnDef] = {}  # new name -> its definition
        self.added: list[exp.ColumnDef] = []
        self.new_id: str | None = None
        self.ordered: list[SchemaChangeEvent] = []  # without a known layout: clause order
        self.key: tuple[str, ...] | None = before.primary_key if before else None  # as the clauses leave it
        self.key_added = False

    def has(self, name: str) -> bool:
        return self.before is None or self._existing(name) is not None

    def _existing(self, name: str) -> str | None:
        return next((n for n in self.names if n.lower() == name.lower()), None)

    def add(self, definition: exp.ColumnDef) -> None:
        name = definition.name.lower()
        taken = {n.lower() for n in self.names if n not in self.dropped} | {d.name.lower() for d in self.added}
        taken |= {n.lower() for n in self.renamed.values()}
        if definition.args.get("exists") and name in taken:
            return
        position, after = _position(definition.args.get("position"))
        self.added.append(definition)
        self._column_key(definition)
        column = column_from_definition(definition, mariadb=self.mariadb)
        self.ordered.append(AddColumn(self.table_id, column, position, after))

    def drop(self, name: str, if_exists: bool) -> None:
        existing = self._existing(name)
        if existing is None and if_exists and self.before is not None:
            return
        self.dropped.append(existing or name)
        self.ordered.append(DropColumn(self.table_id, existing or name))

    def rename(self, old: str, new: str, if_exists: bool) -> None:
        existing = self._existing(old)
        if existing is None and if_exists and self.before is not None:
            return
        old = existing or old
        if old != new:
            self.renamed[old] = new
            self.ordered.append(RenameColumn(self.table_id, old, new))

    def modify(self, definition: exp.ColumnDef) -> None:
        added = [i for i, e in enumerate(self.ordered) if isinstance(e, AddColumn) and e.column.name == definition.name]
        if added:  # ADD c INT, MODIFY c BIGINT: the column is added as modified
            event = self.ordered[added[-1]]
            assert isinstance(event, AddColumn)
            self.ordered[added[-1]] = dataclasses.replace(event, column=self._column(definition))
            return
        self._column_key(definition)
        self.modified[definition.name] = definition
        self.ordered.append(AlterColumnType(self.table_id, self._column(definition)))

    def _column_key(self, definition: exp.ColumnDef) -> None:
        """A column defined with PRIMARY KEY is the table's key."""
        if any(isinstance(c.kind, exp.PrimaryKeyColumnConstraint) for c in _constraints(definition)):
            self.key = (definition.name,)

    def convert_to_binary(self) -> None:
        """CONVERT TO CHARACTER SET binary: every string column becomes its binary twin."""
        for column in self.before.columns if self.before else ():
            twin = _server_spelling(column.column_type, "binary", self.mariadb)
            if twin != column.column_type:
                data_type = re.split(r"[\s(]", twin, maxsplit=1)[0]
                self.ordered.append(
                    AlterColumnType(self.table_id, dataclasses.replace(column, data_type=data_type, column_type=twin))
                )

    def convert(self, charset: str, collation: str | None) -> bool:
        """CONVERT TO CHARACTER SET cs: a string column keeps its length in characters, so a
        TEXT type grows where cs takes more bytes a character (a latin1 TINYTEXT is a TEXT in
        utf8mb3); rows are decoded by the table map's charset. False where the new types
        cannot be told from here: a TEXT type's old character set is not known (a statement
        made it without naming one), or an ENUM or SET member may not be spelled in cs."""
        if charset not in MBMAXLEN:  # DEFAULT: the database's
            return False
        for column in self.before.columns if self.before else ():
            if column.data_type in ("enum", "set") and not column.column_type.isascii():
                return False
            if column.data_type == "varchar" and (column.char_length or 0) * MBMAXLEN[charset] > _VARCHAR_BYTES:
                return False  # it becomes a TEXT type
            if column.data_type not in _TEXT_BYTES:
                continue
            old = (column.collation or "").split("_", 1)[0]
            if old not in MBMAXLEN:
                return False
            needed = _TEXT_BYTES[column.data_type] // MBMAXLEN[old] * MBMAXLEN[charset]
            grown = next((t for t, most in _TEXT_BYTES.items() if most >= needed), "longtext")
            if grown != column.data_type:
                column = dataclasses.replace(column, data_type=grown, column_type=grown, collation=collation)
                self.ordered.append(AlterColumnType(self.table_id, column))
        return True

    def _column(self, definition: exp.ColumnDef) -> Column:
        key = () if self.before is None else tuple(self.renamed.get(k, k) for k in self.before.primary_key)
        return column_from_definition(definition, key, self.mariadb)

    def events(self) -> list[SchemaChangeEvent]:
        events: list[SchemaChangeEvent]
        if self.before is None:
            events = self.ordered
        else:
            # Columns are dropped last, so that a table never has none (a MySQL target refuses
            # that); one whose name a later clause takes is renamed out of its way first.
            reused = {d.name.lower() for d in self.added} | {new.lower() for new in self.renamed.values()}
            dropping = {name: f"{name}#sluice-dropping" if name.lower() in reused else name for name in self.dropped}
            events = [RenameColumn(self.table_id, name, away) for name, away in dropping.items() if name != away]
            events += self._renames()
            events += [
                AlterColumnType(self.table_id, self._column(d), *_moved(d.args.get("position")))
                for d in self.modified.values()
            ]
            events += [e for e in self.ordered if isinstance(e, AddColumn)]
            events += [e for e in self.ordered if isinstance(e, AlterColumnType) and e.column.name not in self.modified]
            events += [DropColumn(self.table_id, away) for away in dropping.values()]
            events += self._key_change(events)
        if self.new_id is not None:
            events.append(RenameTable(self.table_id, self.new_id))
        return events

    def _key_change(self, events: list[SchemaChangeEvent]) -> list[SchemaChangeEvent]:
        """The primary key the clauses leave, if it is another than the columns' changes leave."""
        assert self.before is not None and self.key is not None
        left = apply_events({self.table_id: self.before}, events)[self.table_id]
        names = {n.lower(): n for n in left.column_names}
        unchanged = self.key is self.before.primary_key
        # MariaDB keeps a key over a column one statement drops and adds again by its name.
        readded = {d.name.lower() for d in self.added} & {n.lower() for n in self.dropped}
        if unchanged and not readded & {k.lower() for k in self.key}:
            return []
        key = tuple(names.get(k.lower(), k) for k in self.key)
        return [] if key == left.primary_key else [AlterPrimaryKey(self.table_id, key)]

    def _renames(self) -> list[SchemaChangeEvent]:
        """Renames that take each other's names (a swap, a chain) go through a name of their
        own first, as one statement's clauses do at once."""
        pending = {old: new for old, new in self.renamed.items() if old not in self.dropped}
        remaining = {n.lower() for n in self.names if n not in self.dropped}
        clash = any(new.lower() in remaining and new.lower() != old.lower() for old, new in pending.items())
        if not clash:
            return [RenameColumn(self.table_id, old, new) for old, new in pending.items()]
        temporary = {old: f"{old}{RENAMING}" for old in pending}
        first = [RenameColumn(self.table_id, old, temporary[old]) for old in pending]
        return first + [RenameColumn(self.table_id, temporary[old], new) for old, new in pending.items()]


def _create(
    tree: exp.Create, default_database: str, captured: Captured, statement: str, known: KnownTables, mariadb: bool
) -> list[SchemaChangeEvent]:
    schema = tree.this
    table_id = _table_id(schema.this if isinstance(schema, exp.Schema) else schema, default_database)
    if not captured(*table_id.split(".", 1)):
        return []
    like = tree.find(exp.LikeProperty)
    if like is not None:  # CREATE TABLE t LIKE u, or (LIKE u): u's layout
        original_id = _table_id(like.this, default_database)
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
        d.name for d in definitions if any(isinstance(c.kind, exp.PrimaryKeyColumnConstraint) for c in _constraints(d))
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


def column_from_definition(
    definition: exp.ColumnDef,
    primary_key: list[str] | tuple[str, ...] = (),
    mariadb: bool = False,
    table_charset: str = "",
) -> Column:
    """A Column as information_schema would describe it, from a column definition: the
    server's spelling of each type (BOOL is tinyint(1), DECIMAL is decimal(10,0), ...)."""
    kind = definition.args["kind"]
    constraints = _constraints(definition)
    column_type = kind.sql(dialect="mysql").lower().replace(", ", ",")
    if kind.meta.get("unsigned") and "unsigned" not in column_type:  # FLOAT UNSIGNED
        column_type += " unsigned"
    if any(isinstance(c.kind, exp.ZeroFillColumnConstraint) for c in constraints) and "zerofill" not in column_type:
        column_type = column_type.replace(" unsigned", "") + " unsigned zerofill"  # ZEROFILL implies UNSIGNED
    charsets = [c.kind.this.name.lower() for c in constraints if isinstance(c.kind, exp.CharacterSetColumnConstraint)]
    collations = [c.kind.this.name.lower() for c in constraints if isinstance(c.kind, exp.CollateColumnConstraint)]
    charsets += ["binary"] if "binary" in collations else []  # the binary collation is the binary set
    if any(isinstance(c.kind, NoColumnChange) and c.kind.name == "BYTE" for c in constraints):
        charsets.insert(0, "binary")  # CHAR(n) BYTE is BINARY(n)
    column_type = _server_spelling(column_type, (charsets or [table_charset])[0], mariadb)
    data_type = re.split(r"[\s(]", column_type, maxsplit=1)[0]
    params = [int(p) for p in re.findall(r"\d+", column_type.partition("(")[2].partition(")")[0])]
    not_null = kind.this == exp.DataType.Type.SERIAL or any(
        isinstance(c.kind, (exp.NotNullColumnConstraint, exp.AutoIncrementColumnConstraint))
        and not c.kind.args.get("allow_null")
        for c in constraints
    )
    is_key = definition.name in primary_key or any(
        isinstance(c.kind, exp.PrimaryKeyColumnConstraint) for c in constraints
    )
    defaults = [c.kind.this for c in constraints if isinstance(c.kind, exp.DefaultColumnConstraint)]
    return Column(
        name=definition.name,
        data_type=data_type,
        column_type=column_type,
        nullable=not (not_null or is_key),
        char_length=params[0] if data_type in ("char", "varchar", "binary", "varbinary") and params else None,
        numeric_precision=params[0] if data_type == "decimal" else None,
        numeric_scale=params[1] if data_type == "decimal" else None,
        default=defaults[0].sql(dialect="mysql") if defaults else None,
    )


# Types a statement may write without their size, as the server completes them.
_IMPLIED_SIZE = {"decimal": "(10,0)", "char": "(1)", "binary": "(1)", "bit": "(1)", "year": "(4)"}
# Under CHARACTER SET binary, a string type is its binary twin.
_BINARY_TWIN = {"char": "binary", "varchar": "varbinary", "tinytext": "tinyblob", "text": "blob"}
_BINARY_TWIN |= {"mediumtext": "mediumblob", "longtext": "longblob"}


def _server_spelling(column_type: str, charset: str, mariadb: bool) -> str:
    data_type, sized, rest = re.match(r"^(\w+)(\([^)]*\))?(.*)$", column_type).groups()  # type: ignore[union-attr]
    size = int(sized[1:-1]) if sized and sized[1:-1].isdigit() else None
    if data_type in ("blob", "text") and size is not None:  # BLOB(n), TEXT(n): the smallest type that holds n
        limits = ((255, "tiny"), (65535, ""), (16777215, "medium"))
        smallest = lambda n: next((prefix for limit, prefix in limits if n <= limit), "long")  # noqa: E731
        if data_type == "text" and charset not in MBMAXLEN and smallest(size) != smallest(size * 4):
            raise UnparsableDdl(
                column_type, "TEXT(n) holds n characters of the database's set: the next table map tells"
            )
        return smallest(size * (MBMAXLEN.get(charset, 1) if data_type == "text" else 1)) + data_type + rest
    if data_type == "decimal" and sized and "." in sized:  # DECIMAL(10.2): the precision's whole part
        sized = re.sub(r"\.\d*", "", sized)
    if data_type == "float" and size is not None and "," not in sized:  # FLOAT(p): by its precision
        return ("float" if size <= 24 else "double") + rest
    if data_type in ("time", "datetime", "timestamp") and size == 0:
        sized = None  # the default precision, which the server does not write
    if data_type == "year" and size != 2:  # YEAR(N) is YEAR(4) but for the old YEAR(2)
        sized = None
    if data_type == "bit" and size == 0:
        sized = "(1)"
    if data_type in ("enum", "set") and sized and charset != "binary":  # it drops the values' trailing spaces
        sized = re.sub(r" +'(?=[,)])", "'", _members_held(sized, charset))
    elif data_type in ("enum", "set") and sized:
        sized = _members_held(sized, charset)
    if data_type in ("boolean", "bool"):
        return "tinyint(1)" + rest
    if data_type == "serial":  # BIGINT UNSIGNED NOT NULL AUTO_INCREMENT UNIQUE
        return "bigint(20) unsigned"
    if data_type == "json" and mariadb:  # MariaDB's JSON is LONGTEXT with a validity check
        return "longtext" + rest
    if data_type == "decimal" and sized and "," not in sized:
        sized = sized[:-1] + ",0)"
    if data_type == "decimal" and sized == "(0,0)":  # no digits: the default's
        sized = None
    if charset == "binary" and data_type in _BINARY_TWIN:
        data_type = _BINARY_TWIN[data_type]
    return data_type + (sized or _IMPLIED_SIZE.get(data_type, "")) + rest


_MEMBER_LITERAL = re.compile(r"'((?:[^'\\]|''|\\.)*)'|x'([0-9a-f]*)'|b'([01]*)'", re.IGNORECASE)


def _members_held(members: str, charset: str) -> str:
    """An ENUM's or SET's members as the column's character set holds them: a hex or bit
    literal is its bytes there, and a character the set cannot hold is '?'. Without a named
    set (the database's then) only ASCII members can be told."""

    def held(literal: re.Match[str]) -> str:
        text, hexadecimal, bits = literal.groups()
        if text is not None and text.isascii():
            return literal.group(0)
        raw = bytes.fromhex(hexadecimal) if hexadecimal is not None else _bits(bits) if bits is not None else None
        if charset == "binary":  # bytes as they are, NUL as the server writes it
            return literal.group(0) if raw is None else "'" + raw.decode("latin-1").replace("\0", "\\0") + "'"
        try:
            codec = python_codec(charset)
        except LookupError:  # none named (the database's), or one Python cannot spell
            raise UnparsableDdl(members, "the members' character set is not known: the next table map tells") from None
        if text is not None:  # as written, quotes doubled
            return "'" + text.encode(codec, "replace").decode(codec) + "'"
        assert raw is not None
        return "'" + raw.decode(codec, "replace").replace("\ufffd", "?").replace("'", "''") + "'"

    return _MEMBER_LITERAL.sub(held, members)


def _bits(digits: str) -> bytes:
    return int(digits or "0", 2).to_bytes((len(digits) + 7) // 8 or 1)


def _constraints(definition: exp.ColumnDef) -> list[exp.ColumnConstraint]:
    return list(definition.args.get("constraints") or [])


def _moved(position: exp.ColumnPosition | None) -> tuple[str, str | None]:
    """Where a MODIFY or CHANGE puts its column: nowhere else without FIRST or AFTER."""
    return _position(position) if position is not None else ("", None)


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
    known: KnownTables = TableSchemas(),
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
