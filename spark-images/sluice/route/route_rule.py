"""Route rules as Flink CDC 3 reads them (TableIdRouter): `source-table` is the table list
syntax of `tables` matched against the whole `db.table` id (`,` separates alternatives, a
bare `.` is the separator, `\\.` is regex "any character"); `sink-table` names the target,
where `replace-symbol` stands for the source table's name and `$1`, `$2` ... for the
source pattern's capture groups. A table no rule matches keeps its own name."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sluice.errors import DefinitionError
from sluice.source.table_selector import table_list_regex

ROUTE_MODES = ("ALL_MATCH", "FIRST_MATCH")
_CAPTURE = re.compile(r"\$(\d+)")


@dataclass(frozen=True)
class RouteRule:
    source_table: str
    sink_table: str
    replace_symbol: str | None
    description: str
    index: int  # its place in the `route` list, for messages

    @property
    def where(self) -> str:
        return f"route[{self.index}]"

    @property
    def pattern(self) -> re.Pattern[str]:
        return re.compile(table_list_regex(self.source_table))

    def matches(self, table_id: str) -> bool:
        return self.pattern.fullmatch(table_id) is not None

    def sink_table_of(self, database: str, table: str) -> str:
        if self.replace_symbol:
            return self.sink_table.replace(self.replace_symbol, table)
        match = self.pattern.fullmatch(f"{database}.{table}")
        assert match is not None, "sink_table_of is asked only for matching tables"
        return _CAPTURE.sub(lambda m: match.group(int(m.group(1))) or "", self.sink_table)


@dataclass(frozen=True)
class TableRouter:
    """Which target tables each source table goes to, under `pipeline.route-mode`."""

    rules: tuple[RouteRule, ...] = ()
    mode: str = "ALL_MATCH"

    def route(self, database: str, table: str) -> list[tuple[str, str]]:
        """The target tables (database, table) of a source table: itself where no rule matches."""
        routed: list[tuple[str, str]] = []
        for rule in self.rules:
            if rule.matches(f"{database}.{table}"):
                target = split_table_id(rule.sink_table_of(database, table), rule)
                if target not in routed:
                    routed.append(target)
                if self.mode == "FIRST_MATCH":
                    break
        return routed or [(database, table)]

    def rules_of(self, database: str, table: str) -> list[RouteRule]:
        return [rule for rule in self.rules if rule.matches(f"{database}.{table}")]


def split_table_id(text: str, rule: RouteRule) -> tuple[str, str]:
    parts = text.split(".")
    if len(parts) != 2 or not all(parts):
        raise DefinitionError(
            f"{rule.where}.sink-table: '{rule.sink_table}' gives '{text}', which is not 'database.table' "
            "(a MySQL source's tables have two parts)"
        )
    return parts[0], parts[1]


def parse_routes(raw: Any, mode: str) -> TableRouter:
    """The `route` section: a list of rules; every problem names the rule and key."""
    if raw is None:
        return TableRouter((), mode)
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        raise DefinitionError("route: expected a list of rules, each with source-table and sink-table")
    rules = [_rule(i, item) for i, item in enumerate(raw)]
    return TableRouter(tuple(rules), mode)


_ROUTE_KEYS = ("source-table", "sink-table", "replace-symbol", "description")


def _rule(index: int, item: Any) -> RouteRule:
    where = f"route[{index}]"
    if not isinstance(item, Mapping):
        raise DefinitionError(f"{where}: expected a mapping with source-table and sink-table")
    for key in item:
        if key not in _ROUTE_KEYS:
            raise DefinitionError(f"{where}.{key}: unknown key; a route rule has {', '.join(_ROUTE_KEYS)}")
    values = {key: "" if item.get(key) is None else str(item.get(key)).strip() for key in _ROUTE_KEYS}
    for key in ("source-table", "sink-table"):
        if not values[key]:
            raise DefinitionError(f"{where}.{key}: required")
    rule = RouteRule(
        values["source-table"],
        values["sink-table"],
        values["replace-symbol"] or None,
        values["description"] or f"route {values['source-table']} to {values['sink-table']}",
        index,
    )
    try:
        pattern = rule.pattern
    except re.error as exc:
        raise DefinitionError(
            f"{where}.source-table: '{rule.source_table}' is not a valid regex ({exc}); a bare `.` separates "
            "database and table, `\\.` is regex 'any character'"
        ) from exc
    references = [int(n) for n in _CAPTURE.findall(rule.sink_table)]
    if references and rule.replace_symbol:
        raise DefinitionError(
            f"{where}.sink-table: capture references ($1 ...) cannot be used with replace-symbol (as in Flink CDC)"
        )
    beyond = [n for n in references if n > pattern.groups]
    if beyond:
        raise DefinitionError(
            f"{where}.sink-table: '{rule.sink_table}' refers to group ${beyond[0]} but source-table "
            f"'{rule.source_table}' has {pattern.groups} capture group(s)"
        )
    if not rule.replace_symbol and not references and "<>" in rule.sink_table:
        raise DefinitionError(f"{where}.sink-table: '{rule.sink_table}' holds '<>'; set replace-symbol: <> to use it")
    return rule
