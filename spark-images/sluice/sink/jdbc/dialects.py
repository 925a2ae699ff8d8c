"""The dialect of each registered JDBC target (pipeline/jdbc_targets.py), imported when a
run first writes to it."""

from __future__ import annotations

import functools
import importlib

from sluice.pipeline.jdbc_targets import target_kind
from sluice.sink.jdbc.dialect import JdbcDialect


@functools.cache
def dialect_of(name: str) -> JdbcDialect:
    """The dialect of the target registered as `name` (JdbcUrl.dialect)."""
    module, _, cls = target_kind(name).dialect.rpartition(".")
    dialect = getattr(importlib.import_module(module), cls)()
    if not isinstance(dialect, JdbcDialect):
        raise TypeError(f"{target_kind(name).dialect} is not a JdbcDialect")
    return dialect
