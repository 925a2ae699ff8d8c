"""User-defined functions (`pipeline.user-defined-function`), called by name in projections
and filters: Python classes in Flink CDC's UDF convention (`eval`, and `open` and `close`
around the rows; `open(context)` gets the entry's `options` as
context.configuration()), or Flink CDC's Python UDF form, `python-code` with a top-level
eval. Annotations type them: `eval`'s return annotation is the target column's type, and
its parameters' annotations the arguments it takes (a parameter without one takes any).
A function that raises stops the pipeline, naming itself, the table and the row's key.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import threading
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
from sluice.transform.udf_code import checked_executable, inline_eval, on_import_path

log = logging.getLogger(__name__)

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
    """One entry of pipeline.user-defined-function: a class (`classpath`, module.Class) or,
    as Flink CDC's Python UDFs, `python-code` whose top-level eval is the function."""

    name: str  # as expressions call it, whatever the case
    classpath: str = ""  # module.Class
    search_path: str = ""  # a directory its module may be in (the definition file's), besides the image's
    code: str = ""  # python-code
    executable: str = ""  # python-executable: checked to be a Python of this one's version
    files: tuple[str, ...] = ()  # python-files: directories and .zip archives put on the import path
    options: tuple[tuple[str, str], ...] = ()  # passed to open(context) as context.configuration()

    @property
    def where(self) -> str:
        return f"pipeline.user-defined-function {self.name} ({self.classpath or 'python-code'})"

    def load(self) -> LoadedFunction:
        """The function imported and instantiated (and opened): a definition error names
        what is missing."""
        checked_executable(self.where, self.executable)
        on_import_path(self.where, self.files, self.search_path)
        if self.code:
            function = inline_eval(self.where, self.name, self.code)
            return _loaded(self.name, self.where, function, None)
        instance = self._instance()
        opener = getattr(instance, "open", None)
        if callable(opener):
            if inspect.signature(opener).parameters:
                opener(UserFunctionContext(dict(self.options)))
            else:
                opener()
        closer = getattr(instance, "close", None)
        return _loaded(self.name, self.where, instance.eval, closer if callable(closer) else None)

    def _instance(self) -> Any:
        module_name, _, class_name = self.classpath.rpartition(".")
        if not module_name:
            raise DefinitionError(f"{self.where}: classpath must be module.Class")
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:  # noqa: BLE001 - whatever the module's import raised, named
            raise DefinitionError(f"{self.where}: cannot import {module_name}: {type(exc).__name__}: {exc}") from exc
        cls = getattr(module, class_name, None)
        if not inspect.isclass(cls) or not callable(getattr(cls, "eval", None)):
            raise DefinitionError(f"{self.where}: {module_name} has no class {class_name} with an eval method")
        _result_type(self.where, typing.get_type_hints(cls.eval))  # refused before it is made and opened
        return cls()


class UserFunctionContext:
    """What open(context) is given, as Flink CDC's UserDefinedFunctionContext: the entry's
    `options`, as text."""

    def __init__(self, options: dict[str, str]) -> None:
        self._options = options

    def configuration(self) -> dict[str, str]:
        return dict(self._options)


def _result_type(where: str, hints: dict[str, Any]) -> SqlType:
    result = _TYPES.get(hints.get("return"))
    if result is None:
        known = ", ".join(t.__name__ for t in _TYPES)
        raise DefinitionError(f"{where}: annotate eval's return type as one of {known}")
    return result


def _loaded(name: str, where: str, function: Callable[..., Any], close: Callable[[], Any] | None) -> LoadedFunction:
    hints = typing.get_type_hints(function)
    result = _result_type(where, hints)
    parameters = list(inspect.signature(function).parameters.values())
    variadic = any(p.kind is p.VAR_POSITIONAL for p in parameters)
    families = [_FAMILIES.get(hints.get(p.name)) for p in parameters if p.kind is not p.VAR_POSITIONAL]
    return LoadedFunction(name, function, families, variadic, result, close)


_LOADED: dict[UserFunction, LoadedFunction] = {}
_LOCK = threading.Lock()


def loaded(function: UserFunction) -> LoadedFunction:
    """The function loaded once a process (until close_user_functions): every table's rules
    call the one instance."""
    with _LOCK:
        found = _LOADED.get(function)
        if found is None:
            found = _LOADED[function] = function.load()
        return found


def close_user_functions() -> None:
    """Calls close() of every function this process opened, once: a stop of the pipeline, or
    the end of a Spark task that loaded them (the next loads them anew)."""
    with _LOCK:
        closing = list(_LOADED.values())
        _LOADED.clear()
    for function in closing:
        if function.close is not None:
            try:
                function.close()
            except Exception as exc:  # noqa: BLE001 - a stop goes on; the failure is said
                log.warning("user-defined function %s: close() failed: %s: %s", function.name, type(exc).__name__, exc)


@dataclass(frozen=True)
class LoadedFunction:
    name: str
    eval: Callable[..., Any]
    families: Sequence[tuple[str, ...] | None]  # per parameter; None takes any
    variadic: bool
    result: SqlType
    close: Callable[[], Any] | None = None

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
