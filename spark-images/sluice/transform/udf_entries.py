"""The entries of pipeline.user-defined-function, as Flink CDC's transform.md has them:
checked with the definition's options, and read into UserFunctions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sluice.transform.user_functions import UserFunction

_FUNCTION_KEYS = ("name", "classpath", "options", "python-code", "python-executable", "python-files")


def user_function_entries(entries: tuple[dict[str, Any], ...]) -> str | None:
    """Each entry a name (an identifier no built-in function has) and a classpath (with its
    options) or python-code, as Flink CDC's transform.md has them."""
    # The transform's parser (sqlglot, a tenth of a second to load) is loaded by the
    # pipelines that use it, not by every `sluice run` that reads a definition.
    from sluice.transform.expression import is_free_function_name

    names: set[str] = set()
    for item in entries:
        name, classpath, code = item.get("name", ""), item.get("classpath", ""), item.get("python-code", "")
        extra = sorted(set(item) - set(_FUNCTION_KEYS))
        if extra:
            return f"'{extra[0]}' is not a key of an entry (one of {', '.join(_FUNCTION_KEYS)})"
        if not name or bool(classpath) == bool(code):
            return f"each entry has a name and either a classpath (module.Class) or python-code, got {item!r}"
        if code and "options" in item:
            return f"{name}: python-code takes no options (Flink CDC's rule): read them in the code"
        if not isinstance(item.get("options", {}), dict) or not isinstance(item.get("python-files", ()), tuple):
            return f"{name}: options is a mapping and python-files a list"
        if not name.isidentifier() or not is_free_function_name(name):
            return f"'{name}' must be an identifier no built-in function has"
        if name.upper() in names:
            return f"'{name}' is named twice"
        names.add(name.upper())
    return None


def python_function(entry: Mapping[str, Any], directory: str) -> UserFunction:
    """A pipeline.user-defined-function entry, as the definition's options checked it."""
    return UserFunction(
        entry["name"],
        entry.get("classpath", ""),
        directory,
        entry.get("python-code", ""),
        entry.get("python-executable", ""),
        entry.get("python-files", ()),
        tuple(sorted(entry.get("options", {}).items())),
    )
