"""A table's layout as its table map tells it, and the schema change events that take the
reader's layout there.

With binlog_row_metadata=FULL (which Sluice requires) every table map names each column
with its type, signedness, character set, ENUM/SET members and nullability, and gives the
primary key. So where a DDL statement on a captured table cannot be read, the table's next
table map, which precedes its next rows, says what the statement did: the difference
between the two layouts is the change. Only what the difference cannot decide (a column
that is gone and another that took its place with another type: renamed and retyped, or
dropped and added?) waits for approval, unless the statement's words decide it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pymysqlreplication.constants import FIELD_TYPE

from sluice.event.schema_change import (
    AddColumn,
    AlterColumnType,
    AlterPrimaryKey,
    CreateTable,
    DropColumn,
    RenameColumn,
    SchemaChangeEvent,
)
from sluice.source.charsets import MBMAXLEN
from sluice.source.schema import IMPLICIT_ROW_END, Column, TableSchema, comparable_type

_INTEGERS = {  # type code: name, display width signed, unsigned (as information_schema spells them)
    FIELD_TYPE.TINY: ("tinyint", 4, 3),
    FIELD_TYPE.SHORT: ("smallint", 6, 5),
    FIELD_TYPE.INT24: ("mediumint", 9, 8),
    FIELD_TYPE.LONG: ("int", 11, 10),
    FIELD_TYPE.LONGLONG: ("bigint", 20, 20),
}
_BLOBS = {
    1: ("tinytext", "tinyblob"),
    2: ("text", "blob"),
    3: ("mediumtext", "mediumblob"),
    4: ("longtext", "longblob"),
}
_SPATIAL = ("geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon")
_SPATIAL += ("geometrycollection",)
# MariaDB's own types that a table map logs as the binary string they are stored in.
_STORED_AS = {"uuid": "binary(16)", "inet6": "binary(16)", "inet4": "binary(4)"}


@dataclass(frozen=True)
class LayoutChange:
    """What a table map says happened to a table: the events, and, when the difference
    leaves a choice, why it waits for approval (the events are then the likelier reading)."""

    events: tuple[SchemaChangeEvent, ...]
    undecided: str = ""


def table_map_columns(table: Any) -> tuple[Column, ...]:
    """The columns of python-mysql-replication's Table (with the nullability and key order
    the event stream keeps on it), as information_schema would describe them."""
    nullable = getattr(table, "nullable", None) or (True,) * len(table.columns)
    key = {name.lower() for name in getattr(table, "key_order", ())}
    return tuple(_column(c, nullable[i] and (c.name or "").lower() not in key) for i, c in enumerate(table.columns))


def _column(column: Any, nullable: bool) -> Column:
    collation = column.collation_name
    column_type, char_length, precision, scale = _column_type(column, collation)
    data_type = re.split(r"[\s(]", column_type, maxsplit=1)[0]
    text = data_type in ("char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set")
    return Column(
        name=column.name,
        data_type=data_type,
        column_type=column_type,
        nullable=nullable,
        collation=collation if text else None,
        char_length=char_length,
        numeric_precision=precision,
        numeric_scale=scale,
    )


def _column_type(column: Any, collation: str | None) -> tuple[str, int | None, int | None, int | None]:
    """The column's type as MySQL spells it, from its table map entry, with its length (or
    precision and scale)."""
    kind = column.type
    charset = (collation or "binary").split("_", 1)[0]
    binary = charset == "binary"
    char_length = precision = scale = None
    if kind in _INTEGERS:
        name, signed_width, unsigned_width = _INTEGERS[kind]
        column_type = f"{name}({unsigned_width if column.unsigned else signed_width})"
    elif kind in (FIELD_TYPE.FLOAT, FIELD_TYPE.DOUBLE):
        column_type = "float" if kind == FIELD_TYPE.FLOAT else "double"
    elif kind == FIELD_TYPE.NEWDECIMAL:
        precision, scale = column.precision, column.decimals
        column_type = f"decimal({precision},{scale})"
    elif kind in (FIELD_TYPE.VARCHAR, FIELD_TYPE.VAR_STRING, FIELD_TYPE.STRING):
        char_length = column.max_length // MBMAXLEN.get(charset, 1)
        varying = kind != FIELD_TYPE.STRING
        column_type = f"{('varbinary' if binary else 'varchar') if varying else ('binary' if binary else 'char')}"
        column_type += f"({char_length})"
    elif kind == FIELD_TYPE.BLOB:
        column_type = _BLOBS[column.length_size][binary]
    elif kind == FIELD_TYPE.GEOMETRY:
        column_type = _SPATIAL[getattr(column, "geometry_type", 0)]
    elif kind == FIELD_TYPE.JSON:
        column_type = "json"
    elif kind in (FIELD_TYPE.ENUM, FIELD_TYPE.SET):
        # The library puts the empty string an invalid value reads as before an ENUM's members.
        members = column.enum_values[1:] if kind == FIELD_TYPE.ENUM else column.set_values
        quoted = ",".join("'" + str(m).replace("'", "''") + "'" for m in members or ())
        column_type = f"{'enum' if kind == FIELD_TYPE.ENUM else 'set'}({quoted})"
    elif kind == FIELD_TYPE.BIT:
        column_type = f"bit({column.bits})"
    elif kind == FIELD_TYPE.YEAR:
        column_type = "year(4)"
    elif kind == FIELD_TYPE.DATE:
        column_type = "date"
    else:
        name = {FIELD_TYPE.DATETIME2: "datetime", FIELD_TYPE.TIMESTAMP2: "timestamp", FIELD_TYPE.TIME2: "time"}
        name |= {FIELD_TYPE.DATETIME: "datetime", FIELD_TYPE.TIMESTAMP: "timestamp", FIELD_TYPE.TIME: "time"}
        if kind not in name:
            raise ValueError(f"column {column.name}: binlog column type {kind} has no layout")
        fsp = getattr(column, "fsp", 0) or 0
        column_type = name[kind] + (f"({fsp})" if fsp else "")
    if getattr(column, "unsigned", False) and kind not in (
        FIELD_TYPE.ENUM,
        FIELD_TYPE.SET,
        FIELD_TYPE.BIT,
        FIELD_TYPE.YEAR,
    ):
        column_type += " unsigned"
    return column_type, char_length, precision, scale


def binlog_shape(column: Column) -> str:
    """The part of a column's type that a table map shows: what the two layouts are compared
    by. (No display widths, ZEROFILL, FLOAT(M,D), spatial subtypes or compression; MariaDB's
    JSON is the LONGTEXT it is stored as, UUID and INET the binary strings.)"""
    shape = comparable_type(column.column_type).replace(" zerofill", "").replace(" compressed", "")
    if column.data_type in _STORED_AS:
        return _STORED_AS[column.data_type]
    if column.data_type in ("float", "double", "real"):
        return re.sub(r"\(.*\)", "", shape).replace("real", "double")
    if column.data_type in _SPATIAL:
        return "geometry"
    return shape


def layout_change(held: TableSchema | None, table_id: str, table: Any, statement: str = "") -> LayoutChange:
    """The events that take `held` (the reader's layout of `table_id`; None: it has none) to
    the layout of `table`, the table map of its next rows. `statement`: the DDL that could not
    be read, whose words may decide between a rename and a drop (none after a restart)."""
    columns = _visible(table_map_columns(table), held)
    key = tuple(getattr(table, "key_order", ()))
    if held is None:
        return LayoutChange((CreateTable(table_id, columns, key),))
    old = {c.name.lower(): c for c in held.columns}
    new = {c.name.lower(): c for c in columns}
    dropped = [c for c in held.columns if c.name.lower() not in new]
    added = [c for c in columns if c.name.lower() not in old]
    renames, undecided = _renames(held.columns, columns, dropped, added, statement)
    events: list[SchemaChangeEvent] = []
    for was, now in renames:
        events.append(RenameColumn(table_id, was.name, now.name))
    for column in held.columns:  # a name whose spelling alone changed: the server's spelling
        if column.name.lower() in new and new[column.name.lower()].name != column.name:
            events.append(RenameColumn(table_id, column.name, new[column.name.lower()].name))
    gone = {was.name for was, _ in renames}
    events += [DropColumn(table_id, c.name) for c in dropped if c.name not in gone]
    came = {now.name for _, now in renames}
    for i, column in enumerate(columns):
        if column.name in came or column.name.lower() in old:
            continue
        events.append(
            AddColumn(table_id, column, "FIRST", None)
            if i == 0
            else AddColumn(table_id, column, "AFTER", columns[i - 1].name)
        )
    for was, now in [*renames, *((old[c.name.lower()], c) for c in columns if c.name.lower() in old)]:
        if binlog_shape(was) != binlog_shape(now) or was.nullable != now.nullable:
            events.append(AlterColumnType(table_id, dataclasses.replace(now, default=was.default)))
    if tuple(k.lower() for k in key) != tuple(k.lower() for k in held.primary_key):
        events.append(AlterPrimaryKey(table_id, key))
    return LayoutChange(tuple(events), undecided)


def _visible(columns: tuple[Column, ...], held: TableSchema | None) -> tuple[Column, ...]:
    """The columns but MariaDB's invisible system-time pair, row_start and row_end, which WITH
    SYSTEM VERSIONING adds last: information_schema shows neither, and the row end marks the
    history rows (see system_versioning.py). A layout that holds them declared them."""
    last = columns[-2:]
    if (
        [c.name.lower() for c in last] != ["row_start", IMPLICIT_ROW_END]
        or held
        and "row_start" in {c.name.lower() for c in held.columns}
    ):
        return columns
    implicit = last[0].column_type == last[1].column_type in ("timestamp(6)", "bigint(20) unsigned")
    return columns[:-2] if implicit else columns


def _renames(
    before: Sequence[Column], after: Sequence[Column], dropped: list[Column], added: list[Column], statement: str
) -> tuple[list[tuple[Column, Column]], str]:
    """Pairs of a dropped and an added column in the same place: a rename where the type
    stayed or the statement says CHANGE/RENAME COLUMN, a drop and an add where it says DROP;
    renamed and retyped, or dropped and added, is undecided (read as a rename)."""
    survivors = {c.name.lower() for c in before} & {c.name.lower() for c in after}
    free = list(added)
    pairs = []
    for was in dropped:  # the first column added where it was
        place = _place(before, was, survivors)
        now = next((c for c in free if _place(after, c, survivors) == place), None)
        if now is not None:
            free.remove(now)
            pairs.append((was, now))
    renames, undecided = [], []
    for was, now in pairs:
        if _says(statement, rf"DROP\s+(?:COLUMN\s+)?(?:IF\s+EXISTS\s+)?{_word(was.name)}"):
            continue
        named = _says(statement, rf"(?:CHANGE|RENAME)\s+(?:COLUMN\s+)?(?:IF\s+EXISTS\s+)?{_word(was.name)}")
        if not named and binlog_shape(was) != binlog_shape(now):
            undecided.append(f"{was.name} {was.column_type} became {now.name} {now.column_type}")
        renames.append((was, now))
    why = ""
    if undecided:
        why = (
            f"the statement could not be read, and its table's next table map leaves open whether "
            f"{'; '.join(undecided)} by a rename or by a drop and an add"
        )
    return renames, why


def _place(columns: Sequence[Column], column: Column, survivors: set[str]) -> str:
    """Where a column sits: after which column both layouts have ("" for the first)."""
    names = [c.name.lower() for c in columns]
    return next((n for n in reversed(names[: names.index(column.name.lower())]) if n in survivors), "")


def _word(name: str) -> str:
    return rf"`?{re.escape(name)}`?(?![\w$])"


def _says(statement: str, pattern: str) -> bool:
    return bool(statement) and re.search(pattern, statement, re.IGNORECASE) is not None


def as_the_server_spells(
    events: Sequence[SchemaChangeEvent], live: TableSchema | None
) -> tuple[SchemaChangeEvent, ...]:
    """The events with each column they bring as the server describes it now, where that
    description agrees with the table map (a table map shows no ZEROFILL, FLOAT(M,D),
    spatial subtype or MariaDB JSON): the layout then equals what a snapshot reads, and a
    range read again later is read in it."""
    if live is None:
        return tuple(events)
    now = {c.name.lower(): c for c in live.columns}

    def spelled(column: Column) -> Column:
        server = now.get(column.name.lower())
        if server is None or binlog_shape(server) != binlog_shape(column) or server.nullable != column.nullable:
            return column
        return dataclasses.replace(server, name=column.name, default=column.default)

    settled: list[SchemaChangeEvent] = []
    for event in events:
        if isinstance(event, (AddColumn, AlterColumnType)):
            event = dataclasses.replace(event, column=spelled(event.column))
        elif isinstance(event, CreateTable):
            event = dataclasses.replace(event, columns=tuple(map(spelled, event.columns)))
        settled.append(event)
    return tuple(settled)
