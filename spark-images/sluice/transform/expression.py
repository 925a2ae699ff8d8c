"""Transform expressions compiled: Flink CDC's projection and filter SQL, parsed by
transform/expression_parser, type checked against the source table's columns and compiled
into Python closures.

One compiled expression serves the snapshot and the binlog: both give it the row in the
same decoded form (source/row_decoding), so a row has one result whichever phase read it.
A name, function or type the expression cannot take is refused here, at start, with the
rule, the expression and its position.

Values follow SQL where Flink CDC's Java code differs from it (NULL in, NULL out; `LIKE` is
SQL's pattern, not a Java regex; a division by zero is NULL); docs/route-and-transform.md lists each case.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone, tzinfo
from decimal import Decimal
from typing import Any

from sqlglot import exp

from sluice.transform import casts, functions, operators
from sluice.transform.expression_parser import DIALECT, ExpressionError, parse_filter
from sluice.transform.sql_types import (
    BIGINT,
    BOOLEAN,
    COMPARISON_CLASS,
    DOUBLE,
    NULL,
    NUMERIC,
    TEXT,
    SqlType,
    arithmetic_type,
    common_type,
    decimal,
    is_instant,
    varchar,
)
from sluice.transform.user_functions import UserFunction, loaded

# The values an expression sees besides the row's columns (Flink CDC's metadata columns).
NAMESPACE, SCHEMA, TABLE, EVENT_TYPE, OP_TS = range(5)
METADATA: dict[str, tuple[int, SqlType]] = {
    "__namespace_name__": (NAMESPACE, SqlType("string", "varchar(64)")),
    "__schema_name__": (SCHEMA, SqlType("string", "varchar(64)", nullable=False)),
    "__table_name__": (TABLE, SqlType("string", "varchar(64)", nullable=False)),
    "__data_event_type__": (EVENT_TYPE, SqlType("string", "varchar(2)", nullable=False)),
    "op_ts": (OP_TS, SqlType("integer", "bigint", nullable=False)),
}
ROW_METADATA = ("__namespace_name__", "__schema_name__", "__table_name__")  # the same for every change of a row

Meta = tuple[Any, ...]  # indexed by NAMESPACE ... OP_TS
Evaluate = Callable[[tuple[Any, ...], Meta], Any]


@dataclass(frozen=True)
class Compiled:
    evaluate: Evaluate
    type: SqlType
    columns: frozenset[str]  # the source columns it reads
    metadata: frozenset[str]  # the metadata columns it reads
    deterministic: bool = True  # NOW(), UUID() ... give another value each time
    column: str | None = None  # the source column it only names (`id`, `id AS k`): its values as they are
    metadata_column: str | None = None  # the metadata column it only names (`__table_name__ AS src`)


def check_functions(node: exp.Expression, where: str, text: str, user_functions: Collection[str] = ()) -> None:
    """Refuses a function no transform has (nor pipeline.user-defined-function, by
    `user_functions`' upper-case names), before any table is known (so that a CdcPipeline's
    conditions name it as soon as it is applied)."""
    scope = Scope({}, None, where, text)
    for sub in node.walk():
        if isinstance(sub, exp.Anonymous):
            known = str(sub.this).upper() in (*_CURRENT_TIME, *functions.NAMED_SIGNATURES, *user_functions)
        else:
            known = type(sub) in _HANDLERS
        if isinstance(sub, exp.Func) and not known:
            raise _unknown_function(scope, sub)


def is_free_function_name(name: str) -> bool:
    """Whether a user-defined function may take `name`: no function of Sluice's has it (one
    sqlglot only knows, such as FORMAT, the pipeline's expressions read as the user's)."""
    call = parse_filter(f"{name}(1)", "name")
    if name.upper() in (*_CURRENT_TIME, *functions.NAMED_SIGNATURES):
        return False
    return isinstance(call, exp.Anonymous) or type(call) not in _HANDLERS


def _unknown_function(scope: Scope, node: exp.Func) -> ExpressionError:
    name = str(node.this).upper() if isinstance(node, exp.Anonymous) else node.sql_name()
    if name in AI_MODEL_FUNCTIONS:
        return scope.refuse(node, f"{name} is {AI_MODEL_REFUSAL}")
    return scope.refuse(node, f"{name} is not a function Sluice's transform has (see docs/reference/functions.md)")


AI_MODEL_FUNCTIONS = ("AI_COMPLETE", "AI_EMBED")
AI_MODEL_REFUSAL = (
    "one of Flink CDC's AI model functions, which call a model endpoint (pipeline.model); Sluice has no model "
    "client: compute the value in a user-defined function, or leave it out"
)


class Scope:
    """What names an expression may use: the source row's columns by position, metadata
    columns, and (in a filter) the projection's computed columns."""

    def __init__(
        self,
        columns: Mapping[str, tuple[int, SqlType]],
        computed: Mapping[str, Compiled] | None = None,
        where: str = "",
        text: str = "",
        zone: tzinfo = timezone.utc,
        functions: Mapping[str, UserFunction] | None = None,
    ) -> None:
        self.columns, self.computed, self.where, self.text = columns, dict(computed or {}), where, text
        self.zone = zone  # pipeline.local-time-zone
        self.functions = dict(functions or {})  # pipeline.user-defined-function, by upper-case name

    def refuse(self, node: exp.Expression, problem: str) -> ExpressionError:
        sql = node.sql(dialect=DIALECT)
        found = self.text.lower().find(sql.lower().split("(")[0])
        at = f" at character {found + 1}" if found >= 0 else ""
        return ExpressionError(f"{self.where}: {sql}{at}: {problem}")


