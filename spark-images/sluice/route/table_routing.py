"""Each captured table as its target sees it: the target table its route names, the columns
and key its transform gives, and the rows and schema change events the target is given.

Sinks know nothing of routes: they are handed changelog rows and events in the target's
tables (sink/routed.py). The rows the sink sees are the query over the source at every
committed position:
- a row the filter keeps out is not in the target; an update that moves a row out of the
  filter deletes it there, one that moves it in inserts it;
- a merged table's rows are its members' rows, each in the merged columns (a column a
  member lacks is NULL).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from sluice.errors import DefinitionError, SinkError
from sluice.event.projection import projection
from sluice.event.row_change import ChangeRow, RowKind
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
)
from sluice.route.routing import Routing
from sluice.route.schema_merging import merged_schema
from sluice.source.row_decoding import Row
from sluice.source.schema import Column, TableSchema
from sluice.transform.sql_types import common_type, type_of
from sluice.transform.target_rows import TargetRows
from sluice.transform.transform_rule import TransformRule, rule_for

if TYPE_CHECKING:
    from sluice.transform.table_transform import TableTransform


@dataclass(frozen=True)
class RoutedTable:
    """One route of a captured table: into one target table (ALL_MATCH rules may give a
    table several, each written exactly once)."""

    source_id: str
    merged: bool
    rows: TargetRows  # what the target takes of the table's rows and changes

    @property
    def target(self) -> TableSchema:
        return self.rows.target

    @property
    def transform(self) -> TableTransform | None:
        return self.rows.transform

    @property
    def sink_id(self) -> str:
        return self.target.table_id


def _shipped(routing: Routing, sources: Mapping[str, TableSchema], far_dates: bool) -> TableRouting:
    table_routing = TableRouting(routing, sources, far_dates)
    table_routing.shipped = True
    return table_routing


def _compiled(rule: TransformRule | None, schema: TableSchema, far_dates: bool) -> TableTransform | None:
    """The rule compiled for the table. The expression compiler (sqlglot) loads with the
    first table a rule selects, not at every start."""
    if rule is None:
        return None
    from sluice.transform.table_transform import TableTransform

    return TableTransform(rule, schema, far_dates)


class TableRouting:
    """Built from the schemas rows are decoded in (the state's target schemas, by source
    table id); made again, not changed, when they change."""

    def __init__(self, routing: Routing, sources: Mapping[str, TableSchema], far_dates: bool = False) -> None:
        """`far_dates`: whether the targets' dates reach past year 9999 (PostgreSQL's do)."""
        self.routing, self.sources, self.far_dates = routing, dict(sources), far_dates
        owns: dict[str, tuple[tuple[str, ...], TableTransform | None, TableSchema]] = {}
        groups: dict[str, list[str]] = {}
        for source_id, schema in sorted(self.sources.items()):
            sink_ids = tuple(dict.fromkeys(".".join(s) for s in routing.router.route(schema.database, schema.table)))
            rule = rule_for(routing.transforms, schema.database, schema.table)
            transform = _compiled(rule, schema, far_dates)
            own = transform.target() if transform else schema
            if len(sink_ids) > 1 and not own.row_key:
                raise DefinitionError(
                    f"route: {source_id} goes to {len(sink_ids)} target tables ({', '.join(sink_ids)}), and has no "
                    "key to write each of them by: give it a primary key (or its transform primary-keys), or set "
                    "pipeline.route-mode: FIRST_MATCH"
                )
            owns[source_id] = (sink_ids, transform, own)
            for sink_id in sink_ids:
                groups.setdefault(sink_id, []).append(source_id)
        self.members = groups
        self.sinks: dict[str, TableSchema] = {}
        for sink_id, members in groups.items():
            database, table = sink_id.split(".", 1)
            schemas = [owns[m][2] for m in members]
            if len(members) == 1:
                own = schemas[0]
                self.sinks[sink_id] = (
                    own if own.table_id == sink_id else RenameTable(own.table_id, sink_id).applied_to(own)
                )
            else:
                self.sinks[sink_id] = merged_schema(database, table, schemas)
        self.routes = {
            source_id: tuple(
                RoutedTable(
                    source_id,
                    len(groups[sink_id]) > 1,
                    TargetRows(self.sinks[sink_id], transform, projection(own, self.sinks[sink_id]), key),
                )
                for sink_id in sink_ids
            )
            for source_id, (sink_ids, transform, own) in owns.items()
            for key in (_primary_key(self.sources[source_id]),)  # one a table, its routes share it
        }

    shipped = False  # compiled again in a Spark task, whose end closes its user-defined functions

    def __reduce__(self) -> tuple[Any, ...]:
        """Shipped to Spark's executors as its inputs; compiled again there."""
        return (_shipped, (self.routing, self.sources, self.far_dates))

    def route_into(self, source_id: str, sink_id: str) -> RoutedTable:
        return next(route for route in self.routes[source_id] if route.sink_id == sink_id)

    def replaceable(self, route: RoutedTable) -> bool:
        """Whether the table's snapshot chunks can replace their key ranges in this target:
        it is the table's own (no other table's rows share its key ranges) and holds its
        chunk key as it is."""
        if route.merged:
            return False
        chunk = self.sources[route.source_id].chunk_key
        return route.transform is None or route.transform.passthrough.get(route.target.chunk_key) == chunk

    # -- rows ------------------------------------------------------------------------------

    def change_rows(self, rows: Sequence[ChangeRow]) -> list[ChangeRow]:
        """Changelog rows in their targets' tables, each change into each of its table's
        targets (TargetRows: key changes, the filter, SOFT_DELETE)."""
        out: list[ChangeRow] = []
        i = 0
        while i < len(rows):
            row = rows[i]
            routes = self.routes[row.schema.table_id]
            if row.kind is RowKind.UPDATE_BEFORE:
                after = rows[i + 1]
                i += 2
                for route in routes:
                    out.extend(route.rows.update(row, after))
            else:
                i += 1
                for route in routes:
                    out.extend(route.rows.change(row, row.kind))
        return out

    # -- schema changes ----------------------------------------------------------------------

    def schema_events(self, events: Sequence[SchemaChangeEvent], after: TableRouting) -> list[SchemaChangeEvent]:
        """The events that take the targets from this routing's tables to `after`'s, for
        source `events`: a rename route passes them on renamed; a transformed or merged
        table's columns change as its query's do (a dropped column nobody projects is no
        change); a merged table changes once for all its members."""
        touched = {e.table_id for e in events} | {e.new_table_id for e in events if isinstance(e, RenameTable)}
        sink_ids = list(
            dict.fromkeys(
                [r.sink_id for t in touched for r in self.routes.get(t, ())]
                + [r.sink_id for t in touched for r in after.routes.get(t, ())]
            )
        )
        out: list[SchemaChangeEvent] = []
        for renamed in (e for e in events if isinstance(e, RenameTable)):
            moved = self._moved_target(renamed, after)
            if moved is not None:  # its own target follows it under its new name: a rename, rows kept
                out.append(moved)
                sink_ids = [s for s in sink_ids if s not in (moved.table_id, moved.new_table_id)]
        for sink_id in sink_ids:
            before_schema, after_schema = self.sinks.get(sink_id), after.sinks.get(sink_id)
            mine = [e for e in events if sink_id in self._sinks_of(e, after)]
            if self._plain_rename(sink_id) and after._plain_rename(sink_id) and before_schema and after_schema:
                out.extend(_renamed_event(e, sink_id, self, after) for e in mine)
                continue
            if before_schema is None and after_schema is not None:
                out.append(CreateTable(sink_id, after_schema.columns, after_schema.primary_key))
                continue
            if after_schema is None:
                out.append(DropTable(sink_id))
                continue
            assert before_schema is not None
            for event in mine:
                if isinstance(event, TruncateTable):
                    if len(self.members.get(sink_id, [])) > 1:
                        raise SinkError(
                            f"TRUNCATE of {event.table_id}, one of the tables merged into {sink_id}: the target "
                            "cannot tell its rows from the other members'; truncate every member, or read the "
                            "pipeline again into an empty target"
                        )
                    out.append(TruncateTable(sink_id))
            out.extend(_column_changes(sink_id, before_schema, after_schema, mine))
        return out

    def members_given_values(self, events: Sequence[SchemaChangeEvent], before: TableRouting) -> list[str]:
        """Members of merged tables (in this routing, as of after `events`; `before` is the
        one before them) whose rows the source's ALTER gave values without row events that
        the target's ALTER cannot give: a merged column is every member's, with no DEFAULT
        (schema_merging), and it stays while another member has it. They are read again,
        their rows replacing the rows of their keys; a keyless merged table has no key to
        find them by and keeps its values."""
        tables = []
        for event in events:
            for route in self.routes.get(event.table_id, ()):
                if not route.merged or not route.target.row_key:
                    continue
                kept = {name.casefold() for name in route.target.column_names}
                was = before.sources.get(event.table_id)
                if _gives_values(event, kept, {c.name.casefold(): c for c in was.columns} if was else {}):
                    tables.append(event.table_id)
        return list(dict.fromkeys(tables))

    def _moved_target(self, event: RenameTable, after: TableRouting) -> RenameTable | None:
        """A table that alone fills its target, renamed to a name that alone fills a new
        one with the same query: the target table is renamed (not dropped and made anew)."""
        olds, news = self.routes.get(event.table_id, ()), after.routes.get(event.new_table_id, ())
        if len(olds) != 1 or len(news) != 1 or olds[0].sink_id == news[0].sink_id:
            return None
        old, new = olds[0], news[0]
        alone = self.members.get(old.sink_id) == [old.source_id] and after.members.get(new.sink_id) == [new.source_id]
        fresh = old.sink_id not in after.sinks and new.sink_id not in self.sinks
        same = self.sinks[old.sink_id].columns == after.sinks[new.sink_id].columns
        return RenameTable(old.sink_id, new.sink_id) if alone and fresh and same else None

    def _sinks_of(self, event: SchemaChangeEvent, after: TableRouting) -> list[str]:
        routes = after.routes.get(event.table_id) or self.routes.get(event.table_id)
        if routes is None and isinstance(event, RenameTable):
            routes = after.routes.get(event.new_table_id)
        return [route.sink_id for route in routes or ()]

    def _plain_rename(self, sink_id: str) -> bool:
        """A target that is one untransformed source table under another name."""
        members = self.members.get(sink_id, [])
        return len(members) <= 1 and all(route.transform is None for m in members for route in self.routes[m])


