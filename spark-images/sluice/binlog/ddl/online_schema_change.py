"""Online schema-change tools, read as the one schema change they make
(`scan.parse.online.schema.changes.enabled`, Flink CDC's option).

gh-ost and pt-online-schema-change alter a copy of a table `t` and swap it in:

    gh-ost:  CREATE TABLE _t_gho LIKE t; ALTER TABLE _t_gho ...; (a changelog table _t_ghc)
             rows copied into _t_gho, t's changes applied to it from the binlog;
             RENAME TABLE t TO _t_del, _t_gho TO t
    pt-osc:  CREATE TABLE _t_new (...); ALTER TABLE _t_new ...; triggers pt_osc_<db>_<t>_*
             that write t's changes into _t_new; rows copied in chunks;
             RENAME TABLE t TO _t_old, _t_new TO t

Every change the copy receives is a change `t` had already: the shadow's rows are never
the target's concern. So the shadow's ALTER is `t`'s schema change, and it takes effect
where `t`'s rows change shape, at the cut-over rename: applied to the target there, with
nothing read again. Until then a migration is kept in the pipeline's state, so a run that
resumes between the ALTER and the cut-over still knows it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sluice.event.schema_change import (
    CreateTable,
    RenameTable,
    SchemaChangeEvent,
    SchemaEvolution,
    event_from_json,
    event_to_json,
)
from sluice.source.offset import BinlogOffset
from sluice.source.schema import TableSchema
from sluice.source.table_selector import LEFTOVER, SHADOW


def shadowed(table_id: str) -> str | None:
    """The table a shadow table (db._t_gho, db._t_new) is the altered copy of."""
    database, table = table_id.split(".", 1)
    match = SHADOW.match(table)
    return f"{database}.{match.group(1)}" if match else None


@dataclass
class Migration:
    """A table's migration in progress: its shadow's layout and the changes made to it, up
    to the statement at `through` (the state keeps it as soon as it is read, ahead of the
    position a run resumes from: a step at or before `through` is one taken already)."""

    table_id: str
    shadow: TableSchema
    statements: list[str]
    events: list[SchemaChangeEvent]  # on the table itself, in order
    through: BinlogOffset | None = None

    def to_json(self) -> dict[str, Any]:
        data = {
            "table": self.table_id,
            "shadow": self.shadow.to_json(),
            "statements": self.statements,
            "events": [event_to_json(e) for e in self.events],
        }
        return data | ({"through": self.through.to_json()} if self.through else {})

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Migration:
        events = [event_from_json(e) for e in data["events"]]
        through = BinlogOffset.from_json(data["through"]) if "through" in data else None
        return cls(data["table"], TableSchema.from_json(data["shadow"]), list(data["statements"]), events, through)

    def took(self, position: BinlogOffset) -> bool:
        """Whether the statement at `position` is one of its steps already."""
        return self.through is not None and not self.through.is_before(position)


def started(events: list[SchemaChangeEvent], tables: Mapping[str, TableSchema], at: BinlogOffset) -> Migration | None:
    """A migration begun by a shadow's CREATE TABLE (of a captured table the reader knows)."""
    created = [e for e in events if isinstance(e, CreateTable)]
    if len(created) != 1 or (original := shadowed(created[0].table_id)) not in tables:
        return None
    shadow = created[0].applied_to(None)
    return Migration(original, shadow, [], [], at)


def altered(migration: Migration, statement: str, events: list[SchemaChangeEvent], at: BinlogOffset) -> Migration:
    """The migration after an ALTER of its shadow: its events, on the table itself."""
    shadow = SchemaEvolution({migration.shadow.table_id: migration.shadow}, events).after[migration.shadow.table_id]
    own = [dataclasses.replace(e, table_id=migration.table_id) for e in events]
    statements, events = [*migration.statements, statement], [*migration.events, *own]
    return Migration(migration.table_id, shadow, statements, events, at)


def taken(events: list[SchemaChangeEvent], migrations: Mapping[str, Migration], at: BinlogOffset) -> bool:
    """Whether the statement at `at` (its `events`) is a step a migration took already: read
    again after a restart."""
    for event in events:
        migration = migrations.get(shadowed(event.table_id) or event.table_id)
        if migration is not None and migration.took(at):
            return True
    return False


def cut_over(events: list[SchemaChangeEvent], migrations: Mapping[str, Migration]) -> list[Migration] | None:
    """The migrations a rename statement finishes (`t TO _t_del, _t_gho TO t`, or the two
    in separate statements: the first finishes none), or None if it is no tool's rename."""
    renames = [e for e in events if isinstance(e, RenameTable)]
    if not renames or len(renames) != len(events):
        return None
    finished = []
    for rename in renames:
        moved_aside = rename.table_id in migrations and LEFTOVER.match(rename.new_table_id.split(".", 1)[1])
        swapped_in = shadowed(rename.table_id) == rename.new_table_id and rename.new_table_id in migrations
        if swapped_in:
            finished.append(migrations[rename.new_table_id])
        elif not moved_aside:
            return None
    return finished
