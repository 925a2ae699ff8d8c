"""What a JDBC target can hold: names, and columns per table.

Names: the one rule for a name longer than the target takes.

A source's names (64 characters in MySQL and MariaDB) and the names Sluice derives from
them (staging tables, indexes) can be longer than a target's identifiers: PostgreSQL keeps
63 bytes of UTF-8 and cuts the rest silently, so names differing only at the end would meet;
MySQL takes 64 characters, which a derived name can pass. A name that does not fit is cut
(at a character boundary) and given `_` and the first eight hex digits of the SHA-256 of
the whole name, so it stays apart from every other and is the same in every run: each
later DDL and row finds the table and column the first run made.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from typing import Protocol

from sluice.source.schema import TableSchema

POSTGRES_BYTES = 63  # NAMEDATALEN - 1
MYSQL_CHARACTERS = 64
POSTGRES_COLUMNS = 1600  # MaxHeapAttributeNumber
MYSQL_COLUMNS = 1017  # InnoDB's most (a MyISAM or Aria source table can have up to 4,096)
_HASH = 8


def fitted(name: str, limit: int, size: Callable[[str], int]) -> str:
    """`name`, or, if its `size` passes `limit`, its cut and hashed form."""
    if size(name) <= limit:
        return name
    mark = "_" + hashlib.sha256(name.encode()).hexdigest()[:_HASH]
    cut = name
    while size(cut) + len(mark) > limit:
        cut = cut[:-1]
    return cut + mark


def _utf8_bytes(name: str) -> int:
    return len(name.encode())


@functools.lru_cache(maxsize=4096)  # every statement quotes its names: a pipeline has few
def postgres_identifier(name: str) -> str:
    return fitted(name, POSTGRES_BYTES, _utf8_bytes)


@functools.lru_cache(maxsize=4096)
def mysql_identifier(name: str) -> str:
    return fitted(name, MYSQL_CHARACTERS, len)


def width_problem(schema: TableSchema, most: int, target: str) -> str | None:
    """Why `target` cannot hold the table's columns, with what to do; None if it can."""
    if len(schema.columns) <= most:
        return None
    return (
        f"{schema.table_id} has {len(schema.columns):,} columns and {target} tables hold at most {most:,}: leave it "
        "out (source.tables.exclude), keep fewer of its columns with a transform's projection, or replicate it into "
        "a lakehouse target (iceberg, delta)"
    )


class TargetNames(Collection[str]):
    """A target table's names, asked with the source's: `name in names` looks the name up
    as the target spells it."""

    def __init__(self, held: Iterable[str], identifier: Callable[[str], str]) -> None:
        self._held = frozenset(held)
        self._identifier = identifier

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._identifier(name) in self._held

    def __iter__(self) -> Iterator[str]:
        return iter(self._held)

    def __len__(self) -> int:
        return len(self._held)


class Naming(Protocol):
    """A dialect's names: as the target holds them, and quoted."""

    def identifier(self, name: str) -> str: ...

    def quote(self, name: str) -> str: ...

    def target_table(self, schema: TableSchema) -> str: ...


def name_clashes(dialect: Naming, fold: Callable[[str], str], schemas: Sequence[TableSchema]) -> list[str]:
    """Source tables the target would hold as one (names cut alike, or told apart by case
    only where the target ignores it: `fold`)."""
    held: dict[tuple[str, str], list[TableSchema]] = {}
    for schema in schemas:
        name = (fold(dialect.identifier(schema.database)), fold(dialect.identifier(schema.table)))
        held.setdefault(name, []).append(schema)
    return [
        f"{' and '.join(sorted(s.table_id for s in same))} would be one table in the target, "
        f"{dialect.target_table(same[0])}: leave all but one out (source.tables.exclude), or route them to "
        "tables of their own (route)"
        for same in held.values()
        if len(same) > 1
    ]


def names_held_otherwise(dialect: Naming, schemas: Sequence[TableSchema]) -> list[str]:
    """The tables and columns the target holds under another name, a sentence each."""
    said, longer = [], "is longer than the target's names: it is"
    for schema in schemas:
        if dialect.identifier(schema.table) != schema.table:
            said.append(f"{schema.table_id} {longer} {dialect.target_table(schema)}")
        said += [
            f"{schema.table_id}.{c.name} {longer} {dialect.quote(c.name)}"
            for c in schema.columns
            if dialect.identifier(c.name) != c.name
        ]
    return said
