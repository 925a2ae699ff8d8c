"""A transform rule compiled for one source table: the target's columns and key, and the
function that gives a source row's target row (or None where the filter keeps the row out)."""

from __future__ import annotations

import dataclasses
from operator import itemgetter

from sqlglot import exp

from sluice.errors import DefinitionError
from sluice.source.row_decoding import Row, RowDecoder
from sluice.source.schema import Column, TableSchema
from sluice.source.time_zone import parse_zone_id
from sluice.transform.expression import (
    ROW_METADATA,
    Compiled,
    Meta,
    Scope,
    compile_expression,
)
from sluice.transform.expression_parser import DIALECT, parse_filter, parse_projection
from sluice.transform.far_dates import FarDatetime, target_value
from sluice.transform.sql_types import type_of
from sluice.transform.transform_rule import TransformRule
from sluice.transform.user_functions import UserFunctionFailed

EVENT_METADATA = ("__data_event_type__", "op_ts")  # differ between the changes of one row


class TableTransform:
    """A rule compiled for one source table's schema (the schema rows are decoded in)."""

    def __init__(self, rule: TransformRule, schema: TableSchema, far_dates: bool = False) -> None:
        """`far_dates`: whether the target's dates reach past year 9999 (a date there is a
        FarDate, else an invalid date's text, which sink.zero-date decides)."""
        self.rule, self.source, self.far_dates = rule, schema, far_dates
        columns = {c.name: (i, type_of(c, rule.tinyint1_as_boolean)) for i, c in enumerate(schema.columns)}
        functions = {f.name.upper(): f for f in rule.functions}
        scope = Scope(columns, zone=parse_zone_id(rule.local_time_zone), functions=functions)
        items = self._items(scope)
        self.names = [name for name, _, _ in items]
        self.columns = tuple(column for _, column, _ in items)
        self._values = [compiled for _, _, compiled in items]
        self._dated = [i for i, v in enumerate(self._values) if v.type.family in ("date", "datetime")]
        # target column -> the source column it holds as it is
        self.passthrough = {name: compiled.column for name, _, compiled in items if compiled.column}
        self.metadata = frozenset(m for c in self._values for m in c.metadata)
        self.filter: Compiled | None = None
        if rule.filter:
            where = f"{rule.where}.filter ({schema.table_id})"
            computed = {name: value for name, value in zip(self.names, self._values, strict=True)}
            scope = Scope(scope.columns, computed, where, rule.filter, scope.zone, scope.functions)
            self.filter = compile_expression(parse_filter(rule.filter, where, list(scope.functions)), scope)
            if self.filter.type.family not in ("boolean", "null"):
                raise DefinitionError(f"{where}: '{rule.filter}' is {self.filter.type.name}, not a condition")
            varying = sorted(self.filter.metadata & set(EVENT_METADATA)) or (
                [] if self.filter.deterministic else ["a time or random value"]
            )
            if varying:
                raise DefinitionError(
                    f"{where}: '{rule.filter}' depends on the change, not the row ({', '.join(varying)}); a filter "
                    "keeps or drops a row by its values, so that the target is the query over the source"
                )
        self.primary_key = self._key()
        if rule.soft_delete and not self.primary_key and self.metadata & set(EVENT_METADATA):
            raise DefinitionError(
                f"{rule.where}.converter-after-transform ({schema.table_id}): a soft delete marks the target's row, "
                f"and a table without a key finds its row by all its values, which "
                f"{', '.join(sorted(self.metadata & set(EVENT_METADATA)))} changed since it was written: give the "
                "rule primary-keys"
            )
        self._fast = (
            itemgetter(*[schema.position(self.passthrough[n]) for n in self.names]) if self._only_columns() else None
        )

    def _items(self, scope: Scope) -> list[tuple[str, Column, Compiled]]:
        rule, where = self.rule, f"{self.rule.where}.projection ({self.source.table_id})"
        nodes = parse_projection(rule.projection or "*", where, list(scope.functions))
        scope = Scope(scope.columns, None, where, rule.projection or "*", scope.zone, scope.functions)
        items: dict[str, tuple[str, Column, Compiled]] = {}
        for node in nodes:
            if isinstance(node, exp.Star):
                for column in self.source.columns:
                    items[column.name] = (
                        column.name,
                        column,
                        compile_expression(exp.column(column.name, quoted=True), scope),
                    )
                continue
            if isinstance(node, exp.Column) and isinstance(node.this, exp.Star):
                raise DefinitionError(f"{where}: write * without a table name")
            name = node.alias_or_name if isinstance(node, exp.Alias | exp.Column) else ""
            if not name:
                raise DefinitionError(f"{where}: '{node.sql(dialect=DIALECT)}' needs a name: add AS <column>")
            compiled = compile_expression(node, scope)
            if compiled.column:
                column = dataclasses.replace(self.source.column(compiled.column), name=name)
            else:
                column = compiled.type.column(name)
            items[name] = (name, column, compiled)
        return list(items.values())

    def _key(self) -> tuple[str, ...]:
        rule = self.rule
        if rule.primary_keys:
            missing = [k for k in rule.primary_keys if k not in self.names]
            if missing:
                raise DefinitionError(
                    f"{rule.where}.primary-keys: {', '.join(missing)} is not a column of the projection "
                    f"({', '.join(self.names)})"
                )
            return rule.primary_keys
        by_source = {source: name for name, source in self.passthrough.items()}
        key = self.source.row_key
        if key and all(k in by_source for k in key):
            return tuple(by_source[k] for k in key)
        return ()

    def _only_columns(self) -> bool:
        return all(v.column for v in self._values)

    def target(self) -> TableSchema:
        """The transformed table's schema, under the source table's name (the route renames it)."""
        key = self.primary_key
        columns = tuple(dataclasses.replace(c, nullable=False) if c.name in key else c for c in self.columns)
        chunk = self.source.chunk_key
        chunk_key = next((n for n, s in self.passthrough.items() if s == chunk), key[0] if key else columns[0].name)
        return TableSchema(self.source.database, self.source.table, columns, key, chunk_key, (), not key)

    def metadata_columns(self) -> dict[str, str]:
        """Target column -> the metadata column it holds as it is."""
        return {name: v.metadata_column for name, v in zip(self.names, self._values, strict=True) if v.metadata_column}

    def row_meta(self, event_type: str = "+I", op_ts: int = 0) -> Meta:
        """Flink CDC's metadata for a MySQL row: no namespace, the database as the schema."""
        return (None, self.source.database, self.source.table, event_type, op_ts)

    def image(self, row: Row, meta: Meta) -> Row | None:
        """The row as its target holds it; None where the filter keeps it out."""
        where = "filter"
        try:
            if self.filter is not None and not self.filter.evaluate(row, meta):
                return None
            where = "projection"
            return self.project(row, meta)
        except UserFunctionFailed as exc:  # named with the rule, the table and the row's key
            raise UserFunctionFailed(
                exc.name,
                exc.__cause__ or exc,
                f"{self.rule.where}.{where} ({self.source.table_id}, {RowDecoder(self.source).key_text(row)})",
            ) from exc

    def project(self, row: Row, meta: Meta) -> Row:
        if self._fast is not None:
            value = self._fast(row)
            return value if isinstance(value, tuple) else (value,)
        values = tuple(v.evaluate(row, meta) for v in self._values)
        if any(isinstance(values[i], FarDatetime) for i in self._dated):
            # past year 9999: what each target takes of a date its type may not hold
            values = tuple(target_value(v, self.far_dates) if isinstance(v, FarDatetime) else v for v in values)
        return values

    @property
    def deterministic(self) -> bool:
        return all(v.deterministic for v in self._values) and not (self.metadata - set(ROW_METADATA))
