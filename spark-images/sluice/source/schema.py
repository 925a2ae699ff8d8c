"""Table schemas read from information_schema: columns, primary key, chunk key."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sluice.errors import SourceError
from sluice.source.table_selector import TableSelector

if TYPE_CHECKING:
    import pymysql


BINARY_STRING_TYPES = frozenset({"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"})
IMPLICIT_ROW_END = "row_end"  # the invisible column MariaDB adds for WITH SYSTEM VERSIONING
_MEMBER = re.compile(r"'((?:[^'\\]|''|\\.)*)'")
TEXT_STRING_TYPES = frozenset({"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set"})
# Spatial values travel in the server's own form (SRID, then WKB), as both paths read them.
SPATIAL_TYPES = (
    "geometry",
    "point",
    "linestring",
    "polygon",
    "multipoint",
    "multilinestring",
    "multipolygon",
    "geometrycollection",
)


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
    default: str | None = None  # an added column's DEFAULT, as the DDL wrote it (MySQL syntax)

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
    def chunkable(self) -> bool:
        """Whether chunk boundaries on this column are exact: values with a total order the
        server and Sluice agree on (no approximate floats, no documents or blobs)."""
        return (
            self.is_integer
            or self.keyed_by_number
            or self.data_type in ("decimal", "date", "datetime", "timestamp", "time", "year")
            or self.data_type in ("char", "varchar", "binary", "varbinary")
        )

    @property
    def keyed_by_number(self) -> bool:
        """An ENUM orders by its member's index and a BIT by its value: as a chunk key, its
        boundaries are that number (`column+0`; MIN and MAX of an ENUM compare its text)."""
        return self.data_type in ("enum", "bit")

    @property
    def members(self) -> tuple[str, ...]:
        """An ENUM's or SET's members, in order."""
        inside = self.column_type[self.column_type.index("(") + 1 : self.column_type.rindex(")")]
        return tuple(m.replace("''", "'").replace("\\\\", "\\") for m in _MEMBER.findall(inside))

    @property
    def orders_like_python(self) -> bool:
        """Whether Python's comparison of decoded values matches the server's ORDER BY.

        True for numbers, temporal types and binary strings; false for strings under a
        collation (case- or accent-insensitive orders differ from Python's code points).
        """
        if self.is_numeric or self.data_type in ("date", "datetime", "timestamp", "time", "year", "bit"):
            return True
        if self.data_type in BINARY_STRING_TYPES:
            return True
        return bool(self.collation and self.collation.endswith("_bin"))


@dataclass(frozen=True)
class TableSchema:
    database: str
    table: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]
    chunk_key: str
    unique_key: tuple[str, ...] = ()  # without a primary key: a UNIQUE key over NOT NULL columns
    single_split: bool = False  # no column splits it exactly (keyless, or a TEXT or FLOAT key): one split
    # A system-versioned table's declared column that ends a row's system time (MariaDB's
    # GENERATED ALWAYS AS ROW END); an implicit one is not a column here (see versioning.py).
    row_end: str | None = None
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
    def shape(self) -> tuple[tuple[str, str], ...]:
        """What rows of the table look like: column names and types, in order."""
        return tuple((c.name, comparable_type(c.column_type)) for c in self.columns)

    @property
    def row_key(self) -> tuple[str, ...]:
        """Identifies a row, and keys the target table: the primary key, else a UNIQUE key
        over NOT NULL columns; empty for a bag (a table that may hold equal rows)."""
        return self.primary_key or self.unique_key

    @property
    def is_bag(self) -> bool:
        return not self.row_key

    def to_json(self) -> dict[str, Any]:
        return {
            "database": self.database,
            "table": self.table,
            "primary_key": list(self.primary_key),
            "chunk_key": self.chunk_key,
            "unique_key": list(self.unique_key),
            "columns": [c.__dict__ for c in self.columns],
            **({"single_split": True} if self.single_split else {}),
            **({"row_end": self.row_end} if self.row_end else {}),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TableSchema:
        return cls(
            data["database"],
            data["table"],
            tuple(Column(**c) for c in data["columns"]),
            tuple(data["primary_key"]),
            data["chunk_key"],
            tuple(data.get("unique_key", ())),
            bool(data.get("single_split", False)),
            data.get("row_end"),
        )


def discover_tables(
    conn: pymysql.connections.Connection, tables: TableSelector, chunk_key_for: Callable[[str, str], str | None]
) -> list[TableSchema]:
    """Finds the captured tables (`tables`, source.tables) and reads each one's schema, split
    by the chunk key `chunk_key_for(database, table)` names (None: the key's first column)."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES "
            "WHERE TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED') "
            "AND TABLE_SCHEMA NOT IN ('mysql', 'sys', 'information_schema', 'performance_schema') "
            "ORDER BY TABLE_SCHEMA, TABLE_NAME"
        )
        names = [(db, t) for db, t in cur.fetchall() if tables.selects(db, t)]
    if not names:
        patterns = ", ".join(p.text for p in tables.include)
        raise SourceError(
            f"source.tables: no table on the server matches '{patterns}' (or the source user has no "
            "privilege on the ones that do: GRANT SELECT ON <database>.* TO the user)"
        )
    return [read_table_schema(conn, db, t, chunk_key_for(db, t)) for db, t in names]


def live_shape(conn: Any, database: str, table: str) -> tuple[tuple[str, str], ...]:
    """The table's shape on the server now (TableSchema.shape); empty if it is gone."""
    cur = conn.cursor()
    try:
        cur.execute(
            "SELECT COLUMN_NAME, COLUMN_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s "
            "AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION",
            (database, table),
        )
        return tuple((name, comparable_type(column_type)) for name, column_type in cur.fetchall())
    finally:
        cur.close()


def comparable_type(column_type: str) -> str:
    """A column type as information_schema and a parsed DDL both give it: MariaDB writes an
    integer's display width (int(11)) and a compressed column's attribute in a versioned
    comment, a DDL may not."""
    return _VERSIONED_COMMENT.sub("", _DISPLAY_WIDTH.sub(r"\1", column_type.lower().replace(", ", ",")))


_DISPLAY_WIDTH = re.compile(r"\b(tinyint|smallint|mediumint|int|bigint)\(\d+\)")
_VERSIONED_COMMENT = re.compile(r"\s*/\*m?!\d* ?[^*]*\*/")  # MariaDB's /*M!100301 COMPRESSED*/


def read_table_schema(
    conn: pymysql.connections.Connection, database: str, table: str, chunk_key: str | None = None
) -> TableSchema:
    with conn.cursor() as cur:
        cur.execute(
            "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, COLLATION_NAME, "
            "CHARACTER_MAXIMUM_LENGTH, NUMERIC_PRECISION, NUMERIC_SCALE, GENERATION_EXPRESSION "
            "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s "
            "ORDER BY ORDINAL_POSITION",
            (database, table),
        )
        described = cur.fetchall()
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
            for row in described
        )
        cur.execute(
            "SELECT INDEX_NAME, COLUMN_NAME FROM information_schema.STATISTICS "
            "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s AND NON_UNIQUE = 0 "
            "ORDER BY INDEX_NAME = 'PRIMARY' DESC, INDEX_NAME, SEQ_IN_INDEX",
            (database, table),
        )
        unique_indexes: dict[str, list[str]] = {}
        for index, column in cur.fetchall():
            unique_indexes.setdefault(index, []).append(column)
        # A system-versioned table's keys end with its row end, which only keeps history
        # rows apart: the current rows, which the target holds, are keyed without it.
        row_end = next((row[0] for row in described if row[8] == "ROW END"), None)
        names = {row[0] for row in described}
        hidden = {row_end or IMPLICIT_ROW_END} - (names - {row_end})
        unique_indexes = {i: [c for c in cs if c not in hidden] for i, cs in unique_indexes.items()}
        # A key over an expression (MySQL's functional key parts) keys no columns alone.
        unique_indexes = {i: cs for i, cs in unique_indexes.items() if set(cs) <= names}
        cur.execute(
            "SELECT DISTINCT COLUMN_NAME FROM information_schema.STATISTICS "
            "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s AND SEQ_IN_INDEX = 1 AND SUB_PART IS NULL",
            (database, table),
        )
        leading = {name for (name,) in cur.fetchall()}  # columns an index orders the rows by
    if not columns:
        raise SourceError(f"source table {database}.{table} does not exist")
    primary_key = tuple(unique_indexes.pop("PRIMARY", ()))
    unique_key = () if primary_key else _unique_not_null_key(unique_indexes, columns)
    if chunk_key is None and not (primary_key or unique_key):
        picked = _indexed_chunk_key(columns, leading)
        if picked is None:  # no column splits it with an index: one split, keyed by nothing
            return TableSchema(database, table, columns, (), columns[0].name, (), True, row_end)
        chunk_key = picked
    key = primary_key or unique_key
    if chunk_key is None and key and not next(c for c in columns if c.name == key[0]).chunkable:
        # A key that does not split exactly (TEXT, ENUM, FLOAT, ...): one split, keyed as it is.
        return TableSchema(database, table, columns, primary_key, key[0], unique_key, True, row_end)
    return TableSchema(
        database,
        table,
        columns,
        primary_key,
        _chunk_key(database, table, columns, primary_key, unique_key, chunk_key),
        unique_key,
        row_end=row_end,
    )


