"""The jdbc sinks' metadata appliers: a schema change event as the target's DDL.

Applying is made idempotent by looking first (`is_reflected`): after a crash between a
MySQL-dialect target's DDL (which commits on its own) and the offset that records it, the
rerun finds the change in place and does not apply it twice.

The statements every target shares are here; what differs (adding and retyping a column,
the primary key, moving a table) each dialect says (sink/jdbc/dialect.py).
"""

from __future__ import annotations

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
from sluice.sink.jdbc.dialect import JdbcDialect
from sluice.source.schema import TableSchema


def schema_change_statements(dialect: JdbcDialect, event: SchemaChangeEvent, before: TableSchema | None) -> list[str]:
    """The target's DDL for `event` on a table whose source schema was `before`."""
    after = event.applied_to(before)
    if isinstance(event, CreateTable):
        return dialect.create_table_statements(after)  # type: ignore[arg-type]
    if before is None:
        raise ValueError(f"{event}: the table is not known to the pipeline")
    table = dialect.target_table(before)
    if isinstance(event, TruncateTable):
        return [f"TRUNCATE TABLE {table}"]
    if isinstance(event, DropTable):
        return [f"DROP TABLE IF EXISTS {table}"]
    if isinstance(event, DropColumn):
        return [f"ALTER TABLE {table} DROP COLUMN {dialect.quote(event.name)}"]
    if isinstance(event, RenameColumn):
        return [f"ALTER TABLE {table} RENAME COLUMN {dialect.quote(event.old_name)} TO {dialect.quote(event.new_name)}"]
    if isinstance(event, RenameTable):
        # The source's rename succeeded, so no table had the new name there: one the target
        # has is a table the pipeline no longer follows (renamed out of `tables` by an earlier
        # swap, and dropped at the source since, as pt-osc and gh-ost drop `_t_old`, `_t_del`).
        # It gives way, or the next swap of the table would stop the pipeline.
        assert after is not None  # a renamed table is still there
        return [
            f"CREATE {dialect.container} IF NOT EXISTS {dialect.quote(after.database)}",
            f"DROP TABLE IF EXISTS {dialect.target_table(after)}",
            *dialect.rename_table_statements(before, after),
        ]
    if isinstance(event, AlterPrimaryKey):
        return dialect.primary_key_statements(before, after) + dialect.bag_index_statements(after)  # type: ignore[arg-type]
    if isinstance(event, AddColumn):
        return dialect.add_column_statements(table, event)
    if isinstance(event, AlterColumnType):
        return dialect.alter_column_type_statements(table, event)
    raise ValueError(f"{event}: no statement for it")
