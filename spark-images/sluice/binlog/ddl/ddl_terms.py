"""The terms DDL statements are made of, read from sqlglot's trees: a column definition
as information_schema would describe the column, where a column goes (FIRST, AFTER),
the table a name names, and the error for a statement Sluice cannot read."""

from __future__ import annotations

import re

from sqlglot import exp

from sluice.binlog.ddl.mysql_dialect import NoColumnChange
from sluice.source.charsets import MBMAXLEN, python_codec
from sluice.source.schema import Column


class UnparsableDdl(ValueError):
    """A DDL statement on a captured table that Sluice cannot turn into events."""

    def __init__(self, statement: str, reason: str) -> None:
        super().__init__(f"cannot read the DDL statement {statement.strip()[:200]!r}: {reason}")
        self.statement = statement


def column_from_definition(
    definition: exp.ColumnDef,
    primary_key: list[str] | tuple[str, ...] = (),
    mariadb: bool = False,
    table_charset: str = "",
) -> Column:
    """A Column as information_schema would describe it, from a column definition: the
    server's spelling of each type (BOOL is tinyint(1), DECIMAL is decimal(10,0), ...)."""
    kind = definition.args["kind"]
    constraints = column_constraints(definition)
    column_type = kind.sql(dialect="mysql").lower().replace(", ", ",")
    if kind.meta.get("unsigned") and "unsigned" not in column_type:  # FLOAT UNSIGNED
        column_type += " unsigned"
    if any(isinstance(c.kind, exp.ZeroFillColumnConstraint) for c in constraints) and "zerofill" not in column_type:
        column_type = column_type.replace(" unsigned", "") + " unsigned zerofill"  # ZEROFILL implies UNSIGNED
    charsets = [c.kind.this.name.lower() for c in constraints if isinstance(c.kind, exp.CharacterSetColumnConstraint)]
    collations = [c.kind.this.name.lower() for c in constraints if isinstance(c.kind, exp.CollateColumnConstraint)]
    charsets += ["binary"] if "binary" in collations else []  # the binary collation is the binary set
    if any(isinstance(c.kind, NoColumnChange) and c.kind.name == "BYTE" for c in constraints):
        charsets.insert(0, "binary")  # CHAR(n) BYTE is BINARY(n)
    column_type = server_spelling(column_type, (charsets or [table_charset])[0], mariadb)
    data_type = re.split(r"[\s(]", column_type, maxsplit=1)[0]
    params = [int(p) for p in re.findall(r"\d+", column_type.partition("(")[2].partition(")")[0])]
    not_null = kind.this == exp.DataType.Type.SERIAL or any(
        isinstance(c.kind, (exp.NotNullColumnConstraint, exp.AutoIncrementColumnConstraint))
        and not c.kind.args.get("allow_null")
        for c in constraints
    )
    is_key = definition.name in primary_key or any(
        isinstance(c.kind, exp.PrimaryKeyColumnConstraint) for c in constraints
    )
    defaults = [c.kind.this for c in constraints if isinstance(c.kind, exp.DefaultColumnConstraint)]
    return Column(
        name=definition.name,
        data_type=data_type,
        column_type=column_type,
        nullable=not (not_null or is_key),
        char_length=params[0] if data_type in ("char", "varchar", "binary", "varbinary") and params else None,
        numeric_precision=params[0] if data_type == "decimal" else None,
        numeric_scale=params[1] if data_type == "decimal" else None,
        default=defaults[0].sql(dialect="mysql") if defaults else None,
    )


# Types a statement may write without their size, as the server completes them.
_IMPLIED_SIZE = {"decimal": "(10,0)", "char": "(1)", "binary": "(1)", "bit": "(1)", "year": "(4)"}
# Under CHARACTER SET binary, a string type is its binary twin.
_BINARY_TWIN = {"char": "binary", "varchar": "varbinary", "tinytext": "tinyblob", "text": "blob"}
_BINARY_TWIN |= {"mediumtext": "mediumblob", "longtext": "longblob"}