def _indexed_chunk_key(columns: tuple[Column, ...], leading: set[str]) -> str | None:
    """A keyless table's chunk key: a column that leads an index (chunk queries then read
    ranges of the index, not the whole table each) and splits exactly, NOT NULL first."""
    candidates = [c for c in columns if c.name in leading and c.chunkable]
    candidates.sort(key=lambda c: c.nullable)
    return candidates[0].name if candidates else None


def _unique_not_null_key(unique_indexes: dict[str, list[str]], columns: tuple[Column, ...]) -> tuple[str, ...]:
    """The narrowest UNIQUE index whose columns are all NOT NULL (a nullable one lets equal
    rows in: NULLs never collide), or none."""
    not_null = {c.name for c in columns if not c.nullable}
    keys = [tuple(names) for names in unique_indexes.values() if set(names) <= not_null]
    return min(keys, key=len) if keys else ()


def _chunk_key(
    database: str,
    table: str,
    columns: tuple[Column, ...],
    primary_key: tuple[str, ...],
    unique_key: tuple[str, ...],
    configured: str | None,
) -> str:
    option = "source.scan.incremental.snapshot.chunk.key-column"
    by_name = {c.name: c for c in columns}
    if configured:
        if configured not in by_name:
            raise SourceError(f"{option}: table {database}.{table} has no column '{configured}'")
        if primary_key and configured not in primary_key:
            raise SourceError(
                f"{option}: '{configured}' of {database}.{table} must be a primary-key column "
                f"({', '.join(primary_key)})"
            )
        chunk_key = configured
    elif primary_key or unique_key:
        chunk_key = (primary_key or unique_key)[0]
    else:
        raise SourceError(
            f"table {database}.{table} has no primary key: add one, or set {option} to '{database}.{table}:<column>'"
        )
    column = by_name[chunk_key]
    if not column.chunkable:
        raise SourceError(
            f"{option}: column '{chunk_key}' of {database}.{table} is {column.column_type}, which cannot split "
            "a table into exact chunks; choose an integer, decimal, date/time or string column"
        )
    return chunk_key
