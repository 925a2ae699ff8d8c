"""Values MySQL holds that a target's types cannot, and what each becomes. No such value
stops a pipeline without a decision: each case has a rule (docs/sinks/jdbc.md says which), the
values it changed are counted per table and column, and a warning names the table, column
and key the first time in each column.

- U+0000 (NUL) in a string: PostgreSQL's text types cannot hold it. By default it is
  removed and the rest of the value kept; `sink.nul-replacement` gives a replacement.
- A date no calendar has (zero '0000-00-00', partial '2020-00-15', year 0): PostgreSQL and
  Spark have no such date. By default (Debezium's rule) NULL where the column is nullable,
  the epoch (1970-01-01, 1970-01-01 00:00:00) where it is NOT NULL; `sink.zero-date` gives
  a fixed date instead, or `fail` to stop naming table, column and key.
- A UTF-16 surrogate in a string (MariaDB keeps what a legacy client wrote: CESU-8's pairs,
  or a lone one): no Unicode text holds one, so PostgreSQL, Arrow and Spark strings cannot.
  A pair becomes the character it encodes (what the client meant), a lone one U+FFFD.
A MySQL-dialect target holds them all as the source does.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from datetime import date, datetime
from typing import Any

from sluice.errors import SinkError
from sluice.event.change_fold import Screen, has_surrogates, may_fit
from sluice.event.snapshot_split import SplitResult
from sluice.source.copy_text import RendersCopyText
from sluice.source.row_decoding import InvalidDate, Row, RowDecoder
from sluice.source.schema import TEXT_STRING_TYPES, Column, TableSchema

log = logging.getLogger(__name__)

NUL = "\x00"
STRINGS = TEXT_STRING_TYPES | {"enum", "set"}
DATES = ("date", "datetime", "timestamp")
COPY_NULL = "\\N"

_lock = threading.Lock()
# Values changed in this process, by (table, column, rule): nul, surrogate, invalid_date.
changed: collections.Counter[tuple[str, str, str]] = collections.Counter()


def on_executor(results: list[SplitResult], before: collections.Counter[tuple[str, str, str]]) -> list[SplitResult]:
    """An executor's task's results, the values it changed since `before` on the last one."""
    with _lock:
        counts = tuple((*key, n) for key, n in sorted((changed - before).items()))
    if counts and results:
        results[-1] = dataclasses.replace(results[-1], rewritten=counts)
    return results


def count_executors(result: SplitResult) -> None:
    """The driver adds what an executor's split changed to its own counts."""
    with _lock:
        for table, column, rule, n in result.rewritten:
            changed[(table, column, rule)] += n


def _changed(schema: TableSchema, column: str, row: Row, rule: str, what: str) -> None:
    key = (schema.table_id, column, rule)
    with _lock:
        first = key not in changed
        changed[key] += 1
    if first:
        log.warning("%s.%s: %s (first at %s)", schema.table_id, column, what, RowDecoder(schema).key_text(row))


class RowFit:
    """What one table's rows become in a target. Its `screen` picks the rows it may change:
    any other it gives back as it is, so the change fold calls it on those alone."""

    def __init__(self, rules: list[tuple[int, Callable[[Any, Row], Any]]], screen: Screen, unicode_text: bool) -> None:
        self.rules, self.screen, self.unicode_text = rules, screen, unicode_text

    def __call__(self, row: Row) -> Row:
        values: list[Any] | None = None
        for i, rule in self.rules:
            value = row[i]
            if may_fit(value, InvalidDate, self.unicode_text):
                values = values or list(row)
                values[i] = rule(value, row)
        return row if values is None else tuple(values)


