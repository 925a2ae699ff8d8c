"""The jdbc sinks' metadata appliers: a schema change event as the target's DDL.

Applying is made idempotent by looking first (`is_reflected`): after a crash between a
MySQL-dialect target's DDL (which commits on its own) and the offset that records it, the
rerun finds the change in place and does not apply it twice.

PostgreSQL cannot place a column FIRST or AFTER another (an added column goes last there),
and an added column is nullable there (rows of the new shape may come before the old rows
are updated); a MySQL-dialect target takes both as the source had them. Both fill the rows
they hold as the source filled its own (the DEFAULT, or MySQL's implicit one).
"""

from __future__ import annotations

import dataclasses

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
from sluice.sink.jdbc.mysql import MySqlDialect
from sluice.sink.jdbc.postgres import PostgresDialect
from sluice.source.schema import Column, TableSchema


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
        return _rename_table(dialect, before, after)  # type: ignore[arg-type]
    if isinstance(event, AlterPrimaryKey):
        return _primary_key(dialect, before, after) + dialect.bag_index_statements(after)  # type: ignore[arg-type]
    if isinstance(dialect, PostgresDialect):
        return _postgres(dialect, event, table)
    if isinstance(dialect, MySqlDialect):
        return _mysql(dialect, event, table)
    raise ValueError(f"{event}: no metadata applier for {type(dialect).__name__}")


_EMPTY_STRING_TYPES = ("char", "varchar", "tinytext", "text", "mediumtext", "longtext")


def _default(column: Column, dialect: str) -> str:
    """The DEFAULT clause of an added column: the source fills the rows it already has with
    it, and so must the target. Without one, MySQL fills a NOT NULL column with its type's
    implicit default (0, ''), which PostgreSQL must be told. (An expression such as
    CURRENT_TIMESTAMP is evaluated by the target when it applies the change, not at the
    source's instant.)"""
    value = column.default
    if value is None and not column.nullable and dialect == "postgres":
        value = "0" if column.is_numeric else "''" if column.data_type in _EMPTY_STRING_TYPES else None
    if value is None:
        return ""
    import sqlglot  # loaded by the first schema change that needs it, not at every start

    return f" DEFAULT {sqlglot.transpile(value, read='mysql', write=dialect)[0]}"


def _postgres(dialect: PostgresDialect, event: SchemaChangeEvent, table: str) -> list[str]:
    if isinstance(event, AddColumn):
        column = event.column
        name, column_type = dialect.quote(column.name), dialect.column_type(column)
        return [f"ALTER TABLE {table} ADD COLUMN {name} {column_type}{_default(column, 'postgres')}"]
    if isinstance(event, AlterColumnType):
        name, new_type = dialect.quote(event.column.name), dialect.column_type(event.column)
        null = "DROP NOT NULL" if event.column.nullable else "SET NOT NULL"
        return [
            f"ALTER TABLE {table} ALTER COLUMN {name} TYPE {new_type} USING {name}::{new_type}",
            f"ALTER TABLE {table} ALTER COLUMN {name} {null}",
        ]
    raise ValueError(f"{event}: no PostgreSQL statement for it")


def _mysql(dialect: MySqlDialect, event: SchemaChangeEvent, table: str) -> list[str]:
    if isinstance(event, AddColumn):
        default = _default(event.column, "mysql")
        where = _placed(dialect, event.position, event.after)
        return [f"ALTER TABLE {table} ADD COLUMN {_mysql_column(dialect, event.column)}{default}{where}"]
    if isinstance(event, AlterColumnType):
        where = _placed(dialect, event.position, event.after)
        return [f"ALTER TABLE {table} MODIFY COLUMN {_mysql_column(dialect, event.column)}{where}"]
    raise ValueError(f"{event}: no MySQL statement for it")


def _placed(dialect: MySqlDialect, position: str, after: str | None) -> str:
    return {"FIRST": " FIRST", "AFTER": f" AFTER {dialect.quote(after or '')}"}.get(position, "")


def _mysql_column(dialect: MySqlDialect, column) -> str:  # noqa: ANN001 - a source Column
    return f"{dialect.quote(column.name)} {dialect.column_type(column)}{'' if column.nullable else ' NOT NULL'}"


def _primary_key(dialect: JdbcDialect, before: TableSchema, after: TableSchema) -> list[str]:
    """The target keyed by the new row key (none: a bag). PostgreSQL's key constraint is
    dropped by the name it has, whatever renames the table went through."""
    table, key = dialect.target_table(before), ", ".join(map(dialect.quote, after.row_key))
    if isinstance(dialect, PostgresDialect):
        literal = table.replace("'", "''")
        drop = (
            "DO $$ DECLARE c text; BEGIN "
            f"SELECT conname INTO c FROM pg_constraint WHERE conrelid = '{literal}'::regclass AND contype = 'p'; "
            f"IF c IS NOT NULL THEN EXECUTE format('ALTER TABLE {literal} DROP CONSTRAINT %I', c); END IF; END $$"
        )
        return [drop, *([f"ALTER TABLE {table} ADD PRIMARY KEY ({key})"] if key else [])]
    clauses = (["DROP PRIMARY KEY"] if before.row_key else []) + ([f"ADD PRIMARY KEY ({key})"] if key else [])
    return [f"ALTER TABLE {table} {', '.join(clauses)}"] if clauses else []


def _rename_table(dialect: JdbcDialect, before: TableSchema, after: TableSchema) -> list[str]:
    """The source's rename succeeded, so no table had the new name there: one the target
    has is a table the pipeline no longer follows (renamed out of `tables` by an earlier
    swap, and dropped at the source since, as pt-osc and gh-ost drop `_t_old`, `_t_del`).
    It gives way, or the next swap of the table would stop the pipeline."""
    statements = [f"CREATE {dialect.container} IF NOT EXISTS {dialect.quote(after.database)}"]
    statements.append(f"DROP TABLE IF EXISTS {dialect.target_table(after)}")
    if isinstance(dialect, PostgresDialect):
        if after.database != before.database:
            statements.append(f"ALTER TABLE {dialect.target_table(before)} SET SCHEMA {dialect.quote(after.database)}")
        if after.table != before.table:
            moved = dataclasses.replace(before, database=after.database, _positions={})
            statements.append(f"ALTER TABLE {dialect.target_table(moved)} RENAME TO {dialect.quote(after.table)}")
        return statements
    return [*statements, f"RENAME TABLE {dialect.target_table(before)} TO {dialect.target_table(after)}"]
