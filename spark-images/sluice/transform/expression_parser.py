"""Transform expressions as text: Flink CDC's projection and filter SQL parsed with sqlglot
into syntax trees (transform/expression compiles them), or refused with the rule, the
expression and the character where it stops making sense."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import sqlglot
from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.helper import seq_get
from sqlglot.tokens import TokenType

from sluice.errors import DefinitionError

_PART_NODES: dict[str, type[exp.Func]] = {
    "YEAR": exp.Year,
    "MONTH": exp.Month,
    "DAY": exp.Day,
    "DAYOFMONTH": exp.DayOfMonth,
    "DAYOFYEAR": exp.DayOfYear,
    "DAYOFWEEK": exp.DayOfWeek,
}


def _part(node: type[exp.Func]) -> Callable[[list], exp.Func]:
    return lambda args: node(this=seq_get(args, 0))


class FlinkSql(Spark):
    """Spark's SQL is the closest sqlglot has to Flink's (backquoted names, `||`, STRING; a
    CAST is read as a TRY_CAST without `safe`). Date patterns stay Java's, as written."""

    TIME_MAPPING: dict[str, str] = {}

    class Parser(Spark.Parser):
        """Where Flink's SQL reads otherwise: LTRIM/RTRIM(str[, characters]) (Spark puts the
        characters first; alone they are a space), and POSITION(sub IN str FROM start)."""

        FUNCTIONS = {
            **Spark.Parser.FUNCTIONS,
            "LTRIM": lambda args: _flink_trim(args, "LEADING"),
            "RTRIM": lambda args: _flink_trim(args, "TRAILING"),
            "UNIX_TIMESTAMP": lambda args: _flink_unix_timestamp(args),
            # the part functions take their argument as it is: Spark reads YEAR(ts) as
            # YEAR(TO_DATE(ts)), which would take an instant's date in UTC
            **{name: _part(node) for name, node in _PART_NODES.items()},
        }
        FUNCTION_PARSERS = {**Spark.Parser.FUNCTION_PARSERS, "POSITION": lambda self: self._parse_flink_position()}

        def _parse_flink_position(self) -> exp.StrPosition:
            needle = self._parse_bitwise()
            if not self._match(TokenType.IN):
                args = [needle, *(self._parse_csv(self._parse_bitwise) if self._match(TokenType.COMMA) else [])]
                return self.expression(exp.StrPosition(this=seq_get(args, 1), substr=needle, position=seq_get(args, 2)))
            haystack = self._parse_bitwise()
            start = self._parse_bitwise() if self._match(TokenType.FROM) else None
            return self.expression(exp.StrPosition(this=haystack, substr=needle, position=start))


def _flink_trim(args: list, position: str) -> exp.Trim:
    characters = seq_get(args, 1) or exp.Literal.string(" ")
    return exp.Trim(this=seq_get(args, 0), expression=characters, position=position)


def _flink_unix_timestamp(args: list) -> exp.Expression:
    """UNIX_TIMESTAMP() is the time a row is transformed; with text, the text read (Spark
    reads the first as UNIX_TIMESTAMP(CURRENT_TIMESTAMP()))."""
    if not args:
        return exp.Anonymous(this="UNIX_TIMESTAMP", expressions=[])
    return exp.StrToUnix(this=seq_get(args, 0), format=seq_get(args, 1))


DIALECT = FlinkSql


class ExpressionError(DefinitionError):
    troubleshooting = "expression-error"


@functools.cache
def _dialect_calling(names: tuple[str, ...]) -> type[FlinkSql]:
    """FlinkSql reading these names as calls of user-defined functions, whatever sqlglot
    knows them as (FORMAT, say)."""

    def call(name: str) -> Callable[[list], exp.Anonymous]:
        return lambda args: exp.Anonymous(this=name, expressions=args)

    class Parser(FlinkSql.Parser):
        FUNCTIONS = {**FlinkSql.Parser.FUNCTIONS, **{name: call(name) for name in names}}
        FUNCTION_PARSERS = {k: v for k, v in FlinkSql.Parser.FUNCTION_PARSERS.items() if k not in names}

    return type("FlinkSqlWithFunctions", (FlinkSql,), {"Parser": Parser})


def parse_projection(text: str, where: str, functions: Sequence[str] = ()) -> list[exp.Expression]:
    """The projection's items; `\\*` (Flink CDC's escape for a leading star) is `*`."""
    text = text.replace("\\*", "*")
    commas = [token.token_type == TokenType.COMMA for token in DIALECT().tokenize(text)]
    if commas[:1] == [True] or commas[-1:] == [True] or any(a and b for a, b in zip(commas, commas[1:], strict=False)):
        raise ExpressionError(f"{where}: '{text}' has an empty item between commas")
    tree = _parse(f"SELECT {text}", where, len("SELECT "), functions)
    if not isinstance(tree, exp.Select) or tree.args.get("from") or tree.args.get("where"):
        raise ExpressionError(f"{where}: '{text}' must be a list of expressions, as a SELECT clause has")
    return list(tree.expressions)


def parse_filter(text: str, where: str, functions: Sequence[str] = ()) -> exp.Expression:
    tree = _parse(f"SELECT 1 WHERE {text}", where, len("SELECT 1 WHERE "), functions)
    condition = tree.args.get("where")
    if not isinstance(tree, exp.Select) or condition is None:
        raise ExpressionError(f"{where}: '{text}' must be a condition, as a WHERE clause has")
    return condition.this


def _parse(sql: str, where: str, offset: int, functions: Sequence[str] = ()) -> exp.Expression:
    """`functions`: the upper-case names of the pipeline's user-defined functions."""
    dialect = _dialect_calling(tuple(sorted(functions))) if functions else DIALECT
    try:
        return sqlglot.parse_one(sql, read=dialect)
    except sqlglot.errors.ParseError as exc:
        detail = exc.errors[0] if exc.errors else {}
        column = detail.get("col")
        at = f" at character {max(column - offset, 1)}" if column else ""
        problem = str(detail.get("description", exc))
        if problem.startswith("Required keyword"):
            problem = "an operand is missing"
        raise ExpressionError(f"{where}: cannot parse '{sql[offset:]}'{at}: {problem}") from None
