"""User-defined functions (`pipeline.user-defined-function`): Python classes, as Flink CDC's
Python UDFs are, called by name in projections and filters.

A class has an `eval` method, and may have `open()`, called once before the first row. Its
annotations type it: `eval`'s return annotation is the target column's type, and its
parameters' annotations the arguments it takes (a parameter without one takes any). The
module is imported from the pipeline's image, or from the directory of its definition file.
A function that raises stops the pipeline, naming itself, the table and the row's key.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import sys
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from sluice.errors import DefinitionError, SluiceError
from sluice.transform.sql_types import (
    BIGINT,
    BOOLEAN,
    DATE,
    DATETIME,
    DOUBLE,
    NUMERIC,
    TEXT,
    SqlType,
    decimal,
)

# A Python annotation -> the SQL type of values of it (Decimal as PyFlink maps it).
_TYPES: dict[Any, SqlType] = {
    int: BIGINT,
    float: DOUBLE,
    str: TEXT,
    bool: BOOLEAN,
    Decimal: decimal(38, 18),
    datetime: DATETIME,
    date: DATE,
    bytes: SqlType("binary", "longblob"),
}
# The families an annotated parameter takes.
_FAMILIES: dict[Any, tuple[str, ...]] = {
    int: ("integer", "boolean"),
    float: NUMERIC,
    Decimal: NUMERIC,
    str: ("string",),
    bool: ("boolean",),
    datetime: ("datetime", "date"),
    date: ("date", "datetime"),
    bytes: ("binary",),
}


class UserFunctionFailed(SluiceError):
    """A user-defined function raised; TableTransform names the rule, the table and the row."""

    troubleshooting = "user-function-failed"

    def __init__(self, name: str, cause: BaseException, where: str = "") -> None:
        at = f"{where}: " if where else ""
        super().__init__(f"{at}user-defined function {name} failed: {type(cause).__name__}: {cause}")
        self.name = name


@dataclass(frozen=True)
class UserFunction:
    """One entry of pipeline.user-defined-function."""

    name: str  # as expressions call it, whatever the case
    classpath: str  # module.Class
    search_path: str = ""  # a directory its module may be in (the definition file's), besides the image's

    def load(self) -> LoadedFunction:
        """The class imported and instantiated (and opened): a definition error names what
        is missing."""
        where = f"pipeline.user-defined-function {self.name} ({self.classpath})"
        module_name, _, class_name = self.classpath.rpartition(".")
        if not module_name:
            raise DefinitionError(f"{where}: classpath must be module.Class")
        if self.search_path and self.search_path not in sys.path:
            sys.path.append(self.search_path)
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:  # noqa: BLE001 - whatever the module's import raised, named
            raise DefinitionError(f"{where}: cannot import {module_name}: {type(exc).__name__}: {exc}") from exc
        cls = getattr(module, class_name, None)
        if not inspect.isclass(cls) or not callable(getattr(cls, "eval", None)):
            raise DefinitionError(f"{where}: {module_name} has no class {class_name} with an eval method")
        hints = typing.get_type_hints(cls.eval)
        result = _TYPES.get(hints.get("return"))
        if result is None:
            known = ", ".join(t.__name__ for t in _TYPES)
            raise DefinitionError(f"{where}: annotate eval's return type as one of {known}")
        instance = cls()
        if callable(getattr(instance, "open", None)):
            instance.open()
        parameters = list(inspect.signature(instance.eval).parameters.values())
        variadic = any(p.kind is p.VAR_POSITIONAL for p in parameters)
        families = [_FAMILIES.get(hints.get(p.name)) for p in parameters if p.kind is not p.VAR_POSITIONAL]
        return LoadedFunction(self.name, instance.eval, families, variadic, result)


@functools.cache
def loaded(function: UserFunction) -> LoadedFunction:
    """The function loaded once a process: every table's rules call the one instance."""
    return function.load()


@dataclass(frozen=True)
class LoadedFunction:
    name: str
    eval: Callable[..., Any]
    families: Sequence[tuple[str, ...] | None]  # per parameter; None takes any
    variadic: bool
    result: SqlType

    def refusal(self, kinds: Sequence[SqlType]) -> str | None:
        """Why arguments of these types cannot be passed, if they cannot."""
        if len(kinds) < len(self.families) or (len(kinds) > len(self.families) and not self.variadic):
            return f"{self.name} takes {len(self.families)} argument(s), not {len(kinds)}"
        for i, (families, kind) in enumerate(zip(self.families, kinds, strict=False)):
            if families is not None and kind.family != "null" and kind.family not in families:
                wanted = " or ".join(f.upper() for f in families)
                return f"{self.name}'s argument {i + 1} must be {wanted}, not {kind.name}"
        return None

    def call(self, values: Sequence[Any]) -> Any:
        """The function's value for these arguments (NULLs passed as None, as Flink passes them)."""
        try:
            return self.eval(*values)
        except Exception as exc:  # noqa: BLE001 - any failure of user code stops the pipeline, named
            raise UserFunctionFailed(self.name, exc) from exc
