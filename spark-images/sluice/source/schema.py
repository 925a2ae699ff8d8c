"""Table schemas read from information_schema: columns, primary key, chunk key."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pymysql

from sluice.errors import SourceError
from sluice.pipeline.definition import SourceConfig


@dataclass(frozen=True)
class Column:
    name: str
    data_type: str  # e.g. int, varchar, decimal (information_schema DATA_TYPE)
    column_type: str  # e.g. int(10) unsigned, varchar(64), decimal(10,2)
    nullable: bool
    collation: str | None = None
    char_length: int | None = None
    numeric_precision: int | None = None
    numeric_scale: int | None = None

    @property
    def unsigned(self) -> bool:
        return "unsigned" in self.column_type

    @property
    def beyond_signed_64_bits(self) -> bool:
        """Unsigned BIGINT and BIT(64) hold values a signed 64-bit integer cannot."""
        return (self.data_type == "bigint" and self.unsigned) or self.column_type.lower() == "bit(64)"

    @property
    def is_integer(self) -> bool:
        return self.data_type in ("tinyint", "smallint", "mediumint", "int", "bigint")

    @property
    def is_numeric(self) -> bool:
        return self.is_integer or self.data_type in ("decimal", "float", "double")

    @property
    def orders_like_python(self) -> bool:
        """Whether Python's comparison of decoded values matches the server's ORDER BY.

        True for numbers, temporal types and binary strings; false for strings under a
        collation (case- or accent-insensitive orders differ from Python's code points).
        """
        if self.is_numeric or self.data_type in ("date", "datetime", "timestamp", "time", "year"):
            return True
        if self.data_type in ("binary", "varbinary", "blob", "tinyblob", "mediumblob", "longblob"):
            return True
        return bool(self.collation and self.collation.endswith("_bin"))


@dataclass(frozen=True)
class TableSchema:
    database: str
    table: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]
    chunk_key: str
    _positions: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._positions.update({c.name: i for i, c in enumerate(self.columns)})

    @property
    def table_id(self) -> str:
        return f"{self.database}.{self.table}"

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def column(self, name: str) -> Column:
        return self.columns[self._positions[name]]

    def position(self, name: str) -> int:
        return self._positions[name]

    @property
    def row_key(self) -> tuple[str, ...]:
        """Identifies a row: the primary key, else the chunk key (tables without a PK)."""
        return self.primary_key or (self.chunk_key,)

    def to_json(self) -> dict[str, Any]:
        return {
            "database": self.database,
            "table": self.table,
            "primary_key": list(self.primary_key),
            "chunk_key": self.chunk_key,
            "columns": [c.__dict__ for c in self.columns],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TableSchema:
        return cls(
            data["database"],
            data["table"],
            tuple(Column(**c) for c in data["columns"]),
            tuple(data["primary_key"]),
            data["chunk_key"],
        )


def discover_tables(conn: pymysql.connections.Connection, config: SourceConfig) -> list[TableSchema]:
    """Finds the captured tables (regex on db.table) and reads each one's schema."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES "
            "WHERE TABLE_TYPE = 'BASE TABLE' "
            "AND TABLE_SCHEMA NOT IN ('mysql', 'sys', 'information_schema', 'performance_schema') "
            "ORDER BY TABLE_SCHEMA, TABLE_NAME"
        )
        names = [(db, t) for db, t in cur.fetchall() if config.tables.selects(db, t)]
    if not names:
        patterns = ", ".join(p.text for p in config.tables.include)
        raise SourceError(
            f"source.tables: no table on the server matches '{patterns}' (or the source user has no "
            "privilege on the ones that do: GRANT SELECT ON <database>.* TO the user)"
        )
    return [read_table_schema(conn, db, t, config.chunk_key_column_for(db, t)) for db, t in names]


def read_table_schema(
    conn: pymysql.connections.Connection, database: str, table: str, chunk_key: str | None = None
) -> TableSchema:
    with conn.cursor() as cur:
        cur.execute(
            "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, COLLATION_NAME, "
            "CHARACTER_MAXIMUM_LENGTH, NUMERIC_PRECISION, NUMERIC_SCALE "
            "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s "
            "ORDER BY ORDINAL_POSITION",
            (database, table),
        )
        columns = tuple(
            Column(
                name=row[0],
                data_type=row[1].lower(),
                column_type=row[2].lower(),
                nullable=row[3] == "YES",
                collation=row[4],
                char_length=int(row[5]) if row[5] is not None else None,
                numeric_precision=int(row[6]) if row[6] is not None else None,
                numeric_scale=int(row[7]) if row[7] is not None else None,
            )
            for row in cur.fetchall()
        )
        cur.execute(
            "SELECT COLUMN_NAME FROM information_schema.STATISTICS "
            "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s AND INDEX_NAME = 'PRIMARY' "
            "ORDER BY SEQ_IN_INDEX",
            (database, table),
        )
        primary_key = tuple(row[0] for row in cur.fetchall())
    if not columns:
        raise SourceError(f"source table {database}.{table} does not exist")
    names = {c.name for c in columns}
    if chunk_key:
        if chunk_key not in names:
            raise SourceError(
                f"source.scan.incremental.snapshot.chunk.key-column: table {database}.{table} "
                f"has no column '{chunk_key}'"
            )
        if primary_key and chunk_key not in primary_key:
            raise SourceError(
                f"source.scan.incremental.snapshot.chunk.key-column: '{chunk_key}' of "
                f"{database}.{table} must be a primary-key column ({', '.join(primary_key)})"
            )
    elif primary_key:
        chunk_key = primary_key[0]
    else:
        raise SourceError(
            f"table {database}.{table} has no primary key: add one, or set "
            f"source.scan.incremental.snapshot.chunk.key-column to "
            f"'{database}.{table}:<column>'"
        )
    return TableSchema(database, table, columns, primary_key, chunk_key)