def _renamed_event(
    event: SchemaChangeEvent, sink_id: str, before: TableRouting, after: TableRouting
) -> SchemaChangeEvent:
    """The event of a plain-renamed target (`sink_id`); a renamed table's target is its new
    name's route in the same place among its rules."""
    if isinstance(event, RenameTable):
        routes = before.routes.get(event.table_id) or after.routes[event.table_id]
        index = next(i for i, route in enumerate(routes) if route.sink_id == sink_id)
        news = after.routes[event.new_table_id]
        return RenameTable(sink_id, news[min(index, len(news) - 1)].sink_id)
    return dataclasses.replace(event, table_id=sink_id)


def _gives_values(event: SchemaChangeEvent, target_columns: set[str], was: Mapping[str, Column]) -> bool:
    """Whether `event` changed a member's values in a column the merged target keeps: an
    added column's DEFAULT (NOT NULL has MySQL's implicit one), a retyped column's values
    where the new type does not hold the old ones as they are (or NOT NULL turned its NULLs
    into the implicit default), the values a dropped or renamed column leaves (the member's
    rows hold NULL there). `was`: the member's columns before, by folded name."""
    if isinstance(event, AddColumn):
        column = event.column
        default = column.default is not None and column.default.upper() != "NULL"
        return column.name.casefold() in target_columns and (default or not column.nullable)
    if isinstance(event, AlterColumnType):
        old, new = was.get(event.column.name.casefold()), event.column
        if old is not None and (new.nullable or not old.nullable):
            kept = common_type([type_of(old), type_of(new)])
            if kept is not None and (kept.family, kept.column_type) == (type_of(new).family, new.column_type):
                return False  # widened: every old value is the same value of the new type
        return event.column.name.casefold() in target_columns
    if isinstance(event, DropColumn):
        return event.name.casefold() in target_columns
    if isinstance(event, RenameColumn):
        return bool({event.old_name.casefold(), event.new_name.casefold()} & target_columns)
    return False


