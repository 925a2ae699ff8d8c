"""Declared options, like Flink's ConfigOptions: every accepted key, its type and its check.

Declaring them in one table is what lets an unknown key, a wrong type or an impossible
value be refused before anything runs, with the key named in the message.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sluice.errors import DefinitionError

_REQUIRED = object()


@dataclass(frozen=True)
class Option:
    key: str
    kind: type
    default: Any = _REQUIRED
    choices: tuple[str, ...] | None = None
    check: Callable[[Any], str | None] | None = None
    description: str = ""

    @property
    def required(self) -> bool:
        return self.default is _REQUIRED

    @property
    def prefix(self) -> bool:
        """A key ending in a dot names a family (`catalog.properties.`): every key under it
        is passed on as text, gathered into one mapping without the prefix."""
        return self.key.endswith(".")


def positive(value: int) -> str | None:
    return None if value > 0 else "must be greater than 0"


def ratio(value: float) -> str | None:
    return None if 0 < value <= 1 else "must be a share greater than 0 and at most 1"


def port_number(value: int) -> str | None:
    return None if 0 < value < 65536 else "must be a TCP port between 1 and 65535"


_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*(ms|s|min|m|h)?$")
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "min": 60.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_duration(text: str) -> float:
    """Seconds from a Flink-style duration such as '30s', '500ms' or '1min'."""
    match = _DURATION.match(str(text).strip())
    if not match:
        raise ValueError(f"'{text}' is not a duration such as 30s, 500ms or 1min")
    return float(match.group(1)) * _DURATION_UNITS[match.group(2)]


def parsed_by(parse: Callable[[str], Any]) -> Callable[[str], str | None]:
    """An Option check from a parser: the ValueError it raises is the problem."""

    def check(value: str) -> str | None:
        try:
            parse(value)
        except ValueError as exc:
            return str(exc)
        return None

    return check


duration = parsed_by(parse_duration)


def resolve(section: str, raw: Mapping[str, Any] | None, options: list[Option]) -> dict[str, Any]:
    """Checks one section (source, sink, pipeline) against its options; returns key -> value."""
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise DefinitionError(f"{section}: expected a mapping of options, got {type(raw).__name__}")
    known = {option.key: option for option in options if not option.prefix}
    families = [option for option in options if option.prefix]
    for key in raw:
        if key not in known and not any(str(key).startswith(f.key) and str(key) != f.key for f in families):
            hint = _closest(str(key), known)
            raise DefinitionError(
                f"{section}.{key}: unknown option"
                + (f" (did you mean '{hint}'?)" if hint else "")
                + f"; known options: {', '.join(sorted([*known, *(f.key + '*' for f in families)]))}"
            )
    values: dict[str, Any] = {}
    for option in families:
        gathered = {str(k)[len(option.key) :]: raw[k] for k in raw if str(k).startswith(option.key)}
        for key, value in gathered.items():
            if isinstance(value, (Mapping, list)) or value is None:
                raise DefinitionError(f"{section}.{option.key}{key}: expected a value, got {value!r}")
        values[option.key] = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in gathered.items()}
        if option.check is not None and (problem := option.check(values[option.key])):
            raise DefinitionError(f"{section}.{option.key}*: {problem}")
    for option in options:
        if option.prefix:
            continue
        where = f"{section}.{option.key}"
        if option.key not in raw or raw[option.key] is None:
            if option.required:
                raise DefinitionError(f"{where}: required option is missing")
            values[option.key] = option.default
            continue
        value = _coerce(where, raw[option.key], option.kind)
        if option.choices is not None and value not in option.choices:
            raise DefinitionError(f"{where}: '{value}' is not one of {', '.join(option.choices)}")
        if option.check is not None:
            problem = option.check(value)
            if problem:
                raise DefinitionError(f"{where}: {problem} (got {value!r})")
        values[option.key] = value
    return values


def _coerce(where: str, value: Any, kind: type) -> Any:
    if kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise DefinitionError(f"{where}: expected true or false, got {value!r}")
    if kind is int:
        if isinstance(value, bool):
            raise DefinitionError(f"{where}: expected an integer, got {value!r}")
        if isinstance(value, int):
            return value
        if isinstance(value, str) and re.fullmatch(r"[+-]?\d+", value.strip()):
            return int(value)
        raise DefinitionError(f"{where}: expected an integer, got {value!r}")
    if kind is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str) and re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)", value.strip()):
            return float(value)
        raise DefinitionError(f"{where}: expected a number, got {value!r}")
    if kind is str:
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            return str(value)
        raise DefinitionError(f"{where}: expected a string, got {type(value).__name__}")
    if kind is tuple:  # of strings: a YAML list, or one comma-separated string
        items = value.split(",") if isinstance(value, str) else value
        if isinstance(items, list) and all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in items):
            return tuple(s for s in (str(v).strip() for v in items) if s)
        raise DefinitionError(f"{where}: expected a list of strings, got {value!r}")
    if kind is list:  # of mappings (pipeline.user-defined-function's entries)
        if isinstance(value, list) and all(isinstance(item, Mapping) for item in value):
            return tuple({str(k): _entry_value(v) for k, v in item.items()} for item in value)
        raise DefinitionError(f"{where}: expected a list of mappings, got {value!r}")
    raise AssertionError(f"unsupported option kind {kind}")


def _entry_value(value: Any) -> Any:
    """A value of a list's entry: text, a list of texts, or a mapping of texts (UDF options)."""
    if isinstance(value, Mapping):
        return {str(k): "" if v is None else str(v) for k, v in value.items()}
    if isinstance(value, list):
        return tuple(str(v) for v in value)
    return "" if value is None else str(value)


def _closest(key: str, known: Mapping[str, Option]) -> str | None:
    import difflib

    matches = difflib.get_close_matches(key, list(known), n=1, cutoff=0.7)
    return matches[0] if matches else None


def zero_date_rule(value: str) -> str | None:
    """sink.zero-date: '' (NULL where nullable, else the epoch), 'fail', or a date."""
    if value in ("", "fail"):
        return None
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return "must be empty (NULL where nullable, else the epoch), 'fail', or a date such as 1900-01-01"
    return None
