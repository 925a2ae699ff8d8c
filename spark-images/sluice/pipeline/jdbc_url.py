"""Target URLs: SCHEME://HOST:PORT/DB, with a scheme of a registered JDBC target
(pipeline/jdbc_targets.py; a jdbc: prefix is accepted)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from sluice.errors import DefinitionError
from sluice.pipeline.jdbc_targets import JDBC_TARGETS, example_urls, kind_of_scheme


@dataclass(frozen=True)
class JdbcUrl:
    dialect: str  # the registered target's name (pipeline/jdbc_targets.py)
    host: str
    port: int
    database: str


def redacted(url: str) -> str:
    """The URL as messages may show it: a password in it is replaced by ***."""
    try:
        parts = urlsplit(url.removeprefix("jdbc:"))
    except ValueError:
        return "<unparsable URL>"
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return url.replace(parts.netloc, netloc, 1)


def parse_jdbc_url(url: str) -> JdbcUrl:
    shown = redacted(url)
    try:
        parts = urlsplit(url.removeprefix("jdbc:"))
    except ValueError as exc:
        raise DefinitionError(f"sink.url: {exc}; expected {example_urls()}") from exc
    kind = kind_of_scheme(parts.scheme)
    if kind is None:
        starts = " or ".join(f"{k.schemes[0]}://" for k in JDBC_TARGETS)
        raise DefinitionError(f"sink.url: '{shown}' must start with {starts} ({example_urls()})")
    try:
        port = parts.port or kind.default_port
    except ValueError as exc:
        raise DefinitionError(f"sink.url: '{shown}' has an invalid port") from exc
    database = parts.path.lstrip("/")
    if not parts.hostname or not database or "/" in database:
        raise DefinitionError(f"sink.url: '{shown}' must name a host and a database: {kind.example_url}")
    if parts.username or parts.password:
        raise DefinitionError("sink.url: put credentials in sink.username and sink.password, not the URL")
    return JdbcUrl(kind.name, parts.hostname, port, database)