def _primary_key(schema: TableSchema) -> Callable[[Row], Any]:
    positions = [schema.position(name) for name in schema.primary_key]
    return itemgetter(*positions) if positions else _no_key


def _no_key(row: Row) -> tuple[()]:
    """A keyless table's rows: every update keeps its (empty) key, so none is split."""
    return ()


def _column_changes(
    sink_id: str, before: TableSchema, after: TableSchema, events: Sequence[SchemaChangeEvent]
) -> list[SchemaChangeEvent]:
    """The target's column changes, from its schema before and after: renames where a source
    rename reaches it, then drops, type changes and additions (each addition where it
    stands in the new column order)."""
    out: list[SchemaChangeEvent] = []
    names = list(before.column_names)
    for event in events:
        if not isinstance(event, RenameColumn):
            continue
        old, new = event.old_name, event.new_name
        if old in names and new not in names and new in after.column_names and old not in after.column_names:
            out.append(RenameColumn(sink_id, old, new))
            names[names.index(old)] = new
    for name in [n for n in names if n not in after.column_names]:
        out.append(DropColumn(sink_id, name))
    kept = {n for n in names if n in after.column_names}
    renamed = dict(zip(before.column_names, names, strict=True))
    old_columns = {renamed[c.name]: c for c in before.columns}
    for column in after.columns:
        if column.name in kept and _retyped(old_columns[column.name], column):
            out.append(AlterColumnType(sink_id, column))
    for index, column in enumerate(after.columns):
        if column.name not in kept:
            position = ("AFTER", after.columns[index - 1].name) if index else ("FIRST", None)
            out.append(AddColumn(sink_id, column, *position))
    if after.primary_key != before.primary_key and set(after.primary_key) <= set(after.column_names):
        out.append(AlterPrimaryKey(sink_id, after.primary_key))
    return out


def _retyped(old: Any, new: Any) -> bool:
    return (old.column_type, old.nullable) != (new.column_type, new.nullable)
