"""Values MySQL holds that a target's types cannot, and what each becomes. No such value
stops a pipeline without a decision: each case has a rule (the README's type mapping says
which), the values it changed are counted per table and column, and a warning names the
table, column and key the first time in each column.

- U+0000 (NUL) in a string: PostgreSQL's text types cannot hold it. By default it is
  removed and the rest of the value kept; `sink.nul-replacement` gives a replacement
  instead. A MySQL-dialect target holds it as the source does.
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from sluice.snapshot.copy_text import RendersCopyText
from sluice.source.row_decoding import Row, RowDecoder
from sluice.source.schema import TEXT_STRING_TYPES, TableSchema

log = logging.getLogger(__name__)

NUL = "\x00"
_STRINGS = TEXT_STRING_TYPES | {"enum", "set"}

_lock = threading.Lock()
changed: collections.Counter[str] = collections.Counter()  # "db.table.column": values changed, in this process


def _changed(schema: TableSchema, column: str, row: Row, what: str) -> None:
    name = f"{schema.table_id}.{column}"
    with _lock:
        first = name not in changed
        changed[name] += 1
    if first:
        key = RowDecoder(schema).row_key(row) if schema.row_key else row
        keys = key if isinstance(key, tuple) and len(schema.row_key) > 1 else (key,)
        where = ", ".join(f"{k}={v}" for k, v in zip(schema.row_key, keys, strict=True)) or f"row {row!r}"
        log.warning("%s: %s (first at %s); sink.nul-replacement chooses otherwise", name, what, where)


class TargetValues:
    """The rules of one target. `nul_replacement` None: the target holds NUL."""

    def __init__(self, nul_replacement: str | None) -> None:
        self.nul_replacement = nul_replacement

    def for_table(self, schema: TableSchema) -> Callable[[Row], Row] | None:
        """What each row of the table becomes in the target; None where rows go as they are."""
        if self.nul_replacement is None:
            return None
        strings = [i for i, c in enumerate(schema.columns) if c.data_type in _STRINGS]
        if not strings:
            return None
        replacement = self.nul_replacement
        what = f"a value holds NUL characters, which PostgreSQL text cannot: {_done(replacement)}"

        def fit(row: Row) -> Row:
            for i in strings:
                value = row[i]
                if value.__class__ is str and NUL in value:
                    values = list(row)
                    for j in strings:
                        if values[j].__class__ is str and NUL in values[j]:
                            _changed(schema, schema.columns[j].name, row, what)
                            values[j] = values[j].replace(NUL, replacement)
                    return tuple(values)
            return row

        return fit

    def rows(self, schema: TableSchema, rows: Iterable[Row]) -> Iterable[Row]:
        """The rows as the target takes them (COPY text too, where the source rendered it)."""
        fit = self.for_table(schema)
        return rows if fit is None else _Fitted(schema, rows, fit, self.nul_replacement or "")


def _done(replacement: str) -> str:
    return "removed" if replacement == "" else f"replaced by {replacement!r}"


class _Fitted:
    def __init__(self, schema: TableSchema, rows: Iterable[Row], fit: Callable[[Row], Row], replacement: str) -> None:
        self._schema, self._rows, self._fit, self._replacement = schema, rows, fit, replacement

    def __iter__(self) -> Iterator[Row]:
        return map(self._fit, self._rows)

    @property
    def has_copy_text(self) -> bool:
        return isinstance(self._rows, RendersCopyText) and self._rows.has_copy_text

    def copy_text(self) -> Iterator[str]:
        """COPY text blocks (tab-separated, tabs in values escaped) with NULs replaced;
        the rare block holding one is read line by line for the warning's column and key."""
        assert isinstance(self._rows, RendersCopyText)
        what = f"a value holds NUL characters, which PostgreSQL text cannot: {_done(self._replacement)}"
        for block in self._rows.copy_text():
            if NUL in block:
                for line in block.split("\n"):
                    if NUL in line:
                        fields: list[Any] = line.split("\t")
                        for i, value in enumerate(fields):
                            if NUL in value:
                                _changed(self._schema, self._schema.columns[i].name, tuple(fields), what)
                block = block.replace(NUL, self._replacement)
            yield block
