"""Flink CDC's table lists, the one place their syntax is read: comma-separated `db.table`
regexes where `\\.` means any character.

A bare `.` separates the database pattern from the table pattern, so `app\\.*.orders`
is not ambiguous: the escaped dot is regex "any character", the bare one the separator.
`source.tables` takes each item as a database and a table pattern (parse_patterns); a
route's `source-table` the whole list as one regex over `db.table`, whose groups `$1` ...
its `sink-table` names (table_list_regex, as Flink CDC's TableIdRouter reads it).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from sluice.errors import DefinitionError


@dataclass(frozen=True)
class TablePattern:
    text: str
    database: re.Pattern[str]
    table: re.Pattern[str]

    def matches(self, database: str, table: str) -> bool:
        return bool(self.database.fullmatch(database) and self.table.fullmatch(table))


# The tables of gh-ost and pt-online-schema-change migrating a table t (binlog/ddl/online_schema_change.py).
SHADOW = re.compile(r"^_(.+)_(gho|new)$")  # the altered copy: gh-ost's ghost table, pt-osc's new table
LEFTOVER = re.compile(r"^_(.+)_(ghc|del|old)$")  # gh-ost's changelog and old table, pt-osc's old table


def is_tool_table(table: str) -> bool:
    """A table of a migration tool's: never captured with scan.parse.online.schema.changes.enabled."""
    return bool(SHADOW.match(table) or LEFTOVER.match(table))


@dataclass(frozen=True)
class TableSelector:
    include: tuple[TablePattern, ...]
    exclude: tuple[TablePattern, ...] = ()
    # scan.parse.online.schema.changes.enabled: gh-ost's and pt-osc's tables are never selected
    without: Callable[[str], bool] | None = None

    def selects(self, database: str, table: str) -> bool:
        if self.without is not None and self.without(table):
            return False
        return any(p.matches(database, table) for p in self.include) and not any(
            p.matches(database, table) for p in self.exclude
        )


_DOT = "\x00"  # stands for an escaped dot while the bare ones become separators


def _items(text: str) -> list[str]:
    return [part.strip() for part in text.split(",")]


def table_list_regex(text: str) -> str:
    """Flink CDC's convertTableListToRegExpPattern: the table list as one regex over `db.table`."""
    alternatives = "|".join(_items(text))
    return alternatives.replace("\\.", _DOT).replace(".", "\\.").replace(_DOT, ".")


def parse_patterns(key: str, text: str) -> tuple[TablePattern, ...]:
    patterns = []
    for item in _items(text):
        if not item:
            continue
        patterns.append(_parse_one(key, item))
    if not patterns:
        raise DefinitionError(f"{key}: no table pattern given")
    return tuple(patterns)


def _parse_one(key: str, item: str) -> TablePattern:
    # Split on the first dot that is not escaped by a backslash.
    parts = re.split(r"(?<!\\)\.", item, maxsplit=1)
    if len(parts) != 2 or not parts[0] or not parts[1]:
        raise DefinitionError(f"{key}: '{item}' must be 'database.table' (regexes; write \\. for 'any character')")
    db_text, table_text = (p.replace("\\.", ".") for p in parts)
    try:
        return TablePattern(item, re.compile(db_text), re.compile(table_text))
    except re.error as exc:
        raise DefinitionError(f"{key}: '{item}' is not a valid regex: {exc}") from exc
