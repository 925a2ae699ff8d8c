"""Transform rules as Flink CDC 3 reads them (transform/table_transform compiles one for a
source table's schema).

The first rule whose `source-table` selects a table applies to it (as in Flink CDC); a
table no rule selects reaches its target as it is. The expression parser (sqlglot, a tenth
of a second to load) is loaded by the pipelines that have expressions, not by every run
that reads a definition."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sluice.errors import DefinitionError
from sluice.source.table_selector import TableSelector, parse_patterns
from sluice.transform.user_functions import UserFunction

_KEYS = (
    "source-table",
    "projection",
    "filter",
    "primary-keys",
    "partition-keys",
    "table-options",
    "table-options.delimiter",
    "converter-after-transform",
    "description",
)
CONVERTERS = ("SOFT_DELETE",)  # converter-after-transform


@dataclass(frozen=True)
class TransformRule:
    source_table: str
    projection: str  # "" means every column, as `*`
    filter: str
    primary_keys: tuple[str, ...]
    partition_keys: tuple[str, ...]
    table_options: Mapping[str, str]
    description: str
    index: int
    selector: TableSelector = field(compare=False, repr=False)
    local_time_zone: str = "UTC"  # pipeline.local-time-zone
    # converter-after-transform SOFT_DELETE: a delete becomes an update of the row, its
    # __data_event_type__ -D (the row stays in the target, marked)
    soft_delete: bool = False
    functions: tuple[UserFunction, ...] = ()  # pipeline.user-defined-function
    tinyint1_as_boolean: bool = False  # source.treat-tinyint1-as-boolean.enabled

    @property
    def where(self) -> str:
        return f"transform[{self.index}]"


def parse_transforms(
    raw: Any, local_time_zone: str = "UTC", functions: Sequence[UserFunction] = (), tinyint1_as_boolean: bool = False
) -> tuple[TransformRule, ...]:
    """`local_time_zone`: the zone LOCALTIMESTAMP, LOCALTIME, CURRENT_DATE and FROM_UNIXTIME
    compute in (pipeline.local-time-zone, checked with the pipeline's options); `functions`
    the pipeline's user-defined functions; `tinyint1_as_boolean`: whether expressions read
    TINYINT(1) columns as BOOLEAN."""
    if raw is None:
        return ()
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        raise DefinitionError("transform: expected a list of rules, each with source-table")
    return tuple(_rule(i, item, local_time_zone, tuple(functions), tinyint1_as_boolean) for i, item in enumerate(raw))


def _rule(
    index: int, item: Any, local_time_zone: str, functions: tuple[UserFunction, ...], tinyint1_as_boolean: bool
) -> TransformRule:
    where = f"transform[{index}]"
    if not isinstance(item, Mapping):
        raise DefinitionError(f"{where}: expected a mapping with source-table")
    for key in item:
        if key not in _KEYS:
            raise DefinitionError(f"{where}.{key}: unknown key; a transform rule has {', '.join(_KEYS)}")
    values = {key: "" if item.get(key) is None else str(item.get(key)).strip() for key in _KEYS}
    if not values["source-table"]:
        raise DefinitionError(f"{where}.source-table: required")
    converter = values["converter-after-transform"].upper()
    if converter and converter not in CONVERTERS:
        raise DefinitionError(
            f"{where}.converter-after-transform: '{values['converter-after-transform']}' is not one of "
            f"{', '.join(CONVERTERS)}"
        )
    selector = TableSelector(parse_patterns(f"{where}.source-table", values["source-table"]))
    names = [f.name.upper() for f in functions]
    if values["projection"] or values["filter"]:
        _check_expressions(values, where, names)
    delimiter = values["table-options.delimiter"] or ","
    options = {}
    for pair in (p.strip() for p in values["table-options"].split(delimiter)):
        if not pair:
            continue
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise DefinitionError(f"{where}.table-options: '{pair}' must be key=value")
        options[key.strip()] = value.strip()
    return TransformRule(
        values["source-table"],
        values["projection"],
        values["filter"],
        _names(values["primary-keys"]),
        _names(values["partition-keys"]),
        options,
        values["description"],
        index,
        selector,
        local_time_zone,
        converter == "SOFT_DELETE",
        functions,
        tinyint1_as_boolean,
    )


def _check_expressions(values: Mapping[str, str], where: str, functions: list[str]) -> None:
    """The rule's projection and filter parse, and call only functions there are."""
    from sluice.transform.expression import check_functions
    from sluice.transform.expression_parser import parse_filter, parse_projection

    if values["projection"]:
        for item in parse_projection(values["projection"], f"{where}.projection", functions):
            check_functions(item, f"{where}.projection", values["projection"], functions)
    if values["filter"]:
        condition = parse_filter(values["filter"], f"{where}.filter", functions)
        check_functions(condition, f"{where}.filter", values["filter"], functions)


def _names(text: str) -> tuple[str, ...]:
    return tuple(name.strip().strip("`") for name in text.split(",") if name.strip())


def rule_for(rules: Sequence[TransformRule], database: str, table: str) -> TransformRule | None:
    return next((rule for rule in rules if rule.selector.selects(database, table)), None)
