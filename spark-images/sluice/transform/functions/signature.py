"""A built-in function's signature: the families of its arguments, its result type, and its
implementation over decoded values (NULL-strict unless it builds its own evaluation)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import tzinfo
from typing import Any

from sqlglot import exp

from sluice.transform.operators import (
    on_clock,
    strict,
)
from sluice.transform.sql_types import (
    BIGINT,
    NUMERIC,
    TEMPORAL,
    TEXT,
    SqlType,
    is_instant,
    string_length,
    varchar,
)

Evaluate = Callable[[tuple[Any, ...], tuple[Any, ...]], Any]


STRING, ANY = ("string",), (*NUMERIC, "string", *TEMPORAL)


INT = ("integer",)


NUM = NUMERIC


@dataclass(frozen=True)
class Signature:
    name: str
    args: tuple[str, ...]  # the sqlglot node's argument names, in order
    families: tuple[tuple[str, ...], ...]  # per argument; the last repeats for a variadic function
    result: Callable[[list[SqlType]], SqlType]
    implementation: Callable[..., Any] | None = None  # of the values, NULL-strict
    builder: Callable[..., Evaluate] | None = None  # (node, args, kinds), and the zone where `zoned`
    variadic: bool = False
    deterministic: bool = True
    labels: tuple[str, ...] = field(default=())
    zoned: bool = False  # its builder takes pipeline.local-time-zone
    wall_clock: bool = False  # reads an instant's fields as pipeline.local-time-zone's clock shows them

    def checks(self, count: int) -> list[tuple[str, tuple[str, ...]]]:
        families = list(self.families) + [self.families[-1]] * max(count - len(self.families), 0)
        labels = list(self.labels) or [f"argument {i + 1}" for i in range(count)]
        labels += [f"argument {i + 1}" for i in range(len(labels), count)]
        return list(zip(labels, families[:count], strict=True))

    def build(self, node: exp.Expression, args: list[Evaluate], kinds: list[SqlType], zone: tzinfo) -> Evaluate:
        if self.wall_clock:
            args = [on_clock(a, zone) if is_instant(k) else a for a, k in zip(args, kinds, strict=True)]
        if self.builder is not None:
            return self.builder(node, args, kinds, zone) if self.zoned else self.builder(node, args, kinds)
        assert self.implementation is not None
        return strict(self.implementation, args)


def same_type(kinds: list[SqlType]) -> SqlType:
    return SqlType(kinds[0].family, kinds[0].column_type)


def text_type(kinds: list[SqlType]) -> SqlType:
    lengths = [string_length(k) for k in kinds]
    return varchar(sum(lengths)) if all(n is not None for n in lengths) else TEXT  # type: ignore[arg-type]


def integer_type(kinds: list[SqlType]) -> SqlType:
    return BIGINT
