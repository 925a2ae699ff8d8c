"""An ALTER TABLE's clauses as schema change events, in clause order: ADD, DROP, CHANGE,
MODIFY and RENAME COLUMN, RENAME TO, a key change, CONVERT TO CHARACTER SET (which widens
text columns), with a swap or chain of renames taken through temporary names."""

from __future__ import annotations

import dataclasses
import re

from sqlglot import exp

from sluice.binlog.ddl.ddl_context import RENAMING
from sluice.binlog.ddl.ddl_terms import (
    UnparsableDdl,
    column_constraints,
    column_from_definition,
    column_position,
    moved_to,
    server_spelling,
    table_id_of,
)
from sluice.binlog.ddl.mysql_dialect import ConvertCharset, NoColumnChange
from sluice.event.schema_change import (
    AddColumn,
    AlterColumnType,
    AlterPrimaryKey,
    DropColumn,
    RenameColumn,
    RenameTable,
    SchemaChangeEvent,
    SchemaEvolution,
)
from sluice.source.charsets import MBMAXLEN
from sluice.source.schema import Column, TableSchema

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


def alter_events(tree: exp.Alter, table_id: str, statement: str, clauses: AlterClauses) -> list[SchemaChangeEvent]:
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
            clauses.new_id = table_id_of(action.this, table_id.split(".", 1)[0])
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


class AlterClauses:
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
        position, after = column_position(definition.args.get("position"))
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
        if any(isinstance(c.kind, exp.PrimaryKeyColumnConstraint) for c in column_constraints(definition)):
            self.key = (definition.name,)

    def convert_to_binary(self) -> None:
        """CONVERT TO CHARACTER SET binary: every string column becomes its binary twin."""
        for column in self.before.columns if self.before else ():
            twin = server_spelling(column.column_type, "binary", self.mariadb)
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
                AlterColumnType(self.table_id, self._column(d), *moved_to(d.args.get("position")))
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
        left = SchemaEvolution({self.table_id: self.before}, events).after[self.table_id]
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
