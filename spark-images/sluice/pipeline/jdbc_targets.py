"""The JDBC targets Sluice writes, registered in one place: a line each.

A line names what the pipeline's definition needs to know of a target before anything
connects (its URL schemes and default port: the definition, `sluice check`, the operator
and the CRD read them) and, by its dotted path, the dialect class that holds everything else
the target's database knows (sink/jdbc/dialect.py). The sink imports that class when a run
writes, so reading a definition never loads a database driver. Adding a target is one
dialect module and one line here (docs/contributing.md walks through it).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class JdbcTargetKind:
    name: str  # as JdbcUrl.dialect and messages spell it
    schemes: tuple[str, ...]  # URL schemes that name it; the first is the one the docs show
    default_port: int
    dialect: str  # module.Class of its JdbcDialect

    @property
    def example_url(self) -> str:
        return f"{self.schemes[0]}://host:{self.default_port}/db"


JDBC_TARGETS: tuple[JdbcTargetKind, ...] = (
    JdbcTargetKind("postgresql", ("postgresql", "postgres"), 5432, "sluice.sink.jdbc.postgres.PostgresDialect"),
    JdbcTargetKind("mysql", ("mysql", "mariadb"), 3306, "sluice.sink.jdbc.mysql.MySqlDialect"),
)


def target_kind(name: str) -> JdbcTargetKind:
    """The registered target called `name` (JdbcUrl.dialect)."""
    for kind in JDBC_TARGETS:
        if kind.name == name:
            return kind
    raise KeyError(name)


def kind_of_scheme(scheme: str) -> JdbcTargetKind | None:
    return next((kind for kind in JDBC_TARGETS if scheme in kind.schemes), None)


def example_urls() -> str:
    """Every target's URL form, for messages and option descriptions."""
    return " or ".join(kind.example_url for kind in JDBC_TARGETS)
