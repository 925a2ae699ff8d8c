"""Validates an object as the API server would against a CRD version's openAPIV3Schema:
the schema itself (jsonschema), then every x-kubernetes-validations rule, evaluated with
CEL at the node it is declared on (`self`; `oldSelf` on an update only, as transition
rules are), with property names escaped as Kubernetes escapes them (`source-table` is
`source__dash__table`)."""

from __future__ import annotations

from typing import Any

import jsonschema
from cel_expr_python import cel

_ENV = cel.NewEnv(variables={"self": cel.Type.DYN, "oldSelf": cel.Type.DYN})
_ABSENT = object()


def violations(schema: dict[str, Any], obj: Any, old: Any = _ABSENT, paths: bool = False) -> list[str]:
    """What the API server would refuse `obj` for (empty: accepted); `old` on an update.
    With `paths`, each message starts with the field it is about, as the API server's do."""
    errors = [
        (f"{_path(e.absolute_path)}: " if paths else "") + e.message
        for e in jsonschema.Draft7Validator(schema).iter_errors(obj)
    ]
    return errors + _rules(schema, obj, old, [] if paths else None)


def _escaped(value: Any) -> Any:
    """Property names as CEL sees them: Kubernetes escapes `__`, `.`, `-` and `/` in them."""
    if isinstance(value, dict):
        return {_escape(str(k)): _escaped(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_escaped(v) for v in value]
    return value


def _escape(name: str) -> str:
    for char, word in (("__", "underscores"), (".", "dot"), ("-", "dash"), ("/", "slash")):
        name = name.replace(char, f"__{word}__")
    return name


def _path(parts: Any) -> str:
    return ".".join(str(p) for p in parts) or "<root>"


def _rules(schema: dict[str, Any], obj: Any, old: Any, at: list[Any] | None = None) -> list[str]:
    messages = []
    for rule in schema.get("x-kubernetes-validations", []):
        transition = "oldSelf" in rule["rule"]
        if transition and old is _ABSENT:
            continue  # transition rules apply to updates only
        data = {"self": _escaped(obj), **({"oldSelf": _escaped(old)} if transition else {})}
        if not _ENV.compile(rule["rule"]).eval(data=data).plain_value():
            message = rule.get("message", rule["rule"])
            messages.append(message if at is None else f"{_path(at)}: {message}")
    if isinstance(obj, dict):
        for key, child in (schema.get("properties") or {}).items():
            if key in obj:
                previous = old.get(key, _ABSENT) if isinstance(old, dict) else _ABSENT
                messages += _rules(child, obj[key], previous, None if at is None else [*at, key])
    elif isinstance(obj, list) and "items" in schema:
        messages += [
            m
            for index, item in enumerate(obj)
            for m in _rules(schema["items"], item, _ABSENT, None if at is None else [*at, index])
        ]
    return messages