def compile_expression(node: exp.Expression, scope: Scope) -> Compiled:
    return _Compiler(scope).compile(node)


class _Compiler:
    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.columns: set[str] = set()
        self.metadata: set[str] = set()
        self.deterministic = True

    def compile(self, node: exp.Expression) -> Compiled:
        evaluate, kind = self._node(node)
        named = node
        while isinstance(named, exp.Alias | exp.Paren):
            named = named.this
        name = named.name if isinstance(named, exp.Column) and named.name not in self.scope.computed else None
        if name in self.scope.columns:  # a column named as it is reaches its target with its own values
            position = self.scope.columns[name][0]
            evaluate = lambda row, meta: row[position]  # noqa: E731
        return Compiled(
            evaluate,
            kind,
            frozenset(self.columns),
            frozenset(self.metadata),
            self.deterministic,
            name if name in self.scope.columns else None,
            name if name in METADATA and name not in self.scope.columns else None,
        )

    # -- dispatch ---------------------------------------------------------------------

    def _node(self, node: exp.Expression) -> tuple[Evaluate, SqlType]:
        handler = _HANDLERS.get(type(node))
        if handler is not None:
            return handler(self, node)
        if isinstance(node, exp.Anonymous):
            return self._anonymous(node)
        if isinstance(node, exp.Func):
            raise _unknown_function(self.scope, node)
        raise self.scope.refuse(node, "this kind of expression is not supported in a transform")

    def _args(self, nodes: Sequence[exp.Expression | None]) -> list[tuple[Evaluate, SqlType]]:
        return [self._node(n) for n in nodes if n is not None]

    def _expect(self, node: exp.Expression, arg: tuple[Evaluate, SqlType], families: Sequence[str], what: str) -> None:
        kind = arg[1]
        if kind.family != "null" and kind.family not in families:
            raise self.scope.refuse(node, f"{what} must be {' or '.join(f.upper() for f in families)}, not {kind.name}")

    # -- names and literals -----------------------------------------------------------

    def _column(self, node: exp.Column) -> tuple[Evaluate, SqlType]:
        name = node.name
        if node.table:
            raise self.scope.refuse(node, "name columns without a table (a transform reads one table)")
        if name in self.scope.computed:
            computed = self.scope.computed[name]
            self.columns |= computed.columns
            self.metadata |= computed.metadata
            if computed.column and computed.type.family == "boolean":  # a TINYINT(1) named as it is
                raw = computed.evaluate
                return (lambda row, meta: None if (v := raw(row, meta)) is None else bool(v)), computed.type
            return computed.evaluate, computed.type
        if name in self.scope.columns:
            position, kind = self.scope.columns[name]
            self.columns.add(name)
            if kind.family == "boolean":  # a TINYINT(1) holds 0, 1 or any other number: read as truth
                return (lambda row, meta: None if (v := row[position]) is None else bool(v)), kind
            return (lambda row, meta: row[position]), kind
        if name in METADATA:
            index, kind = METADATA[name]
            self.metadata.add(name)
            return (lambda row, meta: meta[index]), kind
        if name.upper() in ("LOCALTIMESTAMP", "CURRENT_TIME", "LOCALTIME"):
            self.deterministic = False
            return operators.now_call(name.upper(), self.scope.zone)
        known = ", ".join(sorted(self.scope.columns)) or "none"
        raise self.scope.refuse(node, f"no column {name} in the table (its columns: {known})")

    def _literal(self, node: exp.Literal) -> tuple[Evaluate, SqlType]:
        text = node.this
        if node.is_string:
            return (lambda row, meta: text), varchar(max(len(text), 1))
        if "." in text or "e" in text.lower():
            value: Any = Decimal(text) if "e" not in text.lower() else float(text)
            if isinstance(value, float):
                return (lambda row, meta: value), DOUBLE
            digits = len(value.as_tuple().digits)
            return (lambda row, meta: value), decimal(digits, max(-value.as_tuple().exponent, 0))  # type: ignore[operator]
        number = int(text)
        return (lambda row, meta: number), BIGINT

    def _null(self, node: exp.Null) -> tuple[Evaluate, SqlType]:
        return (lambda row, meta: None), NULL

    def _boolean(self, node: exp.Boolean) -> tuple[Evaluate, SqlType]:
        value = bool(node.this)
        return (lambda row, meta: value), SqlType("boolean", "tinyint(1)", nullable=False)

    def _paren(self, node: exp.Paren) -> tuple[Evaluate, SqlType]:
        return self._node(node.this)

    def _alias(self, node: exp.Alias) -> tuple[Evaluate, SqlType]:
        return self._node(node.this)

    # -- operators ----------------------------------------------------------------------

    def _arithmetic(self, node: exp.Binary) -> tuple[Evaluate, SqlType]:
        if isinstance(node, exp.Add | exp.Sub) and isinstance(node.expression, exp.Interval):
            return self._interval_arithmetic(node)
        left, right = self._args([node.this, node.expression])
        for side, what in ((left, "the left operand"), (right, "the right operand")):
            self._expect(node, side, NUMERIC, what)
        kind = arithmetic_type(type(node).__name__, left[1], right[1])
        return operators.arithmetic(type(node).__name__, left[0], right[0], kind.family), kind

    def _interval_arithmetic(self, node: exp.Binary) -> tuple[Evaluate, SqlType]:
        (left,) = self._args([node.this])
        self._expect(node, left, ("date", "datetime", "time"), "what an INTERVAL is added to")
        interval = node.expression
        amount_node = interval.this
        text = amount_node.this if isinstance(amount_node, exp.Literal) else None
        try:
            if text is None:
                raise ValueError("an INTERVAL's amount must be a literal, such as INTERVAL '1' DAY")
            unit, amount = operators.interval_amount(text, interval.unit)
        except ValueError as exc:
            raise self.scope.refuse(node, str(exc)) from None
        sign = -1 if isinstance(node, exp.Sub) else 1
        return operators.plus_interval(left[0], unit, sign * amount, self.scope.refuse(node, "")), left[1]

    def _negate(self, node: exp.Neg) -> tuple[Evaluate, SqlType]:
        (value,) = self._args([node.this])
        self._expect(node, value, NUMERIC, "the operand")
        inner = value[0]
        return (lambda row, meta: None if (v := inner(row, meta)) is None else -v), value[1]

    def _comparison(self, node: exp.Binary) -> tuple[Evaluate, SqlType]:
        left, right = self._compared(node, [node.this, node.expression])
        return operators.comparison(type(node).__name__, left[0], right[0]), BOOLEAN

    def _compared(self, node: exp.Expression, operands: list[exp.Expression]) -> list[tuple[Evaluate, SqlType]]:
        """The operands of a comparison; a string literal compared with a date or timestamp
        is read as one (`created > '2024-01-01'`), as Flink SQL's implicit cast does."""
        args = self._args(operands)
        temporal = next((kind for _, kind in args if kind.family in ("date", "datetime")), None)
        if temporal is not None:
            for i, operand in enumerate(operands):
                if isinstance(operand, exp.Literal) and operand.is_string:
                    args[i] = self._temporal_literal(node, operand.this, temporal)
        self._comparable(node, [kind for _, kind in args])
        return args

    def _temporal_literal(self, node: exp.Expression, text: str, kind: SqlType) -> tuple[Evaluate, SqlType]:
        try:
            value = datetime.fromisoformat(text.strip().replace("T", " "))
        except ValueError:
            raise self.scope.refuse(node, f"'{text}' is not a date or timestamp (yyyy-MM-dd[ HH:mm:ss])") from None
        return (lambda row, meta: value), kind

    def _comparable(self, node: exp.Expression, kinds: Sequence[SqlType]) -> None:
        """Values compare within one class: numbers (and truth values), strings, binary
        strings, dates with timestamps, times."""
        classes = {COMPARISON_CLASS.get(k.family, k.family) for k in kinds if k.family != "null"}
        if len(classes) > 1:
            raise self.scope.refuse(node, f"cannot compare {' with '.join(k.name for k in kinds)}")

    def _logical(self, node: exp.Connector) -> tuple[Evaluate, SqlType]:
        left, right = self._args([node.this, node.expression])
        for side in (left, right):
            self._expect(node, side, ("boolean",), "each operand of AND and OR")
        return operators.logical(isinstance(node, exp.And), left[0], right[0]), BOOLEAN

    def _not(self, node: exp.Not) -> tuple[Evaluate, SqlType]:
        (value,) = self._args([node.this])
        self._expect(node, value, ("boolean",), "NOT's operand")
        inner = value[0]
        return (lambda row, meta: None if (v := inner(row, meta)) is None else not v), BOOLEAN

    def _is(self, node: exp.Is) -> tuple[Evaluate, SqlType]:
        (value,) = self._args([node.this])
        what = node.expression
        inner = value[0]
        if isinstance(what, exp.Null):
            return (lambda row, meta: inner(row, meta) is None), BOOLEAN
        if isinstance(what, exp.Boolean):
            self._expect(node, value, ("boolean",), "IS TRUE's operand")
            truth = bool(what.this)
            return (lambda row, meta: inner(row, meta) is truth), BOOLEAN
        raise self.scope.refuse(node, "IS takes NULL, TRUE or FALSE")

    def _null_safe(self, node: exp.Binary) -> tuple[Evaluate, SqlType]:
        left, right = self._args([node.this, node.expression])
        self._comparable(node, [left[1], right[1]])
        equal = isinstance(node, exp.NullSafeEQ)
        a, b = left[0], right[0]
        return (lambda row, meta: (operators.same(a(row, meta), b(row, meta))) is equal), BOOLEAN

    def _between(self, node: exp.Between) -> tuple[Evaluate, SqlType]:
        value, low, high = self._compared(node, [node.this, node.args["low"], node.args["high"]])
        return operators.between(value[0], low[0], high[0]), BOOLEAN

    def _in(self, node: exp.In) -> tuple[Evaluate, SqlType]:
        if node.args.get("query") or not node.expressions:
            raise self.scope.refuse(node, "IN takes a list of values")
        value, *options = self._compared(node, [node.this, *node.expressions])
        return operators.within(value[0], [o[0] for o in options]), BOOLEAN

    def _like(self, node: exp.Like | exp.SimilarTo) -> tuple[Evaluate, SqlType]:
        word = "LIKE" if isinstance(node, exp.Like) else "SIMILAR TO"
        value, pattern = self._args([node.this, node.expression])
        for side, what in ((value, f"{word}'s operand"), (pattern, f"{word}'s pattern")):
            self._expect(node, side, ("string",), what)
        escape = node.args.get("escape")
        escape_text = escape.this if isinstance(escape, exp.Literal) else None
        like = operators.like(value[0], pattern[0], escape_text, similar=isinstance(node, exp.SimilarTo))
        if node.args.get("negate"):
            return (lambda row, meta: None if (v := like(row, meta)) is None else not v), BOOLEAN
        return like, BOOLEAN

    def _escape(self, node: exp.Escape) -> tuple[Evaluate, SqlType]:
        """`s LIKE p ESCAPE e` (and SIMILAR TO), which sqlglot reads around the LIKE."""
        if not isinstance(node.this, (exp.Like, exp.SimilarTo)):
            raise self.scope.refuse(node, "ESCAPE follows a LIKE or SIMILAR TO pattern")
        like = node.this.copy()
        like.set("escape", node.expression)
        return self._like(like)

    # -- conditionals ---------------------------------------------------------------------

    def _case(self, node: exp.Case) -> tuple[Evaluate, SqlType]:
        subject = self._node(node.this) if node.this is not None else None
        branches = []
        for branch in node.args.get("ifs") or []:
            condition, result = self._args([branch.this, branch.args["true"]])
            if subject is None:
                self._expect(node, condition, ("boolean",), "a WHEN condition")
            else:
                self._comparable(node, [subject[1], condition[1]])
            branches.append((condition, result))
        default = self._node(node.args["default"]) if node.args.get("default") is not None else None
        results = [r for _, r in branches] + ([default] if default else [])
        kind = self._common(node, [r[1] for r in results])
        if default is None:
            kind = SqlType(kind.family, kind.column_type, True)
        return operators.case(
            subject[0] if subject else None,
            [(c[0], r[0]) for c, r in branches],
            default[0] if default else None,
        ), kind

    def _if(self, node: exp.If) -> tuple[Evaluate, SqlType]:
        condition, yes, no = self._args([node.this, node.args["true"], node.args.get("false") or exp.Null()])
        self._expect(node, condition, ("boolean",), "IF's condition")
        return operators.case(None, [(condition[0], yes[0])], no[0]), self._common(node, [yes[1], no[1]])

    def _coalesce(self, node: exp.Coalesce) -> tuple[Evaluate, SqlType]:
        values = self._args([node.this, *node.expressions])
        kind = self._common(node, [v[1] for v in values])
        kind = SqlType(kind.family, kind.column_type, all(v[1].nullable for v in values))
        return operators.coalesce([v[0] for v in values]), kind

    def _nullif(self, node: exp.Nullif) -> tuple[Evaluate, SqlType]:
        value, other = self._args([node.this, node.expression])
        self._comparable(node, [value[1], other[1]])
        a, b = value[0], other[0]
        return (lambda row, meta: None if operators.same((v := a(row, meta)), b(row, meta)) else v), SqlType(
            value[1].family, value[1].column_type, True
        )

    def _common(self, node: exp.Expression, kinds: list[SqlType]) -> SqlType:
        kind = common_type(kinds)
        if kind is None:
            raise self.scope.refuse(node, f"its results have no common type ({', '.join(k.name for k in kinds)})")
        return kind if kind.family != "null" else TEXT

    # -- casts ----------------------------------------------------------------------------

    def _cast(self, node: exp.Cast) -> tuple[Evaluate, SqlType]:
        (value,) = self._args([node.this])
        to = node.args["to"]
        target = casts.cast_type(to)
        if target is None:
            raise self.scope.refuse(node, f"CAST to {to.sql(dialect=DIALECT)} is not supported")
        if value[1].family == "binary" and target.family not in ("string", "binary"):
            raise self.scope.refuse(node, f"cannot CAST {value[1].name} to {target.name}")
        safe = bool(node.args.get("safe"))
        evaluate = value[0]
        if is_instant(value[1]) and target.family == "datetime":  # TIMESTAMP_LTZ to TIMESTAMP: the clock's
            evaluate = operators.on_clock(evaluate, self.scope.zone)
        return casts.cast(evaluate, target, safe, node.sql(dialect=DIALECT)), target

    # -- functions ------------------------------------------------------------------------

    def _call(self, node: exp.Func, signature: functions.Signature | None = None) -> tuple[Evaluate, SqlType]:
        """A built-in function: by its node's type, or the `signature` of one sqlglot does not know."""
        signature = signature or functions.SIGNATURES[type(node)]
        nodes = [node.args.get(name) for name in signature.args]
        if isinstance(node, exp.Anonymous):  # its arguments in order: at least one, at most one per family
            nodes = list(node.expressions)
            if not 0 < len(nodes) <= len(signature.families):
                raise self.scope.refuse(node, f"{signature.name} takes 1 to {len(signature.families)} arguments")
        elif signature.variadic:
            nodes = [*nodes[:-1], *(node.args.get(signature.args[-1]) or [])]
        args = self._args(nodes)
        for (name, families), arg in zip(signature.checks(len(args)), args, strict=False):
            self._expect(node, arg, families, f"{signature.name}'s {name}")
        if not signature.deterministic:
            self.deterministic = False
        kind = signature.result([a[1] for a in args])
        try:
            return signature.build(node, [a[0] for a in args], [a[1] for a in args], self.scope.zone), kind
        except ValueError as exc:  # an argument its builder cannot take (a precision, a unit)
            raise self.scope.refuse(node, str(exc)) from None

    def _anonymous(self, node: exp.Anonymous) -> tuple[Evaluate, SqlType]:
        name = str(node.this).upper()
        if name in _CURRENT_TIME and not node.expressions:
            self.deterministic = False
            return operators.now_call(name, self.scope.zone)
        if name in functions.NAMED_SIGNATURES:
            return self._call(node, functions.NAMED_SIGNATURES[name])
        declared = self.scope.functions.get(name)
        if declared is None:
            raise _unknown_function(self.scope, node)
        function = loaded(declared)
        args = self._args(node.expressions)
        problem = function.refusal([kind for _, kind in args])
        if problem:
            raise self.scope.refuse(node, problem)
        evaluates = [evaluate for evaluate, _ in args]
        return (lambda row, meta: function.call([a(row, meta) for a in evaluates])), function.result

    def _current(self, node: exp.Expression) -> tuple[Evaluate, SqlType]:
        self.deterministic = False
        return operators.now_call(type(node).__name__.upper(), self.scope.zone)


