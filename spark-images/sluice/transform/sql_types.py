"""The types transform expressions are checked in: a family (what the value is in Python)
and the MySQL column type a target column of it gets."""

from __future__ import annotations

from dataclasses import dataclass

from sluice.source.schema import Column

INTEGER_TYPES = ("tinyint", "smallint", "mediumint", "int", "bigint")
FAMILY_OF = {
    **dict.fromkeys((*INTEGER_TYPES, "year", "bit"), "integer"),
    "decimal": "decimal",
    **dict.fromkeys(("float", "double"), "float"),
    **dict.fromkeys(("char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set"), "string"),
    "json": "string",
    **dict.fromkeys(("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"), "binary"),
    "date": "date",
    **dict.fromkeys(("datetime", "timestamp"), "datetime"),
    "time": "time",
}
NUMERIC = ("integer", "decimal", "float")
TEMPORAL = ("date", "datetime")


@dataclass(frozen=True)
class SqlType:
    family: str  # integer, decimal, float, string, binary, boolean, date, datetime, time, or null (a NULL literal)
    column_type: str  # the MySQL type of a target column holding it
    nullable: bool = True

    @property
    def name(self) -> str:
        """As messages print it."""
        return self.family.upper() if self.family != "null" else "NULL"

    def column(self, name: str) -> Column:
        """A target column of this type."""
        column_type = self.column_type if self.family != "null" else "varchar(1)"
        data_type = column_type.split("(")[0].split()[0]
        length = precision = scale = None
        if "(" in column_type:
            numbers = [int(n) for n in column_type[column_type.index("(") + 1 : column_type.index(")")].split(",")]
            if data_type in ("char", "varchar", "binary", "varbinary"):
                length = numbers[0]
            elif data_type == "decimal":
                precision, scale = numbers[0], numbers[1] if len(numbers) > 1 else 0
        if data_type == "decimal" and precision is None:
            precision, scale = 10, 0
        return Column(name, data_type, column_type, self.nullable, None, length, precision, scale)


def type_of(column: Column, tinyint1_as_boolean: bool = False) -> SqlType:
    """A source column's type in expressions; TINYINT(1) is BOOLEAN where the source says so
    (treat-tinyint1-as-boolean.enabled), its values read as truth values."""
    family = FAMILY_OF.get(column.data_type, "string")
    if column.column_type.lower() == "tinyint(1)":
        family = "boolean" if tinyint1_as_boolean else "integer"
    return SqlType(family, column.column_type, column.nullable)


BIGINT = SqlType("integer", "bigint")
DOUBLE = SqlType("float", "double")
BOOLEAN = SqlType("boolean", "boolean")  # Flink's BOOLEAN: a target's own (MySQL's is TINYINT(1))
TEXT = SqlType("string", "longtext")
DATE = SqlType("date", "date")
DATETIME = SqlType("datetime", "datetime(6)")
# MySQL's TIMESTAMP, Flink's TIMESTAMP_LTZ: an instant, held as its UTC wall-clock value
INSTANT = SqlType("datetime", "timestamp(6)")
TIME = SqlType("time", "time(6)")
NULL = SqlType("null", "")


def is_instant(kind: SqlType) -> bool:
    return kind.column_type.startswith("timestamp")


def varchar(length: int | None) -> SqlType:
    return SqlType("string", f"varchar({length})") if length is not None and length <= 16383 else TEXT


def string_length(kind: SqlType) -> int | None:
    """The most characters a value of a type has, where it is known."""
    if kind.family == "string" and "(" in kind.column_type and kind.column_type.split("(")[0] in ("char", "varchar"):
        return int(kind.column_type.split("(")[1].split(")")[0])
    return None


def decimal_of(kind: SqlType) -> tuple[int, int]:
    """Precision and scale a number of this type needs."""
    if kind.family == "decimal":
        inside = kind.column_type[kind.column_type.index("(") + 1 : kind.column_type.index(")")].split(",")
        return int(inside[0]), int(inside[1]) if len(inside) > 1 else 0
    if kind.family == "integer":
        return (20 if "bigint" in kind.column_type else 11), 0
    return 65, 30


def decimal(precision: int, scale: int) -> SqlType:
    scale = min(scale, 30)
    return SqlType("decimal", f"decimal({min(max(precision, scale, 1), 65)},{scale})")


def common_type(kinds: list[SqlType]) -> SqlType | None:
    """The type values of all `kinds` fit (CASE, COALESCE, a merged table's column); None
    where they have none."""
    known = [k for k in kinds if k.family != "null"]
    nullable = any(k.nullable for k in kinds)
    if not known:
        return NULL
    families = {k.family for k in known}
    if len(families) == 1 and families != {"decimal"}:
        family = families.pop()
        widest = max(known, key=_width)
        if family == "integer" and any("unsigned" in k.column_type for k in known) != all(
            "unsigned" in k.column_type for k in known
        ):
            return SqlType("decimal", "decimal(20,0)", nullable)
        return SqlType(family, widest.column_type, nullable)
    if families <= set(NUMERIC):
        if "float" in families:
            return SqlType("float", "double", nullable)
        digits = max(decimal_of(k)[0] - decimal_of(k)[1] for k in known)
        scale = max(decimal_of(k)[1] for k in known)
        return SqlType("decimal", decimal(digits + scale, scale).column_type, nullable)
    if families <= {"date", "datetime"}:
        return SqlType("datetime", "datetime(6)", nullable)
    if "binary" in families:
        return None
    if families <= {"string", "integer", "decimal", "float", "date", "datetime", "time", "boolean"}:
        return SqlType("string", TEXT.column_type, nullable)
    return None


_INTEGER_WIDTH = {name: i for i, name in enumerate(INTEGER_TYPES)}
_TEXT_WIDTH = {"tinytext": 255, "text": 65535, "mediumtext": 16777215, "longtext": 4294967295}


def _width(kind: SqlType) -> tuple[int, int]:
    base = kind.column_type.split("(")[0].split()[0]
    if kind.family == "integer":
        return _INTEGER_WIDTH.get(base, 0), 0
    if kind.family == "string":
        return (_TEXT_WIDTH[base], 0) if base in _TEXT_WIDTH else (string_length(kind) or 0, 0)
    if kind.family == "decimal":
        return decimal_of(kind)
    if base in ("double",):
        return 2, 0
    if "(" in kind.column_type:
        return 1, int(kind.column_type.split("(")[1].split(")")[0].split(",")[0] or 0)
    return 1, 0


# The classes of families whose values compare with each other.
COMPARISON_CLASS = {
    "integer": "number",
    "decimal": "number",
    "float": "number",
    "boolean": "number",
    "date": "temporal",
    "datetime": "temporal",
}


def arithmetic_type(operator: str, left: SqlType, right: SqlType) -> SqlType:
    """The type of `left <operator> right` (sqlglot's node names: Add, Mul, Div ...), as
    Flink's type rules widen it."""
    families = {left.family, right.family} - {"null"}
    nullable = True
    if "float" in families:
        return SqlType("float", DOUBLE.column_type, nullable)
    if "decimal" in families:
        (lp, ls), (rp, rs) = decimal_of(left), decimal_of(right)
        if operator == "Mul":
            return decimal(lp + rp, ls + rs)
        if operator == "Div":
            return decimal(65, ls)
        return decimal(max(lp - ls, rp - rs) + max(ls, rs) + 1, max(ls, rs))
    return SqlType("integer", BIGINT.column_type, nullable)
