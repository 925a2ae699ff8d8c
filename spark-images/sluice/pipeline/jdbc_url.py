"""Target URLs: postgresql://HOST:PORT/DB or mysql://HOST:PORT/DB (a jdbc: prefix is accepted)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from sluice.errors import DefinitionError

DEFAULT_PORTS = {"postgresql": 5432, "mysql": 3306}
ALIASES = {"postgres": "postgresql", "postgresql": "postgresql", "mysql": "mysql", "mariadb": "mysql"}


@dataclass(frozen=True)
class JdbcUrl:
    dialect: str  # postgresql | mysql
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
        raise DefinitionError(f"sink.url: {exc}; expected postgresql://HOST:PORT/DB or mysql://HOST:PORT/DB") from exc
    dialect = ALIASES.get(parts.scheme)
    if dialect is None:
        raise DefinitionError(
            f"sink.url: '{shown}' must start with postgresql:// or mysql:// (e.g. postgresql://localhost:5432/warehouse)"
        )
    try:
        port = parts.port or DEFAULT_PORTS[dialect]
    except ValueError as exc:
        raise DefinitionError(f"sink.url: '{shown}' has an invalid port") from exc
    database = parts.path.lstrip("/")
    if not parts.hostname or not database or "/" in database:
        raise DefinitionError(f"sink.url: '{shown}' must name a host and a database: {dialect}://HOST:PORT/DB")
    if parts.username or parts.password:
        raise DefinitionError("sink.url: put credentials in sink.username and sink.password, not the URL")
    return JdbcUrl(dialect, parts.hostname, port, database)