def server_spelling(column_type: str, charset: str, mariadb: bool) -> str:
    data_type, sized, rest = re.match(r"^(\w+)(\([^)]*\))?(.*)$", column_type).groups()  # type: ignore[union-attr]
    size = int(sized[1:-1]) if sized and sized[1:-1].isdigit() else None
    if data_type in ("blob", "text") and size is not None:  # BLOB(n), TEXT(n): the smallest type that holds n
        limits = ((255, "tiny"), (65535, ""), (16777215, "medium"))
        smallest = lambda n: next((prefix for limit, prefix in limits if n <= limit), "long")  # noqa: E731
        if data_type == "text" and charset not in MBMAXLEN and smallest(size) != smallest(size * 4):
            raise UnparsableDdl(
                column_type, "TEXT(n) holds n characters of the database's set: the next table map tells"
            )
        return smallest(size * (MBMAXLEN.get(charset, 1) if data_type == "text" else 1)) + data_type + rest
    if data_type == "decimal" and sized and "." in sized:  # DECIMAL(10.2): the precision's whole part
        sized = re.sub(r"\.\d*", "", sized)
    if data_type == "float" and size is not None and "," not in sized:  # FLOAT(p): by its precision
        return ("float" if size <= 24 else "double") + rest
    if data_type in ("time", "datetime", "timestamp") and size == 0:
        sized = None  # the default precision, which the server does not write
    if data_type == "year" and size != 2:  # YEAR(N) is YEAR(4) but for the old YEAR(2)
        sized = None
    if data_type == "bit" and size == 0:
        sized = "(1)"
    if data_type in ("enum", "set") and sized and charset != "binary":  # it drops the values' trailing spaces
        sized = re.sub(r" +'(?=[,)])", "'", _members_held(sized, charset))
    elif data_type in ("enum", "set") and sized:
        sized = _members_held(sized, charset)
    if data_type in ("boolean", "bool"):
        return "tinyint(1)" + rest
    if data_type == "serial":  # BIGINT UNSIGNED NOT NULL AUTO_INCREMENT UNIQUE
        return "bigint(20) unsigned"
    if data_type == "json" and mariadb:  # MariaDB's JSON is LONGTEXT with a validity check
        return "longtext" + rest
    if data_type == "decimal" and sized and "," not in sized:
        sized = sized[:-1] + ",0)"
    if data_type == "decimal" and sized == "(0,0)":  # no digits: the default's
        sized = None
    if charset == "binary" and data_type in _BINARY_TWIN:
        data_type = _BINARY_TWIN[data_type]
    return data_type + (sized or _IMPLIED_SIZE.get(data_type, "")) + rest


_MEMBER_LITERAL = re.compile(r"'((?:[^'\\]|''|\\.)*)'|x'([0-9a-f]*)'|b'([01]*)'", re.IGNORECASE)


def _members_held(members: str, charset: str) -> str:
    """An ENUM's or SET's members as the column's character set holds them: a hex or bit
    literal is its bytes there, and a character the set cannot hold is '?'. Without a named
    set (the database's then) only ASCII members can be told."""

    def held(literal: re.Match[str]) -> str:
        text, hexadecimal, bits = literal.groups()
        if text is not None and text.isascii():
            return literal.group(0)
        raw = bytes.fromhex(hexadecimal) if hexadecimal is not None else _bits(bits) if bits is not None else None
        if charset == "binary":  # bytes as they are, NUL as the server writes it
            return literal.group(0) if raw is None else "'" + raw.decode("latin-1").replace("\0", "\\0") + "'"
        try:
            codec = python_codec(charset)
        except LookupError:  # none named (the database's), or one Python cannot spell
            raise UnparsableDdl(members, "the members' character set is not known: the next table map tells") from None
        if text is not None:  # as written, quotes doubled
            return "'" + text.encode(codec, "replace").decode(codec) + "'"
        assert raw is not None
        return "'" + raw.decode(codec, "replace").replace("\ufffd", "?").replace("'", "''") + "'"

    return _MEMBER_LITERAL.sub(held, members)


def _bits(digits: str) -> bytes:
    return int(digits or "0", 2).to_bytes((len(digits) + 7) // 8 or 1)


def column_constraints(definition: exp.ColumnDef) -> list[exp.ColumnConstraint]:
    return list(definition.args.get("constraints") or [])


def moved_to(position: exp.ColumnPosition | None) -> tuple[str, str | None]:
    """Where a MODIFY or CHANGE puts its column: nowhere else without FIRST or AFTER."""
    return column_position(position) if position is not None else ("", None)


def column_position(position: exp.ColumnPosition | None) -> tuple[str, str | None]:
    if position is None:
        return "LAST", None
    if position.this is not None:
        return "AFTER", position.this.name
    return str(position.args.get("position") or "LAST").upper(), None


def table_id_of(table: exp.Table, default_database: str) -> str:
    return f"{table.db or default_database}.{table.name}"