class TargetValues:
    """The rules of one target: `nul_replacement` None where it holds NUL, `zero_date`
    None where it holds MySQL's invalid dates (else sink.zero-date's value), `unicode_text`
    where its strings hold Unicode text only (no surrogates)."""

    def __init__(self, nul_replacement: str | None, zero_date: str | None, unicode_text: bool = True) -> None:
        self.nul_replacement, self.zero_date, self.unicode_text = nul_replacement, zero_date, unicode_text

    def for_table(self, schema: TableSchema) -> RowFit | None:
        """What each row of the table becomes in the target; None where rows go as they are."""
        rules: list[tuple[int, Callable[[Any, Row], Any]]] = []
        if self.nul_replacement is not None or self.unicode_text:
            rules += [(i, self._text_rule(schema, c)) for i, c in enumerate(schema.columns) if c.data_type in STRINGS]
        if self.zero_date is not None:
            rules += [(i, self._date_rule(schema, c)) for i, c in enumerate(schema.columns) if c.data_type in DATES]
        if not rules:
            return None
        return RowFit(rules, Screen(tuple(i for i, _ in rules), self.unicode_text, InvalidDate), self.unicode_text)

    def _text_rule(self, schema: TableSchema, column: Column) -> Callable[[Any, Row], Any]:
        nuls, replacement = self.nul_replacement is not None, self.nul_replacement or ""
        done = "removed" if not replacement else f"replaced by {replacement!r}"
        nul = f"a value holds NUL characters, which PostgreSQL text cannot: {done}; sink.nul-replacement decides"
        surrogate = (
            "a value holds UTF-16 surrogates, which no Unicode text can: a pair became the character it encodes, "
            "a lone one U+FFFD"
        )

        def rule(value: Any, row: Row) -> Any:
            if value.__class__ is not str:
                return value
            fitted = value
            if nuls and NUL in fitted:
                _changed(schema, column.name, row, "nul", nul)
                fitted = fitted.replace(NUL, replacement)
            if self.unicode_text and has_surrogates(fitted):
                _changed(schema, column.name, row, "surrogate", surrogate)
                fitted = fitted.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
            return fitted

        return rule

    def _date_rule(self, schema: TableSchema, column: Column) -> Callable[[Any, Row], Any]:
        replacement = self.date_replacement(column)
        done = "NULL" if replacement is None else _iso(replacement)
        what = (
            f"a date no calendar has (zero or partial), and the target has no such date: {done}; sink.zero-date decides"
        )

        def rule(value: Any, row: Row) -> Any:
            if value.__class__ is not InvalidDate:
                return value
            if self.zero_date == "fail":
                where = RowDecoder(schema).key_text(row)
                raise SinkError(
                    f"{schema.table_id}.{column.name} holds {str(value)!r} at {where}, a date no "
                    "calendar has, which the target cannot hold (sink.zero-date is 'fail')"
                )
            _changed(schema, column.name, row, "invalid_date", what)
            return replacement

        return rule

    def date_replacement(self, column: Column) -> date | datetime | None:
        """What an invalid date of the column becomes (None: NULL)."""
        if self.zero_date in ("", None):
            if column.nullable:
                return None
            return date(1970, 1, 1) if column.data_type == "date" else datetime(1970, 1, 1)
        if self.zero_date == "fail":
            return None  # never used: the rule raises
        fixed = datetime.fromisoformat(self.zero_date)
        return fixed.date() if column.data_type == "date" else fixed

    def rows(self, schema: TableSchema, rows: Iterable[Row]) -> Iterable[Row]:
        """The rows as the target takes them (COPY text too, where the source rendered it)."""
        fit = self.for_table(schema)
        return rows if fit is None else _Fitted(schema, rows, fit, self)


class _Fitted:
    def __init__(
        self, schema: TableSchema, rows: Iterable[Row], fit: Callable[[Row], Row], rules: TargetValues
    ) -> None:
        self._schema, self._rows, self._fit, self._rules = schema, rows, fit, rules
        self._dates = (
            [i for i, c in enumerate(schema.columns) if c.data_type in DATES] if rules.zero_date is not None else []
        )

    def __iter__(self) -> Iterator[Row]:
        return map(self._fit, self._rows)

    @property
    def has_copy_text(self) -> bool:
        return isinstance(self._rows, RendersCopyText) and self._rows.has_copy_text

    def copy_text(self) -> Iterator[str]:
        """COPY text blocks (tab-separated, tabs in values escaped) as the target takes
        them. Only a block that may hold a NUL or an invalid date is read line by line."""
        assert isinstance(self._rows, RendersCopyText)
        nuls, unicode_text = self._rules.nul_replacement is not None, self._rules.unicode_text
        for block in self._rows.copy_text():
            if (
                (nuls and NUL in block)
                or (unicode_text and has_surrogates(block))
                or (self._dates and ("-00" in block or "0000-" in block))
            ):
                block = "\n".join(self._fit_line(line) for line in block.split("\n"))
            yield block

    def _fit_line(self, line: str) -> str:
        if not line:
            return line
        fields = line.split("\t")
        fitted = list(self._fit(tuple(self._as_value(i, f) for i, f in enumerate(fields))))
        for i, value in enumerate(fitted):
            if value is None and fields[i] != COPY_NULL:
                fields[i] = COPY_NULL
            elif isinstance(value, (date, datetime)) and i in self._dates and _invalid(fields[i]):
                text = _iso(value)
                fields[i] = text + "+00" if self._schema.columns[i].data_type == "timestamp" else text
            elif value.__class__ is str and fields[i] != value:  # NUL or surrogates
                fields[i] = value
        return "\t".join(fields)

    def _as_value(self, i: int, field: str) -> Any:
        """A field as the rules see it: an invalid date as one, the rest as text."""
        if i in self._dates and _invalid(field):
            return InvalidDate(field.removesuffix("+00"))
        return field


def _iso(value: date | datetime) -> str:
    return value.isoformat(sep=" ") if isinstance(value, datetime) else value.isoformat()


def _invalid(text: str) -> bool:
    if text == COPY_NULL:
        return False
    try:
        datetime.fromisoformat(text.removesuffix("+00"))
    except ValueError:
        return True
    return False
