"""The definition's `route` and `transform` blocks, as one value (route/table_routing
applies them to the captured tables)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sluice.route.route_rule import TableRouter, parse_routes
from sluice.transform.transform_rule import TransformRule, parse_transforms, rule_for
from sluice.transform.user_functions import UserFunction


@dataclass(frozen=True)
class Routing:
    """The definition's `route` and `transform` blocks."""

    router: TableRouter = TableRouter()
    transforms: tuple[TransformRule, ...] = ()
    texts: tuple[Any, Any] = (None, None)  # the blocks as written, for the state's identity
    local_time_zone: str = "UTC"  # pipeline.local-time-zone, which transforms compute in
    functions: tuple[UserFunction, ...] = ()  # pipeline.user-defined-function

    @property
    def active(self) -> bool:
        return bool(self.router.rules or self.transforms)

    def identity(self) -> dict[str, str]:
        """What the state's progress depends on (pipeline_runner checks it on every run)."""
        route, transform = self.texts
        identity = {
            ROUTE_KEY: json.dumps({"mode": self.router.mode, "rules": route or []}, sort_keys=True),
            TRANSFORM_KEY: json.dumps(transform or [], sort_keys=True),
        }
        if self.local_time_zone != "UTC":  # states written before the option stay the same
            identity[ZONE_KEY] = self.local_time_zone
        if self.functions:  # by name and class (or python-code): the directory they were found in may move
            identity[FUNCTIONS_KEY] = json.dumps([[f.name, f.classpath or "python-code"] for f in self.functions])
        return identity

    @classmethod
    def from_identity(cls, identity: Mapping[str, str]) -> Routing:
        """The routing a state was written under (its identity's blocks, read again)."""
        route = json.loads(identity.get(ROUTE_KEY) or '{"mode": "ALL_MATCH", "rules": []}')
        transform = json.loads(identity.get(TRANSFORM_KEY) or "[]")
        zone = identity.get(ZONE_KEY) or "UTC"
        functions = tuple(
            # named, for the rules to parse; never loaded (the definition's own are)
            UserFunction(name, classpath)
            for name, classpath in json.loads(identity.get(FUNCTIONS_KEY) or "[]")
        )
        return cls(
            parse_routes(route["rules"], route["mode"]),
            parse_transforms(transform, zone, functions),
            (route["rules"], transform),
            zone,
            functions,
        )

    def changes_for(self, later: Routing, tables: Iterable[str]) -> list[str]:
        """How `later` treats the already captured `tables` otherwise than this routing:
        another target table, or another transform. Empty where a change only adds rules
        for tables not captured yet (or edits descriptions)."""
        changes = []
        for table_id in sorted(tables):
            database, table = table_id.split(".", 1)
            before, after = self.router.route(database, table), later.router.route(database, table)
            if before != after:
                changes.append(
                    f"{table_id} goes to {', '.join('.'.join(t) for t in after)}, not "
                    f"{', '.join('.'.join(t) for t in before)}"
                )
                continue
            old, new = rule_for(self.transforms, database, table), rule_for(later.transforms, database, table)
            if _query_of(old) != _query_of(new):
                changes.append(f"{table_id} is transformed by {_described(new)}, not {_described(old)}")
        return changes


ROUTE_KEY, TRANSFORM_KEY, ZONE_KEY, FUNCTIONS_KEY = "route", "transform", "local_time_zone", "user_defined_functions"


def _query_of(rule: TransformRule | None) -> tuple[Any, ...] | None:
    if rule is None:
        return None
    functions = sorted((f.name.upper(), f.classpath) for f in rule.functions)
    return (
        rule.projection,
        rule.filter,
        rule.primary_keys,
        rule.partition_keys,
        dict(rule.table_options),
        rule.soft_delete,
        rule.local_time_zone,
        functions,
    )


def _described(rule: TransformRule | None) -> str:
    return "no transform" if rule is None else f"{rule.where} ({rule.projection or '*'}; filter {rule.filter or '-'})"