_CURRENT_TIME = ("NOW", "CURRENT_TIMESTAMP", "LOCALTIMESTAMP", "UNIX_TIMESTAMP")
_HANDLERS: dict[type, Callable[[_Compiler, Any], tuple[Evaluate, SqlType]]] = {
    exp.Column: _Compiler._column,
    exp.Literal: _Compiler._literal,
    exp.Null: _Compiler._null,
    exp.Boolean: _Compiler._boolean,
    exp.Paren: _Compiler._paren,
    exp.Alias: _Compiler._alias,
    exp.Neg: _Compiler._negate,
    exp.And: _Compiler._logical,
    exp.Or: _Compiler._logical,
    exp.Not: _Compiler._not,
    exp.Is: _Compiler._is,
    exp.NullSafeEQ: _Compiler._null_safe,
    exp.NullSafeNEQ: _Compiler._null_safe,
    exp.Between: _Compiler._between,
    exp.In: _Compiler._in,
    exp.Like: _Compiler._like,
    exp.SimilarTo: _Compiler._like,
    exp.Escape: _Compiler._escape,
    exp.Case: _Compiler._case,
    exp.If: _Compiler._if,
    exp.Coalesce: _Compiler._coalesce,
    exp.Nullif: _Compiler._nullif,
    exp.Cast: _Compiler._cast,
    exp.TryCast: _Compiler._cast,
    exp.CurrentTimestamp: _Compiler._current,
    exp.CurrentDate: _Compiler._current,
    **dict.fromkeys((exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.IntDiv), _Compiler._arithmetic),
    **dict.fromkeys((exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE), _Compiler._comparison),
    **dict.fromkeys(functions.SIGNATURES, _Compiler._call),
}
